import JournalLog
import JournalQuery
import JournalService
import JournalSync
import NIOPosix

/// `ServiceCore` on a thread pool: its calls block (a durable upload waits for fsync), and a
/// server's event loops must never wait for a disk. Every call of the protocol hops to the pool
/// and back. The pool is wider than the machine: its threads mostly wait for the disk, and
/// uploads waiting together share one fsync (group commit).
package struct BlockingBackend: ServiceBackend {
    package let core: ServiceCore
    let pool: NIOThreadPool

    /// A pool of `threads` threads of its own (started here, for the life of the process).
    package init(core: ServiceCore, threads: Int = 64) {
        self.core = core
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    package var limits: ServiceLimits { core.limits }
    package var hints: HintHub { core.hints }
    package func unreadiness() async -> String? { core.unreadiness() }

    /// `body` on the pool: what may block (the disk, a database) never runs on an event loop.
    package func run<T: Sendable>(_ body: @escaping @Sendable () throws(SyncError) -> T) async throws(SyncError) -> T {
        let work = { @Sendable () -> Result<T, SyncError> in
            do throws(SyncError) { return .success(try body()) } catch { return .failure(error) }
        }
        let outcome: Result<T, SyncError>
        do {
            // Called on an event loop (a server whose tasks run on its loops): the answer comes
            // back to that loop, the request's connection's, and is written there, rather than
            // resuming on whichever loop is next and hopping again to write.
            if let loop = MultiThreadedEventLoopGroup.currentEventLoop {
                outcome = try await pool.runIfActive(eventLoop: loop, work).get()
            } else {
                outcome = try await pool.runIfActive(work)
            }
        } catch {
            throw .serviceBusy(retryAfter: .seconds(1))   // the pool is shutting down
        }
        return try outcome.get()
    }

    /// A compaction of the service's store (`ServiceCore.compact`), on the pool: it reads and
    /// rewrites for seconds, which no event loop or concurrency thread may wait for.
    package func compact(now: Int64) async throws(SyncError) -> ListCompactionReport {
        try await run { () throws(SyncError) in try core.compact(now: now) }
    }

    package func perform(_ caller: ServiceCaller, _ call: SyncCall) async throws(SyncError) -> SyncAnswer {
        try await run { () throws(SyncError) in try core.perform(caller, call) }
    }
}

import CoreMetrics
import Foundation

/// Threads of their own on which the database's async calls run when a synchronous caller waits
/// for them (`wait`): the service's parts are synchronous (they run on a server's blocking pool,
/// or in a test), and Swift's cooperative pool has one thread per core. A caller blocked on
/// that pool must not wait for work that needs the same pool, so the database client, its
/// connection pool and every bridged call run here instead, and blocking the caller's thread
/// never holds up the answer it waits for.
final class BridgeExecutor: TaskExecutor, @unchecked Sendable {
    /// The process's one bridge (its threads live as long as the process).
    static let shared = BridgeExecutor()

    private let cond = NSCondition()
    private var jobs: [UnownedJob] = []

    /// Starts `threads` threads, named for a debugger.
    init(threads: Int = 4) {
        for k in 0..<max(1, threads) {
            let thread = Thread { [unowned(unsafe) self] in self.serve() }
            thread.name = "jlog postgres \(k)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        cond.lock()
        jobs.append(job)
        cond.signal()
        cond.unlock()
    }

    private func serve() {
        while true {
            cond.lock()
            while jobs.isEmpty { cond.wait() }
            let job = jobs.removeFirst()
            cond.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// Calls waiting on the database now (`jlog_database_calls_in_flight`): against the pool's
    /// size, how much of it the node uses.
    static var inFlight: CoreMetrics.Meter { CoreMetrics.Meter(label: "jlog_database_calls_in_flight") }
    /// How long each call took, its wait for a connection included (`jlog_database_call_seconds`).
    static var duration: CoreMetrics.Timer { CoreMetrics.Timer(label: "jlog_database_call_seconds", preferredDisplayUnit: .seconds) }

    /// Runs `body` on these threads and waits for it on the caller's thread.
    func wait<T: Sendable, E: Error>(_ body: @escaping @Sendable () async throws(E) -> T) throws(E) -> T {
        let started = DispatchTime.now().uptimeNanoseconds
        Self.inFlight.increment()
        defer {
            Self.inFlight.decrement()
            Self.duration.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
        }
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T, E>()
        Task(executorPreference: self) {
            do throws(E) { box.result = .success(try await body()) } catch { box.result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try box.result!.get()
    }

    private final class ResultBox<T, E: Error>: @unchecked Sendable {
        var result: Result<T, E>?
    }
}

import CoreMetrics
import Foundation
import NIOCore

/// Where the database's async calls run when a synchronous caller waits for them (`wait`): the
/// event loop of the database's own connections (`PostgresStorage.eventLoops`), apart from the
/// process's other threads. The service's parts are synchronous (they run on a server's
/// blocking pool, or in a test), and Swift's cooperative pool has one thread per core: a caller
/// blocked on that pool must not wait for work that needs the same pool, so the database
/// client, its connection pool and every bridged call run on that loop instead, and blocking
/// the caller's thread never holds up the answer it waits for. Running the calls on the loop
/// that reads their answers saves two thread wake-ups per statement against threads of their
/// own (measured: 780 → 1,040 sync round trips/s with the other changes of that commit).
/// Nothing that runs here may block: a synchronous storage call made on the loop would wait
/// for itself.
final class BridgeExecutor: TaskExecutor, @unchecked Sendable {
    /// The process's one bridge, on the database's event loop.
    static let shared = BridgeExecutor(loop: PostgresStorage.eventLoops.next())

    private let loop: any EventLoop

    /// A bridge whose jobs run on `loop`.
    init(loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
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

    /// Runs `body` on these threads and waits for it on the caller's thread for at most
    /// `deadline`: its result, or nil when it did not end in time (it goes on, and its result is
    /// dropped). For a probe that must answer in a bound whatever the database does.
    func wait<T: Sendable, E: Error>(deadline: Duration, _ body: @escaping @Sendable () async throws(E) -> T) -> Result<T, E>? {
        let done = DispatchSemaphore(value: 0)
        let box = LockedBox<Result<T, E>>()
        Task(executorPreference: self) {
            do throws(E) { box.set(.success(try await body())) } catch { box.set(.failure(error)) }
            done.signal()
        }
        let nanos = deadline.components.seconds * 1_000_000_000 + deadline.components.attoseconds / 1_000_000_000
        guard done.wait(timeout: .now() + .nanoseconds(Int(nanos))) == .success else { return nil }
        return box.get()
    }

    private final class ResultBox<T, E: Error>: @unchecked Sendable {
        var result: Result<T, E>?
    }

    /// A value one task sets and another reads, maybe after giving up on it.
    private final class LockedBox<T>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: T?
        func set(_ v: T) { lock.withLock { value = v } }
        func get() -> T? { lock.withLock { value } }
    }
}

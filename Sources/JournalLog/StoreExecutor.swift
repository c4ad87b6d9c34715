import Foundation

/// A serial executor with a thread of its own: where a store's async calls run (`run`), and the
/// executor of actors that do a store's blocking I/O (`SyncEngine`, `ListStore`). An app calls
/// from its main actor; the fdatasync, the reads and the decoding then happen here, never on the
/// caller's actor and never on Swift's cooperative pool, whose few threads every task of the app
/// shares.
///
/// Work runs one piece at a time, in the order it was enqueued. The thread ends once the
/// executor is released and its queue is empty.
public final class StoreExecutor: SerialExecutor, @unchecked Sendable {
    /// What the thread serves. The thread holds the queue, not the executor, so that releasing
    /// the executor ends the thread.
    private final class Queue: @unchecked Sendable {
        enum Work {
            case job(UnownedJob)
            case closure(() -> Void)
        }
        let cond = NSCondition()
        var work: [Work] = []
        var released = false
        /// Set once, before the thread starts; valid while any job of the executor is queued.
        var executor: UnownedSerialExecutor?
        /// The thread, set before it starts.
        weak var thread: Thread?

        func add(_ w: Work) {
            cond.lock()
            work.append(w)
            cond.signal()
            cond.unlock()
        }

        /// The next piece of work, or nil once the executor is released and nothing is left.
        func next() -> Work? {
            cond.lock()
            defer { cond.unlock() }
            while work.isEmpty && !released { cond.wait() }
            return work.isEmpty ? nil : work.removeFirst()
        }
    }

    private let queue = Queue()

    /// Starts the thread, named `name` (what a debugger shows).
    public init(name: String = "JournalLog store") {
        let queue = self.queue
        queue.executor = UnownedSerialExecutor(ordinary: self)
        let thread = Thread {
            while let w = queue.next() {
                switch w {
                case .job(let job): job.runSynchronously(on: queue.executor!)
                case .closure(let body): body()
                }
            }
        }
        thread.name = name
        thread.stackSize = 8 << 20
        queue.thread = thread
        thread.start()
    }

    /// Whether the caller runs on this executor's thread.
    public var isCurrent: Bool { queue.thread.map { $0 == Thread.current } ?? false }

    deinit {
        queue.cond.lock()
        queue.released = true
        queue.cond.signal()
        queue.cond.unlock()
    }

    public func enqueue(_ job: consuming ExecutorJob) { queue.add(.job(UnownedJob(job))) }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    /// Runs `body` on this executor's thread and hands its result back; the caller waits without
    /// blocking its own thread (the main actor goes on drawing).
    public func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { (c: CheckedContinuation<Result<T, E>, Never>) in
            queue.add(.closure {
                do throws(E) { c.resume(returning: .success(try body())) } catch { c.resume(returning: .failure(error)) }
            })
        }
        return try result.get()
    }
}

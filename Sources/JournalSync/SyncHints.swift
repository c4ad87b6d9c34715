/// Reasons to sync (Spec/SYNC.md §7.7): a push notification, a server's "zone changed" hint, a
/// timer, the app coming to the foreground. A hint carries no data — the engine always fetches —
/// so hints that arrive while one is waiting or a sync is running collapse into one more sync:
/// a burst of a hundred costs two syncs, not a hundred.
public final class SyncHints: Sendable {
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    /// A source of hints with none waiting; pass it to `SyncEngine.run(hints:)`.
    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a sync; never blocks, never queues more than one.
    public func hint() { continuation.yield() }

    /// Ends `SyncEngine.run(hints:)` once it has finished the sync in progress.
    public func finish() { continuation.finish() }
}

extension SyncEngine {
    /// Syncs once per burst of hints, until `hints` finish or the task is cancelled; `onSync`
    /// sees each report (for a UI, a log line, `jlog sync --watch`). Returns the syncs it ran.
    @discardableResult
    public func run(hints: SyncHints, onSync: @Sendable (SyncReport) -> Void = { _ in }) async -> Int {
        var syncs = 0
        for await _ in hints.stream {
            if Task.isCancelled { break }
            onSync(await sync())
            syncs += 1
        }
        return syncs
    }
}

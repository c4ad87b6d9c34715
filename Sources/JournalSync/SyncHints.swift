import Foundation

/// Reasons to sync (Spec/SYNC.md §7.7): a push notification, a server's "zone changed" hint, a
/// timer, the app coming to the foreground. A hint that names a zone (and, from `jlog serve`, the
/// zone's head) makes the next sync fetch that zone only; a hint that names none makes it fetch
/// everything. Hints that arrive while one is waiting or a sync is running collapse into one more
/// sync: a burst of a hundred costs two syncs, not a hundred.
public final class SyncHints: Sendable {
    let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let waiting = WaitingHints()

    /// Named zones kept before the waiting hints count as one naming none: a burst over many
    /// lists costs one full sync rather than a fetch per list.
    public static let maxNamedZones = 64

    /// A source of hints with none waiting; pass it to `SyncEngine.run(hints:)`.
    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a full sync (database changes, then every changed zone); never blocks.
    public func hint() {
        waiting.add(nil)
        continuation.yield()
    }

    /// Asks for a sync of `zone`: one that holds `head` already skips it (its own upload, or a
    /// hint that came late). Never blocks.
    public func hint(_ zone: ZoneID, head: ZoneHead? = nil) {
        waiting.add(ZoneHint(zone: zone, head: head))
        continuation.yield()
    }

    /// Ends `SyncEngine.run(hints:)` once it has finished the sync in progress.
    public func finish() { continuation.finish() }

    /// The hints waiting, taken: nil for a full sync, else the zones named.
    func take() -> [ZoneHint]? { waiting.take() }

    /// The zones named by the hints waiting, not taken (nil: a full sync waits); for checks.
    package var waitingZones: [ZoneHint]? { waiting.peek() }
}

/// A server's hint that a zone changed, and the head it has now when the server said it.
public struct ZoneHint: Hashable, Sendable {
    /// The zone that changed.
    public let zone: ZoneID
    /// Its head after the change (Spec/SYNC.md §3.11), when the hint carried it.
    public let head: ZoneHead?

    /// A hint for `zone`, with its head when known.
    public init(zone: ZoneID, head: ZoneHead?) {
        self.zone = zone
        self.head = head
    }
}

/// The hints waiting to be taken: everything, or the newest head named for each zone.
private final class WaitingHints: @unchecked Sendable {
    private let lock = NSLock()
    private var everything = false
    private var zones: [ZoneID: ZoneHead?] = [:]

    func add(_ hint: ZoneHint?) {
        lock.withLock {
            guard let hint, !everything else {
                everything = true
                zones = [:]
                return
            }
            // Two hints for one zone: the later head, or none if either lacks one.
            let head: ZoneHead? = if let known = zones[hint.zone], known == nil { nil } else { hint.head }
            zones.updateValue(head, forKey: hint.zone)
            if zones.count > SyncHints.maxNamedZones {
                everything = true
                zones = [:]
            }
        }
    }

    func peek() -> [ZoneHint]? {
        lock.withLock { everything ? nil : zones.map { ZoneHint(zone: $0.key, head: $0.value) } }
    }

    func take() -> [ZoneHint]? {
        lock.withLock {
            defer { (everything, zones) = (false, [:]) }
            return everything ? nil : zones.map { ZoneHint(zone: $0.key, head: $0.value) }.sorted { $0.zone < $1.zone }
        }
    }
}

extension SyncEngine {
    /// Syncs once per burst of hints, until `hints` finish or the task is cancelled; `onSync`
    /// sees each report (for a UI, a log line, `jlog sync --watch`). A burst that named zones
    /// only syncs those (`sync(hinted:)`); one that named none syncs everything. Returns the
    /// syncs it ran.
    @discardableResult
    public func run(hints: SyncHints, onSync: @Sendable (SyncReport) -> Void = { _ in }) async -> Int {
        var syncs = 0
        for await _ in hints.stream {
            if Task.isCancelled { break }
            if let zones = hints.take() {
                onSync(await sync(hinted: zones))
            } else {
                onSync(await sync())
            }
            syncs += 1
        }
        return syncs
    }
}

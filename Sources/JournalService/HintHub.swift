import Foundation
import JournalSync

/// Tells connected devices that a zone they see changed (Spec/SYNC.md §7.7): the service calls
/// `changed` after every change it stores; a transport turns each subscription into a channel
/// (server-sent events for `jlog serve`). A hint names the zone and, when the service knows it,
/// the zone's head after the change; a device that gets one fetches that zone unless it holds
/// the head. A slow subscriber loses hints, never correctness: it keeps the newest few, and once
/// it lost one, a hint naming no zone (`*`) follows, which makes it fetch everything.
public final class HintHub: @unchecked Sendable {
    private let lock = NSLock()
    private var subscribers: [String: [UInt64: AsyncStream<ServiceHint>.Continuation]] = [:]
    private var nextID: UInt64 = 0
    /// Set by `finishAll`: a subscription after it ends at once.
    private var finished = false
    /// Hints a subscriber keeps while it is not reading.
    public static let buffered = 16
    /// Subscriptions one account may hold at once (a family's devices, with room for channels
    /// not yet noticed dead): more would let one account hold every connection a server takes.
    public let maxPerAccount: Int

    /// `maxPerAccount` below 1 counts as 1: an account needs at least one subscription.
    public init(maxPerAccount: Int = 32) {
        self.maxPerAccount = max(1, maxPerAccount)
    }

    /// The hints for `account`'s zones (store names, `owner/name`), until the stream is dropped;
    /// nil when the account holds `maxPerAccount` subscriptions already.
    public func subscribe(_ account: String) -> AsyncStream<ServiceHint>? {
        let (stream, continuation) = AsyncStream.makeStream(of: ServiceHint.self, bufferingPolicy: .bufferingNewest(Self.buffered))
        enum Outcome { case subscribed(UInt64), finished, full }
        let outcome: Outcome = lock.withLock {
            guard !finished else { return .finished }
            guard subscribers[account, default: [:]].count < maxPerAccount else { return .full }
            nextID += 1
            subscribers[account, default: [:]][nextID] = continuation
            return .subscribed(nextID)
        }
        let id: UInt64
        switch outcome {
        case .full: return nil
        case .finished:
            continuation.finish()
            return stream
        case .subscribed(let n): id = n
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.lock.withLock {
                self.subscribers[account]?[id] = nil
                if self.subscribers[account]?.isEmpty == true { self.subscribers[account] = nil }
            }
        }
        return stream
    }

    /// Subscriptions open now (for status and tests).
    public var subscriptions: Int { lock.withLock { subscribers.values.reduce(0) { $0 + $1.count } } }

    /// Tells every subscriber of these accounts that `zone` changed, and its head after the
    /// change when known (nil: the subscribers fetch it whatever they hold).
    public func changed(_ zone: String, head: ZoneHead? = nil, for accounts: some Sequence<String>) {
        let targets: [AsyncStream<ServiceHint>.Continuation] = lock.withLock {
            Set(accounts).flatMap { subscribers[$0].map { Array($0.values) } ?? [] }
        }
        for c in targets { Self.send(ServiceHint(zone: zone, head: head), to: c) }
    }

    /// Yields `hint`; when that drops an older one, yields `*` after it, so a subscriber that
    /// lost a zone's hint always finds a full fetch among those it keeps.
    static func send(_ hint: ServiceHint, to c: AsyncStream<ServiceHint>.Continuation) {
        if case .dropped = c.yield(hint), hint.zone != nil { c.yield(.everything) }
    }

    /// Tells every subscriber to fetch, naming no zone (`*`): a node that may have missed other
    /// nodes' changes (its database listener was reconnected, SYNC.md §11.4).
    public func remindAll() {
        let all = lock.withLock { subscribers.values.flatMap(\.values) }
        for c in all { Self.send(.everything, to: c) }
    }

    /// Ends every subscription (the server is stopping).
    public func finishAll() {
        let all = lock.withLock {
            finished = true
            return subscribers.values.flatMap(\.values)
        }
        for c in all { c.finish() }
    }
}

/// One hint of `HintHub`: a zone that changed and its head after the change, or (`zone` nil,
/// written `*`) everything a subscriber sees.
public struct ServiceHint: Sendable, Equatable {
    /// The zone's store name (`owner/name`); nil: every zone.
    public let zone: String?
    /// The zone's head after the change, when the service knew it.
    public let head: ZoneHead?

    /// A hint for one zone.
    public init(zone: String, head: ZoneHead?) {
        self.zone = zone
        self.head = head
    }

    private init() { (zone, head) = (nil, nil) }

    /// Fetch everything (`*`): other nodes' changes may have gone unheard, or hints were lost.
    public static let everything = ServiceHint()
}

import Foundation

/// A store that can tell a waiting task that its feed may have more to say, so a caller need not
/// poll: the writer (`JournalStore`) signals every write that moves its horizon; a reader in
/// another process (`StoreReader`) looks for one by refreshing at an interval (a cheap check: a
/// directory listing and one small read), which is how changes cross processes.
public protocol ChangeNotifying: StoreReading {
    /// Grows whenever the feed may have more to say.
    var changeGeneration: UInt64 { get }
    /// Returns once `changeGeneration` passed `generation`, when the task is cancelled, or when
    /// the store is closed.
    func waitForChange(after generation: UInt64) async
    /// Whether the store was closed: its change streams end.
    var changesEnded: Bool { get }
}

/// Wakes the tasks waiting for a change; the writer bumps it under its lock after each write.
final class ChangeSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var generation: UInt64 = 0
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter: UInt64 = 0
    private var closed = false

    var current: UInt64 { lock.withLock { generation } }
    var isClosed: Bool { lock.withLock { closed } }

    /// The store closed: every waiter wakes, and no wait parks again.
    func close() {
        lock.withLock { closed = true }
        bump()
    }

    func bump() {
        let woken = lock.withLock { () -> [UInt64: CheckedContinuation<Void, Never>] in
            generation &+= 1
            defer { waiters.removeAll() }
            return waiters
        }
        for (_, c) in woken { c.resume() }
    }

    /// A waiter's number, or nil when the generation already moved past `seen`.
    private func ticket(after seen: UInt64) -> UInt64? {
        lock.withLock {
            guard generation == seen, !closed else { return nil }
            nextWaiter &+= 1
            return nextWaiter
        }
    }

    /// Parks `c` unless the generation moved or the task was cancelled meanwhile.
    private func park(_ c: CheckedContinuation<Void, Never>, id: UInt64, after seen: UInt64) {
        let resumeNow = lock.withLock { () -> Bool in
            if generation != seen || closed || Task.isCancelled { return true }
            waiters[id] = c
            return false
        }
        if resumeNow { c.resume() }
    }

    private func cancel(_ id: UInt64) {
        lock.withLock { waiters.removeValue(forKey: id) }?.resume()
    }

    func wait(after seen: UInt64) async {
        guard let id = ticket(after: seen) else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in park(c, id: id, after: seen) }
        } onCancel: {
            cancel(id)
        }
    }
}

extension JournalStore: ChangeNotifying {
    public var changeGeneration: UInt64 { changeSignal.current }
    public var changesEnded: Bool { changeSignal.isClosed }
    public func waitForChange(after generation: UInt64) async { await changeSignal.wait(after: generation) }
}

extension StoreReader: ChangeNotifying {
    public var changeGeneration: UInt64 { changeSignal.current }
    public var changesEnded: Bool { changeSignal.isClosed }

    /// Refreshes every `pollInterval` until something new is there (or the task is cancelled).
    public func waitForChange(after generation: UInt64) async {
        while changeSignal.current == generation && !changeSignal.isClosed && !Task.isCancelled {
            try? await Task.sleep(for: pollInterval)
            refreshAndSignal()
        }
    }

    /// Refreshes, and wakes the reader's waiters when the writer committed more.
    package func refreshAndSignal() {
        if (try? refresh()) == true { changeSignal.bump() }
    }
}

/// The live tail of one zone: pages of committed entries, in order, each entry exactly once,
/// starting after a token; when nothing is new it waits for the store to signal a change.
/// `for try await page in store.changeStream(in: "List-1", since: token)`. It ends when its task
/// is cancelled or its store is closed (`close()`); a feed error (`tokenExpired`, `zoneDeleted`, …) ends it by being thrown, and the
/// caller re-fetches as for any feed call. To see every entry however long it lags, a subscriber
/// registers a consumer and advances it: compaction then never purges what it has not read.
public struct ZoneChangeStream: AsyncSequence, Sendable {
    public typealias Element = ZoneChanges
    let store: any ChangeNotifying
    let zone: String
    let token: FeedToken?
    let limit: Int

    public struct AsyncIterator: AsyncIteratorProtocol {
        let store: any ChangeNotifying
        let zone: String
        var token: FeedToken?
        let limit: Int

        public mutating func next() async throws -> ZoneChanges? {
            while !Task.isCancelled && !store.changesEnded {
                let seen = store.changeGeneration
                let page = try store.changes(in: zone, since: token, limit: limit)
                token = page.token
                if !page.entries.isEmpty { return page }
                await store.waitForChange(after: seen)
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(store: store, zone: zone, token: token, limit: limit) }
}

/// The zones of a store that change: each element is a `changedZones` answer with at least one
/// changed or deleted zone, waiting for the store's signal in between.
public struct DatabaseChangeStream: AsyncSequence, Sendable {
    public typealias Element = DatabaseChanges
    let store: any ChangeNotifying
    let token: FeedToken?

    public struct AsyncIterator: AsyncIteratorProtocol {
        let store: any ChangeNotifying
        var token: FeedToken?

        public mutating func next() async throws -> DatabaseChanges? {
            while !Task.isCancelled && !store.changesEnded {
                let seen = store.changeGeneration
                let changes = try store.changedZones(since: token)
                let first = token == nil
                token = changes.token
                if first || !changes.changed.isEmpty || !changes.deleted.isEmpty { return changes }
                await store.waitForChange(after: seen)
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(store: store, token: token) }
}

extension ChangeNotifying {
    /// The zone's committed entries after `token` (nil: from its start), page by page, waiting for
    /// new ones: see `ZoneChangeStream`.
    public func changeStream(in zone: String, since token: FeedToken?, limit: Int = 1_000) -> ZoneChangeStream {
        ZoneChangeStream(store: self, zone: zone, token: token, limit: limit)
    }

    /// The zones that change after `token` (nil: every live zone first), as they change.
    public func databaseChangeStream(since token: FeedToken?) -> DatabaseChangeStream {
        DatabaseChangeStream(store: self, token: token)
    }
}

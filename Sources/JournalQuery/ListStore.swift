import JournalLog
import ListModel

/// The app's door to a store: every call that touches the disk is `async` and runs on the
/// store's own thread (`JournalStore.executor`), never on the caller's actor (the main actor
/// goes on drawing while an append waits for its fdatasync) and never on Swift's cooperative
/// pool. Lists are observed as async sequences of their state (`observe(_:)`, `observeLists()`).
///
/// `store` is the synchronous core the calls run on, for tools and benchmarks; an app that
/// calls it directly from the main actor blocks it.
///
/// ```swift
/// let lists = try await ListStore.open("shopping.wal")
/// try await lists.append(entry)
/// for try await list in lists.observe(ZoneID(owner: "alice", name: "weekly")!) { model.items = list.items }
/// ```
public final class ListStore: Sendable {
    /// The synchronous core.
    public let store: JournalStore
    /// The thread every call here runs its I/O on.
    public let executor: StoreExecutor

    /// Wraps an open store; its calls run on the store's executor.
    public init(store: JournalStore) {
        self.store = store
        executor = store.executor
    }

    /// Opens (recovering, and creating it if `options` say so) the store at `path` on a thread of
    /// its own, which then stays the store's executor.
    public static func open(_ path: String, options: StoreOptions = StoreOptions()) async throws(JournalError) -> ListStore {
        let executor = StoreExecutor(name: "JournalLog open")
        let store = try await executor.run { () throws(JournalError) -> JournalStore in try JournalStore.open(path, options: options) }
        store.adopt(executor)
        return ListStore(store: store)
    }

    private var query: ListQuery { ListQuery(store: store, fs: store.fileSystem) }

    // MARK: Writing

    /// Appends `entry` under the store's durability (`JournalStore.append(_:)`).
    @discardableResult
    public func append(_ entry: JournalEntry) async throws(JournalError) -> SequenceNumber {
        let store = store
        return try await executor.run { () throws(JournalError) in try store.append(entry) }
    }

    /// Appends `entry` under `durability` (`JournalStore.append(_:durability:)`).
    @discardableResult
    public func append(_ entry: JournalEntry, durability: Durability) async throws(JournalError) -> SequenceNumber {
        let store = store
        return try await executor.run { () throws(JournalError) in try store.append(entry, durability: durability) }
    }

    /// Appends `batch` atomically (`JournalStore.append(batch:)`).
    @discardableResult
    public func append(batch: [JournalEntry]) async throws(JournalError) -> ClosedRange<SequenceNumber> {
        let store = store
        return try await executor.run { () throws(JournalError) in try store.append(batch: batch) }
    }

    /// Makes every append so far durable (`JournalStore.sync()`).
    public func sync() async throws(JournalError) {
        let store = store
        try await executor.run { () throws(JournalError) in try store.sync() }
    }

    /// Closes the store (`JournalStore.close()`): its observations and change streams end.
    public func close() async throws(JournalError) {
        let store = store
        try await executor.run { () throws(JournalError) in try store.close() }
    }

    // MARK: Reading

    /// The list `zone`'s entries after `token` (`JournalStore.changes(in:since:limit:)`).
    public func changes(in zone: ZoneID, since token: FeedToken?, limit: Int = 1_000) async throws(FeedError) -> ZoneChanges {
        try await changes(in: zone.storeName, since: token, limit: limit)
    }

    /// `changes(in:since:limit:)` by the zone's name in the store.
    package func changes(in zone: String, since token: FeedToken?, limit: Int = 1_000) async throws(FeedError) -> ZoneChanges {
        let store = store
        return try await executor.run { () throws(FeedError) in try store.changes(in: zone, since: token, limit: limit) }
    }

    /// The list as it stands (`ListQuery.materialise`).
    public func materialise(_ zone: ZoneID) async throws(QueryError) -> MaterialisedList {
        try await materialise(zone.storeName)
    }

    /// `materialise(_:)` by the zone's name in the store.
    package func materialise(_ zone: String) async throws(QueryError) -> MaterialisedList {
        let query = query
        return try await executor.run { () throws(QueryError) in try query.materialise(zone) }
    }

    /// Writes the list's snapshot (`ListQuery.writeSnapshot`).
    @discardableResult
    public func writeSnapshot(_ zone: ZoneID) async throws(QueryError) -> SnapshotReport {
        try await writeSnapshot(zone.storeName)
    }

    /// `writeSnapshot(_:)` by the zone's name in the store.
    @discardableResult
    package func writeSnapshot(_ zone: String) async throws(QueryError) -> SnapshotReport {
        let query = query
        return try await executor.run { () throws(QueryError) in try query.writeSnapshot(zone) }
    }

    /// Compacts the store as of `now` (`ListCompactor.run`); a store that syncs is refused, as
    /// there.
    public func compact(now: Int64, retentionMillis: Int64 = ListRetention.defaultRetentionMillis) async throws(QueryError) -> ListCompactionReport {
        let query = query
        return try await executor.run { () throws(QueryError) in try ListCompactor(query: query, retentionMillis: retentionMillis).run(now: now) }
    }

    // MARK: Observing

    /// The list's state now, then after every change (`ListObservation`).
    public func observe(_ zone: ZoneID) -> ListObservation { observe(zone.storeName) }

    /// `observe(_:)` by the zone's name in the store.
    package func observe(_ zone: String) -> ListObservation {
        ListObservation(source: store, query: query, zone: zone, executor: executor)
    }

    /// Every list's name, colour and counts now, then after every change (`ListsObservation`).
    public func observeLists() -> ListsObservation {
        ListsObservation(source: store, query: query, executor: executor)
    }
}

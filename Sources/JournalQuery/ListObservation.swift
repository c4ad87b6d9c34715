import JournalLog
import ListModel

/// One list's state as an async sequence: its state now, then a new state after each change
/// (GRDB's `ValueObservation`, for a list). States are coalesced: a consumer slower than the
/// changes gets the newest state, never a backlog. It keeps the list's reducer and applies only
/// the new entries (a compaction under it, which expires its token, loads the list again).
///
/// It works from the writer (`ListStore.observe`) and from a `StoreReader` in another process
/// (an app's widget or share extension: `ListObservation(reader:zone:)`, which polls the log's
/// end). The reads and the reducer run on the store's executor, never on the caller's actor.
/// It ends when its task is cancelled, when the store is closed, and, with the feed's error,
/// when the list is deleted.
public struct ListObservation: AsyncSequence, Sendable {
    public typealias Element = ListState
    public typealias AsyncIterator = AsyncThrowingStream<ListState, any Error>.Iterator

    let source: any ChangeNotifying
    let query: ListQuery
    let zone: String
    let executor: StoreExecutor

    /// Observes the list `zone` through a reader of a store another process writes.
    public init(reader: StoreReader, zone: ZoneID) { self.init(reader: reader, zone: zone.storeName) }

    /// `init(reader:zone:)` by the zone's name in the store.
    package init(reader: StoreReader, zone: String) {
        self.init(source: reader, query: ListQuery(reader: reader), zone: zone, executor: StoreExecutor(name: "JournalLog reader"))
    }

    init(source: any ChangeNotifying, query: ListQuery, zone: String, executor: StoreExecutor) {
        self.source = source
        self.query = query
        self.zone = zone
        self.executor = executor
    }

    public func makeAsyncIterator() -> AsyncIterator {
        let list = ObservedList(query: query, zone: zone)
        return observationStream(source: source, executor: executor, first: { () throws(QueryError) in try list.load() },
                                 next: { () throws(QueryError) in try list.advance() }).makeAsyncIterator()
    }
}

/// What both observations run: `first()` on the executor, then, each time the source changes,
/// `next()` (nil: nothing to tell), the newest value kept for a slow consumer. Ends on
/// cancellation, on the store's close, or with the error `first` or `next` throws.
func observationStream<T: Sendable>(source: any ChangeNotifying, executor: StoreExecutor,
                                    first: @escaping @Sendable () throws(QueryError) -> T,
                                    next: @escaping @Sendable () throws(QueryError) -> T?) -> AsyncThrowingStream<T, any Error> {
    let (stream, continuation) = AsyncThrowingStream.makeStream(of: T.self, bufferingPolicy: .bufferingNewest(1))
    let task = Task {
        do {
            continuation.yield(try await executor.run(first))
            while !Task.isCancelled && !source.changesEnded {
                let seen = source.changeGeneration
                if let value = try await executor.run(next) {
                    continuation.yield(value)
                    continue
                }
                await waitForChange(source, after: seen, executor: executor)
            }
            continuation.finish()
        } catch {
            continuation.finish(throwing: error)
        }
    }
    continuation.onTermination = { _ in task.cancel() }
    return stream
}

/// Waits for `source` to change: the writer signals; a reader is refreshed on `executor` (a
/// directory listing and a small read) every poll interval.
func waitForChange(_ source: any ChangeNotifying, after seen: UInt64, executor: StoreExecutor) async {
    guard let reader = source as? StoreReader else {
        await source.waitForChange(after: seen)
        return
    }
    while reader.changeGeneration == seen && !reader.changesEnded && !Task.isCancelled {
        try? await Task.sleep(for: reader.pollInterval)
        _ = await executor.run { reader.refreshAndSignal() }
    }
}

/// A list's reducer and the token it has read through. Used only on the executor's thread (one
/// piece of work at a time), so it is never copied: an update applies the new entries in place.
final class ObservedList: @unchecked Sendable {
    let query: ListQuery
    let zone: String
    private var reducer = ListReducer(zone: "")
    private var token: FeedToken?

    init(query: ListQuery, zone: String) {
        self.query = query
        self.zone = zone
    }

    /// Loads the list from its newest snapshot and the entries after it.
    func load() throws(QueryError) -> ListState {
        let m = try query.materialisedReducer(zone)
        reducer = m.reducer
        do { token = try query.store.zoneToken(zone, position: m.sequence) } catch { throw .feed(error) }
        return reducer.state()
    }

    /// Applies the entries after the token; the new state, or nil when there were none. A token
    /// a compaction expired loads the list again.
    func advance() throws(QueryError) -> ListState? {
        var changed = false
        while true {
            let page: ZoneChanges
            do { page = try query.store.changes(in: zone, since: token, limit: 4_096) } catch {
                if case .tokenExpired = error { return try load() }
                throw .feed(error)
            }
            if !page.entries.isEmpty {
                reducer.apply(contentsOf: page.entries.map(\.entry))
                changed = true
            }
            token = page.token
            if !page.moreComing { break }
        }
        return changed ? reducer.state() : nil
    }
}

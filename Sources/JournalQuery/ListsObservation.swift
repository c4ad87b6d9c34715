import JournalLog
import ListModel

/// What a screen of lists shows of one list.
public struct ListSummary: Hashable, Sendable {
    /// The list's zone: what identifies it to the store and to sync.
    public var zone: String
    /// The list's name, as its users last set it.
    public var name: String
    /// The list's colour, as its users last set it.
    public var colour: String
    /// Items on the list, marked off or not.
    public var items: Int
    /// Items not marked off.
    public var active: Int

    /// The summary of the list in `zone` whose state is `state`.
    public init(zone: String, state: ListState) {
        self.zone = zone
        name = state.name
        colour = state.colour
        items = state.items.count
        active = state.items.filter { $0.state == .active }.count
    }
}

/// Every list of a store as an async sequence of summaries (by zone name): now, then after each
/// change to any list, coalesced like `ListObservation`. Only the lists that changed are read
/// again (each keeps its reducer); a deleted list leaves the summaries. Runs on the store's
/// executor; ends when its task is cancelled or the store is closed.
public struct ListsObservation: AsyncSequence, Sendable {
    public typealias Element = [ListSummary]
    public typealias AsyncIterator = AsyncThrowingStream<[ListSummary], any Error>.Iterator

    let source: any ChangeNotifying
    let query: ListQuery
    let executor: StoreExecutor

    /// Observes the lists of a store another process writes.
    public init(reader: StoreReader) {
        self.init(source: reader, query: ListQuery(reader: reader), executor: StoreExecutor(name: "JournalLog reader"))
    }

    init(source: any ChangeNotifying, query: ListQuery, executor: StoreExecutor) {
        self.source = source
        self.query = query
        self.executor = executor
    }

    public func makeAsyncIterator() -> AsyncIterator {
        let lists = ObservedLists(query: query)
        return observationStream(source: source, executor: executor, first: { () throws(QueryError) in try lists.advance() ?? [] },
                                 next: { () throws(QueryError) in try lists.advance() }).makeAsyncIterator()
    }
}

/// The lists' reducers and the database token read through; used on the executor's thread only.
final class ObservedLists: @unchecked Sendable {
    let query: ListQuery
    private var lists: [String: (list: ObservedList, summary: ListSummary)] = [:]
    private var token: FeedToken?

    init(query: ListQuery) { self.query = query }

    /// The summaries after the lists that changed since the last call were read; nil when none
    /// did (after the first call, which always answers).
    func advance() throws(QueryError) -> [ListSummary]? {
        let first = token == nil
        let changes: DatabaseChanges
        do { changes = try query.store.changedZones(since: token) } catch { throw .feed(error) }
        token = changes.token
        var changed = first
        for z in changes.deleted where lists.removeValue(forKey: z.name) != nil { changed = true }
        for z in changes.changed where !z.isDeleted {
            do {
                if let known = lists[z.name], let state = try Self.advance(known.list) {
                    lists[z.name] = (known.list, ListSummary(zone: z.name, state: state))
                } else if lists[z.name] == nil {
                    let list = ObservedList(query: query, zone: z.name)
                    lists[z.name] = (list, ListSummary(zone: z.name, state: try list.load()))
                } else {
                    continue
                }
                changed = true
            } catch {
                // Deleted between the listing and the read: it leaves with the next listing.
                if case .feed(.zoneDeleted) = error { continue }
                if case .feed(.zoneNotFound) = error { continue }
                throw error
            }
        }
        guard changed else { return nil }
        return summaries
    }

    var summaries: [ListSummary] {
        lists.values.map(\.summary).sorted { $0.zone.utf8.lexicographicallyPrecedes($1.zone.utf8) }
    }

    /// A known list's new state; a list deleted and made again since its token starts over.
    static func advance(_ list: ObservedList) throws(QueryError) -> ListState? {
        do { return try list.advance() } catch {
            guard case .feed(.zoneDeleted) = error else { throw error }
            return try list.load()
        }
    }
}

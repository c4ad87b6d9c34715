import JournalLog
import JournalQuery
import ListModel

/// One list as an app holds it: typed edits, each checked against the list this device holds
/// (`ListEditError`, through `SyncEngineError.refused`) and written durably through the engine
/// (the item's id, the author and the clock are the engine's, kept across launches), and its
/// state and history, read on the store's own thread. The same whether the list syncs yet or
/// not (`OfflineService` before sign-in).
///
/// ```swift
/// let weekly = try await engine.createList(named: "Weekly")
/// let milk = try await weekly.add("Milk")
/// try await weekly.add("Bread", after: milk)
/// try await weekly.markOff(milk)
/// print(try await weekly.state().items.map(\.text))   // ["Milk", "Bread"]
/// ```
public struct ShoppingList: Sendable, Hashable {
    /// The list's zone: `owner/name`.
    public let zone: ZoneID
    /// The engine its edits go through.
    public let engine: SyncEngine

    /// The list `zone` of `engine` (`SyncEngine.list(_:)` checks it exists).
    init(zone: ZoneID, engine: SyncEngine) {
        self.zone = zone
        self.engine = engine
    }

    public static func == (a: ShoppingList, b: ShoppingList) -> Bool { a.zone == b.zone && a.engine === b.engine }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(zone)
        hasher.combine(ObjectIdentifier(engine))
    }

    // MARK: Edits

    /// Adds an item with `text` after `anchor` (at the head when nil); returns its id.
    /// Refused: empty text, text over `ListEdit.maxTextBytes`, an anchor not on the list.
    @discardableResult
    public func add(_ text: String, after anchor: CompactID? = nil) async throws(SyncEngineError) -> CompactID {
        try await engine.add(text, after: anchor, in: zone)
    }

    /// Adds several items at once (a paste), each after the one before it, the first after
    /// `anchor` (at the head when nil); returns their ids in order. One atomic, durable write:
    /// all of them or, refused (`SyncEngineError.refusedInBatch`), none.
    @discardableResult
    public func add(contentsOf texts: [String], after anchor: CompactID? = nil) async throws(SyncEngineError) -> [CompactID] {
        try await engine.add(contentsOf: texts, after: anchor, in: zone)
    }

    /// Marks `item` off (bought). Refused: an item not on the list.
    public func markOff(_ item: CompactID) async throws(SyncEngineError) {
        try await engine.record(.markOff(item: item), in: zone)
    }

    /// Puts a marked-off `item` back to do. Refused: an item not on the list.
    public func unmark(_ item: CompactID) async throws(SyncEngineError) {
        try await engine.record(.unmark(item: item), in: zone)
    }

    /// Deletes `item` from the list. Refused: an item not on the list.
    public func delete(_ item: CompactID) async throws(SyncEngineError) {
        try await engine.record(.delete(item: item), in: zone)
    }

    /// Moves `item` to just after `anchor` (to the top when nil); the items around it stay where
    /// they are, and items added after it from now on follow it (Spec/MERGE.md §3.5). When two
    /// devices move one item at once, the later move wins on both. Refused: an item or an anchor
    /// not on the list, or an item put after itself.
    public func move(_ item: CompactID, after anchor: CompactID?) async throws(SyncEngineError) {
        try await engine.record(.move(item: item, after: anchor), in: zone)
    }

    /// Renames the list. Refused: an empty name, or one over `ListEdit.maxTextBytes`.
    public func rename(_ name: String) async throws(SyncEngineError) {
        try await engine.record(.rename(name: name), in: zone)
    }

    /// Gives the list another colour. Refused: an empty colour, or one over the limit.
    public func recolour(_ colour: String) async throws(SyncEngineError) {
        try await engine.record(.recolour(colour: colour), in: zone)
    }

    // MARK: Shopping mode (Spec/SYNC.md §7.8)

    /// Starts or ends shopping on this list. While shopping the list stays still: others' new
    /// items wait as `notifications()`, while their mark-offs, unmarks and deletes of items on
    /// screen, and a rename, apply at once. Ending it applies everything held.
    public func setShopping(_ on: Bool) async throws(SyncEngineError) {
        try await engine.setShopping(on, in: zone)
    }

    /// Others' new items held while shopping, oldest first: what the app offers to tap in.
    public func notifications() async -> [PendingNotification] {
        await engine.notifications(in: zone)
    }

    /// Shows the chosen held items (by `PendingNotification.entryID`) now, with the held
    /// changes to them.
    public func applyHeld(_ entryIDs: Set<CompactID>) async throws(SyncEngineError) {
        try await engine.applyHeld(entryIDs, in: zone)
    }

    /// What is held while shopping, by kind.
    public func heldChanges() async -> HeldChanges {
        await engine.heldChanges(in: zone)
    }

    // MARK: Reading

    /// The list as this device holds it now.
    public func state() async throws(SyncEngineError) -> ListState {
        try await engine.state(of: zone)
    }

    /// The list's state now, then after every change, local or synced in (`ListObservation`,
    /// on the store's thread).
    public func observe() -> ListObservation {
        ListStore(store: engine.store).observe(zone)
    }

    /// The list's activity history ("who deleted the milk?"). A list installed from the
    /// service's snapshot holds only what happened since, until its history is fetched: a sync
    /// fetches it once the lists are usable (`SyncEngineOptions.fetchesHistoryAfterRefetch`), and
    /// this call fetches it first when it is still missing (the activity view's first opening), so
    /// it never answers short; offline, that is `SyncEngineError.service(.networkUnavailable)`.
    public func history() async throws(SyncEngineError) -> ActivityLog {
        try await engine.historyFetchingIfMissing(of: zone)
    }
}

extension SyncEngine {
    /// The list `zone` this device syncs, as an app holds it.
    public func list(_ zone: ZoneID) throws(SyncEngineError) -> ShoppingList {
        guard state.zones[zone.storeName] != nil else { throw .noSuchList(zone.storeName) }
        return ShoppingList(zone: zone, engine: self)
    }

    /// Creates a list this account owns, named `name` (`createList(_:)`), as an app holds it.
    public func createList(named name: String) throws(SyncEngineError) -> ShoppingList {
        ShoppingList(zone: try createList(name), engine: self)
    }

    /// Creates a list that stays on this device only until it is shared (Part 5): no sync puts
    /// it on the service; `share(_:with:)` does, with everything recorded in it so far.
    public func createList(named name: String, localOnly: Bool) throws(SyncEngineError) -> ShoppingList {
        let zone = try createList(name)
        if localOnly {
            state.zones[zone.storeName]?.localOnly = true
            try save()
        }
        return ShoppingList(zone: zone, engine: self)
    }

    /// Every list this device syncs, as an app holds them (`lists`).
    public var shoppingLists: [ShoppingList] { lists.map { ShoppingList(zone: $0, engine: self) } }

    /// Adds an item (`ShoppingList.add`): a new id, checked and recorded.
    func add(_ text: String, after anchor: CompactID?, in zone: ZoneID) throws(SyncEngineError) -> CompactID {
        let item = CompactID.random(using: &rng)
        try record(.add(item: item, text: text, after: anchor), in: zone)
        return item
    }

    /// Adds `texts` as items, each after the one before (`ShoppingList.add(contentsOf:after:)`).
    func add(contentsOf texts: [String], after anchor: CompactID?, in zone: ZoneID) throws(SyncEngineError) -> [CompactID] {
        var items: [CompactID] = []
        var operations: [EntryOperation] = []
        var previous = anchor
        for text in texts {
            let item = CompactID.random(using: &rng)
            operations.append(.add(item: item, text: text, after: previous))
            items.append(item)
            previous = item
        }
        try record(operations, in: zone)
        return items
    }

    /// The list as this device holds it (on the store's thread: the engine's executor).
    public func state(of zone: ZoneID) throws(SyncEngineError) -> ListState {
        guard state.zones[zone.storeName] != nil else { throw .noSuchList(zone.storeName) }
        do { return try ListQuery(store: store).materialise(zone.storeName).state } catch { throw Self.queryError(error) }
    }

    /// The list's activity history as this device holds it (on the store's thread).
    public func history(of zone: ZoneID) throws(SyncEngineError) -> ActivityLog {
        guard state.zones[zone.storeName] != nil else { throw .noSuchList(zone.storeName) }
        do { return try ListQuery(store: store).history(zone.storeName).log } catch { throw Self.queryError(error) }
    }

    /// The list's history, its pages fetched first when this device lacks them.
    func historyFetchingIfMissing(of zone: ZoneID) async throws(SyncEngineError) -> ActivityLog {
        guard state.zones[zone.storeName] != nil else { throw .noSuchList(zone.storeName) }
        if ListQuery(store: store).lacksHistoryBeforeBase(zone.storeName) {
            do { try await fetchHistory(zone) } catch { throw .service(error) }
        }
        return try history(of: zone)
    }

    static func queryError(_ error: QueryError) -> SyncEngineError {
        if case .storage(let e) = error { return .storage(e) }
        return .storage(.invalidEntry(error.description))
    }
}

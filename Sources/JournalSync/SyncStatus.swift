import JournalLog

/// A device's sync status and diagnostics (Spec/SYNC.md §7): per list, what is queued each way,
/// its token, and the last error; like Shopping UK's diagnostic log. Read from the engine's state
/// and the store alone, so `jlog sync-status` needs no service and takes no lock.
public struct SyncStatus: Sendable {
    /// One list's sync status.
    public struct List: Sendable {
        /// The list's zone on the service.
        public var zone: ZoneID
        /// Whether this account owns the list (`private`) or it was shared with it (`shared`).
        public var scope: DatabaseScope
        /// Local changes not yet uploaded.
        public var queued: Int
        /// Fetched, not yet in the local log.
        public var toApply: Int
        /// Held back while shopping.
        public var held: Int
        /// Refused by the service for good.
        public var rejected: Int
        /// Shopping mode is on: remote changes are held back from the visible list.
        public var shopping: Bool
        /// The service has changes to the list not fetched yet.
        public var needsFetch: Bool
        /// Being replaced by the service's copy after its token expired.
        public var refetching: Bool
        /// To be fetched anew when it can be (a change refused, or an id in conflict: SYNC.md §7.3).
        public var refetchWanted: Bool
        /// Deleted on this device; the deletion is still to be sent.
        public var pendingDelete: Bool
        /// The service holds the list (a new one is created there by the next push).
        public var existsOnService: Bool
        /// Everything at or below this the service has.
        public var uploadedThrough: SequenceNumber
        /// The service's zone token, as text; nil before the first fetch.
        public var token: String?
        /// The last error syncing the list met, if it has not synced cleanly since.
        public var lastError: String?
        /// `queued` by kind of change (`add`, `markOff`, …; `op0xNN` for an opaque kind).
        public var queuedByKind: [String: Int] = [:]
        /// The oldest queued changes (at most `SyncStatus.maxPendingListed`): what a support screen
        /// lists when a list is stuck.
        public var oldestQueued: [QueuedChange] = []
        /// The list holds changes from a newer version of the app (not shown): update the app.
        public var holdsNewerChanges = false
    }

    /// A local change not yet uploaded, as a diagnostic screen lists it.
    public struct QueuedChange: Sendable, Equatable {
        /// The entry's id.
        public var id: CompactID
        /// The kind of change (`add`, `markOff`, …).
        public var kind: String
        /// The item it concerns; nil for a change to the list itself.
        public var item: CompactID?
        /// When it was made, in milliseconds since 1970 (the device's clock).
        public var since: Int64
        /// The list's last error, which may be why it is still queued; nil if none.
        public var lastError: String?
    }

    /// The most queued changes a list's status lists (`List.oldestQueued`).
    public static let maxPendingListed = 20

    /// This device as the author of its local changes: `account` or `account:device`.
    public var replica: String
    /// The signed-in account; nil when signed out.
    public var account: String?
    /// When the last complete sync finished, in milliseconds since 1970; nil if none has.
    public var lastSync: Int64?
    /// The first error of the last sync ("offline" when the service could not be reached); nil
    /// if it had none.
    public var lastError: String?
    /// The database tokens, as text, by scope (`private`, `shared`).
    public var databaseTokens: [String: String]
    /// Every list this device syncs, in zone-name order.
    public var lists: [List]
    /// Local changes kept across a sign-out.
    public var keptAcrossSignOut: Int

    package init(state: SyncState, store: any StoreReading) {
        replica = state.replica
        account = state.account
        lastSync = state.lastSync
        lastError = state.lastError
        databaseTokens = Dictionary(uniqueKeysWithValues: state.databaseTokens.map { ($0.key.rawValue, $0.value.text) })
        keptAcrossSignOut = state.signedOut.count
        let marks = JournalStore.consumers(store: store.path, fs: store.storeFileSystem).consumers
            .first { $0.name == SyncEngine.consumer }?.marks ?? []
        lists = state.zones.keys.sorted().map { name in
            let z = state.zones[name]!
            let info = store.zone(name)
            let mark = info.flatMap { i in marks.first { $0.zone == name && $0.incarnation == i.incarnation }?.position } ?? 0
            var queued = 0
            var byKind: [String: Int] = [:]
            var oldest: [QueuedChange] = []
            if let info, !info.isDeleted {
                let rejected = Set(z.rejected)
                var token: FeedToken? = mark > 0 ? try? store.zoneToken(name, position: min(mark, info.lastChange)) : nil
                while let page = try? store.changes(in: name, since: token, limit: 4_096) {
                    for e in page.entries.map(\.entry) where e.author == state.replica && !rejected.contains(e.id) {
                        queued += 1
                        byKind[e.operation.name, default: 0] += 1
                        if oldest.count < Self.maxPendingListed {
                            oldest.append(QueuedChange(id: e.id, kind: e.operation.name, item: e.operation.item, since: e.wallTime, lastError: z.lastError))
                        }
                    }
                    token = page.token
                    if !page.moreComing { break }
                }
            }
            var list = List(zone: z.zone, scope: z.scope, queued: queued, toApply: z.toApply.count, held: z.held.count, rejected: z.rejected.count,
                            shopping: z.shopping, needsFetch: z.needsFetch, refetching: z.replacing != nil, refetchWanted: z.refetchWanted,
                            pendingDelete: z.pendingDelete,
                            existsOnService: z.existsOnService, uploadedThrough: mark, token: z.token?.text, lastError: z.lastError)
            list.queuedByKind = byKind
            list.oldestQueued = oldest
            list.holdsNewerChanges = z.holdsNewerChanges
            return list
        }
    }

    /// The status of the store at `path` (its engine's state file), without opening it as a writer.
    public static func read(store path: String) throws(SyncEngineError) -> SyncStatus {
        try read(store: path, fs: PosixFileSystem())
    }

    package static func read(store path: String, fs: any FileSystem) throws(SyncEngineError) -> SyncStatus {
        let file = path + "/" + SyncEngine.stateFile
        guard fs.kind(of: file) == .file else { throw .invalid("\(path) has never synced (no \(SyncEngine.stateFile)); sync it first (`SyncEngine.sync()`)") }
        let state: SyncState
        do { state = try SyncStateCodec.decode(try AtomicFile.read(file, fs: fs, limit: SyncStateCodec.maxFileBytes)) } catch {
            throw .stateDamaged(String(describing: error))
        }
        let reader: StoreReader
        do { reader = try StoreReader.open(path, fileSystem: fs) } catch { throw .storage(error) }
        return SyncStatus(state: state, store: reader)
    }
}

extension SyncStatus {
    /// The diagnostic report, a line each (like Shopping UK's diagnostic log): who this device
    /// is, when it last synced, and per list what is queued each way, its token and last error.
    public func reportLines(now: Int64) -> [String] {
        var lines = ["replica \(replica), account \(account ?? "none (signed out)")"]
        if let lastSync {
            lines.append("last complete sync \(ISO8601Time.format(lastSync)) (\((now - lastSync) / 1000) s ago)")
        } else {
            lines.append("never synced completely")
        }
        if let lastError { lines.append("last error: \(lastError)") }
        for (scope, token) in databaseTokens.sorted(by: { $0.key < $1.key }) { lines.append("\(scope) database token \(token)") }
        if keptAcrossSignOut > 0 { lines.append("\(keptAcrossSignOut) local changes kept across a sign-out, sent after signing in again") }
        if lists.isEmpty { lines.append("no lists") }
        for l in lists {
            var flags: [String] = [l.scope.rawValue]
            if !l.existsOnService { flags.append("not yet on the service") }
            if l.shopping { flags.append("shopping") }
            if l.needsFetch { flags.append("changes to fetch") }
            if l.refetching { flags.append("re-fetching") }
            if l.refetchWanted { flags.append("to be fetched anew (a change was refused, or an id conflicts)") }
            if l.pendingDelete { flags.append("deletion to send") }
            lines.append("\(l.zone.storeName)  (\(flags.joined(separator: ", ")))")
            lines.append("  upload queue \(l.queued), to apply \(l.toApply), held \(l.held), rejected \(l.rejected); uploaded through \(l.uploadedThrough)")
            if !l.queuedByKind.isEmpty {
                lines.append("  queued by kind: " + l.queuedByKind.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
            for q in l.oldestQueued {
                lines.append("  queued \(q.kind) \(q.id)" + (q.item.map { " of item \($0)" } ?? "") + " since \(ISO8601Time.format(q.since))")
            }
            if l.holdsNewerChanges { lines.append("  holds changes from a newer version of the app (kept and synced, not shown)") }
            lines.append("  token \(l.token ?? "none")")
            if let e = l.lastError { lines.append("  last error: \(e)") }
        }
        return lines
    }
}

/// What a list holds back while a person shops (`SyncEngine.heldChanges(in:)`, Spec/SYNC.md
/// §7.8), counted by kind: the app can say "3 new items, 1 change waiting".
public struct HeldChanges: Sendable, Equatable {
    /// Held entries of each kind the list interprets: adds (the notifications), and changes to
    /// items the list does not show yet.
    public var byKind: [EntryOperation.Kind: Int]
    /// Held entries of kinds no list change of this version is (a compaction record, a newer
    /// version's change): they apply when shopping ends.
    public var other: Int
    /// All held entries.
    public var total: Int { byKind.values.reduce(other, +) }

    /// Counts as given.
    public init(byKind: [EntryOperation.Kind: Int], other: Int) {
        self.byKind = byKind
        self.other = other
    }

    /// Counts `held` by kind.
    public init(_ held: [JournalEntry]) {
        var byKind: [EntryOperation.Kind: Int] = [:]
        var other = 0
        for e in held {
            if let kind = EntryOperation.Kind(rawValue: e.operation.kindByte) { byKind[kind, default: 0] += 1 } else { other += 1 }
        }
        self.byKind = byKind
        self.other = other
    }
}

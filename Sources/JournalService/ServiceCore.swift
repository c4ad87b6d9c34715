import Foundation
import JournalLog
import JournalQuery
import JournalSync
import ListModel

/// What one service accepts (Spec/SYNC.md §4): requests over these get `limitExceeded` or
/// `quotaExceeded`, never unbounded work.
public struct ServiceLimits: Sendable {
    /// Entries per upload (CloudKit allows 400 records per modify operation).
    public var maxUploadEntries = 400
    /// Encoded bytes per upload (the entry encodings, FORMAT.md §6).
    public var maxUploadBytes = 1 << 20
    /// Entries per zone-changes page, whatever the client asks.
    public var maxPageEntries = 1_000
    /// Encoded bytes per zone-changes page (the entry encodings, FORMAT.md §6), whatever the
    /// client asks; a page holds at least one entry. A page's wire batch must stay under the 4 MiB
    /// a client takes (`Limits.maxPayloadBytes`): a page bounded by count alone could not, once
    /// a few members uploaded large entries, and every device would fail that page for ever.
    public var maxPageBytes = 2 << 20
    /// Bytes of one zone's encoded history (`fetchZoneHistory`, SYNC.md §3.5), below the 64 MiB a
    /// client takes in one answer: a longer history is refused with the reason, so the device
    /// installs the list without it (and says so) instead of retrying an answer it cannot take.
    public var maxHistoryBytes = 48 << 20
    /// Zones an account may own.
    public var maxZonesPerAccount = 1_000
    /// Entries in the zones an account owns (nil: no quota).
    public var maxEntriesPerAccount: Int? = nil
    /// How long finished lifecycles stay before the service compacts them (COMPACTION.md §2).
    public var retentionMillis: Int64 = ListRetention.defaultRetentionMillis
    /// Entries a compaction plans at once (`ListCompactor.maxEntriesPerGroup`): each group's zones
    /// are answered again as soon as the group is done (SYNC.md §6.2 rule 3). Tests and the
    /// simulation make it small, so that a run has several groups.
    public var compactionGroupEntries = 1_000_000

    /// The default limits; set any field to change it.
    public init() {}
}

/// The reference sync service (Spec/SYNC.md): accounts' private and shared databases over one
/// `JournalStore`, each list a zone named `owner/name`, the feed's tokens, compaction with the
/// retention and snapshots for devices that re-fetch. Every call names its caller; transports
/// (an in-process session, `jlog serve`'s HTTP) authenticate the caller and then call this.
///
/// Thread-safe. The locks, outermost first: `compaction` (changes read it, a compaction writes
/// it), one zone's lock (`changing`: its uploads and membership changes one at a time, so counts
/// and membership stay exact), `accountLocks` (one owner's zone creations), and `lock`, the
/// service's memory, held briefly and **never across a durable write**: a fetch never waits for
/// another call's fsync. Records the service writes itself are appended outside it and applied
/// under it once durable (`PendingWrites` says what fetches do meanwhile).
public final class ServiceCore: @unchecked Sendable {
    /// The store holding every account's zones and the service's own records (`_service/…`).
    public let store: JournalStore
    public let limits: ServiceLimits
    /// Wall-clock milliseconds: the service's time for the entries it writes and for compaction.
    public let now: @Sendable () -> Int64
    /// Whether an account exists (a participant must, to be invited).
    public let accountExists: @Sendable (String) -> Bool
    /// "Zone Z changed", for the accounts that see it (a transport's hint channel).
    public let hints = HintHub()
    /// Guards the service's own state (membership, announcements, the purged-id cache,
    /// counters, pending writes); held briefly, never across a write to the log.
    private let lock = NSLock()
    /// One owner's zone creations at a time, so its zone quota is exact.
    private let accountLocks = (0..<16).map { _ in NSLock() }
    /// The service's own records being appended (under `lock`).
    private var pending = PendingWrites()
    /// Uploads and sharing changes read, compaction writes: a late retry of a purged entry is
    /// recognised because no upload runs while compaction decides what is purged (Spec/SYNC.md §6).
    private let compaction = ReadWriteLock()
    /// One zone's changes at a time (uploads, membership, deletion), so their effects on its
    /// entry count are exact; different zones append concurrently and share fsyncs.
    private let zoneLocks = (0..<64).map { _ in NSLock() }
    private var membership = Membership()
    /// Per zone: the low-water mark its last compaction announced, and the position of that
    /// announcement in `_service/compactions` (a database change for everyone who sees the zone).
    private var announced: [String: (mark: SequenceNumber, at: SequenceNumber)] = [:]
    static let compactionsZone = "_service/compactions"
    static let compactionKind: UInt8 = 0x81
    private var clock = HybridClock()
    private let invitations: InvitationSigner
    /// When the service received what it holds: retention counts from arrival too (rule 9).
    private let arrivals: ArrivalLog
    /// Per zone: ids its history holds that its log no longer does (entries compaction purged):
    /// a late retry of one is acknowledged, never stored again (Spec/SYNC.md §6).
    private var purged: [String: Set<CompactID>] = [:]
    /// Zones a running compaction is purging, from just before it raises their mark until the
    /// service's last raise (Spec/SYNC.md §6.2 rule 3): fetches of them are refused meanwhile.
    private var purging: Set<String> = []
    /// Per zone, the purges begun since the service started: a read that saw its zone's count
    /// change may rest on the log before a purge (its window opened and closed during the read).
    private var purgesBegun: [String: UInt64] = [:]
    /// For tests: called after a fetch's first purge check and after its read, beside which a
    /// test runs a compaction.
    var fetchReadHooks: (afterCheck: @Sendable () -> Void, afterRead: @Sendable () -> Void)?
    /// Upload calls and entries received, and entries stored new (what the simulation measures).
    public private(set) var counters = Counters()

    /// What the service has taken in since it started (what the simulation measures).
    public struct Counters: Sendable, Equatable {
        /// Upload calls, counted once the caller's access to the zone is checked.
        public var uploads = 0
        /// Entries those uploads carried, stored or not.
        public var entriesReceived = 0
        /// Entries stored new: not retries of ones the zone already held.
        public var entriesStored = 0
    }

    /// Throws `ServiceCoreError.notDurable` for a store of durability `none` ("saved" means
    /// durable, Spec/SYNC.md §3.2), and the store's `JournalError` when its state cannot be read.
    public init(store: JournalStore, limits: ServiceLimits = ServiceLimits(), now: @escaping @Sendable () -> Int64,
                accountExists: @escaping @Sendable (String) -> Bool = { SyncNames.accountRefusal($0) == nil }) throws {
        guard store.options.durability != .none else { throw ServiceCoreError.notDurable(path: store.path) }
        self.store = store
        self.limits = limits
        self.now = now
        self.accountExists = accountExists
        invitations = InvitationSigner(key: try ServiceFiles.key(store: store.path, fs: store.fileSystem))
        arrivals = try ArrivalLog(store: store)
        try rebuild()
        // What the store holds had arrived by now, at the latest.
        try arrivals.note(at: now, force: true, write: appendRecord)
    }

    /// Appends one of the service's own records, durably.
    private func appendRecord(_ e: JournalEntry) throws(JournalError) -> SequenceNumber { try store.append(e) }

    /// Membership from `_service/members`, and the marks a crash may have left behind a compaction.
    private func rebuild() throws(JournalError) {
        var token: FeedToken? = nil
        if store.zone(Membership.zone) != nil {
            do {
                while true {
                    let page = try store.changes(in: Membership.zone, since: token, limit: 10_000)
                    for e in page.entries {
                        membership.observe(e.entry, at: e.sequence)
                        clock.observe(e.entry.clock)
                    }
                    token = page.token
                    if !page.moreComing { break }
                }
            } catch { throw JournalError.invalidEntry("the service's membership zone cannot be read: \(error)") }
        }
        token = nil
        if store.zone(Self.compactionsZone) != nil {
            do {
                while true {
                    let page = try store.changes(in: Self.compactionsZone, since: token, limit: 10_000)
                    for e in page.entries {
                        if case .opaque(Self.compactionKind, let body) = e.entry.operation, let (zone, mark) = Self.decodeAnnouncement(body) {
                            announced[zone] = (mark, e.sequence)
                        }
                        clock.observe(e.entry.clock)
                    }
                    token = page.token
                    if !page.moreComing { break }
                }
            } catch { throw JournalError.invalidEntry("the service's compactions zone cannot be read: \(error)") }
        }
        try raiseMarksOfCommittedPurges()
    }

    /// A compaction that committed without its mark being raised (a crash or a failure between
    /// the two) wrote a history file above the mark first: raise it now, so every older token
    /// expires; and one whose raise was not announced yet is announced now (SYNC.md §6.2 rule 8).
    private func raiseMarksOfCommittedPurges() throws(JournalError) {
        for z in store.zones() where !z.isDeleted && !ServiceCore.isSystemZone(z.name) {
            let newest = SnapshotDirectory.list(store: store.path, zone: z.name, incarnation: z.incarnation, kind: .history,
                                                fs: store.fileSystem).first?.sequence ?? 0
            if newest > z.lowWaterMark && newest <= z.lastChange { try store.setLowWaterMark(z.name, to: newest) }
            let mark = store.zone(z.name)?.lowWaterMark ?? 0
            if mark > 0 && mark > lock.withLock({ announced[z.name]?.mark ?? 0 }) { try announceCompaction(z.name, mark: mark) }
        }
    }

    /// Records in `_service/compactions` that `zone` was compacted through `mark`: every device
    /// that sees the zone is told it changed, fetches it, gets `tokenExpired`, and re-fetches.
    /// Appended outside `lock` and applied under it once durable, like a membership change.
    private func announceCompaction(_ zone: String, mark: SequenceNumber) throws(JournalError) {
        var w = ByteWriter()
        w.u8(1)
        w.string(zone)
        w.varint(mark)
        let told = try appendOwnRecord(Self.compactionsZone, kind: Self.compactionKind, body: w.bytes) { at in
            announced[zone] = (mark, at)
            return audience(zone)
        }
        hints.changed(zone, for: told)
    }

    /// Appends one of the service's own records (opaque `kind` in the system zone `zone`) outside
    /// `lock`, and runs `apply` under it with the record's position once it is durable
    /// (`PendingWrites` says what fetches do meanwhile).
    private func appendOwnRecord<T>(_ zone: String, kind: UInt8, body: [UInt8], apply: (SequenceNumber) -> T) throws(JournalError) -> T {
        let record: JournalEntry = lock.withLock {
            let wall = now()
            var record = JournalEntry(id: CompactID("-")!, zone: zone, author: Membership.author, wallTime: wall,
                                      clock: clock.tick(wallMillis: wall), operation: .opaque(kind: kind, body: body))
            record.id = CompactID.derived(from: record)
            pending.begin(assigned: store.nextSequence - 1)
            return record
        }
        let at: SequenceNumber
        do { at = try store.append(record) } catch {
            lock.withLock { pending.end() }
            throw error
        }
        return lock.withLock {
            defer { pending.end() }
            return apply(at)
        }
    }

    static func decodeAnnouncement(_ body: [UInt8]) -> (String, SequenceNumber)? {
        body.withUnsafeBytes { b -> (String, SequenceNumber)? in
            var r = ByteReader(b)
            guard (try? r.u8()) == 1, let zone = try? r.string("zone", limit: Limits.maxZoneBytes), let mark = try? r.varint(), r.isAtEnd else { return nil }
            return (zone, mark)
        }
    }

    static func isSystemZone(_ name: String) -> Bool { name.hasPrefix("_") }
    /// How far ahead of the service's clock an uploaded entry may be dated.
    static let maxClockSkewMillis: Int64 = 86_400_000

    /// The accounts that see `zone`: its owner and its participants.
    private func audience(_ zone: String) -> [String] {
        (ZoneID(storeName: zone).map { [$0.owner] } ?? []) + membership.members(of: zone)
    }

    private func zoneLock(_ zone: String) -> NSLock {
        zoneLocks[Int(truncatingIfNeeded: SipHash24.hash(key: (0, 0), Array(zone.utf8)) % UInt64(zoneLocks.count))]
    }

    /// `body` as a change to `zone`: beside other zones' changes, never beside a compaction.
    private func changing<T>(_ zone: String, _ body: () throws(SyncError) -> T) throws(SyncError) -> T {
        try compaction.reading { () throws(SyncError) -> T in
            let l = zoneLock(zone)
            l.lock()
            defer { l.unlock() }
            return try body()
        }
    }

    private func locked<T>(_ body: () throws(SyncError) -> T) throws(SyncError) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    // MARK: Access

    private enum Access { case owner, member }

    /// The caller's access to a zone, or the answer a caller without it gets: a zone it may not
    /// see answers exactly like one that does not exist; a zone it was removed from, or that was
    /// deleted while it belonged to it, answers `zoneDeleted` with the reason.
    private func access(_ caller: String, _ zone: ZoneID) throws(SyncError) -> (Access, ZoneInfo) {
        let info = store.zone(zone.storeName)
        if zone.owner == caller {
            guard let info else { throw .zoneNotFound }
            if info.isDeleted { throw .zoneDeleted(reason: info.deletionReason == .purged ? .purged : .deleted) }
            return (.owner, info)
        }
        guard let event = membership.latest(caller, in: zone.storeName) else { throw .zoneNotFound }
        guard event.member else { throw .zoneDeleted(reason: event.reason ?? .removed) }
        if let leaving = pending.leave(of: caller, in: zone.storeName) { throw .zoneDeleted(reason: leaving) }
        guard let info, !info.isDeleted else { throw .zoneDeleted(reason: .deleted) }
        return (.member, info)
    }

    // MARK: Calls

    /// Stores the caller's entries in a zone (`SyncService.upload`): idempotent by entry id, and a
    /// late retry of an entry compaction purged is acknowledged, never stored again.
    public func upload(caller: String, entries: [JournalEntry], to zone: ZoneID) throws(SyncError) -> UploadResult {
        try changing(zone.storeName) { () throws(SyncError) -> UploadResult in
            var (result, fresh) = try locked { () throws(SyncError) -> (UploadResult, [JournalEntry]) in
                _ = try access(caller, zone)
                guard !entries.isEmpty else { throw .invalidRequest("an upload holds at least one entry") }
                counters.uploads += 1
                counters.entriesReceived += entries.count
                guard entries.count <= limits.maxUploadEntries else { throw .limitExceeded }
                guard entries.reduce(0, { $0 + Self.encodedBytes($1) }) <= limits.maxUploadBytes else { throw .limitExceeded }
                var result = UploadResult()
                var fresh: [JournalEntry] = []
                let gone = try purgedIDs(zone.storeName)
                let latest = now() + Self.maxClockSkewMillis
                for e in entries {
                    if let why = Self.refusal(e, caller: caller, zone: zone) {
                        result.failed[e.id] = .invalid(why)
                    } else if e.wallTime > latest || e.clock.physicalMillis > UInt64(max(0, latest)) {
                        // A clock far ahead would drag every replica's clock with it (each observes
                        // the hlc), and its entry would never be old enough to compact.
                        result.failed[e.id] = .invalid("the entry's wall time or hybrid clock is more than a day ahead of the service's clock")
                    } else if gone.contains(e.id) {
                        result.saved.append(e.id)   // stored once, then purged: acknowledged
                    } else {
                        fresh.append(e)
                    }
                }
                if let quota = limits.maxEntriesPerAccount, !fresh.isEmpty {
                    let owned = store.zones().filter { !$0.isDeleted && ZoneID(storeName: $0.name)?.owner == zone.owner }
                    let used = owned.reduce(0, { $0 + $1.entryCount })
                    // An id twice in the request is stored once.
                    let ids = Set(fresh.map(\.id))
                    if used + ids.count > quota {
                        // Only when it matters, since it reads the zone: a retry of ids the zone
                        // holds adds nothing, so it is never refused for the quota.
                        if used + ids.count - (try heldIDs(zone.storeName, among: ids)) > quota { throw .quotaExceeded }
                    }
                }
                return (result, fresh)
            }
            // The append runs outside the state lock: concurrent uploads to other zones share fsyncs.
            let before = store.zone(zone.storeName)?.entryCount ?? 0
            while !fresh.isEmpty {
                do throws(JournalError) {
                    try store.append(batch: fresh)
                    result.saved += fresh.map(\.id)
                    break
                } catch .idConflict(_, let id, let at) {
                    result.failed[id] = .conflict("the zone holds entry \(id) with other content" + (at.map { " (stored at \($0))" } ?? ""))
                    fresh.removeAll { $0.id == id }
                } catch .zoneDeleted {
                    throw .zoneDeleted(reason: .deleted)
                } catch {
                    throw .serviceBusy(retryAfter: .seconds(1))
                }
            }
            let stored = max(0, (store.zone(zone.storeName)?.entryCount ?? 0) - before)
            if stored > 0 {
                let told = lock.withLock {
                    counters.entriesStored += stored
                    return audience(zone.storeName)
                }
                hints.changed(zone.storeName, for: told)
                // The entries are saved; a checkpoint that cannot be written only makes a purge later.
                try? arrivals.note(at: now, force: false, write: appendRecord)
            }
            if !result.failed.isEmpty { throw .partialFailure(result) }
            return result
        }
    }

    /// Why the service refuses an entry from `caller` for `zone` (Spec/SYNC.md §3), or nil.
    static func refusal(_ e: JournalEntry, caller: String, zone: ZoneID) -> String? {
        guard e.zone == zone.storeName else { return "the entry names zone \(e.zone), not \(zone.storeName)" }
        guard SyncNames.account(ofAuthor: e.author) == caller else {
            return "the entry's author \(e.author) is not this account (\(caller)) or one of its devices (\(caller):device)"
        }
        switch e.operation {
        case .join, .leave: return "participants join and leave through shares (accept, remove), not by upload"
        case .place: return "place entries are the service's compactor's"
        default: break
        }
        return JournalStore.refusal(e)
    }

    /// A database token: `jdb2.SCOPE.P.` and a store database token (which says whose store and
    /// epoch it is). `SCOPE` binds it to the database it was issued for (SYNC.md §3.3, I2); `P`,
    /// when present, ends a page short of the horizon: the page covered every change through `P`
    /// and nothing after it, and the store token is at or above `P`.
    static let tokenPrefix = "jdb2."

    static func databaseToken(_ scope: DatabaseScope, cursor: SequenceNumber?, base: FeedToken) -> ServiceToken {
        ServiceToken(tokenPrefix + scope.rawValue + "." + (cursor.map { String($0) } ?? "") + "." + base.text)
    }

    /// The position a database token covers through, or nil for none; `tokenExpired` for a token
    /// this store cannot honour (garbled, another store's, from before a restore, another
    /// database's: each sends the client back to a fetch with no token).
    private func databasePosition(_ token: ServiceToken?, scope: DatabaseScope) throws(SyncError) -> SequenceNumber? {
        guard let token else { return nil }
        guard token.text.hasPrefix(Self.tokenPrefix) else { throw .tokenExpired }
        let fields = token.text.dropFirst(Self.tokenPrefix.count).split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0] == scope.rawValue else { throw .tokenExpired }
        var cursor: SequenceNumber? = nil
        if !fields[1].isEmpty {
            guard let p = SequenceNumber(fields[1]) else { throw .tokenExpired }
            cursor = p
        }
        let inner = FeedToken(String(fields[2]))
        // The store checks its own token (signature, epoch, not ahead of it).
        do { _ = try store.changedZones(since: inner) } catch { throw .tokenExpired }
        guard let base = store.databaseTokenPosition(inner) else { throw .tokenExpired }
        guard let cursor else { return base }
        guard cursor <= base else { throw .tokenExpired }
        return cursor
    }

    /// A store database token at the horizon.
    private func headToken() throws(SyncError) -> FeedToken {
        do { return try store.changedZones(since: nil).token } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
    }

    /// Pages by position: every zone of the database that changed after the token is listed at
    /// its **key**, the last position of anything about it (its records, the caller's membership
    /// changes, its compaction announcements). A page holds the `limit` zones of lowest key; when
    /// more follow, its token covers through the last key listed, so a zone not listed yet has
    /// a change after it and is listed by a later page: nothing is skipped. Keys are distinct:
    /// each position is one record, about one zone.
    public func fetchDatabaseChanges(caller: String, scope: DatabaseScope, since token: ServiceToken?, limit: Int) throws(SyncError) -> DatabaseChangesPage {
        try locked { () throws(SyncError) -> DatabaseChangesPage in
            let position = try databasePosition(token, scope: scope)
            // Taken before anything is read: the last page's token covers no more than was read.
            let head = try headToken()
            var items: [String: (key: SequenceNumber, gone: ZoneGoneReason?)] = [:]
            /// The last position in (position, ∞) of the zone's records and announcements, or 0.
            func changedAt(_ z: ZoneInfo) -> SequenceNumber {
                let p = position ?? 0
                let record = position == nil || z.lastChange > p ? z.lastChange : 0
                let announcement = announced[z.name].map { $0.at > p ? $0.at : 0 } ?? 0
                return max(record, announcement)
            }
            switch scope {
            case .private:
                for z in store.zones() {
                    guard let id = ZoneID(storeName: z.name), id.owner == caller else { continue }
                    if let d = z.deletedAt {
                        // A client without a token has nothing to delete.
                        if let position, d > position { items[z.name] = (d, z.deletionReason == .purged ? .purged : .deleted) }
                    } else {
                        let key = changedAt(z)
                        if key > 0 { items[z.name] = (key, nil) }
                    }
                }
            case .shared:
                if let position {
                    // The caller's latest membership change after the token decides for its zone.
                    for name in Set(membership.events(of: caller, after: position, through: .max).map(\.zone)) {
                        guard let e = membership.latest(caller, in: name) else { continue }
                        let info = store.zone(name)
                        if !e.member {
                            // Keyed by the leave alone: what the zone did after it is none of
                            // the caller's business, and a page's key is visible in its token.
                            items[name] = (e.sequence, e.reason ?? .removed)
                            continue
                        }
                        let key = max(e.sequence, info.map(changedAt) ?? 0)
                        if info?.isDeleted != false {
                            items[name] = (key, .deleted)
                        } else {
                            items[name] = (key, nil)
                        }
                    }
                    for name in membership.zones(of: caller) where items[name] == nil {
                        guard let info = store.zone(name) else { continue }
                        if let d = info.deletedAt {
                            if d > position { items[name] = (d, .deleted) }
                        } else {
                            let key = changedAt(info)
                            if key > 0 { items[name] = (key, nil) }
                        }
                    }
                } else {
                    for name in membership.zones(of: caller) {
                        guard let info = store.zone(name), !info.isDeleted else { continue }
                        items[name] = (max(changedAt(info), membership.latest(caller, in: name)?.sequence ?? 0), nil)
                    }
                }
            }
            let ordered = items.compactMap { name, v in ZoneID(storeName: name).map { (id: $0, key: v.key, gone: v.gone) } }
                .sorted { ($0.key, $0.id.storeName) < ($1.key, $1.id.storeName) }
            let page = max(1, limit)
            let listed = ordered.prefix(page)
            let moreComing = ordered.count > page
            let headPosition = store.databaseTokenPosition(head) ?? 0
            var cursor = moreComing ? listed.last?.key : nil
            // The service's own records being written are not in memory yet: the page covers
            // nothing from the first of them on, and the next page reads them (PendingWrites).
            if let floor = pending.floor, floor < (cursor ?? headPosition) { cursor = floor }
            var next = Self.databaseToken(scope, cursor: nil, base: head)
            if let cursor {
                // A store token at or above the cursor names the store and epoch.
                let base = cursor <= headPosition ? head : try headToken()
                next = Self.databaseToken(scope, cursor: cursor, base: base)
            }
            return DatabaseChangesPage(changed: listed.filter { $0.gone == nil }.map(\.id).sorted(),
                                       deleted: listed.compactMap { i in i.gone.map { ZoneGone(zone: i.id, reason: $0) } }.sorted { $0.zone < $1.zone },
                                       token: next, moreComing: moreComing)
        }
    }

    /// A zone's entries after `token`, in pages held to the limits' entries and bytes
    /// (`SyncService.fetchZoneChanges`); refused for a moment while the zone is purged.
    public func fetchZoneChanges(caller: String, zone: ZoneID, since token: ServiceToken?, limit: Int) throws(SyncError) -> ZoneChangesPage {
        let begun = try locked { () throws(SyncError) -> UInt64 in
            _ = try access(caller, zone)
            return try unpurged(zone)
        }
        fetchReadHooks?.afterCheck()
        do {
            var page: ZoneChanges
            do throws(FeedError) {
                page = try store.changes(in: zone.storeName, since: token.map { FeedToken($0.text) },
                                         limit: max(1, min(limit, limits.maxPageEntries)), expiry: .issuedUnderAnOlderMark)
            } catch { throw fetchError(error, zone) }
            if let fit = Self.entriesWithin(limits.maxPageBytes, page.entries.lazy.map(\.entry)), fit < page.entries.count {
                // Over the page's bytes: the same read, cut where the bytes run out, so that the
                // token is the one after the last entry sent.
                do throws(FeedError) {
                    page = try store.changes(in: zone.storeName, since: token.map { FeedToken($0.text) }, limit: fit,
                                             expiry: .issuedUnderAnOlderMark)
                } catch { throw fetchError(error, zone) }
            }
            fetchReadHooks?.afterRead()
            // A purge that began while the page was read may have raised the mark the page's
            // token carries as its floor, and read it from the log before the rewrite: that token
            // would outlive the purge, even when the whole run ended during the read.
            _ = try locked { () throws(SyncError) in try unpurged(zone, since: begun) }
            return ZoneChangesPage(zone: zone, entries: page.entries.map(\.entry), token: ServiceToken(page.token.text), moreComing: page.moreComing)
        }
    }

    /// What a fetch answers for what the feed said.
    private func fetchError(_ error: FeedError, _ zone: ZoneID) -> SyncError {
        switch error {
        case .tokenExpired, .invalidToken: return .tokenExpired
        case .zoneDeleted:
            // The token's incarnation was deleted; a newer one is live: start it over.
            if store.zone(zone.storeName)?.isDeleted == false { return .tokenExpired }
            return .zoneDeleted(reason: .deleted)
        case .zoneNotFound: return .zoneNotFound
        case .invalidLimit(let n): return .invalidRequest("a page holds at least one entry (limit \(n))")
        case .storage: return .serviceBusy(retryAfter: .seconds(1))
        }
    }

    /// An entry's encoded bytes (FORMAT.md §6): what upload and page limits count.
    public static func encodedBytes(_ e: JournalEntry) -> Int {
        var c = ByteCounter()
        withUnsafePointer(to: e) { EntryCodec.encode($0, into: &c) }
        return c.count
    }

    /// How many of `entries`, from the first, fit in `bytes` (at least one); nil when all do.
    static func entriesWithin(_ bytes: Int, _ entries: some Sequence<JournalEntry>) -> Int? {
        var total = 0, n = 0
        for e in entries {
            total += encodedBytes(e)
            if total > bytes { return max(1, n) }
            n += 1
        }
        return nil
    }

    /// Refuses, for a moment, a fetch of a zone being purged, or one that a purge began since
    /// `begun` (SYNC.md §6.2 rule 3); returns the zone's count of purges begun. Under `lock`.
    private func unpurged(_ zone: ZoneID, since begun: UInt64? = nil) throws(SyncError) -> UInt64 {
        let count = purgesBegun[zone.storeName] ?? 0
        if purging.contains(zone.storeName) || begun.map({ $0 != count }) == true { throw .serviceBusy(retryAfter: .seconds(1)) }
        return count
    }

    /// The zone's activity history, encoded (`SyncService.fetchZoneHistory`): empty when the
    /// zone was never compacted.
    public func fetchZoneHistory(caller: String, zone: ZoneID) throws(SyncError) -> [UInt8] {
        let (info, begun) = try locked { () throws(SyncError) in
            let (_, info) = try access(caller, zone)
            return (info, try unpurged(zone))
        }
        guard info.lowWaterMark > 0 else { return [] }
        let log: ActivityLog
        do throws(QueryError) { log = try ListQuery(store: store, fs: store.fileSystem).history(zone.storeName).log } catch {
            switch error {
            case .historyIncomplete(_, let why):
                // Not transient: a history file is missing or damaged, and only an operator can
                // repair it (COMPACTION.md §4). Retrying would never end.
                throw Self.historyUnavailable(zone.storeName, why)
            case .feed(.zoneNotFound), .feed(.zoneDeleted): throw .zoneNotFound
            case .storage(let e), .feed(.storage(let e)):
                // A failed read may pass; damage in the log is the operator's, as above.
                if case .io = e { throw .serviceBusy(retryAfter: .seconds(1)) }
                throw Self.historyUnavailable(zone.storeName, e.description)
            default: throw .serviceBusy(retryAfter: .seconds(1))  // a compaction overtook the read
            }
        }
        // The pieces are read before the log: a purge that began meanwhile may have moved what
        // the log held into a piece this read did not see.
        _ = try locked { () throws(SyncError) in try unpurged(zone, since: begun) }
        let bytes = ActivityLogCodec.encode(log)
        guard bytes.count <= limits.maxHistoryBytes else {
            throw Self.historyUnavailable(zone.storeName, "it is \(bytes.count) bytes, over the \(limits.maxHistoryBytes) one answer may carry")
        }
        return bytes
    }

    /// Creates a zone the caller owns (`SyncService.createZone`): idempotent, within the
    /// account's zone quota.
    public func createZone(caller: String, zone: ZoneID) throws(SyncError) {
        guard zone.owner == caller else { throw .invalidRequest("an account creates zones it owns (\(caller)/…) only") }
        try changing(zone.storeName) { () throws(SyncError) in
            let l = accountLocks[Int(truncatingIfNeeded: SipHash24.hash(key: (0, 1), Array(caller.utf8)) % UInt64(accountLocks.count))]
            l.lock()
            defer { l.unlock() }
            if let info = store.zone(zone.storeName), !info.isDeleted { return }
            let owned = store.zones().filter { !$0.isDeleted && ZoneID(storeName: $0.name)?.owner == caller }.count
            guard owned < limits.maxZonesPerAccount else { throw .quotaExceeded }
            do { try store.createZone(zone.storeName) } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
            hints.changed(zone.storeName, for: [caller])
        }
    }

    /// Deletes a zone the caller owns (`SyncService.deleteZone`): its participants leave with it,
    /// so a zone created again under the name is not shared.
    public func deleteZone(caller: String, zone: ZoneID) throws(SyncError) {
        try changing(zone.storeName) { () throws(SyncError) in
            let (told, members) = try locked { () throws(SyncError) -> ([String], [String]) in
                let (kind, _) = try access(caller, zone)
                guard kind == .owner else { throw .invalidRequest("only the owner deletes a zone; a participant leaves it (removeParticipant)") }
                return (audience(zone.storeName), membership.members(of: zone.storeName))
            }
            // Participants leave with it, so a list created again under the name is not shared.
            for p in members { try recordMembership(p, zone: zone, member: false, reason: .deleted, by: caller) }
            do { try store.deleteZone(zone.storeName) } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
            lock.withLock { purged[zone.storeName] = nil }
            hints.changed(zone.storeName, for: told)
        }
    }

    /// The owner's signed invitation of `participant` to a zone (`SyncService.shareZone`).
    public func shareZone(caller: String, zone: ZoneID, with participant: String) throws(SyncError) -> ShareInvitation {
        try locked { () throws(SyncError) -> ShareInvitation in
            let (kind, info) = try access(caller, zone)
            guard kind == .owner else { throw .invalidRequest("only the owner shares a zone") }
            guard participant != caller, accountExists(participant) else { throw .invalidRequest("no account named \(participant) to share with") }
            return invitations.issue(.init(zone: zone.storeName, incarnation: info.incarnation, participant: participant, issuedAt: store.horizon))
        }
    }

    /// Joins the caller to the zone its invitation names (`SyncService.acceptShare`), recorded
    /// as a `join` entry in the zone.
    public func acceptShare(caller: String, invitation: ShareInvitation) throws(SyncError) -> ZoneID {
        guard let i = invitations.parse(invitation), let zone = ZoneID(storeName: i.zone) else {
            throw .invalidRequest("not an invitation of this service")
        }
        // Membership changes of one zone run one at a time (`changing`): nothing of the zone's
        // membership changes between the checks and the join.
        return try changing(zone.storeName) { () throws(SyncError) -> ZoneID in
            let joined = try locked { () throws(SyncError) -> Bool in
                guard i.participant == caller else { throw .zoneNotFound }
                guard let info = store.zone(i.zone), !info.isDeleted, info.incarnation == i.incarnation else { throw .zoneNotFound }
                if let last = membership.latest(caller, in: i.zone) {
                    if last.member { return true }
                    guard i.issuedAt >= last.sequence else { throw .zoneNotFound }   // issued before its removal
                }
                guard !membership.isWithdrawn(caller, from: i.zone, issuedAt: i.issuedAt) else { throw .zoneNotFound }
                return false
            }
            if !joined { try recordMembership(caller, zone: zone, member: true, reason: nil, by: caller) }
            return zone
        }
    }

    /// Removes a participant, or lets one leave (`SyncService.removeParticipant`), recorded as a
    /// `leave` entry; the owner naming one not yet a member withdraws its invitations.
    public func removeParticipant(caller: String, participant: String, from zone: ZoneID) throws(SyncError) {
        try changing(zone.storeName) { () throws(SyncError) in
            let (kind, isMember) = try locked { () throws(SyncError) -> (Access, Bool) in
                let (kind, _) = try access(caller, zone)
                guard kind == .owner || participant == caller else { throw .invalidRequest("only the owner removes another participant") }
                return (kind, membership.isMember(participant, of: zone.storeName))
            }
            guard isMember else {
                // Not a member (yet): the owner withdraws any invitation it holds.
                if kind == .owner { try recordWithdrawal(of: participant, from: zone) }
                return
            }
            try recordMembership(participant, zone: zone, member: false, reason: .removed, by: caller)
        }
    }

    /// Removes every participant of a zone the caller owns and voids every invitation issued so
    /// far (`SyncService.stopSharing`).
    public func stopSharing(caller: String, zone: ZoneID) throws(SyncError) {
        try changing(zone.storeName) { () throws(SyncError) in
            let members = try locked { () throws(SyncError) -> [String] in
                let (kind, _) = try access(caller, zone)
                guard kind == .owner else { throw .invalidRequest("only the owner stops sharing a zone") }
                return membership.members(of: zone.storeName)
            }
            for p in members { try recordMembership(p, zone: zone, member: false, reason: .sharingStopped, by: caller) }
            try recordWithdrawal(of: nil, from: zone)
        }
    }

    /// One atomic batch: the `join`/`leave` entry in the shared zone (its history shows it) and
    /// the membership record in `_service/members` (what the service answers from). Appended
    /// outside `lock`, applied under it once durable; a leave takes the account's access away
    /// before it is written.
    private func recordMembership(_ account: String, zone: ZoneID, member: Bool, reason: ZoneGoneReason?, by actor: String) throws(SyncError) {
        let batch: [JournalEntry] = lock.withLock {
            let wall = now()
            let t1 = clock.tick(wallMillis: wall), t2 = clock.tick(wallMillis: wall)
            var visible = JournalEntry(id: CompactID("-")!, zone: zone.storeName, author: actor, wallTime: wall, clock: t1,
                                       operation: member ? .join(participant: account) : .leave(participant: account))
            visible.id = CompactID.derived(from: visible)
            var record = JournalEntry(id: CompactID("-")!, zone: Membership.zone, author: Membership.author, wallTime: wall, clock: t2,
                                      operation: .opaque(kind: Membership.kind, body: Membership.encode(account: account, zone: zone.storeName,
                                                                                                         member: member, reason: reason)))
            record.id = CompactID.derived(from: record)
            pending.begin(assigned: store.nextSequence - 1, leaving: member ? nil : account, zone: zone.storeName, reason: reason ?? .removed)
            return [visible, record]
        }
        let leaving = member ? nil : account
        let range: ClosedRange<SequenceNumber>
        do { range = try store.append(batch: batch) } catch {
            lock.withLock { pending.end(leaving: leaving, zone: zone.storeName) }
            throw .serviceBusy(retryAfter: .seconds(1))
        }
        let told: [String] = lock.withLock {
            let told = audience(zone.storeName) + [account]
            membership.record(.init(account: account, zone: zone.storeName, member: member, reason: member ? nil : reason, sequence: range.upperBound))
            pending.end(leaving: leaving, zone: zone.storeName)
            return told
        }
        hints.changed(zone.storeName, for: told)
    }

    /// Voids the invitations to `zone` issued so far, to `account` or to every account
    /// (SYNC.md §5.3): a record of `_service/members` alone, since nobody's membership changes.
    private func recordWithdrawal(of account: String?, from zone: ZoneID) throws(SyncError) {
        do {
            try appendOwnRecord(Membership.zone, kind: Membership.withdrawalKind,
                                body: Membership.encodeWithdrawal(zone: zone.storeName, account: account)) { at in
                membership.withdraw(account, from: zone.storeName, at: at)
            }
        } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
    }

    // MARK: Compaction

    /// The service's compaction (Spec/SYNC.md §6): only zones whose last change is above their
    /// low-water mark, so that raising the mark afterwards expires every token issued before,
    /// and every device adopts the compacted copy.
    @discardableResult
    public func compact(now time: Int64) throws(SyncError) -> ListCompactionReport {
        // Uploads and sharing changes wait for it; fetches go on, but for those of a zone being
        // purged (`purging`), which are refused from just before its mark rises to the last raise.
        try compaction.writing { () throws(SyncError) -> ListCompactionReport in
            var compactor = ListCompactor(store: store, fs: store.fileSystem, retentionMillis: limits.retentionMillis)
            compactor.isTheSyncService = true
            compactor.zoneFilter = { z in !ServiceCore.isSystemZone(z.name) && z.lastChange > z.lowWaterMark }
            compactor.maxEntriesPerGroup = limits.compactionGroupEntries
            // Nothing that arrived after the cutoff goes, whatever its own time says (rule 9).
            // Stamped with the service's clock, not the run's `time`: a run dated in the past must
            // not claim arrivals earlier than they were.
            do { try arrivals.note(at: now, force: true, write: appendRecord) } catch { throw .serviceBusy(retryAfter: .seconds(60)) }
            compactor.arrivedThrough = arrivals.arrived(by: time - limits.retentionMillis)
            arrivals.forget(before: time - limits.retentionMillis)
            compactor.purgeWillBegin = { [self] zone in
                lock.lock()
                purging.insert(zone)
                purgesBegun[zone, default: 0] += 1
                lock.unlock()
            }
            // A group's zones are final once its snapshots are written: their marks rise and
            // their fetches are answered while later groups run. A raise that fails leaves the
            // zone refused; the end of the run tries again.
            compactor.groupDidFinish = { [self] zones in
                for z in zones {
                    do {
                        try finishPurge(z)
                        _ = lock.withLock { purging.remove(z.zone) }
                    } catch {}
                }
            }
            // `purging` is cleared once every mark is raised. A run that failed may have committed
            // a rewrite first: its marks are raised as a restart would (rule 8) before fetches
            // of its zones are answered again; if even that fails, they stay refused until a run
            // or a restart succeeds.
            let report: ListCompactionReport
            do { report = try compactor.run(now: time) } catch {
                // Which zones it purged is not known: every cache of purged ids is read again.
                lock.withLock { purged.removeAll() }
                do {
                    try raiseMarksOfCommittedPurges()
                    lock.withLock { purging.removeAll() }
                } catch {}
                throw .serviceBusy(retryAfter: .seconds(60))
            }
            for z in report.zones {
                do { try finishPurge(z) } catch { throw .serviceBusy(retryAfter: .seconds(60)) }
            }
            lock.withLock { purging.removeAll() }
            return report
        }
    }

    /// Once a zone's purge is complete (not under `lock`: it writes): forgets its cached purged
    /// ids, raises its mark to the run's snapshot sequence (rule 4) and announces it (rule 5).
    /// Idempotent.
    private func finishPurge(_ z: ZoneCompaction) throws(JournalError) {
        lock.withLock { purged[z.zone] = nil }
        guard let info = store.zone(z.zone), !info.isDeleted else { return }
        if z.snapshotSequence > info.lowWaterMark { try store.setLowWaterMark(z.zone, to: z.snapshotSequence) }
        let mark = store.zone(z.zone)?.lowWaterMark ?? 0
        if mark > lock.withLock({ announced[z.zone]?.mark ?? 0 }) { try announceCompaction(z.zone, mark: mark) }
    }

    /// A zone's history cannot be assembled (COMPACTION.md §4): not transient, an operator's to
    /// repair, so `invalidRequest` (CloudKit's `.internalError`), never `serviceBusy`.
    static func historyUnavailable(_ zone: String, _ why: String) -> SyncError {
        .invalidRequest("the service cannot assemble the history of \(zone) (\(why)): its operator must repair it")
    }

    /// How many of `ids` the zone's live incarnation holds.
    private func heldIDs(_ zone: String, among ids: Set<CompactID>) throws(SyncError) -> Int {
        var held = 0
        var token: FeedToken? = nil
        do throws(FeedError) {
            while true {
                let page = try store.changes(in: zone, since: token, limit: 10_000)
                for e in page.entries where ids.contains(e.entry.id) { held += 1 }
                token = page.token
                if !page.moreComing { break }
            }
        } catch {
            if case .storage = error { throw .serviceBusy(retryAfter: .seconds(1)) }
            return 0
        }
        return held
    }

    /// Ids the zone's history holds and its log does not: what compaction purged.
    private func purgedIDs(_ zone: String) throws(SyncError) -> Set<CompactID> {
        if let known = purged[zone] { return known }
        guard let info = store.zone(zone), info.lowWaterMark > 0 else { return [] }
        let q = ListQuery(store: store, fs: store.fileSystem)
        do {
            let history = try q.storedHistory(zone).log
            var ids = Set(history.allEvents().map(\.entryID))
            for (_, e) in try q.entries(zone).entries { ids.remove(e.id) }
            purged[zone] = ids
            return ids
        } catch {
            // Without the history a late retry of a purged entry cannot be told from a new one
            // (§6.2 rule 7); only an operator can repair it, so no retry is asked for.
            if case .historyIncomplete(_, let why) = error { throw Self.historyUnavailable(zone, why) }
            throw .serviceBusy(retryAfter: .seconds(1))
        }
    }

    /// Who belongs to a zone now (for tests and diagnostics).
    public func members(of zone: ZoneID) -> [String] { lock.withLock { membership.members(of: zone.storeName) } }
}

/// Why a `ServiceCore` does not start over a store.
public enum ServiceCoreError: Error, Sendable, CustomStringConvertible {
    /// The store's durability is `none`: an upload would be answered `saved` before it is on disk.
    case notDurable(path: String)

    public var description: String {
        switch self {
        case .notDurable(let path):
            "the store \(path) is opened with durability none: a sync service acknowledges only what is on disk; open it with durability always or onBatch"
        }
    }
}

/// The service's own files beside its store: `service/invite.key`, which signs invitations.
enum ServiceFiles {
    /// The invitation key: `service/invite.key`, in the store key's format (16 random bytes and
    /// their CRC32C, written atomically).
    static func key(store: String, fs: any FileSystem) throws(JournalError) -> (UInt64, UInt64) {
        try StoreKey.loadOrCreate(file: store + "/" + StoreLayout.serviceDirectory + "/invite.key", fs: fs)
    }
}

import JournalLog
import JournalQuery
import JournalSync
import ListModel

/// The service's reads (`SyncService.fetchDatabaseChanges`, `.fetchZoneChanges`,
/// `.fetchZoneHistory`): database pages keyed by position, zone pages held to the limits, and
/// the refusals while a zone is purged (Spec/SYNC.md §3.3–§3.5, §6.2 rule 3).
struct ServiceFeed: Sendable {
    let context: ServiceContext
    private var store: any ServiceStorage { context.store }

    /// Pages by position: every zone of the database that changed after the token is listed at
    /// its **key**, the last position of anything about it (its records, the caller's membership
    /// changes, its compaction announcements). A page holds the `limit` zones of lowest key; when
    /// more follow, its token covers through the last key listed, so a zone not listed yet has
    /// a change after it and is listed by a later page: nothing is skipped. Keys are distinct:
    /// each position is one record, about one zone.
    func fetchDatabaseChanges(caller: String, scope: DatabaseScope, since token: ServiceToken?, limit: Int) throws(SyncError) -> DatabaseChangesPage {
        // What the storage says is read before the memory's lock: over a shared database each read
        // is a round trip, and the lock is every call's.
        let position = try databasePosition(token, scope: scope)
        // Taken before anything is read: the last page's token covers no more than was read.
        let head = try headToken()
        // Membership can change between the read and the lock: the page is built only when
        // every zone it may name was read, else read again.
        for _ in 0..<4 {
            let known = try readZones(caller: caller, scope: scope, after: position)
            if let page = try context.locked({ () throws(SyncError) -> DatabaseChangesPage? in
                guard scope == .private || sharedNames(caller, after: position).isSubset(of: known.keys) else { return nil }
                return try page(caller: caller, scope: scope, after: position, head: head, limit: limit, known: known)
            }) { return page }
        }
        throw .serviceBusy(retryAfter: .seconds(1))
    }

    /// The zones a page of `scope` may name, read before the memory's lock (over a shared database
    /// each read is a round trip, and the lock is every call's). A storage that does not answer
    /// is never taken for one without zones: the token would move past their changes.
    private func readZones(caller: String, scope: DatabaseScope, after position: SequenceNumber?) throws(SyncError) -> [String: ZoneInfo?] {
        var known: [String: ZoneInfo?] = [:]
        do throws(StorageError) {
            if scope == .private {
                for z in try store.zones(ownedBy: caller) { known[z.name] = z }
            } else {
                for name in context.locked({ sharedNames(caller, after: position) }) { known[name] = .some(try store.zoneInfo(name)) }
            }
        } catch { throw error.syncError }
        return known
    }

    /// The zones shared with the caller now or whose membership of it changed after `position`.
    /// Under `lock`.
    private func sharedNames(_ caller: String, after position: SequenceNumber?) -> Set<String> {
        Set(context.membership.zones(of: caller)).union(context.membership.events(of: caller, after: position ?? 0, through: .max).map(\.zone))
    }

    /// One page from the zones `known` (every one it may name). Under `lock`.
    private func page(caller: String, scope: DatabaseScope, after position: SequenceNumber?, head: FeedToken, limit: Int,
                      known: [String: ZoneInfo?]) throws(SyncError) -> DatabaseChangesPage {
        let zone = { (name: String) -> ZoneInfo? in known[name] ?? nil }
        let items = scope == .private ? privateItems(caller, after: position, owned: known.values.compactMap { $0 })
                                      : sharedItems(caller, after: position, zone: zone)
        let ordered = items.compactMap { name, v in ZoneID(storeName: name).map { (id: $0, key: v.key, gone: v.gone) } }
            .sorted { ($0.key, $0.id.storeName) < ($1.key, $1.id.storeName) }
        let page = max(1, limit)
        let listed = ordered.prefix(page)
        let moreComing = ordered.count > page
        let headPosition = store.databasePosition(head) ?? 0
        var cursor = moreComing ? listed.last?.key : nil
        // The service's own records being written are not in memory yet: the page covers
        // nothing from the first of them on, and the next page reads them (PendingWrites).
        if let floor = context.pending.floor, floor < (cursor ?? headPosition) { cursor = floor }
        var next = DatabaseToken(scope: scope, cursor: nil, store: head)
        if let cursor {
            // A store token at or above the cursor names the store and epoch.
            next = DatabaseToken(scope: scope, cursor: cursor, store: cursor <= headPosition ? head : try headToken())
        }
        let changed = listed.filter { $0.gone == nil }.map(\.id).sorted()
        // Each changed zone's head as it stands: a device holding it has every change.
        var heads: [ZoneID: ZoneHead] = [:]
        for z in changed { if let info = zone(z.storeName), !info.isDeleted { heads[z] = ZoneHeads.of(info) } }
        return DatabaseChangesPage(changed: changed,
                                   deleted: listed.compactMap { i in i.gone.map { ZoneGone(zone: i.id, reason: $0) } }.sorted { $0.zone < $1.zone },
                                   token: next.serviceToken, moreComing: moreComing, heads: heads)
    }

    /// One zone of a database page: its key, and why it is gone (nil: changed).
    private typealias Item = (key: SequenceNumber, gone: ZoneGoneReason?)

    /// The last position in (position, ∞) of the zone's records and announcements, or 0.
    private func changedAt(_ z: ZoneInfo, after position: SequenceNumber?) -> SequenceNumber {
        let p = position ?? 0
        let record = position == nil || z.lastChange > p ? z.lastChange : 0
        let announcement = context.announced[z.name].map { $0.at > p ? $0.at : 0 } ?? 0
        return max(record, announcement)
    }

    /// The zones of the caller's own database changed or gone after `position`. Under `lock`.
    private func privateItems(_ caller: String, after position: SequenceNumber?, owned: [ZoneInfo]) -> [String: Item] {
        var items: [String: Item] = [:]
        for z in owned {
            guard let id = ZoneID(storeName: z.name), id.owner == caller else { continue }
            if let d = z.deletedAt {
                // A client without a token has nothing to delete.
                if let position, d > position { items[z.name] = (d, z.deletionReason == .purged ? .purged : .deleted) }
            } else {
                let key = changedAt(z, after: position)
                if key > 0 { items[z.name] = (key, nil) }
            }
        }
        return items
    }

    /// The zones shared with the caller changed, gone or left after `position`. Under `lock`.
    private func sharedItems(_ caller: String, after position: SequenceNumber?, zone: (String) -> ZoneInfo?) -> [String: Item] {
        let membership = context.membership
        var items: [String: Item] = [:]
        guard let position else {
            for name in membership.zones(of: caller) {
                guard let info = zone(name), !info.isDeleted else { continue }
                items[name] = (max(changedAt(info, after: nil), membership.latest(caller, in: name)?.sequence ?? 0), nil)
            }
            return items
        }
        // The caller's latest membership change after the token decides for its zone.
        for name in Set(membership.events(of: caller, after: position, through: .max).map(\.zone)) {
            guard let e = membership.latest(caller, in: name) else { continue }
            let info = zone(name)
            if !e.member {
                // Keyed by the leave alone: what the zone did after it is none of the caller's
                // business, and a page's key is visible in its token.
                items[name] = (e.sequence, e.reason ?? .removed)
                continue
            }
            let key = max(e.sequence, info.map { changedAt($0, after: position) } ?? 0)
            items[name] = (key, info?.isDeleted != false ? .deleted : nil)
        }
        for name in membership.zones(of: caller) where items[name] == nil {
            guard let info = zone(name) else { continue }
            if let d = info.deletedAt {
                if d > position { items[name] = (d, .deleted) }
            } else {
                let key = changedAt(info, after: position)
                if key > 0 { items[name] = (key, nil) }
            }
        }
        return items
    }

    /// The position a database token covers through, or nil for none; `tokenExpired` for a token
    /// this store cannot honour (garbled, another store's, from before a restore, another
    /// database's: each sends the client back to a fetch with no token).
    private func databasePosition(_ token: ServiceToken?, scope: DatabaseScope) throws(SyncError) -> SequenceNumber? {
        guard let token else { return nil }
        guard let parsed = DatabaseToken(token.text, scope: scope) else { throw .tokenExpired }
        // The store checks its own token (signature, epoch, not ahead of it). A storage that could
        // not check it is busy: a device told its token expired lists every zone again.
        do throws(FeedError) { try store.checkDatabaseToken(parsed.store) } catch {
            if case .storage = error { throw .serviceBusy(retryAfter: .seconds(1)) }
            throw .tokenExpired
        }
        guard let base = store.databasePosition(parsed.store) else { throw .tokenExpired }
        guard let cursor = parsed.cursor else { return base }
        guard cursor <= base else { throw .tokenExpired }
        return cursor
    }

    /// A store database token at the horizon.
    private func headToken() throws(SyncError) -> FeedToken {
        do { return try store.databaseHead() } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
    }

    /// A zone's entries after `token`, in pages held to the limits' entries and bytes; refused
    /// for a moment while the zone is purged. With the page, the mark its token is under (the
    /// device is then caught up with the zone under it, `DeviceFetches`).
    ///
    /// The page is read first and the caller's access checked against the zone's row that came
    /// with it (over a shared database, one round trip for the whole fetch); nothing read is
    /// answered before the check, and a refusal is answered only after it, so a zone the caller
    /// may not see still looks exactly like one that does not exist.
    func fetchZoneChanges(caller: String, zone: ZoneID, since token: ServiceToken?, limit: Int) throws(SyncError) -> (page: ZoneChangesPage, mark: SequenceNumber) {
        let begun: UInt64
        do { begun = try context.locked { () throws(SyncError) in try context.unpurged(zone) } } catch {
            try checkAccess(caller, zone)
            throw error
        }
        context.fetchReadHooks?.afterCheck()
        let since = token.map { FeedToken($0.text) }
        var (page, info) = try read(zone, caller: caller, since: since, limit: max(1, min(limit, context.limits.maxPageEntries)))
        if let fit = UploadPolicy.entriesWithin(context.limits.maxPageBytes, page.entries.lazy.map(\.entry)), fit < page.entries.count {
            // Over the page's bytes: the same read, cut where the bytes run out, so that the
            // token is the one after the last entry sent.
            (page, info) = try read(zone, caller: caller, since: since, limit: fit)
        }
        context.fetchReadHooks?.afterRead()
        // A purge that began while the page was read may have raised the mark the page's token
        // carries as its floor, and read it from the log before the rewrite: that token would
        // outlive the purge, even when the whole run ended during the read.
        let (_, checked) = try context.locked { () throws(SyncError) -> (ServiceContext.Access, ZoneInfo) in
            let access = try context.access(caller, zone, info: info)
            _ = try context.unpurged(zone, since: begun)
            context.remember(info, of: zone)
            return access
        }
        return (ZoneChangesPage(zone: zone, entries: page.entries.map(\.entry), token: ServiceToken(page.token.text), moreComing: page.moreComing,
                                head: page.moreComing ? nil : ZoneHeads.of(checked)), checked.lowWaterMark)
    }

    /// The caller's access to `zone`, read now: what a refused call answers first.
    private func checkAccess(_ caller: String, _ zone: ZoneID) throws(SyncError) {
        let info = try context.readZone(zone)
        _ = try context.locked { () throws(SyncError) in try context.access(caller, zone, info: info) }
    }

    /// One read of the zone's feed, tokens expiring under an older mark (SYNC.md §6), with the
    /// zone's row as it stood no later than the read. A refusal is answered after the caller's
    /// access is checked.
    private func read(_ zone: ZoneID, caller: String, since token: FeedToken?, limit: Int) throws(SyncError) -> (ZoneChanges, ZoneInfo?) {
        do throws(FeedError) {
            return try store.zonePage(zone.storeName, since: token, limit: limit, expiry: try context.followFloors.expiry(zone.storeName))
        } catch {
            if case .storage = error { throw .serviceBusy(retryAfter: .seconds(1)) }
            try checkAccess(caller, zone)
            throw fetchError(error, zone)
        }
    }

    /// What a fetch answers for what the feed said.
    private func fetchError(_ error: FeedError, _ zone: ZoneID) -> SyncError {
        switch error {
        case .tokenExpired, .invalidToken: return .tokenExpired
        case .zoneDeleted:
            // The token's incarnation was deleted; a newer one is live: start it over. A storage
            // that does not answer is busy: a device told `zoneDeleted` drops its copy.
            let newest: ZoneInfo?
            do throws(StorageError) { newest = try store.zoneInfo(zone.storeName) } catch { return error.syncError }
            if newest?.isDeleted == false { return .tokenExpired }
            return .zoneDeleted(reason: .deleted)
        case .zoneNotFound: return .zoneNotFound
        case .invalidLimit(let n): return .invalidRequest("a page holds at least one entry (limit \(n))")
        case .storage: return .serviceBusy(retryAfter: .seconds(1))
        }
    }

    /// The zone's activity history, encoded: empty when the zone was never compacted.
    func fetchZoneHistory(caller: String, zone: ZoneID) throws(SyncError) -> [UInt8] {
        let read = try context.readZone(zone)   // before the memory's lock: a round trip over a database
        let (info, begun) = try context.locked { () throws(SyncError) in
            let (_, info) = try context.access(caller, zone, info: read)
            return (info, try context.unpurged(zone))
        }
        guard info.lowWaterMark > 0 else { return [] }
        let log: ActivityLog
        do throws(QueryError) { log = try store.history(of: zone.storeName) } catch {
            throw historyError(error, zone)
        }
        // The pieces are read before the log: a purge that began meanwhile may have moved what
        // the log held into a piece this read did not see.
        _ = try context.locked { () throws(SyncError) in try context.unpurged(zone, since: begun) }
        let bytes = ActivityLogCodec.encode(log)
        guard bytes.count <= context.limits.maxHistoryBytes else {
            throw ServiceContext.historyUnavailable(zone.storeName, "it is \(bytes.count) bytes, over the \(context.limits.maxHistoryBytes) one answer may carry")
        }
        return bytes
    }

    /// The zone's newest snapshot at or above its mark and a token at it (`SyncService.fetchZoneSnapshot`),
    /// or nil when it has none a device may install (never compacted, or over `ListBase.maxSnapshotBytes`).
    /// Refused for a moment while the zone is purged, like a page (SYNC.md §6.2 rule 3), and when
    /// the mark moved while the snapshot was read: a token under the new mark at the old
    /// snapshot's sequence would let the device keep an add whose mark-off the purge took.
    /// With it, the mark it was taken under.
    func fetchZoneSnapshot(caller: String, zone: ZoneID) throws(SyncError) -> (snapshot: ZoneSnapshot?, mark: SequenceNumber) {
        let read = try context.readZone(zone)   // before the memory's lock: a round trip over a database
        let (info, begun) = try context.locked { () throws(SyncError) in
            let (_, info) = try context.access(caller, zone, info: read)
            return (info, try context.unpurged(zone))
        }
        guard info.lowWaterMark > 0, !info.isDeleted else { return (nil, info.lowWaterMark) }
        let found: (bytes: [UInt8], sequence: SequenceNumber)?
        do throws(QueryError) { found = try store.newestSnapshot(of: info) } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
        guard let found, found.bytes.count <= ListBase.maxSnapshotBytes else { return (nil, info.lowWaterMark) }
        let token: FeedToken
        do throws(FeedError) { token = try store.zoneToken(zone.storeName, position: found.sequence) } catch { throw fetchError(error, zone) }
        _ = try context.locked { () throws(SyncError) in try context.unpurged(zone, since: begun) }
        guard let now = try context.readZone(zone), now.incarnation == info.incarnation, now.lowWaterMark == info.lowWaterMark else {
            throw .serviceBusy(retryAfter: .seconds(1))
        }
        return (ZoneSnapshot(bytes: found.bytes, token: ServiceToken(token.text)), info.lowWaterMark)
    }

    /// What a history fetch answers for what the query said.
    private func historyError(_ error: QueryError, _ zone: ZoneID) -> SyncError {
        switch error {
        case .historyIncomplete(_, let why):
            // Not transient: a history file is missing or damaged, and only an operator can
            // repair it (COMPACTION.md §4). Retrying would never end.
            return ServiceContext.historyUnavailable(zone.storeName, why)
        case .feed(.zoneNotFound), .feed(.zoneDeleted): return .zoneNotFound
        case .storage(let e), .feed(.storage(let e)):
            // Damage in the log is the operator's, as above; any other failure (a read that
            // failed, a database that did not answer) may pass.
            switch e {
            case .corruption, .notAStore, .acknowledgedEntriesMissing, .storeKeyDamaged:
                return ServiceContext.historyUnavailable(zone.storeName, e.description)
            default: return .serviceBusy(retryAfter: .seconds(1))
            }
        default: return .serviceBusy(retryAfter: .seconds(1))  // a compaction overtook the read
        }
    }
}

/// Issues and checks change tokens (Spec/TOKENS.md §4–§6) for one store: its id and key.
struct TokenSigner: Sendable {
    let storeID: (UInt64, UInt64)
    let key: (UInt64, UInt64)
    /// The store's epochs (TOKENS.md §7); nil for a store that has none yet (epoch 0).
    let epochs: EpochRecord?

    func issue(_ kind: ChangeToken.Kind, zone: String?, incarnation: SequenceNumber, position: SequenceNumber,
               floor: SequenceNumber = 0) -> FeedToken {
        let token = ChangeToken(kind: kind, storeID: storeID, incarnation: incarnation,
                                zoneHash: zone.map { ChangeToken.zoneHash($0, key: key) } ?? 0, position: position, floor: floor,
                                epoch: epochs?.current.id ?? 0)
        return FeedToken(token.text(key: key))
    }

    func zoneHash(_ zone: String) -> UInt64 { ChangeToken.zoneHash(zone, key: key) }

    /// The token, or `invalidToken` with the reason (TOKENS.md §6, rule 1). `horizon` is the
    /// highest sequence the store has seen: a token past it comes from the future of this log.
    /// `zone`: the zone a zone token must be for (a version 4 token's MAC covers it).
    func parse(_ token: FeedToken, kind: ChangeToken.Kind, zone: String? = nil, horizon: SequenceNumber) throws(FeedError) -> ChangeToken {
        let t: ChangeToken
        do { t = try ChangeToken.parse(token.text, key: key, storeID: storeID, zoneHash: zone.map(zoneHash) ?? 0) } catch { throw .invalidToken(error.description) }
        guard t.storeID == storeID else { throw .invalidToken("it was issued by another store") }
        guard t.kind == kind else {
            throw .invalidToken(kind == .zone ? "it is a database token; zone changes need a zone token" : "it is a zone token; changedZones needs a database token")
        }
        if let epochs {
            if let why = epochs.refusal(epoch: t.epoch, position: t.position) { throw .invalidToken(why) }
        } else if t.epoch != 0 {
            throw .invalidToken("it was issued under an epoch this store does not know (the store was restored from an older copy, or its EPOCHS file was lost)")
        }
        guard t.position <= horizon else {
            throw .invalidToken("it is ahead of this store (position \(t.position), store at \(horizon)): was the store restored from an older copy?")
        }
        return t
    }
}

/// The feed's read path (Spec/TOKENS.md §6), shared by the writer (`JournalStore`) and by readers
/// that never take its lock (`StoreReader`): every answer is a function of a zone catalog, a
/// horizon and the segment files, and nothing here changes any of them. A zone-changes call is
/// planned from the catalog (where its frames are) and then read from the files, so the owner
/// holds its lock only while planning.
enum ZoneFeed {
    static func info(_ t: ZoneTrack, horizon: SequenceNumber) -> ZoneInfo {
        let deleted = t.deletedAt.flatMap { $0 <= horizon ? $0 : nil }
        // Facts are recorded at enqueue: an in-flight last record must not show yet.
        let last = t.lastSequence <= horizon ? t.lastSequence : (t.frameSequences.last { $0 <= horizon } ?? t.incarnation)
        return ZoneInfo(name: t.name, incarnation: t.incarnation, deletedAt: deleted, deletionReason: deleted == nil ? nil : t.deletionReason,
                        entryCount: t.entryCount, lastChange: max(last, deleted ?? 0), lowWaterMark: t.lowWaterMark,
                        historyThrough: t.historyThrough)
    }

    /// Every zone's newest incarnation at or below the horizon, by name.
    static func zones(_ catalog: ZoneCatalog, horizon h: SequenceNumber) -> [ZoneInfo] {
        catalog.tracks.indices.compactMap { i -> ZoneInfo? in
            let t = catalog.tracks[i]
            guard t.incarnation <= h, catalog.latest(t.name, atOrBelow: h) == i else { return nil }
            return info(t, horizon: h)
        }.sorted { $0.name < $1.name }
    }

    static func zone(_ name: String, _ catalog: ZoneCatalog, horizon h: SequenceNumber) -> ZoneInfo? {
        catalog.latest(name, atOrBelow: h).map { info(catalog.tracks[$0], horizon: h) }
    }

    /// `changedZones(since:)`: CKFetchDatabaseChangesOperation's semantics.
    static func changedZones(since token: FeedToken?, _ catalog: ZoneCatalog, horizon h: SequenceNumber, seen: SequenceNumber? = nil,
                             signer: TokenSigner) throws(FeedError) -> DatabaseChanges {
        let position = try token.map { t throws(FeedError) in try signer.parse(t, kind: .database, horizon: max(seen ?? h, h)).position } ?? 0
        var changed: [ZoneInfo] = []
        var deleted: [ZoneInfo] = []
        for t in catalog.tracks where t.incarnation <= h {
            if let d = t.deletedAt, d <= h {
                // A client without a token has nothing to delete.
                if token != nil && d > position { deleted.append(info(t, horizon: h)) }
                continue
            }
            let next = t.frameSequences.partitionPoint { $0 <= position }
            if next < t.frameSequences.count && t.frameSequences[next] <= h { changed.append(info(t, horizon: h)) }
        }
        return DatabaseChanges(changed: changed.sorted { $0.name < $1.name },
                               deleted: deleted.sorted { ($0.name, $0.incarnation) < ($1.name, $1.incarnation) },
                               token: signer.issue(.database, zone: nil, incarnation: 0, position: max(position, h)))
    }

    /// A token at `position` (the horizon when nil) for the zone's newest incarnation.
    static func zoneToken(_ zone: String, position: SequenceNumber?, _ catalog: ZoneCatalog, horizon h: SequenceNumber,
                          signer: TokenSigner) throws(FeedError) -> FeedToken {
        guard let i = catalog.latest(zone, atOrBelow: h) else { throw .zoneNotFound(zone) }
        let t = catalog.tracks[i]
        if let d = t.deletedAt, d <= h { throw .zoneDeleted(zone: zone, at: d, reason: t.deletionReason) }
        return signer.issue(.zone, zone: zone, incarnation: t.incarnation, position: min(position ?? h, h), floor: t.lowWaterMark)
    }

    /// What one page of `changes(in:since:limit:)` reads: decided from the catalog alone.
    struct PagePlan {
        var zone: String
        var incarnation: SequenceNumber
        var position: SequenceNumber
        var horizon: SequenceNumber
        var mark: SequenceNumber
        var limit: Int
        var locations: [UInt64]
        var reachedEnd: Bool
        /// At most this many entries can lie in the frames planned: room for the page at once.
        var capacity: Int
        var segments: [SequenceNumber]
    }

    /// Rules 1–4 of TOKENS.md §6, then the frames that hold the page. `snapshots` lists a zone
    /// incarnation's state snapshots, newest first (for `tokenExpired`'s refetch).
    /// `seen` (at least the horizon) is the highest sequence the store has written: a token up to
    /// it is accepted (a reader in another process may have read a record the writer has not
    /// synced yet), and its page holds nothing until the horizon passes it.
    static func plan(_ zone: String, since token: FeedToken?, limit: Int, frameSlack: Int, _ catalog: ZoneCatalog,
                     horizon h: SequenceNumber, seen: SequenceNumber? = nil, expiry: TokenExpiry = .belowMark, signer: TokenSigner,
                     snapshots: (String, SequenceNumber) -> [SnapshotFile]) throws(FeedError) -> PagePlan {
        let track: Int
        let position: SequenceNumber
        var floor: SequenceNumber = 0
        if let token {
            let t = try signer.parse(token, kind: .zone, zone: zone, horizon: max(seen ?? h, h))
            guard t.zoneHash == signer.zoneHash(zone) else { throw .invalidToken("it was issued for another zone") }
            guard let i = catalog.track(zone, incarnation: t.incarnation), t.incarnation <= h else {
                throw .invalidToken("it names no incarnation of zone \(zone)")
            }
            track = i
            position = t.position
            floor = t.floor
        } else {
            guard let i = catalog.latest(zone, atOrBelow: h) else { throw .zoneNotFound(zone) }
            track = i
            position = 0
        }
        let t = catalog.tracks[track]
        if let d = t.deletedAt, d <= h { throw .zoneDeleted(zone: zone, at: d, reason: t.deletionReason) }
        // Expired when the mark rose past the position after the token was issued: entries the
        // holder has not seen may be gone. A token issued under the current mark is still whole.
        if token != nil && expiry.expires(floor: floor, position: position, lowWaterMark: t.lowWaterMark) {
            // The newest snapshot at or above the mark: an older one plus the tail could miss a
            // purged add/mark-off pair that straddles it.
            let snapshot = snapshots(zone, t.incarnation).first { $0.sequence >= t.lowWaterMark && $0.sequence <= h }
            throw .tokenExpired(zone: zone, lowWaterMark: t.lowWaterMark,
                                refetch: Refetch(zone: zone, incarnation: t.incarnation, snapshotSequence: snapshot?.sequence))
        }
        // The frame before the first one past `position` may be a batch still holding later entries.
        let next = t.frameSequences.partitionPoint { $0 <= position }
        let start = max(0, next - 1)
        // `limit` frames hold at least `limit` entries, but for the few that hold only a zone
        // record (a create, or creates repeated by another writer): read a few more.
        let visible = t.frameSequences.partitionPoint { $0 <= h }
        let end = min(visible, next + limit + frameSlack)
        // The frames' sequences bound how many entries they can hold.
        let span = start < end ? (end < t.frameSequences.count ? t.frameSequences[end] : h &+ 1) &- t.frameSequences[start] : 0
        return PagePlan(zone: zone, incarnation: t.incarnation, position: position, horizon: h, mark: t.lowWaterMark, limit: limit,
                        locations: start < end ? Array(t.frameLocations[start..<end]) : [], reachedEnd: end == visible,
                        capacity: Int(min(UInt64(limit), span, 65_536)), segments: catalog.segments)
    }

    /// Reads the page a plan describes (rule 5 of TOKENS.md §6).
    static func read(_ plan: PagePlan, fetcher: FrameFetcher, signer: TokenSigner) throws(FeedError) -> ZoneChanges {
        let zoneBytes = Array(plan.zone.utf8)
        var entries: [FeedEntry] = []
        entries.reserveCapacity(plan.capacity)
        var lastSeen = plan.position
        var more = false
        for loc in plan.locations {
            let took: Bool
            do {
                took = try fetcher.forEachEntry(at: loc, after: plan.position, zone: zoneBytes) { s, e in
                    guard s > plan.position, s <= plan.horizon, e.zone == plan.zone else { return true }
                    if entries.count == plan.limit {
                        more = true
                        return false
                    }
                    entries.append(FeedEntry(sequence: s, entry: e))
                    lastSeen = s
                    return true
                }
            } catch { throw .storage(error) }
            if !took { break }
        }
        if !more && !plan.reachedEnd { more = true }
        if !more { lastSeen = max(lastSeen, plan.horizon) }
        return ZoneChanges(zone: plan.zone, incarnation: plan.incarnation, entries: entries,
                           token: signer.issue(.zone, zone: plan.zone, incarnation: plan.incarnation, position: lastSeen, floor: plan.mark),
                           moreComing: more)
    }

    /// Pages until one holds an entry or reaches the end: frames that hold only zone records
    /// (repeated creates from another writer) can fill a window, so it widens.
    static func changes(limit: Int, _ page: (_ frameSlack: Int) throws(FeedError) -> ZoneChanges) throws(FeedError) -> ZoneChanges {
        // A page holds at least one entry, so paging always makes progress.
        guard limit >= 1 else { throw .invalidLimit(limit) }
        var slack = 9
        while true {
            let p = try page(slack)
            if !(p.moreComing && p.entries.isEmpty) { return p }
            slack = slack * 8 + limit
        }
    }
}

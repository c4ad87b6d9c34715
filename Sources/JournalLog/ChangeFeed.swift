/// An opaque position in a store's change feed (Spec/TOKENS.md). Clients keep it and hand it
/// back; only the store that issued it can read it.
public struct FeedToken: Hashable, Sendable, CustomStringConvertible {
    public let text: String
    public init(_ text: String) { self.text = text }
    public var description: String { text }
}

/// One zone incarnation as the feed serves it.
public struct ZoneInfo: Sendable, Equatable {
    public var name: String
    /// The sequence that started this incarnation (its `zoneCreate`, or its first entry).
    public var incarnation: SequenceNumber
    public var deletedAt: SequenceNumber?
    public var deletionReason: ZoneDeletionReason?
    public var entryCount: Int
    /// The last sequence of a record in this incarnation (entry, creation or deletion).
    public var lastChange: SequenceNumber
    public var lowWaterMark: SequenceNumber
    public var isDeleted: Bool { deletedAt != nil }
}

/// `changedZones(since:)`: the zones with changes, and the zones deleted, after the token.
public struct DatabaseChanges: Sendable {
    public var changed: [ZoneInfo]
    public var deleted: [ZoneInfo]
    public var token: FeedToken
}

public struct FeedEntry: Sendable, Equatable {
    public var sequence: SequenceNumber
    public var entry: JournalEntry
}

/// `changes(in:since:limit:)`: the next page of a zone's entries, in order.
public struct ZoneChanges: Sendable {
    public var zone: String
    public var incarnation: SequenceNumber
    public var entries: [FeedEntry]
    /// Where the next call continues. Never past a record that is not yet durable.
    public var token: FeedToken
    /// More entries are ready now: call again with `token`. Every page makes progress.
    public var moreComing: Bool
}

/// What a client needs after `tokenExpired`: the incarnation to re-fetch, and the newest
/// snapshot to start from (nil: re-fetch with a nil token, a full read of what remains).
public struct Refetch: Sendable, Equatable {
    public var zone: String
    public var incarnation: SequenceNumber
    public var snapshotSequence: SequenceNumber?
}

/// The feed's answers other than a page of changes. Each says what the client does next.
public enum FeedError: Error, Sendable, CustomStringConvertible {
    /// The token is older than the zone's low-water mark: entries it would need may be gone.
    case tokenExpired(zone: String, lowWaterMark: SequenceNumber, refetch: Refetch)
    /// The zone (or the incarnation the token names) was deleted.
    case zoneDeleted(zone: String, at: SequenceNumber, reason: ZoneDeletionReason)
    /// Garbled, tampered, from another store or zone, of the wrong kind, or ahead of this store.
    case invalidToken(String)
    case zoneNotFound(String)
    case storage(JournalError)

    public var description: String {
        switch self {
        case .tokenExpired(let z, let mark, let r):
            "the token for zone \(z) is older than its low-water mark \(mark): re-fetch the zone "
                + (r.snapshotSequence.map { "from the snapshot at sequence \($0)" } ?? "with no token") + " and replace local data"
        case .zoneDeleted(let z, let at, let reason):
            "zone \(z) was \(reason == .purged ? "purged" : "deleted") at sequence \(at): delete the local copy"
        case .invalidToken(let why): "invalid change token: \(why); fetch again with no token"
        case .zoneNotFound(let z): "no zone named \(z) (list the zones with `jlog zones`)"
        case .storage(let e): e.description
        }
    }
}

extension JournalStore {
    /// The highest sequence the feed serves: the durable point (the written point for a store
    /// whose durability is `none`, where nothing is ever synced). A token never passes it.
    var horizonLocked: SequenceNumber { options.durability == .none ? writtenThrough : durableThrough }

    private func info(_ t: ZoneTrack, horizon: SequenceNumber) -> ZoneInfo {
        let deleted = t.deletedAt.flatMap { $0 <= horizon ? $0 : nil }
        // Facts are recorded at enqueue: an in-flight last record must not show yet.
        let last = t.lastSequence <= horizon ? t.lastSequence : (t.frameSequences.last { $0 <= horizon } ?? t.incarnation)
        return ZoneInfo(name: t.name, incarnation: t.incarnation, deletedAt: deleted, deletionReason: deleted == nil ? nil : t.deletionReason,
                        entryCount: t.entryCount, lastChange: max(last, deleted ?? 0), lowWaterMark: t.lowWaterMark)
    }

    /// Every zone's newest incarnation, by name.
    public func zones() -> [ZoneInfo] {
        cond.lock()
        defer { cond.unlock() }
        let h = horizonLocked
        return catalog.tracks.indices.compactMap { i -> ZoneInfo? in
            let t = catalog.tracks[i]
            guard t.incarnation <= h, catalog.latest(t.name, atOrBelow: h) == i else { return nil }
            return info(t, horizon: h)
        }.sorted { $0.name < $1.name }
    }

    public func zone(_ name: String) -> ZoneInfo? {
        cond.lock()
        defer { cond.unlock() }
        let h = horizonLocked
        return catalog.latest(name, atOrBelow: h).map { info(catalog.tracks[$0], horizon: h) }
    }

    // MARK: Zone records

    /// Creates the zone (a `zoneCreate` record, synced) unless it is live; returns its incarnation.
    @discardableResult
    public func createZone(_ name: String) throws(JournalError) -> SequenceNumber {
        if let why = JournalStore.zoneNameRefusal(name) { throw JournalError.invalidEntry(why) }
        let (seq, ticket) = try locked { () throws(JournalError) -> (SequenceNumber, Int) in
            if let live = catalog.live(name) { return (catalog.tracks[live].incarnation, lastTicketLocked) }
            try checkWritable()
            let seq = lastAssigned + 1
            let t = catalog.create(name, at: seq, implicit: false, idsLoaded: true)
            _ = enqueueLocked(type: RecordType.zoneCreate.rawValue, payload: ZoneRecordCodec.encodeCreate(zone: name), count: 1,
                              touches: [FrameTouch(track: t, firstSequence: seq, lastSequence: seq, entries: 0)])
            return (seq, lastTicketLocked)
        }
        try commit(ticket: ticket, durability: .always)
        return seq
    }

    /// Deletes the zone and all its entries atomically (one synced `zoneDelete` record).
    @discardableResult
    public func deleteZone(_ name: String, reason: ZoneDeletionReason = .deleted) throws(JournalError) -> SequenceNumber {
        let (seq, ticket) = try locked { () throws(JournalError) -> (SequenceNumber, Int) in
            try checkWritable()
            guard let t = catalog.live(name) else {
                if let latest = catalog.latest(name), let at = catalog.tracks[latest].deletedAt { throw JournalError.zoneDeleted(zone: name, at: at) }
                throw JournalError.zoneNotFound(name)
            }
            let seq = lastAssigned + 1
            catalog.delete(track: t, at: seq, reason: reason)
            _ = enqueueLocked(type: RecordType.zoneDelete.rawValue, payload: ZoneRecordCodec.encodeDelete(zone: name, reason: reason),
                              count: 1, touches: [FrameTouch(track: t, firstSequence: seq, lastSequence: seq, entries: 0)])
            return (seq, lastTicketLocked)
        }
        try commit(ticket: ticket, durability: .always)
        return seq
    }

    /// Raises the zone's low-water mark (a synced `lowWaterMark` record): tokens below it get
    /// `tokenExpired`. The compactor sets it once it may purge entries up to `mark`. The mark
    /// takes effect only once its record is durable, so no token is judged by a mark a crash
    /// could still undo.
    public func setLowWaterMark(_ name: String, to mark: SequenceNumber) throws(JournalError) {
        let ticket = try locked { () throws(JournalError) -> Int in
            try checkWritable()
            guard let t = catalog.live(name) else { throw JournalError.zoneNotFound(name) }
            guard mark <= lastAssigned else { throw JournalError.invalidEntry("low-water mark \(mark) is past the last sequence \(lastAssigned)") }
            let inc = catalog.tracks[t].incarnation
            _ = enqueueLocked(type: SkippableRecordType.lowWaterMark, payload: LowWaterCodec.encode(zone: name, incarnation: inc, mark: mark),
                              count: 0, touches: [], lowWater: LowWater(zone: name, incarnation: inc, mark: mark))
            return lastTicketLocked
        }
        try commit(ticket: ticket, durability: .always)
    }

    // MARK: Tokens

    private func issue(_ kind: ChangeToken.Kind, zone: String?, incarnation: SequenceNumber, position: SequenceNumber,
                       floor: SequenceNumber = 0) -> FeedToken {
        let token = ChangeToken(kind: kind, storeID: storeID, incarnation: incarnation,
                                zoneHash: zone.map { ChangeToken.zoneHash($0, key: storeKey) } ?? 0, position: position, floor: floor)
        return FeedToken(token.text(key: storeKey))
    }

    private func parse(_ token: FeedToken, kind: ChangeToken.Kind, horizon: SequenceNumber) throws(FeedError) -> ChangeToken {
        let t: ChangeToken
        do { t = try ChangeToken.parse(token.text, key: storeKey) } catch { throw .invalidToken(error.description) }
        guard t.storeID == storeID else { throw .invalidToken("it was issued by another store") }
        guard t.kind == kind else {
            throw .invalidToken(kind == .zone ? "it is a database token; zone changes need a zone token" : "it is a zone token; changedZones needs a database token")
        }
        guard t.position <= horizon else {
            throw .invalidToken("it is ahead of this store (position \(t.position), store at \(horizon)): was the store restored from an older copy?")
        }
        return t
    }

    // MARK: The feed

    /// The zones changed and deleted since `token` (nil: every zone), and a new token:
    /// CKFetchDatabaseChangesOperation's semantics.
    public func changedZones(since token: FeedToken?) throws(FeedError) -> DatabaseChanges {
        cond.lock()
        defer { cond.unlock() }
        let h = horizonLocked
        let position = try token.map { t throws(FeedError) in try parse(t, kind: .database, horizon: h).position } ?? 0
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
        return DatabaseChanges(changed: changed.sorted { $0.name < $1.name }, deleted: deleted.sorted { ($0.name, $0.incarnation) < ($1.name, $1.incarnation) },
                               token: issue(.database, zone: nil, incarnation: 0, position: h))
    }

    /// The zone's entries after `token` (nil: all of them), at most `limit`, in order, with a
    /// token to continue from. Costs O(entries returned): the zone index says where they are.
    public func changes(in zone: String, since token: FeedToken?, limit: Int = 1_000) throws(FeedError) -> ZoneChanges {
        precondition(limit >= 1, "a page holds at least one entry, so paging always makes progress")
        // Frames that hold only zone records (repeated creates from another writer) can fill a
        // window: read a wider one until the page holds an entry or reaches the end.
        var slack = 9
        while true {
            let page = try changes(in: zone, since: token, limit: limit, frameSlack: slack)
            if !(page.moreComing && page.entries.isEmpty) { return page }
            slack = slack * 8 + limit
        }
    }

    private func changes(in zone: String, since token: FeedToken?, limit: Int, frameSlack: Int) throws(FeedError) -> ZoneChanges {
        cond.lock()
        // A compaction swap is renaming a segment: its frame offsets are about to change.
        while swapWaiting { cond.wait() }
        let h = horizonLocked
        let track: Int
        let position: SequenceNumber
        var floor: SequenceNumber = 0
        do throws(FeedError) {
            if let token {
                let t = try parse(token, kind: .zone, horizon: h)
                guard t.zoneHash == ChangeToken.zoneHash(zone, key: storeKey) else { throw .invalidToken("it was issued for another zone") }
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
            if token != nil && position < t.lowWaterMark && floor < t.lowWaterMark {
                // The newest snapshot at or above the mark: an older one plus the tail could
                // miss a purged add/mark-off pair that straddles it.
                let snapshot = SnapshotDirectory.list(store: path, zone: zone, incarnation: t.incarnation, kind: .state, fs: fs)
                    .first { $0.sequence >= t.lowWaterMark && $0.sequence <= h }
                throw .tokenExpired(zone: zone, lowWaterMark: t.lowWaterMark,
                                    refetch: Refetch(zone: zone, incarnation: t.incarnation, snapshotSequence: snapshot?.sequence))
            }
        } catch {
            cond.unlock()
            throw error
        }
        let t = catalog.tracks[track]
        // The frame before the first one past `position` may be a batch still holding later entries.
        let next = t.frameSequences.partitionPoint { $0 <= position }
        let start = max(0, next - 1)
        // `limit` frames hold at least `limit` entries, but for the few that hold only a zone
        // record (a create, or creates repeated by another writer): read a few more.
        let end = min(t.frameSequences.partitionPoint { $0 <= h }, next + limit + frameSlack)
        let locations = start < end ? Array(t.frameLocations[start..<end]) : []
        let reachedEnd = end == t.frameSequences.partitionPoint { $0 <= h }
        let segments = catalog.segments
        let incarnation = t.incarnation
        let mark = t.lowWaterMark
        // Until the frames are read, no swap may move them.
        feedReaders += 1
        cond.unlock()
        defer {
            cond.lock()
            feedReaders -= 1
            if feedReaders == 0 { cond.broadcast() }
            cond.unlock()
        }

        let fetcher = FrameFetcher(store: path, fs: fs, segments: segments)
        let zoneBytes = Array(zone.utf8)
        var entries: [FeedEntry] = []
        // The frames' sequences bound how many entries they can hold: room for the page at once,
        // rather than growing (and copying) it from a guess.
        let span = start < end ? (end < t.frameSequences.count ? t.frameSequences[end] : h &+ 1) &- t.frameSequences[start] : 0
        entries.reserveCapacity(Int(min(UInt64(limit), span, 65_536)))
        var lastSeen = position
        var more = false
        for loc in locations {
            let took: Bool
            do {
                took = try fetcher.forEachEntry(at: loc, after: position, zone: zoneBytes) { s, e in
                    guard s > position, s <= h, e.zone == zone else { return true }
                    if entries.count == limit {
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
        if !more && !reachedEnd { more = true }
        if !more { lastSeen = max(lastSeen, h) }
        return ZoneChanges(zone: zone, incarnation: incarnation, entries: entries,
                           token: issue(.zone, zone: zone, incarnation: incarnation, position: lastSeen, floor: mark), moreComing: more)
    }

    /// A token at the feed's current end for `zone`: what a client that just loaded a snapshot
    /// at `position` continues from.
    public func zoneToken(_ zone: String, position: SequenceNumber? = nil) throws(FeedError) -> FeedToken {
        cond.lock()
        defer { cond.unlock() }
        let h = horizonLocked
        guard let i = catalog.latest(zone, atOrBelow: h) else { throw .zoneNotFound(zone) }
        let t = catalog.tracks[i]
        if let d = t.deletedAt, d <= h { throw .zoneDeleted(zone: zone, at: d, reason: t.deletionReason) }
        return issue(.zone, zone: zone, incarnation: t.incarnation, position: min(position ?? h, h), floor: t.lowWaterMark)
    }
}

extension Array {
    /// The index of the first element for which `belongsToFirstPart` is false (the array must be
    /// partitioned by it): a binary search.
    func partitionPoint(_ belongsToFirstPart: (Element) -> Bool) -> Int {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if belongsToFirstPart(self[mid]) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

import JournalLog
import JournalQuery
import JournalSync
import ListModel

/// What the service's parts (uploads, feed, sharing, compaction, arrivals) need of the storage
/// behind them (Spec/SYNC.md §2): zones and their incarnations, durable appends that take the
/// next positions, the feed and its tokens, the lists' histories, and compaction by the list
/// rules. `JournalStore` is the engine's own; a backend over a shared database implements the
/// same operations with the same invariants, and the parts' policy, token rules and membership
/// logic serve both. The names say what each does, so none shadows a store method.
protocol ServiceStorage: AnyObject, Sendable {
    /// Whether an append is acknowledged only once durable ("saved" means durable, SYNC.md §3.2).
    var isDurable: Bool { get }
    /// Every zone's newest incarnation.
    func zones() -> [ZoneInfo]
    /// A zone's newest incarnation, or nil for a zone never made.
    func zone(_ name: String) -> ZoneInfo?
    /// The position the next record takes.
    var nextSequence: SequenceNumber { get }
    /// The highest position the feed serves.
    var horizon: SequenceNumber { get }

    /// Appends one record durably; its position.
    func appendEntry(_ e: JournalEntry) throws(JournalError) -> SequenceNumber
    /// Appends records atomically and durably; their positions. An id a zone holds with the same
    /// content is not stored again; with other content, `idConflict`.
    func appendBatch(_ batch: [JournalEntry]) throws(JournalError) -> ClosedRange<SequenceNumber>
    /// Makes a new incarnation of a zone (idempotent for a live one).
    func makeZone(_ name: String) throws(JournalError)
    /// Deletes a zone's live incarnation.
    func removeZone(_ name: String) throws(JournalError)
    /// Raises a zone's low-water mark: tokens issued under a lower one expire.
    func raiseMark(_ zone: String, to mark: SequenceNumber) throws(JournalError)

    /// A zone's entries after `token` (TOKENS.md), tokens issued under an older mark expiring.
    func zoneChanges(_ zone: String, since token: FeedToken?, limit: Int) throws(FeedError) -> ZoneChanges
    /// A token at `position` (the horizon when nil) for the zone's newest incarnation, floored at
    /// its mark (the store's own method).
    func zoneToken(_ zone: String, position: SequenceNumber?) throws(FeedError) -> FeedToken
    /// The zones changed and deleted since a database token, and a new token.
    func databaseChanges(since token: FeedToken?) throws(FeedError) -> DatabaseChanges
    /// The position a database token covers through, or nil for one this storage did not issue.
    func databasePosition(_ token: FeedToken) -> SequenceNumber?

    /// The zone's activity history, whole (COMPACTION.md §4).
    func history(of zone: String) throws(QueryError) -> ActivityLog
    /// The newest piece of the zone's history chain (sequence and stored CRC), the chain checked;
    /// nil when it has none.
    func historyChainHead(of zone: String) throws(QueryError) -> (sequence: SequenceNumber, crc: UInt32)?
    /// The length of one history piece of the zone incarnation.
    func historyPieceLength(of zone: ZoneInfo, at sequence: SequenceNumber) throws(QueryError) -> Int
    /// Bytes `range` of that piece (a reader holds a window of it at a time).
    func historyPiece(of zone: ZoneInfo, at sequence: SequenceNumber, range: Range<Int>) throws(QueryError) -> [UInt8]
    /// Ids the zone's history holds and its log no longer does: what compaction purged.
    func purgedIDs(of zone: String) throws(QueryError) -> Set<CompactID>
    /// The zone incarnation's newest snapshot at or above its mark and within the horizon, as a
    /// whole snapshot (SNAPSHOT.md), with its sequence; nil when it has none.
    func newestSnapshot(of zone: ZoneInfo) throws(QueryError) -> (bytes: [UInt8], sequence: SequenceNumber)?
    /// The position the zone incarnation's newest history piece reaches, or 0.
    func newestHistory(of zone: ZoneInfo) -> SequenceNumber
    /// Compacts by the list rules (COMPACTION.md §1) as `plan` says.
    func compact(_ plan: ServiceCompactionPlan) throws(QueryError) -> ListCompactionReport
    /// The key that signs invitations, made on first use.
    func invitationKey() throws(JournalError) -> (UInt64, UInt64)
}

/// A compaction run as the service asks for it: the list compactor's settings and the hooks that
/// open and close each zone's purge window (SYNC.md §6.2 rules 3 and 9).
struct ServiceCompactionPlan: Sendable {
    var now: Int64
    var retentionMillis: Int64
    var maxEntriesPerGroup: Int
    var arrivedThrough: SequenceNumber
    var zoneFilter: @Sendable (ZoneInfo) -> Bool
    var purgeWillBegin: @Sendable (String) -> Void
    var groupDidFinish: @Sendable ([ZoneCompaction]) -> Void
}

extension JournalStore: ServiceStorage {
    var isDurable: Bool { options.durability != .none }
    func appendEntry(_ e: JournalEntry) throws(JournalError) -> SequenceNumber { try append(e) }
    func appendBatch(_ batch: [JournalEntry]) throws(JournalError) -> ClosedRange<SequenceNumber> { try append(batch: batch) }
    func makeZone(_ name: String) throws(JournalError) { _ = try createZone(name) }
    func removeZone(_ name: String) throws(JournalError) { _ = try deleteZone(name) }
    func raiseMark(_ zone: String, to mark: SequenceNumber) throws(JournalError) { try setLowWaterMark(zone, to: mark) }

    func zoneChanges(_ zone: String, since token: FeedToken?, limit: Int) throws(FeedError) -> ZoneChanges {
        try changes(in: zone, since: token, limit: limit, expiry: .issuedUnderAnOlderMark)
    }
    func databaseChanges(since token: FeedToken?) throws(FeedError) -> DatabaseChanges { try changedZones(since: token) }
    func databasePosition(_ token: FeedToken) -> SequenceNumber? { databaseTokenPosition(token) }

    func history(of zone: String) throws(QueryError) -> ActivityLog { try ListQuery(store: self).history(zone).log }

    func historyChainHead(of zone: String) throws(QueryError) -> (sequence: SequenceNumber, crc: UInt32)? {
        try ListQuery(store: self).historyChainHead(zone)
    }

    func historyPieceLength(of zone: ZoneInfo, at sequence: SequenceNumber) throws(QueryError) -> Int {
        try ListQuery(store: self).historyPieceLength(zone.name, incarnation: zone.incarnation, sequence: sequence)
    }

    func historyPiece(of zone: ZoneInfo, at sequence: SequenceNumber, range: Range<Int>) throws(QueryError) -> [UInt8] {
        try ListQuery(store: self).historyPieceBytes(zone.name, incarnation: zone.incarnation, sequence: sequence, range: range)
    }

    func purgedIDs(of zone: String) throws(QueryError) -> Set<CompactID> {
        let q = ListQuery(store: self)
        var ids = Set(try q.storedHistory(zone).log.allEvents().map(\.entryID))
        for (_, e) in try q.entries(zone).entries { ids.remove(e.id) }
        return ids
    }

    func newestSnapshot(of zone: ZoneInfo) throws(QueryError) -> (bytes: [UInt8], sequence: SequenceNumber)? {
        let files = SnapshotDirectory.list(store: path, zone: zone.name, incarnation: zone.incarnation, kinds: SnapshotFile.Kind.states, fs: fileSystem)
        let h = horizon
        for file in files where file.sequence >= zone.lowWaterMark && file.sequence <= h {
            do {
                if file.kind == .state {
                    // Already whole and compressed: sent as it lies, once its header is checked.
                    let bytes = try SnapshotDirectory.read(file.path, limit: SnapshotCodec.maxStoredBytes, fs: fileSystem)
                    let header = try bytes.withUnsafeBytes { p throws(SnapshotError) in try SnapshotCodec.header(p) }
                    guard header.zone == zone.name, header.incarnation == zone.incarnation, header.sequence == file.sequence else { continue }
                    return (bytes, file.sequence)
                }
                let (_, reducer) = try ListQuery(store: self).readState(file)
                return (SnapshotCodec.encode(reducer: reducer, incarnation: zone.incarnation, sequence: file.sequence), file.sequence)
            } catch {
                continue  // a damaged snapshot: an older one, or none (the device fetches entries)
            }
        }
        return nil
    }

    func newestHistory(of zone: ZoneInfo) -> SequenceNumber {
        SnapshotDirectory.list(store: path, zone: zone.name, incarnation: zone.incarnation, kind: .history,
                               fs: fileSystem).first?.sequence ?? 0
    }

    func compact(_ plan: ServiceCompactionPlan) throws(QueryError) -> ListCompactionReport {
        var compactor = ListCompactor(store: self, fs: fileSystem, retentionMillis: plan.retentionMillis)
        compactor.isTheSyncService = true
        compactor.zoneFilter = plan.zoneFilter
        compactor.maxEntriesPerGroup = plan.maxEntriesPerGroup
        compactor.arrivedThrough = plan.arrivedThrough
        compactor.purgeWillBegin = plan.purgeWillBegin
        compactor.groupDidFinish = plan.groupDidFinish
        return try compactor.run(now: plan.now)
    }

    func invitationKey() throws(JournalError) -> (UInt64, UInt64) {
        try StoreKey.loadOrCreate(file: path + "/" + StoreLayout.serviceDirectory + "/invite.key", fs: fileSystem)
    }
}

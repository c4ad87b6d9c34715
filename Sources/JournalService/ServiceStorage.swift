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
///
/// Every read that can fail throws, and says which kind of failure it is (`StorageError`,
/// or the `.storage` case of the feed's and the query's errors): no read answers a default
/// in place of a failure (SYNC.md §11.6). Each caller decides what unavailability means for it.
package protocol ServiceStorage: AnyObject, Sendable {
    /// Whether an append is acknowledged only once durable ("saved" means durable, SYNC.md §3.2).
    var isDurable: Bool { get }
    /// Whether other service nodes write to it too (a shared database): each node then reads the
    /// service's own records the others wrote before it answers (`ServiceCore.catchUp`), and the
    /// storage records when each entry arrived itself (`arrivedThrough`).
    var isShared: Bool { get }

    // MARK: Reads

    /// A zone's newest incarnation, or nil for a zone never made. Throws `StorageError`.
    func zoneInfo(_ name: String) throws(StorageError) -> ZoneInfo?
    /// Every zone's newest incarnation. Throws `StorageError` (never a shorter list).
    func allZones() throws(StorageError) -> [ZoneInfo]
    /// The zones `owner` owns (`owner/…`), newest incarnations, deleted ones too. Throws
    /// `StorageError` (never a shorter list).
    func zones(ownedBy owner: String) throws(StorageError) -> [ZoneInfo]
    /// The newest of these zones' last changes (0: none of them made). Throws `StorageError`.
    func lastChange(ofAny zones: [String]) throws(StorageError) -> SequenceNumber
    /// The highest position the feed serves. Throws `StorageError`.
    func readHorizon() throws(StorageError) -> SequenceNumber
    /// The position the zone incarnation's newest history piece reaches, or 0 for none. Throws
    /// `StorageError`.
    func newestHistory(of zone: ZoneInfo) throws(StorageError) -> SequenceNumber
    /// The highest position every entry at or below which had arrived by `time`, when the storage
    /// records arrivals itself (`isShared`: every node's); nil: the service's `ArrivalLog`
    /// knows (SYNC.md §6.2 rule 9). Throws `StorageError`.
    func arrivedThrough(by time: Int64) throws(StorageError) -> SequenceNumber?
    /// The device rows this storage keeps (SYNC.md §6.6), or nil when the service keeps them in a
    /// file of its own (the engine's `service/devices`). Throws `StorageError`.
    func deviceRows() throws(StorageError) -> [DeviceFetches.Row]?
    /// Why the storage cannot take writes now, or nil (a server's readiness). Answers within
    /// `deadline`: a storage that has not answered by then is unready, with that reason.
    func unreadiness(deadline: Duration) -> String?

    // MARK: Writes

    /// Appends records atomically and durably; their positions. An id a zone holds with the same
    /// content is not stored again; with other content, `idConflict`. Refused with
    /// `compactionRunning` when the first entry's zone's mark is no longer `mark` (a compaction
    /// on another node purged since the caller checked the history for retries of purged
    /// entries); nil: no check. A storage that does not answer throws `writerFailed`.
    func appendBatch(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?) throws(JournalError) -> ClosedRange<SequenceNumber>
    /// `appendBatch(_:expectingMark:)`, answering how many entries the zone gained (ids it held
    /// already are not stored again).
    func appendCounting(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?) throws(JournalError) -> Int
    /// `appendCounting(_:expectingMark:)`, refused with `keysMoved` when the zone holds any of
    /// `absent` (a sealed zone's next key record or rotation-due marker, another node's since
    /// the caller read the zone's epochs). A storage no other node writes (`isShared` false)
    /// needs no check: one zone's appends take turns on its one node (`ServiceContext.changing`),
    /// and that node's memory of the epochs is exact.
    func appendCounting(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?, absent: [CompactID]) throws(JournalError) -> Int
    /// Makes a new incarnation of a zone (idempotent for a live one).
    func makeZone(_ name: String) throws(JournalError)
    /// Deletes a zone's live incarnation.
    func removeZone(_ name: String) throws(JournalError)
    /// Raises a zone's low-water mark: tokens issued under a lower one expire.
    func raiseMark(_ zone: String, to mark: SequenceNumber) throws(JournalError)
    /// Merges a node's device rows into the storage's (each device and zone: the newest row).
    func saveDeviceRows(_ rows: [DeviceFetches.Row]) throws(JournalError)
    /// The key that signs invitations, made on first use.
    func invitationKey() throws(JournalError) -> (UInt64, UInt64)

    // MARK: The feed

    /// A zone's entries after `token` (TOKENS.md), tokens issued under an older mark expiring.
    func zoneChanges(_ zone: String, since token: FeedToken?, limit: Int) throws(FeedError) -> ZoneChanges
    /// `zoneChanges`, with the zone's newest incarnation as it stood no later than the page was
    /// read (its head then never claims more than the page holds): a fetch checks the caller's
    /// access and answers the head from it, with no read of its own.
    func zonePage(_ zone: String, since token: FeedToken?, limit: Int, expiry: TokenExpiry) throws(FeedError) -> (changes: ZoneChanges, zone: ZoneInfo?)
    /// A token at `position` (the horizon when nil) for the zone's newest incarnation, floored at
    /// its mark (the store's own method).
    func zoneToken(_ zone: String, position: SequenceNumber?) throws(FeedError) -> FeedToken
    /// The zones changed and deleted since a database token, and a new token.
    func databaseChanges(since token: FeedToken?) throws(FeedError) -> DatabaseChanges
    /// The position a database token covers through, or nil for one this storage did not issue
    /// (a pure check of the token's signature: no read).
    func databasePosition(_ token: FeedToken) -> SequenceNumber?
    /// A database token at the horizon (what `databaseChanges(since: nil)` ends with, without
    /// listing every zone).
    func databaseHead() throws(FeedError) -> FeedToken
    /// Checks a database token as `databaseChanges(since:)` would (signature, epoch, not ahead),
    /// without listing what changed.
    func checkDatabaseToken(_ token: FeedToken) throws(FeedError)

    // MARK: Histories, snapshots, compaction

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
    /// Compacts by the list rules (COMPACTION.md §1) as `plan` says; a storage that does not
    /// answer throws `.storage`, never an empty report.
    func compact(_ plan: ServiceCompactionPlan) throws(QueryError) -> ListCompactionReport
}

extension ServiceStorage {
    package func deviceRows() throws(StorageError) -> [DeviceFetches.Row]? { nil }
    package func arrivedThrough(by time: Int64) throws(StorageError) -> SequenceNumber? { nil }
    package func saveDeviceRows(_ rows: [DeviceFetches.Row]) throws(JournalError) {}
    package var isShared: Bool { false }
    package func lastChange(ofAny zones: [String]) throws(StorageError) -> SequenceNumber {
        var newest: SequenceNumber = 0
        for z in zones { newest = max(newest, try zoneInfo(z)?.lastChange ?? 0) }
        return newest
    }
    /// Appends one record durably; its position.
    package func appendEntry(_ e: JournalEntry) throws(JournalError) -> SequenceNumber {
        try appendBatch([e], expectingMark: nil).upperBound
    }
    /// Appends records atomically and durably, with no check of the zone's mark.
    package func appendBatch(_ batch: [JournalEntry]) throws(JournalError) -> ClosedRange<SequenceNumber> {
        try appendBatch(batch, expectingMark: nil)
    }
    /// By the zone's count before and after (exact: one zone's uploads take turns, `ServiceContext.changing`).
    package func appendCounting(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?) throws(JournalError) -> Int {
        let zone = batch.first?.zone ?? ""
        let before: Int
        do throws(StorageError) { before = try zoneInfo(zone)?.entryCount ?? 0 } catch { throw .writerFailed(error.description) }
        _ = try appendBatch(batch, expectingMark: mark)
        do throws(StorageError) { return max(0, (try zoneInfo(zone)?.entryCount ?? 0) - before) } catch { throw .writerFailed(error.description) }
    }
    package func appendCounting(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?, absent: [CompactID]) throws(JournalError) -> Int {
        precondition(!isShared || absent.isEmpty, "a shared storage checks the ids it must not hold")
        return try appendCounting(batch, expectingMark: mark)
    }
    package func databaseHead() throws(FeedError) -> FeedToken { try databaseChanges(since: nil).token }
    package func checkDatabaseToken(_ token: FeedToken) throws(FeedError) { _ = try databaseChanges(since: token) }
    package func zones(ownedBy owner: String) throws(StorageError) -> [ZoneInfo] {
        try allZones().filter { ZoneID(storeName: $0.name)?.owner == owner }
    }
}

/// A compaction run as the service asks for it: the list compactor's settings and the hooks that
/// open and close each zone's purge window (SYNC.md §6.2 rules 3 and 9).
package struct ServiceCompactionPlan: Sendable {
    package var now: Int64
    package var retentionMillis: Int64
    package var maxEntriesPerGroup: Int
    package var arrivedThrough: SequenceNumber
    package var zoneFilter: @Sendable (ZoneInfo) -> Bool
    package var purgeWillBegin: @Sendable (String) -> Void
    package var groupDidFinish: @Sendable ([ZoneCompaction]) -> Void
    /// Told each group's zones as soon as their rewrite commits, before their snapshots: what a
    /// compaction record needs but the digest, kept for a run that fails before it finishes.
    package var groupDidCommit: @Sendable ([ZoneCompaction]) -> Void = { _ in }
}

extension JournalStore: ServiceStorage {
    package var isDurable: Bool { options.durability != .none }
    /// One store, one service: uploads and compactions are ordered by `ServiceContext.compaction`,
    /// so the mark needs no check.
    package func appendBatch(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?) throws(JournalError) -> ClosedRange<SequenceNumber> {
        try append(batch: batch)
    }
    /// The store's catalog is in memory: its reads always answer.
    package func zoneInfo(_ name: String) throws(StorageError) -> ZoneInfo? { zone(name) }
    package func allZones() throws(StorageError) -> [ZoneInfo] { zones() }
    package func readHorizon() throws(StorageError) -> SequenceNumber { horizon }
    package func makeZone(_ name: String) throws(JournalError) { _ = try createZone(name) }
    package func removeZone(_ name: String) throws(JournalError) { _ = try deleteZone(name) }
    package func raiseMark(_ zone: String, to mark: SequenceNumber) throws(JournalError) { try setLowWaterMark(zone, to: mark) }

    package func zoneChanges(_ zone: String, since token: FeedToken?, limit: Int) throws(FeedError) -> ZoneChanges {
        try changes(in: zone, since: token, limit: limit, expiry: .issuedUnderAnOlderMark)
    }
    /// The zone's row is read from memory before the page.
    package func zonePage(_ zone: String, since token: FeedToken?, limit: Int, expiry: TokenExpiry) throws(FeedError) -> (changes: ZoneChanges, zone: ZoneInfo?) {
        let info = self.zone(zone)
        return (try changes(in: zone, since: token, limit: limit, expiry: expiry), info)
    }
    package func databaseChanges(since token: FeedToken?) throws(FeedError) -> DatabaseChanges { try changedZones(since: token) }
    package func databasePosition(_ token: FeedToken) -> SequenceNumber? { databaseTokenPosition(token) }

    package func history(of zone: String) throws(QueryError) -> ActivityLog { try ListQuery(store: self).history(zone).log }

    package func historyChainHead(of zone: String) throws(QueryError) -> (sequence: SequenceNumber, crc: UInt32)? {
        try ListQuery(store: self).historyChainHead(zone)
    }

    package func historyPieceLength(of zone: ZoneInfo, at sequence: SequenceNumber) throws(QueryError) -> Int {
        try ListQuery(store: self).historyPieceLength(zone.name, incarnation: zone.incarnation, sequence: sequence)
    }

    package func historyPiece(of zone: ZoneInfo, at sequence: SequenceNumber, range: Range<Int>) throws(QueryError) -> [UInt8] {
        try ListQuery(store: self).historyPieceBytes(zone.name, incarnation: zone.incarnation, sequence: sequence, range: range)
    }

    package func purgedIDs(of zone: String) throws(QueryError) -> Set<CompactID> {
        let q = ListQuery(store: self)
        var ids = Set(try q.storedHistory(zone).log.allEvents().map(\.entryID))
        for (_, e) in try q.entries(zone).entries { ids.remove(e.id) }
        return ids
    }

    package func newestSnapshot(of zone: ZoneInfo) throws(QueryError) -> (bytes: [UInt8], sequence: SequenceNumber)? {
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

    package func newestHistory(of zone: ZoneInfo) throws(StorageError) -> SequenceNumber {
        SnapshotDirectory.list(store: path, zone: zone.name, incarnation: zone.incarnation, kind: .history,
                               fs: fileSystem).first?.sequence ?? 0
    }

    package func compact(_ plan: ServiceCompactionPlan) throws(QueryError) -> ListCompactionReport {
        var compactor = ListCompactor(store: self, fs: fileSystem, retentionMillis: plan.retentionMillis)
        compactor.isTheSyncService = true
        compactor.zoneFilter = plan.zoneFilter
        compactor.maxEntriesPerGroup = plan.maxEntriesPerGroup
        compactor.arrivedThrough = plan.arrivedThrough
        compactor.purgeWillBegin = plan.purgeWillBegin
        compactor.groupDidFinish = plan.groupDidFinish
        compactor.groupDidCommit = plan.groupDidCommit
        return try compactor.run(now: plan.now)
    }

    /// The store answers from memory, at once: the deadline never runs out.
    package func unreadiness(deadline: Duration) -> String? {
        do throws(JournalError) {
            try checkWritable()
            return nil
        } catch { return error.description }
    }

    package func invitationKey() throws(JournalError) -> (UInt64, UInt64) {
        try StoreKey.loadOrCreate(file: path + "/" + StoreLayout.serviceDirectory + "/invite.key", fs: fileSystem)
    }
}

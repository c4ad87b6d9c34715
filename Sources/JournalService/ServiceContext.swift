import Foundation
import JournalLog
import JournalQuery
import JournalSync

/// What every part of the service shares (`ServiceCore`'s uploads, feed, sharing and compaction):
/// the store, the limits and clock, the gates that order changes, and the service's memory.
///
/// The locks, outermost first: `compaction` (changes read it, a compaction writes it), one
/// zone's lock (`changing`: its uploads and membership changes one at a time, so counts and
/// membership stay exact), `accountLocks` (one owner's zone creations), and `lock`, the
/// service's memory, held briefly and **never across a durable write**: a fetch never waits for
/// another call's fsync. Records the service writes itself are appended outside it and applied
/// under it once durable (`PendingWrites` says what fetches do meanwhile).
final class ServiceContext: @unchecked Sendable {
    /// What the service stores in: zones, appends, the feed, histories, compaction.
    let store: any ServiceStorage
    let limits: ServiceLimits
    /// Wall-clock milliseconds: the service's time for the entries it writes and for compaction.
    let now: @Sendable () -> Int64
    /// "Zone Z changed", for the accounts that see it (a transport's hint channel).
    let hints: HintHub
    /// When the service received what it holds: retention counts from arrival too (rule 9).
    let arrivals: ArrivalLog
    /// Which tokens of each zone can follow its compactions (Spec/SYNC.md §6.7).
    let followFloors: FollowFloors

    /// Uploads and sharing changes read, compaction writes: a late retry of a purged entry is
    /// recognised because no upload runs while compaction decides what is purged (Spec/SYNC.md §6).
    let compaction = ReadWriteLock()
    /// One zone's changes at a time (uploads, membership, deletion), so their effects on its
    /// entry count are exact; different zones append concurrently and share fsyncs.
    private let zoneLocks = (0..<64).map { _ in NSLock() }
    /// One owner's zone creations at a time, so its zone quota is exact.
    private let accountLocks = (0..<16).map { _ in NSLock() }

    /// Guards the memory below; held briefly, never across a write to the log.
    let lock = NSLock()
    /// Who belongs to which zone, from `_service/members`. Under `lock`.
    var membership = Membership()
    /// Per zone: the low-water mark its last compaction announced, and the position of that
    /// announcement in `_service/compactions` (a database change for everyone who sees the
    /// zone). Under `lock`.
    var announced: [String: (mark: SequenceNumber, at: SequenceNumber)] = [:]
    /// The service's own records being appended. Under `lock`.
    var pending = PendingWrites()
    /// The clock of the records the service writes. Under `lock`.
    var clock = HybridClock()
    /// Whether an append of the service's own records failed since its records were last read:
    /// it may have landed all the same (a write whose answer was lost), so the memory may be
    /// behind the store until `ServiceRecordReader.catchUp` reads them back. Under `lock`.
    var ownRecordsUncertain = false
    /// Per zone: ids its history holds that its log no longer does (entries compaction purged):
    /// a late retry of one is acknowledged, never stored again (Spec/SYNC.md §6). Under `lock`.
    var purged: [String: (incarnation: SequenceNumber, mark: SequenceNumber, ids: Set<CompactID>)] = [:]
    /// Zones a running compaction is purging, from just before it raises their mark until the
    /// service's last raise (Spec/SYNC.md §6.2 rule 3): fetches of them are refused meanwhile.
    /// Under `lock`.
    var purging: Set<String> = []
    /// Per zone: what a run whose rewrite committed collected for the zone's compaction record
    /// (SYNC.md §6.7), until the record is written. A run that fails after its commit leaves it
    /// here, and the raise that follows writes the record from it. Under `lock`.
    var committed: [String: ZoneCompaction] = [:]
    /// Per zone, the purges begun since the service started: a read that saw its zone's count
    /// change may rest on the log before a purge (its window opened and closed during the read).
    /// Under `lock`.
    var purgesBegun: [String: UInt64] = [:]
    /// Over a shared storage: each zone's row as this node last read it (a fetch's page, an
    /// upload's read). An upload checks access and purged ids against it with no read of its
    /// own; the append then refuses it if the zone's incarnation or mark moved, and the upload
    /// starts over from a fresh read (`ServiceUploads`). Under `lock`.
    private var rows: [String: ZoneInfo] = [:]
    /// Per sealed zone: its epochs as this node knows them (`zoneEpochs`). Under `lock`.
    var epochs: [String: ZoneEpochs] = [:]
    /// Each account's published public keys, from `_service/keys`. Under `lock`.
    var directory = AccountKeyDirectory()
    /// Each account's recovery kit, from `_service/recovery`. Under `lock`.
    var recovery = RecoveryKits()
    /// Account keys on their way to new devices, from `_service/links`. Under `lock`.
    var links = DeviceLinks()
    /// Upload calls and entries received, and entries stored new. Under `lock`.
    var counters = ServiceCore.Counters()
    /// For tests: called after a fetch's first purge check and after its read, beside which a
    /// test runs a compaction.
    var fetchReadHooks: (afterCheck: @Sendable () -> Void, afterRead: @Sendable () -> Void)?

    init(store: any ServiceStorage, limits: ServiceLimits, now: @escaping @Sendable () -> Int64) throws(JournalError) {
        self.store = store
        self.limits = limits
        self.now = now
        hints = HintHub()
        arrivals = try ArrivalLog(store: store)
        followFloors = FollowFloors(store: store)
    }

    /// `body` under the memory's lock.
    func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// `body` as a change to `zone`: beside other zones' changes, never beside a compaction.
    func changing<T>(_ zone: String, _ body: () throws(SyncError) -> T) throws(SyncError) -> T {
        try compaction.reading { () throws(SyncError) -> T in
            let l = zoneLocks[Int(truncatingIfNeeded: SipHash24.hash(key: (0, 0), Array(zone.utf8)) % UInt64(zoneLocks.count))]
            l.lock()
            defer { l.unlock() }
            return try body()
        }
    }

    /// `body` as the only zone creation of `owner` at the moment.
    func creatingZone<T>(of owner: String, _ body: () throws(SyncError) -> T) throws(SyncError) -> T {
        let l = accountLocks[Int(truncatingIfNeeded: SipHash24.hash(key: (0, 1), Array(owner.utf8)) % UInt64(accountLocks.count))]
        l.lock()
        defer { l.unlock() }
        return try body()
    }

    /// Appends one of the service's own records, durably (for the arrival checkpoints).
    func appendRecord(_ e: JournalEntry) throws(JournalError) -> SequenceNumber { try store.appendEntry(e) }

    /// Appends one of the service's own records (opaque `kind` in the system zone `zone`) outside
    /// `lock`, and runs `apply` under it with the record's position once it is durable
    /// (`PendingWrites` says what fetches do meanwhile).
    func appendOwnRecord<T>(_ zone: String, kind: UInt8, body: [UInt8], apply: (SequenceNumber) -> T) throws(JournalError) -> T {
        // Read before the lock (over a shared database, a round trip): the floor it sets is no
        // higher than the last position assigned when the record is made, which is what it needs.
        let assigned = try assignedPosition()
        let record: JournalEntry = lock.withLock {
            let wall = now()
            var record = JournalEntry(id: CompactID("-")!, zone: zone, author: Membership.author, wallTime: wall,
                                      clock: clock.tick(wallMillis: wall), operation: .opaque(kind: kind, body: body))
            record.id = CompactID.derived(from: record)
            pending.begin(assigned: assigned)
            return record
        }
        let at: SequenceNumber
        do { at = try store.appendEntry(record) } catch {
            lock.withLock {
                pending.end()
                ownRecordsUncertain = true
            }
            throw error
        }
        return lock.withLock {
            defer { pending.end() }
            return apply(at)
        }
    }

    // MARK: Under `lock`

    /// The accounts that see `zone`: its owner and its participants. Under `lock`.
    func audience(_ zone: String) -> [String] {
        (ZoneID(storeName: zone).map { [$0.owner] } ?? []) + membership.members(of: zone)
    }

    /// How the caller may reach a zone.
    enum Access { case owner, member }

    /// Over a shared storage, the zone's live row as this node last read it (nil: not kept, or
    /// the storage is the engine's, whose rows are in memory anyway).
    func rememberedZone(_ zone: ZoneID) -> ZoneInfo? {
        guard store.isShared else { return nil }
        return locked { rows[zone.storeName] }
    }

    /// Keeps a zone's row as read (a live one only; at most `maxRememberedZones`). Under `lock`.
    func remember(_ info: ZoneInfo?, of zone: ZoneID) {
        guard store.isShared else { return }
        guard let info, !info.isDeleted else {
            rows[zone.storeName] = nil
            return
        }
        if rows.count >= Self.maxRememberedZones, rows[zone.storeName] == nil { rows.removeAll(keepingCapacity: true) }
        rows[zone.storeName] = info
    }

    /// Forgets a zone's row (an upload that went wrong with it reads afresh). Under `lock`.
    func forget(_ zone: String) { rows[zone] = nil }

    /// The rows `rows` keeps at most (about 100 bytes each).
    static let maxRememberedZones = 100_000

    /// The zone's newest incarnation as the storage has it; `serviceBusy` when the storage does
    /// not answer (never `zoneNotFound`: a device would take that for a list gone).
    func readZone(_ zone: ZoneID) throws(SyncError) -> ZoneInfo? {
        do throws(StorageError) { return try store.zoneInfo(zone.storeName) } catch { throw error.syncError }
    }

    /// The last position the storage assigned, read for a pending write's floor (`PendingWrites`):
    /// a storage that does not answer fails the write before anything is appended.
    func assignedPosition() throws(JournalError) -> SequenceNumber {
        do throws(StorageError) { return try store.readHorizon() } catch { throw .writerFailed(error.description) }
    }

    /// The caller's access to a zone, or the answer a caller without it gets: a zone it may not
    /// see answers exactly like one that does not exist; a zone it was removed from, or that was
    /// deleted while it belonged to it, answers `zoneDeleted` with the reason. `info` is the
    /// zone's newest incarnation as read before `lock` was taken (`readZone`: over a shared
    /// database a read is a round trip, and the lock is every call's). Under `lock`.
    func access(_ caller: String, _ zone: ZoneID, info: ZoneInfo?) throws(SyncError) -> (Access, ZoneInfo) {
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

    /// Refuses, for a moment, a fetch of a zone being purged, or one that a purge began since
    /// `begun` (SYNC.md §6.2 rule 3); returns the zone's count of purges begun. Under `lock`.
    func unpurged(_ zone: ZoneID, since begun: UInt64? = nil) throws(SyncError) -> UInt64 {
        let count = purgesBegun[zone.storeName] ?? 0
        if purging.contains(zone.storeName) || begun.map({ $0 != count }) == true { throw .serviceBusy(retryAfter: .seconds(1)) }
        return count
    }

    /// A zone's history cannot be assembled (COMPACTION.md §4): not transient, an operator's to
    /// repair, so `invalidRequest` (CloudKit's `.internalError`), never `serviceBusy`.
    static func historyUnavailable(_ zone: String, _ why: String) -> SyncError {
        .invalidRequest("the service cannot assemble the history of \(zone) (\(why)): its operator must repair it")
    }
}

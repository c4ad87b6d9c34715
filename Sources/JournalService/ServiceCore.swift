import Foundation
import JournalLog
import JournalQuery
import JournalSync
import ListModel

/// The reference sync service (Spec/SYNC.md): accounts' private and shared databases over one
/// `JournalStore`, each list a zone named `owner/name`, the feed's tokens, compaction with the
/// retention and snapshots for devices that re-fetch. Every call names its caller; transports
/// (an in-process session, `jlog serve`'s HTTP) authenticate the caller and then call this.
///
/// Thread-safe. Its parts share a `ServiceContext` (the store, the gates, the service's memory
/// and the lock order): `ServiceUploads`, `ServiceFeed`, `ServiceSharing` and
/// `ServiceCompaction`. A fetch never waits for another call's fsync.
public final class ServiceCore: @unchecked Sendable {
    /// The engine store holding every account's zones and the service's own records
    /// (`_service/…`); nil when the service runs over another storage (PostgreSQL).
    public let store: JournalStore?
    /// What the service stores in: the engine's store, or a shared database.
    package let storage: any ServiceStorage
    /// What the service accepts: upload and page sizes, quotas, retention.
    public let limits: ServiceLimits
    /// Wall-clock milliseconds: the service's time for the entries it writes and for compaction.
    public let now: @Sendable () -> Int64
    /// Where each device last caught up with each zone, and under which mark (SYNC.md §6.6).
    public let devices: DeviceFetches
    /// "Zone Z changed", for the accounts that see it (a transport's hint channel).
    public var hints: HintHub { context.hints }
    private let context: ServiceContext
    private let uploads: ServiceUploads
    private let feed: ServiceFeed
    private let historyPages: HistoryPages
    private let sharing: ServiceSharing
    private let compaction: ServiceCompaction
    private let records: ServiceRecordReader
    private let keyDirectory: ServiceKeyDirectory
    private let recoveryKits: ServiceRecoveryKits
    private let deviceLinks: ServiceDeviceLinks

    /// What the service has taken in since it started (what the simulation measures).
    public struct Counters: Sendable, Equatable {
        /// Upload calls, counted once the caller's access to the zone is checked.
        public var uploads = 0
        /// Entries those uploads carried, stored or not.
        public var entriesReceived = 0
        /// Entries stored new: not retries of ones the zone already held.
        public var entriesStored = 0
    }

    /// Upload calls and entries received, and entries stored new (what the simulation measures).
    public var counters: Counters { context.locked { context.counters } }

    /// For tests: called after a fetch's first purge check and after its read, beside which a
    /// test runs a compaction.
    var fetchReadHooks: (afterCheck: @Sendable () -> Void, afterRead: @Sendable () -> Void)? {
        get { context.fetchReadHooks }
        set { context.fetchReadHooks = newValue }
    }

    /// Throws `ServiceCoreError.notDurable` for a store of durability `none` ("saved" means
    /// durable, Spec/SYNC.md §3.2), and the store's `JournalError` when its state cannot be read.
    public convenience init(store: JournalStore, limits: ServiceLimits = ServiceLimits(), now: @escaping @Sendable () -> Int64,
                            accountExists: @escaping @Sendable (String) -> Bool = { SyncNames.accountRefusal($0) == nil }) throws {
        guard store.isDurable else { throw ServiceCoreError.notDurable(path: store.path) }
        try self.init(store: store, limits: limits, now: now, checkingAccounts: { account throws(StorageError) in accountExists(account) })
    }

    /// The service over the engine's store, with an account check that can fail
    /// (`CredentialCheck.accountExists`): a lookup that fails is busy, never "no such account".
    package convenience init(store: JournalStore, limits: ServiceLimits = ServiceLimits(), now: @escaping @Sendable () -> Int64,
                             checkingAccounts accountExists: @escaping @Sendable (String) throws(StorageError) -> Bool) throws {
        guard store.isDurable else { throw ServiceCoreError.notDurable(path: store.path) }
        try self.init(storage: store, engine: store, devices: DeviceFetches(loadingFrom: store.path + "/" + DeviceFetches.file, fs: store.fileSystem),
                      limits: limits, now: now, accountExists: accountExists)
    }

    /// The service over any storage (the engine's store, or a database several nodes share):
    /// the same policy, token rules, sharing rules and compaction decisions over each.
    package init(storage: any ServiceStorage, engine: JournalStore? = nil, devices: DeviceFetches = DeviceFetches(),
                 limits: ServiceLimits = ServiceLimits(), now: @escaping @Sendable () -> Int64,
                 accountExists: @escaping @Sendable (String) throws(StorageError) -> Bool = { SyncNames.accountRefusal($0) == nil }) throws {
        guard storage.isDurable else { throw ServiceCoreError.notDurable(path: engine?.path ?? "(storage)") }
        self.store = engine
        self.storage = storage
        self.limits = limits
        self.now = now
        context = try ServiceContext(store: storage, limits: limits, now: now)
        uploads = ServiceUploads(context: context)
        feed = ServiceFeed(context: context)
        historyPages = HistoryPages(context: context)
        sharing = ServiceSharing(context: context, invitations: InvitationSigner(key: try storage.invitationKey()),
                                 accountExists: accountExists)
        compaction = ServiceCompaction(context: context)
        records = ServiceRecordReader(context: context)
        keyDirectory = ServiceKeyDirectory(context: context)
        recoveryKits = ServiceRecoveryKits(context: context)
        deviceLinks = ServiceDeviceLinks(context: context)
        self.devices = try storage.deviceRows().map { DeviceFetches(rows: $0) } ?? devices
        try rebuild()
        // What the store holds had arrived by now, at the latest.
        try context.arrivals.note(at: now, force: true, write: context.appendRecord)
    }

    /// Membership from `_service/members`, the announcements from `_service/compactions`, and
    /// the marks a crash may have left behind a compaction.
    private func rebuild() throws {
        try records.readNew()
        try compaction.raiseMarksOfCommittedPurges()
    }

    /// Whether `name` is one of the service's own zones (`_service/…`), which no account sees.
    static func isSystemZone(_ name: String) -> Bool { name.hasPrefix("_") }

    // MARK: Calls

    /// `perform(caller:_:)` for a caller whose device the transport knows: a fetch that reaches
    /// the zone's end, an upload that moved the device's token, and a snapshot fetched are noted
    /// as the device catching up with the zone under the mark the call read (`devices`).
    public func perform(_ caller: ServiceCaller, _ call: SyncCall) throws(SyncError) -> SyncAnswer {
        let (answer, caughtUp) = try answer(caller: caller.account, call)
        if let device = caller.device, let (zone, mark) = caughtUp {
            devices.note(device: device, account: caller.account, zone: zone.storeName, mark: mark, at: now())
        }
        return answer
    }

    /// How many devices a compaction sends back to the snapshot: those caught up with a zone it
    /// compacted under a mark below the new one (their tokens expired).
    public func devicesSentBack(by report: ListCompactionReport) throws(SyncError) -> Int {
        var n = 0
        for z in report.zones {
            // Devices that caught up under a mark below the follow floor go back to the snapshot;
            // the others follow the compaction (Spec/SYNC.md §6.6, §6.7).
            let floor: SequenceNumber
            do throws(StorageError) {
                guard let info = try storage.zoneInfo(z.zone) else { continue }
                do throws(FeedError) { floor = try context.followFloors.floor(info).mark } catch { throw StorageError.unavailable("\(error)") }
            } catch { throw error.syncError }
            n += devices.behind(z.zone, mark: floor).count
        }
        return n
    }

    /// Writes `devices` to `service/devices` (at each compaction, and by `jlog serve` at shutdown);
    /// over a shared database, merges them into its table.
    public func saveDevices() throws(JournalError) {
        guard let store else { return try storage.saveDeviceRows(devices.all) }
        try devices.save(to: store.path + "/" + DeviceFetches.file, fs: store.fileSystem)
    }

    /// Why the service cannot take requests now (its storage refuses appends or does not answer), or nil.
    public func unreadiness() -> String? { storage.unreadiness(deadline: Self.readinessDeadline) }

    /// How long a readiness probe waits for the storage (SYNC.md §11.5): a load balancer's probe
    /// gets an answer within it, whatever the database does.
    public static let readinessDeadline: Duration = .seconds(2)

    /// Answers `call` for `caller`: the one place a call as a value meets the method for it.
    public func perform(caller: String, _ call: SyncCall) throws(SyncError) -> SyncAnswer {
        try answer(caller: caller, call).answer
    }

    /// What a device caught up with: the zone, and the mark its token is under.
    private typealias CaughtUp = (zone: ZoneID, mark: SequenceNumber)

    /// The answer to `call`, and the zone a device is caught up with after it (nil: none).
    private func answer(caller: String, _ call: SyncCall) throws(SyncError) -> (answer: SyncAnswer, caughtUp: CaughtUp?) {
        // An owner's call on its own list needs no membership: only the others read what other
        // nodes wrote first (membership, announcements; one query over a shared database).
        if Self.zoneOwned(by: caller, call) == nil { try catchUp() }
        switch call {
        case .upload(let entries, let zone, let since, let carrying):
            let (result, mark) = try uploadMarking(caller: caller, entries: entries, to: zone, since: since, carrying: carrying)
            return (.upload(result), mark.map { (zone, $0) })
        case .fetchZoneChanges(let zone, let token, let limit):
            let (page, mark) = try feed.fetchZoneChanges(caller: caller, zone: zone, since: token, limit: limit)
            return (.zoneChanges(page), page.moreComing ? nil : (zone, mark))
        case .fetchZoneSnapshot(let zone):
            let (snapshot, mark) = try feed.fetchZoneSnapshot(caller: caller, zone: zone)
            return (.snapshot(snapshot), snapshot == nil ? nil : (zone, mark))
        case .fetchBothDatabases(let tokens, let limit):
            return (.bothDatabases(BothDatabasesPage(private: try fetchDatabaseChanges(caller: caller, scope: .private, since: tokens.private, limit: limit),
                                                     shared: try fetchDatabaseChanges(caller: caller, scope: .shared, since: tokens.shared, limit: limit))), nil)
        case .fetchDatabaseChanges(let scope, let token, let limit):
            return (.databaseChanges(try fetchDatabaseChanges(caller: caller, scope: scope, since: token, limit: limit)), nil)
        case .fetchZoneHistory(let zone): return (.history(try fetchZoneHistory(caller: caller, zone: zone)), nil)
        case .fetchZoneHistoryPage(let zone, let cursor): return (.historyPage(try fetchZoneHistoryPage(caller: caller, zone: zone, after: cursor)), nil)
        case .createZone(let zone): try createZone(caller: caller, zone: zone)
        case .deleteZone(let zone): try deleteZone(caller: caller, zone: zone)
        case .shareZone(let zone, let participant): return (.invitation(try shareZone(caller: caller, zone: zone, with: participant)), nil)
        case .acceptShare(let invitation): return (.zone(try acceptShare(caller: caller, invitation: invitation)), nil)
        case .removeParticipant(let participant, let zone): try removeParticipant(caller: caller, participant: participant, from: zone)
        case .stopSharing(let zone): try stopSharing(caller: caller, zone: zone)
        case .fetchParticipants(let zone): return (.participants(try sharing.participants(caller: caller, zone: zone)), nil)
        case .publishAccountKeys(let keys): try keyDirectory.publish(caller: caller, keys)
        case .fetchAccountKeys(let account): return (.accountKeys(try keyDirectory.keys(of: account)), nil)
        case .storeRecoveryKit(let kit): try recoveryKits.store(caller: caller, kit)
        case .fetchRecoveryKit: return (.recoveryKit(try recoveryKits.fetch(caller: caller)), nil)
        case .depositDeviceLink(let link, let sealed): try deviceLinks.deposit(caller: caller, link: link, sealed: sealed)
        case .fetchDeviceLink(let link): return (.deviceLink(try deviceLinks.fetch(caller: caller, link: link)), nil)
        }
        return (.done, nil)
    }

    /// Stores the caller's entries in a zone (`SyncService.upload`): idempotent by entry id, and a
    /// late retry of an entry compaction purged is acknowledged, never stored again.
    public func upload(caller: String, entries: [JournalEntry], to zone: ZoneID) throws(SyncError) -> UploadResult {
        try uploadMarking(caller: caller, entries: entries, to: zone, since: nil, carrying: 0).result
    }

    /// `upload(caller:entries:to:)` that also reads the zone after `since` (SYNC.md §3.11): when it
    /// holds nothing there but this upload's entries, the answer carries the token after them and
    /// the zone's head, so the device need not fetch its own entries back.
    public func upload(caller: String, entries: [JournalEntry], to zone: ZoneID, since: ServiceToken?) throws(SyncError) -> UploadResult {
        try uploadMarking(caller: caller, entries: entries, to: zone, since: since, carrying: 0).result
    }

    /// `upload(caller:entries:to:since:)` whose answer also carries the others' entries after
    /// `since`, at most `carrying` of them (`SyncService.upload(_:to:since:carrying:)`).
    public func upload(caller: String, entries: [JournalEntry], to zone: ZoneID, since: ServiceToken?, carrying: Int) throws(SyncError) -> UploadResult {
        try uploadMarking(caller: caller, entries: entries, to: zone, since: since, carrying: carrying).result
    }

    /// `upload(caller:entries:to:since:carrying:)`, and the mark of the token it answers (nil:
    /// none). The zone's audience is hinted once the entries are stored, with the head the answer
    /// carries when it has one (§7.7): the uploading device holds that head, so its hint costs it
    /// nothing.
    private func uploadMarking(caller: String, entries: [JournalEntry], to zone: ZoneID, since: ServiceToken?,
                               carrying: Int) throws(SyncError) -> (result: UploadResult, mark: SequenceNumber?) {
        var (result, told) = try uploads.upload(caller: caller, entries: entries, to: zone)
        var mark: SequenceNumber? = nil
        if let since, result.failed.isEmpty,
           let after = tokenAfter(result, caller: caller, zone: zone, since: since, carrying: min(max(carrying, 0), Self.maxCarried)) {
            (result.token, result.head, result.entries, mark) = (after.token, after.head, after.others, after.mark)
        }
        if !told.isEmpty { context.hints.changed(zone.storeName, head: result.head, for: told) }
        if !result.failed.isEmpty { throw .partialFailure(result) }
        return (result, mark)
    }

    /// The most others' entries an upload's answer carries, whatever the device asks (SYNC.md
    /// §3.11): more wait for the device's fetch, in pages.
    package static let maxCarried = 256

    /// The token after `since` and the zone's head when the zone holds nothing after `since` but
    /// this upload's entries and at most `carrying` others' (which the answer carries), in one
    /// page; nil otherwise, or on any refusal (a purge under way, an expired token).
    private func tokenAfter(_ result: UploadResult, caller: String, zone: ZoneID, since: ServiceToken,
                            carrying: Int) -> (token: ServiceToken, head: ZoneHead, others: [JournalEntry], mark: SequenceNumber?)? {
        guard let (page, mark) = try? feed.fetchZoneChanges(caller: caller, zone: zone, since: since, limit: result.saved.count + carrying + 1),
              !page.moreComing, let head = page.head else { return nil }
        let mine = Set(result.saved)
        guard let firstMine = page.entries.firstIndex(where: { mine.contains($0.id) }) ?? (page.entries.isEmpty ? 0 : nil) else {
            return nil   // none of the upload's entries after `since`: a retry the device fetched back
        }
        let others = page.entries[..<firstMine]
        // Others' entries come only before all of this upload's, so that the device knows its own
        // entries follow them in the zone's order (SYNC.md §3.11).
        guard others.count <= carrying, page.entries[firstMine...].allSatisfy({ mine.contains($0.id) }),
              others.isEmpty || page.entries.count - firstMine == mine.count else { return nil }
        return (page.token, head, Array(others), mark)
    }

    /// The zones of one of the caller's databases changed or gone since `token`
    /// (`SyncService.fetchDatabaseChanges`), at most `limit`, keyed by position.
    public func fetchDatabaseChanges(caller: String, scope: DatabaseScope, since token: ServiceToken?, limit: Int) throws(SyncError) -> DatabaseChangesPage {
        try feed.fetchDatabaseChanges(caller: caller, scope: scope, since: token, limit: limit)
    }

    /// A zone's entries after `token`, in pages held to the limits' entries and bytes
    /// (`SyncService.fetchZoneChanges`); refused for a moment while the zone is purged.
    public func fetchZoneChanges(caller: String, zone: ZoneID, since token: ServiceToken?, limit: Int) throws(SyncError) -> ZoneChangesPage {
        try feed.fetchZoneChanges(caller: caller, zone: zone, since: token, limit: limit).page
    }

    /// The zone's state as one snapshot and the token after it (`SyncService.fetchZoneSnapshot`),
    /// or nil when the service keeps none to give.
    public func fetchZoneSnapshot(caller: String, zone: ZoneID) throws(SyncError) -> ZoneSnapshot? {
        try feed.fetchZoneSnapshot(caller: caller, zone: zone).snapshot
    }

    /// One page of the zone's activity history and the cursor of the next
    /// (`SyncService.fetchZoneHistoryPage`, SYNC.md §3.12).
    public func fetchZoneHistoryPage(caller: String, zone: ZoneID, after cursor: HistoryCursor?) throws(SyncError) -> HistoryPage {
        try historyPages.page(caller: caller, zone: zone, after: cursor)
    }

    /// The zone's activity history, encoded (`SyncService.fetchZoneHistory`): empty when the
    /// zone was never compacted.
    public func fetchZoneHistory(caller: String, zone: ZoneID) throws(SyncError) -> [UInt8] {
        try feed.fetchZoneHistory(caller: caller, zone: zone)
    }

    /// Creates a zone the caller owns (`SyncService.createZone`): idempotent, within the
    /// account's zone quota.
    public func createZone(caller: String, zone: ZoneID) throws(SyncError) {
        try sharing.createZone(caller: caller, zone: zone)
    }

    /// Deletes a zone the caller owns (`SyncService.deleteZone`): its participants leave with it,
    /// so a zone created again under the name is not shared.
    public func deleteZone(caller: String, zone: ZoneID) throws(SyncError) {
        try sharing.deleteZone(caller: caller, zone: zone)
    }

    /// The owner's signed invitation of `participant` to a zone (`SyncService.shareZone`).
    public func shareZone(caller: String, zone: ZoneID, with participant: String) throws(SyncError) -> ShareInvitation {
        try sharing.shareZone(caller: caller, zone: zone, with: participant)
    }

    /// Joins the caller to the zone its invitation names (`SyncService.acceptShare`), recorded
    /// as a `join` entry in the zone.
    public func acceptShare(caller: String, invitation: ShareInvitation) throws(SyncError) -> ZoneID {
        try sharing.acceptShare(caller: caller, invitation: invitation)
    }

    /// Removes a participant, or lets one leave (`SyncService.removeParticipant`), recorded as a
    /// `leave` entry; the owner naming one not yet a member withdraws its invitations.
    public func removeParticipant(caller: String, participant: String, from zone: ZoneID) throws(SyncError) {
        try sharing.removeParticipant(caller: caller, participant: participant, from: zone)
    }

    /// Removes every participant of a zone the caller owns and voids every invitation issued so
    /// far (`SyncService.stopSharing`).
    public func stopSharing(caller: String, zone: ZoneID) throws(SyncError) {
        try sharing.stopSharing(caller: caller, zone: zone)
    }

    /// The service's compaction (Spec/SYNC.md §6): only zones whose last change is above their
    /// low-water mark, so that raising the mark afterwards expires every token issued before,
    /// and every device adopts the compacted copy.
    @discardableResult
    public func compact(now time: Int64) throws(SyncError) -> ListCompactionReport {
        try catchUp()
        let report = try compaction.compact(now: time)
        // The rows this node keeps for uploads are under the old marks now.
        context.locked { for z in report.zones { context.forget(z.zone) } }
        // A report for the operator: a run is not undone for it.
        try? saveDevices()
        return report
    }

    /// The zone of a call on one zone that `caller` owns, or nil (any other call).
    static func zoneOwned(by caller: String, _ call: SyncCall) -> ZoneID? {
        let zone: ZoneID? = switch call {
        // A sealed zone's uploads are checked against its membership and the key directory.
        case .upload(_, let z, _, _) where !SealedZone.isSealed(storeName: z.storeName): z
        case .fetchZoneChanges(let z, _, _), .fetchZoneHistory(let z), .fetchZoneSnapshot(let z),
             .fetchZoneHistoryPage(let z, _): z
        default: nil
        }
        return zone?.owner == caller ? zone : nil
    }

    /// Over a storage other nodes share: their membership changes and announcements read
    /// before this node answers (`ServiceRecordReader`).
    package func catchUp() throws(SyncError) {
        do throws(StorageError) { try records.catchUp() } catch { throw error.syncError }
    }

    /// The accounts that see a zone (store name): its owner and its members.
    package func audience(of zone: String) -> [String] { context.locked { context.audience(zone) } }

    /// Who belongs to a zone now (for tests and diagnostics).
    public func members(of zone: ZoneID) -> [String] { context.locked { context.membership.members(of: zone.storeName) } }
}

/// Why a `ServiceCore` does not start over a store.
public enum ServiceCoreError: Error, Sendable, CustomStringConvertible {
    /// The store's durability is `none`: an upload would be answered `saved` before it is on disk.
    case notDurable(path: String)

    /// What went wrong and how to fix it.
    public var description: String {
        switch self {
        case .notDurable(let path):
            "the store \(path) is opened with durability none: a sync service acknowledges only what is on disk; open it with durability always or onBatch"
        }
    }
}

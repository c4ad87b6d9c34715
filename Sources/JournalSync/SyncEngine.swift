import JournalLog
import Logging
import JournalQuery
import ListModel

/// How a `SyncEngine` batches, pages and backs off: the defaults suit most apps.
public struct SyncEngineOptions: Sendable {
    /// Where the engine logs (swift-log): each sync's summary (`info`; `debug` when it did
    /// nothing), each problem (`warning`), a list fetched anew (`notice`), a compaction followed
    /// (`info`). Set its `logLevel` to choose. By default nothing is logged. Never a credential
    /// and never a list's contents.
    public var logger = Logger(label: "JournalSync", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Entries per upload (a service's limits split larger ones anyway).
    public var uploadBatchEntries = 200
    /// Encoded bytes per upload; an entry larger than this goes alone.
    public var uploadBatchBytes = 512 << 10
    /// Entries asked for per zone-changes page.
    public var pageLimit = 500
    /// Others' entries an upload's answer may bring (Spec/SYNC.md §3.11; the service takes at most
    /// 256): when the list took no more than these since this device's token, a compaction record
    /// among them, the upload's answer brings them and the list needs no fetch. 0: never.
    public var uploadCarries = 64
    /// Zones asked for per database-changes page.
    public var databasePageLimit = 1_000
    /// Remote entries a list keeps held back while shopping (the state file keeps them): at the
    /// bound its fetch stops, and the rest waits on the service until held entries are applied.
    public var maxHeldEntries = 5_000
    /// Tries of one request that the service rate-limits or finds busy, before the sync gives up
    /// on it for now (everything stays queued).
    public var maxAttempts = 5
    /// Jittered exponential backoff when the service names no wait.
    public var backoffBase: Duration = .milliseconds(500)
    /// The longest backoff wait, before its jitter.
    public var backoffMax: Duration = .seconds(60)
    /// Whether a sync that installs a list from its service's snapshot also fetches the list's
    /// history, once every list of the sync is usable (Spec/SYNC.md §7.5 step 5). False: only when
    /// the app asks (`SyncEngine.fetchHistory`), and `history` answers `historyNotFetched` until then.
    public var fetchesHistoryAfterRefetch = true

    /// The default options.
    public init() {}
}

/// Why a list was fetched anew (`SyncReport.refetchCauses`).
public enum RefetchCause: String, Sendable, Hashable, CaseIterable {
    /// The device had never fetched it (a list new to it, or after a sign-in).
    case firstFetch
    /// The device's token was older than the service can describe: it was away longer than
    /// the compaction records the service keeps (the retention), or the service lost them.
    case tokenExpired
    /// The copy could not follow a compaction: a record that does not read, a rewrite that
    /// failed, or a digest that differs from the service's afterwards.
    case cannotFollow
    /// The copy held an entry the service holds with other content, or a change it refused.
    case conflict
    /// Asked for by the app (`refetch`) or resumed from an earlier sync.
    case requested
}

/// What one `sync()` did.
public struct SyncReport: Sendable {
    /// Entries the service took (stored now, or before).
    public var uploaded = 0
    /// Entries sent, retries included.
    public var sent = 0
    /// Other devices' entries this sync added to the device's lists (a list installed from a
    /// snapshot counts the snapshot's entries); this device's own changes coming back from the
    /// service are not counted.
    public var applied = 0
    /// Entries held back while shopping.
    public var held = 0
    /// Lists shopping kept from syncing fully: a re-fetch (first fetch or expired token) that
    /// waits for shopping to end, or held entries at `SyncEngineOptions.maxHeldEntries`. Such a
    /// list is as current as its last fetch, not as this sync; `isComplete` does not count it.
    public var waitingForShopping: [ZoneID] = []
    /// Lists this device held that were replaced by the service's copy (Spec/SYNC.md §7.5): a
    /// token older than the service can still describe, a copy that could not follow a
    /// compaction, a conflict, or a re-fetch asked for. A list's first fetch is not one.
    public var refetched: [ZoneID] = []
    /// Lists fetched whole for the first time on this device (new here, or shared with it).
    public var firstFetched: [ZoneID] = []
    /// How many lists were fetched whole, by cause: `firstFetch` counts `firstFetched`, the
    /// others `refetched`.
    public var refetchCauses: [RefetchCause: Int] = [:]
    /// Service compactions this device followed in place (Spec/SYNC.md §6.7): no list was
    /// fetched again for them.
    public var compactionsFollowed = 0
    /// Entries of this device's copies the compactions it followed purged or wrote over.
    public var purgedByFollowing = 0
    /// Lists the service no longer gives this account, removed from the device, and why.
    public var gone: [ZoneGone] = []
    /// Local entries the service refused for good, and why.
    public var rejected: [(id: CompactID, why: String)] = []
    /// Sealed changes refused for their epoch that were made again under the newest key.
    public var reissued = 0
    /// Epochs this device began for its sealed lists when a departure owed one.
    public var rotations = 0
    /// What went wrong, typed, with the list each concerns.
    public var problems: [SyncProblem] = []
    /// `problems` as text, one line each (`SyncProblem.description`).
    public var errors: [String] { problems.map(\.description) }
    /// The service could not be reached (CKError.networkUnavailable): everything stays queued.
    public var offline = false
    /// The account's storage is full (CKError.quotaExceeded): the changes it refused stay queued.
    public var quotaExceeded = false
    /// The service refused the credential (`notAuthenticated`), or the device is signed out
    /// (`signOut()`): nothing more was synced. After a refusal the lists stay on the device and
    /// local changes stay queued; `signIn` with a good credential goes on where it stopped.
    public var signedOut = false
    /// The service said to wait (rate limited, busy, retries exhausted): the rest of this sync
    /// was skipped; everything stays queued.
    public var throttled = false

    /// A bounded sync (`sync(until:hinted:)`) reached its deadline, or its task was cancelled,
    /// before it was done: what it did stands, and `deferred` names the lists it knows it left
    /// (a database page cut off names none: the next sync finds them).
    public var timedOut = false
    /// Lists a bounded sync left for a later sync: their fetch (or re-fetch) not done, or not
    /// finished. A re-fetched list's history is always left to a later sync or its first view.
    public var deferred: [ZoneID] = []
    /// When a bounded sync must stop starting new work.
    var deadline: ContinuousClock.Instant? = nil

    /// An empty report: nothing done, nothing failed.
    public init() {}
    /// Nothing failed: the device is up to date with the service as of this sync.
    /// A list holding a newer version's changes (`SyncProblem.Reason.newerVersion`) is in sync
    /// all the same.
    public var isComplete: Bool {
        problems.allSatisfy { $0.reason == .newerVersion } && !offline && !quotaExceeded && !signedOut && !throttled && !timedOut
    }
    /// Whether the sync goes on to other lists and to the pull: nothing stopped it, and a
    /// bounded sync still has time.
    var mayContinue: Bool {
        !offline && !signedOut && !throttled && !timedOut && !Task.isCancelled && !(deadline.map { ContinuousClock.now >= $0 } ?? false)
    }

    /// What an app woken in the background answers the system (iOS's `UIBackgroundFetchResult`,
    /// one to one): `newData` when the sync brought others' changes (entries applied or held,
    /// lists fetched, lists gone), else `failed` when it could not do its work (offline, signed
    /// out, throttled, an error, or the deadline before anything was learned), else `noData`.
    public var backgroundResult: BackgroundSyncResult {
        if applied > 0 || held > 0 || !firstFetched.isEmpty || !refetched.isEmpty || !gone.isEmpty { return .newData }
        if problems.contains(where: { $0.reason != .newerVersion }) || offline || signedOut || throttled || quotaExceeded
            || timedOut { return .failed }
        return .noData
    }
}

/// A background sync's answer to the system (`SyncReport.backgroundResult`): iOS's
/// `UIBackgroundFetchResult` case by case.
public enum BackgroundSyncResult: Sendable, Equatable {
    /// Others' changes arrived (`.newData`).
    case newData
    /// Nothing new (`.noData`).
    case noData
    /// The sync could not do its work (`.failed`).
    case failed
}

/// Totals since the engine was made (what the simulation measures).
public struct SyncTotals: Sendable, Equatable {
    /// Local changes recorded through the engine.
    public var localChanges = 0
    /// Entries sent to the service, retries included.
    public var entriesSent = 0
    /// Entries the service took (stored now, or before).
    public var entriesUploaded = 0
    /// All totals zero.
    public init() {}
}

/// Why a sync engine call failed. A sync itself throws nothing: its `SyncReport` says what
/// went wrong.
public enum SyncEngineError: Error, Sendable, CustomStringConvertible {
    /// The local store failed.
    case storage(JournalError)
    /// The engine's state file (`sync/state`) cannot be read: move it aside to start over.
    case stateDamaged(String)
    /// The device is signed out: sign in to change or sync lists.
    case notSignedIn
    /// No list of this name syncs on this device.
    case noSuchList(String)
    /// A request that cannot be made as asked (a name, a replica of another account): its words.
    case invalid(String)
    /// The service refused a sharing call, or could not be reached.
    case service(SyncError)
    /// A local edit refused before anything was written: empty or over-long text, an item or an
    /// anchor not on the list (`ListEdit`).
    case refused(ListEditError)
    /// One change of a batch (`record(_:in:)` of several) refused before anything was written:
    /// its offset in the batch, and why. None of the batch was written.
    case refusedInBatch(offset: Int, ListEditError)

    public var description: String {
        switch self {
        case .storage(let e): e.description
        case .stateDamaged(let why): "the sync state is damaged (\(why)); move sync/state aside to start over (local changes not yet uploaded are still in the log, but changes kept across a sign-out or put aside by a re-fetch in progress are not)"
        case .notSignedIn: "not signed in: sign in to sync"
        case .noSuchList(let z): "no list \(z) on this device"
        case .invalid(let why): why
        case .service(let e): e.description
        case .refused(let why): why.description
        case .refusedInBatch(let offset, let why): "change \(offset) of the batch (counting from 0): \(why); nothing of the batch was written"
        }
    }
}

/// The client side of sync (Spec/SYNC.md §7), over one local `JournalStore` and one
/// `SyncService`:
/// - **The log is the upload queue.** A local change is appended durably first; an "uploaded"
///   consumer mark records what the service has, so local compaction never takes what it lacks.
///   Local changes are the entries this device (`replica`) authored above that mark; entries
///   from the service are never sent back.
/// - **Pull**: database changes, then each changed zone's pages; a page goes into the durable
///   to-apply queue with its token, then into the log: a crash between any two steps loses and
///   duplicates nothing (appends are idempotent by entry id).
/// - **Stale devices**: `tokenExpired` pushes what is pending, re-fetches the zone from the
///   service (its compacted entries, not the whole history, and its history file), replaces the
///   local copy, and puts pending local changes back on top.
public actor SyncEngine {
    /// The local store: its log holds every list and is the upload queue.
    public nonisolated let store: JournalStore
    /// The store's own executor (`JournalStore.executor`): the engine runs there, so its
    /// appends, fsyncs and reads block that thread, never the cooperative pool every task of the
    /// app shares, and never the caller's actor.
    nonisolated let executor: StoreExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    /// Whether the engine's code runs on the store's thread (it always does; for tests).
    var runsOnTheStoresThread: Bool { executor.isCurrent }
    /// The service synced with, as the account last signed in (`signIn(_:)` replaces it).
    public private(set) var service: any SyncService
    /// This device as the author of its local changes: `account` or `account:device`.
    public nonisolated let replica: String
    /// How the engine batches, pages and backs off.
    public var options: SyncEngineOptions
    let clock: any SyncClock
    var rng: SplitMix64
    var hlc: HybridClock
    var state: SyncState
    /// Lists installed from a snapshot whose history is not here yet (found again at each start:
    /// such a list's first entry is its base and its mark is still 0).
    var historyWanted = Set<String>()
    /// Why each list being fetched anew is (reported once its re-fetch completes).
    var refetchCauses: [String: RefetchCause] = [:]
    /// Per list, the digest the last compaction record followed in the current fetch names, its
    /// mark, and the ids fetched after it (`checkFollowed`).
    var followChecks: [String: (want: UInt64, to: SequenceNumber, after: Set<CompactID>)] = [:]
    /// Lists whose record check an upload's answer began and the next fetch finishes: the push
    /// saved entries whose place after the record it does not know (`pushZone`).
    var followChecksAwaitingFetch: Set<String> = []
    /// Lists whose push follows a record an upload's answer carried: true while every entry the
    /// push saved since is known to come after it (`noteAnswer`).
    var pushFollow: [String: Bool] = [:]
    /// The problems of recent syncs, with when (`diagnosticReport()`).
    var recentProblems: [(at: Int64, problem: SyncProblem)] = []
    /// Whether this engine has checked, at its first sync, that each list flagged as holding a
    /// newer version's changes still does (`clearNewerChangesThisVersionReads`).
    var checkedNewerChanges = false
    /// The app's sealing for sealed lists (`useSealing(_:)`); nil: refusals are only reported.
    var sealing: (any SealedListSealing)?
    /// Per sealed list: the epoch a departure owes a rotation of, as an upload was told (`rotationDue`).
    var owedRotations: [String: UInt64] = [:]
    /// Per sealed list: changes the service refused for their epoch, to make again, and how
    /// many fetches each has waited for a newer epoch.
    var epochRefused: [String: [CompactID: Int]] = [:]
    /// Key records this device uploaded that the service took, while changes before them in
    /// the log still wait (a rotation's record is uploaded out of turn).
    var savedKeyRecords: Set<CompactID> = []
    /// Sealed lists whose fetch brought a join or a key record, still to check for a member
    /// without a key (`wrapMembersWithoutKey`); a check that could not finish stays due.
    var wrapCheckDue: Set<String> = []
    /// What the engine has recorded and sent since it was made.
    public internal(set) var totals = SyncTotals()

    static let consumer = "uploaded"
    /// What says a store syncs: `ListCompactor` refuses a store that has it (SYNC.md §6.2 rule 1).
    static let stateFile = StoreLayout.deviceStateFile

    /// Opens the engine's state beside `store` (creating it), as `replica`: the author of every
    /// local change, `account` or `account:device`.
    public init(store: JournalStore, service: any SyncService, replica: String, clock: any SyncClock = SystemSyncClock(),
                seed: UInt64 = UInt64.random(in: 0 ... .max), options: SyncEngineOptions = SyncEngineOptions()) throws(SyncEngineError) {
        guard SyncNames.account(ofAuthor: replica) == service.account else {
            throw .invalid("the replica \(replica) is not a device of account \(service.account) (use \(service.account) or \(service.account):device)")
        }
        self.store = store
        executor = store.executor
        self.service = service
        self.replica = replica
        self.clock = clock
        self.options = options
        rng = SplitMix64(seed: seed)
        let path = store.path + "/" + Self.stateFile
        var loaded: SyncState
        if store.fileSystem.kind(of: path) == .file {
            do {
                loaded = try SyncStateCodec.decode(try AtomicFile.read(path, fs: store.fileSystem, limit: SyncStateCodec.maxFileBytes))
            } catch { throw .stateDamaged(String(describing: error)) }
            guard loaded.replica == replica else { throw .invalid("this store syncs as replica \(loaded.replica), not \(replica)") }
        } else {
            loaded = SyncState(replica: replica, account: service.account)
        }
        if loaded.account == nil && loaded.signedOutAccount == nil { loaded.account = service.account }
        state = loaded
        hlc = HybridClock(last: HybridTime(rawValue: loaded.clock))
        do {
            if store.consumer(Self.consumer) == nil { try store.registerConsumer(Self.consumer, leaseUntil: nil) }
            try AtomicFile.write(SyncStateCodec.encode(loaded), to: path, fs: store.fileSystem)
        } catch { throw .storage(error) }
        for (name, z) in loaded.zones where z.replacing == nil {
            if ListQuery(store: store).lacksHistoryBeforeBase(name) { historyWanted.insert(name) }
        }
    }

    /// Opens the engine as `init` does, on the store's own thread: its state file is read and
    /// written there, never on the caller's actor (an app on the main actor calls this).
    public static func open(store: JournalStore, service: any SyncService, replica: String, clock: any SyncClock = SystemSyncClock(),
                            seed: UInt64 = UInt64.random(in: 0 ... .max),
                            options: SyncEngineOptions = SyncEngineOptions()) async throws(SyncEngineError) -> SyncEngine {
        try await store.executor.run { () throws(SyncEngineError) -> SyncEngine in
            try SyncEngine(store: store, service: service, replica: replica, clock: clock, seed: seed, options: options)
        }
    }

    func save() throws(SyncEngineError) {
        state.clock = max(state.clock, hlc.last.rawValue)
        do { try AtomicFile.write(SyncStateCodec.encode(state), to: store.path + "/" + Self.stateFile, fs: store.fileSystem) } catch {
            throw .storage(error)
        }
    }

    /// The engine's state as saved (for diagnostics and tests).
    package var syncState: SyncState { state }

    // MARK: Local changes

    /// Creates a list this account owns; the service learns of it on the next push.
    public func createList(_ name: String) throws(SyncEngineError) -> ZoneID {
        guard let account = state.account else { throw .notSignedIn }
        if let rule = ZoneID.refusal(owner: account, name: name) {
            throw .invalid("\(QuotedInput.quote(name)) is not a list name: \(rule)")
        }
        guard let zone = ZoneID(owner: account, name: name) else { throw .invalid("\(QuotedInput.quote(name)) is not a list name") }
        do { try store.createZone(zone.storeName) } catch { throw .storage(error) }
        if state.zones[zone.storeName] == nil { state.zones[zone.storeName] = SyncState.Zone(zone: zone, scope: .private) }
        try save()
        return zone
    }

    /// Appends a local change to the list, durably (the UI may show it once this returns),
    /// after checking it against the list this device holds (`ListEdit`: text present and within
    /// 4,096 bytes, items and anchors on the list): a refused edit is `.refused`, and nothing is
    /// written. The entry's id, author (`replica`) and clock are the engine's; the clock is saved
    /// with the engine's state, so it never runs back across launches.
    @discardableResult
    public func record(_ operation: EntryOperation, in zone: ZoneID) throws(SyncEngineError) -> JournalEntry {
        try checkWritable(zone)
        if let why = try refusal(of: operation, in: zone) { throw .refused(why) }
        return try recordUnchecked(operation, in: zone)
    }

    /// Records several changes to one list at once (a paste of 40 items): each checked against
    /// the list as the ones before it leave it (`ListEdit.refusal(ofBatch:on:)`), then all written
    /// in one atomic, durable append and one state write; after a crash, all of them are there
    /// or none. A refused change refuses the batch (`refusedInBatch`), and nothing is written.
    /// At most `maxBatchChanges` changes.
    @discardableResult
    public func record(_ operations: [EntryOperation], in zone: ZoneID) throws(SyncEngineError) -> [JournalEntry] {
        try checkWritable(zone)
        guard operations.count <= Self.maxBatchChanges else {
            throw .invalid("a batch of \(operations.count) changes: at most \(Self.maxBatchChanges) are recorded at once")
        }
        guard !operations.isEmpty else { return [] }
        if let (offset, why) = try batchRefusal(of: operations, in: zone) { throw .refusedInBatch(offset: offset, why) }
        return try recordUnchecked(operations, in: zone)
    }

    /// The most changes `record(_:in:)` takes at once.
    public static let maxBatchChanges = 4_096

    /// `refusal(of:in:)` for a batch, reading the list only when one of them names an item.
    private func batchRefusal(of operations: [EntryOperation], in zone: ZoneID) throws(SyncEngineError) -> (Int, ListEditError)? {
        ListEdit.refusal(ofBatch: operations, on: try listToCheck(operations, in: zone))
    }

    /// The list as this device holds it when one of `operations` names an item (an add after
    /// one, a mark-off, unmark, delete or move); else an empty one, read from nothing.
    private func listToCheck(_ operations: [EntryOperation], in zone: ZoneID) throws(SyncEngineError) -> ListState {
        let namesItems = operations.contains { op in
            switch op {
            case .add(_, _, let after): after != nil
            case .markOff, .unmark, .delete, .move: true
            default: op.listAdd?.after != nil
            }
        }
        guard namesItems else { return ListState() }
        do { return try ListQuery(store: store).materialise(zone.storeName).state } catch { throw Self.queryError(error) }
    }

    /// Records a change made for the entry that will carry it: `make` is given that entry's
    /// stamp (its id, zone, author and clocks, drawn by the engine as for any change) and returns
    /// the operation, which is then checked and written as `record(_:in:)` writes one. A sealed
    /// list's change is made this way, because its text is sealed for its entry (Spec/SEALING.md
    /// §2.3): `TextSealer.add(_:item:after:entry:author:clock:wallTime:)` with the stamp's fields.
    /// An error `make` throws is `.invalid`, and nothing is written.
    @discardableResult
    public func record(in zone: ZoneID, making make: @Sendable (EntryStamp) throws -> EntryOperation) throws(SyncEngineError) -> JournalEntry {
        try checkWritable(zone)
        let stamp = newStamp(in: zone)
        let operation: EntryOperation
        do { operation = try make(stamp) } catch { throw .invalid("the change could not be made for its entry: \(error)") }
        if let why = try refusal(of: operation, in: zone) { throw .refused(why) }
        return try write([stamp.entry(operation)], in: zone)[0]
    }

    /// Records the key record that begins an epoch of a sealed list (Spec/SEALING.md §4.2), under
    /// the entry id its zone and epoch fix (§5.1): uploaded alone, so that the service can take
    /// it as the next epoch, or answer that another member's device began that epoch first.
    /// `JournalSeal`'s `EpochKeys.record(for:previous:reason:zone:members:creator:)` makes it.
    @discardableResult
    /// A list that holds a record of that epoch already (this device's, still waiting for the
    /// service, or one fetched) is refused: an epoch has one record, under one id; so is a list
    /// being fetched anew, whose copy may not hold yet the record another member began the epoch
    /// with (the fetch would then meet two records under one id).
    public func recordKeys(_ record: EpochKeyRecord, in zone: ZoneID) throws(SyncEngineError) -> JournalEntry {
        try checkWritable(zone)
        if state.zones[zone.storeName]?.replacing != nil {
            throw .invalid("the list is being fetched anew: begin an epoch once its copy is in")
        }
        let held: [EpochKeyRecord]
        do { held = try ListQuery(store: store).materialise(zone.storeName).state.keyRecords } catch { throw Self.queryError(error) }
        if held.contains(where: { $0.epoch == record.epoch }) {
            throw .invalid("the list holds a key record of epoch \(record.epoch) already: an epoch has one record")
        }
        var stamp = newStamp(in: zone)
        stamp = EntryStamp(id: SealedZone.keyRecordID(zone: zone.storeName, epoch: record.epoch), zone: stamp.zone, author: stamp.author,
                           clock: stamp.clock, wallTime: stamp.wallTime)
        return try write([stamp.entry(.opaque(kind: EpochKeyRecord.kind, body: record.encoded))], in: zone)[0]
    }

    /// A new entry's id, author and clocks in `zone`.
    private func newStamp(in zone: ZoneID) -> EntryStamp {
        let now = clock.now()
        return EntryStamp(id: CompactID.random(using: &rng), zone: zone.storeName, author: replica, clock: hlc.tick(wallMillis: now), wallTime: now)
    }

    /// `recordUnchecked` of several: one state write (saved before the append: the clock never
    /// runs back across a restart, and a re-fetch in progress, which may replace the incarnation
    /// these go into, puts them back), one atomic append.
    func recordUnchecked(_ operations: [EntryOperation], in zone: ZoneID) throws(SyncEngineError) -> [JournalEntry] {
        var entries: [JournalEntry] = []
        entries.reserveCapacity(operations.count)
        for operation in operations {
            if case .opaque(ListBase.kind, _) = operation { throw .refused(.notAnEdit("a list's base")) }
            entries.append(newStamp(in: zone).entry(operation))
        }
        return try write(entries, in: zone)
    }

    /// Writes local changes: the state first (the clock, and a re-fetch's pending changes), then
    /// one atomic append.
    func write(_ entries: [JournalEntry], in zone: ZoneID) throws(SyncEngineError) -> [JournalEntry] {
        state.zones[zone.storeName]?.replacing?.pendingLocal += entries
        try save()
        do { try store.append(batch: entries) } catch { throw .storage(error) }
        totals.localChanges += entries.count
        return entries
    }

    /// A change may go into `zone`: the device is signed in and syncs the list, live here.
    private func checkWritable(_ zone: ZoneID) throws(SyncEngineError) {
        guard state.account != nil else { throw .notSignedIn }
        guard state.zones[zone.storeName] != nil, let info = store.zone(zone.storeName), !info.isDeleted else { throw .noSuchList(zone.storeName) }
    }

    /// Why `operation` may not be written to `zone`, read against the list as this device holds
    /// it only when the operation names an item (an add at the head or a rename reads nothing).
    func refusal(of operation: EntryOperation, in zone: ZoneID) throws(SyncEngineError) -> ListEditError? {
        ListEdit.refusal(of: operation, on: try listToCheck([operation], in: zone))
    }

    /// `record` without the checks against the list: the simulation writes what another device,
    /// which holds the list differently, might (a mark-off of an item this one never saw).
    @discardableResult
    /// `record(in:making:)` without the edit checks: for the simulation, like `recordUnchecked(_:in:)`.
    package func recordUnchecked(in zone: ZoneID, making make: @Sendable (EntryStamp) -> EntryOperation) throws(SyncEngineError) -> JournalEntry {
        try checkWritable(zone)
        let stamp = newStamp(in: zone)
        return try write([stamp.entry(make(stamp))], in: zone)[0]
    }

    package func recordUnchecked(_ operation: EntryOperation, in zone: ZoneID) throws(SyncEngineError) -> JournalEntry {
        try checkWritable(zone)
        return try recordUnchecked([operation], in: zone)[0]
    }

    /// Deletes a list here and, on the next push, on the service (its owner), or leaves it (a
    /// participant).
    public func deleteList(_ zone: ZoneID) throws(SyncEngineError) {
        guard var z = state.zones[zone.storeName] else { throw .noSuchList(zone.storeName) }
        // The deletion to send is saved first: a crash after it still deletes on the service.
        if z.existsOnService {
            z.pendingDelete = true
            state.zones[zone.storeName] = z
        } else {
            state.zones[zone.storeName] = nil
        }
        try save()
        if let info = store.zone(zone.storeName), !info.isDeleted {
            do { try store.deleteZone(zone.storeName) } catch { throw .storage(error) }
        }
    }

    /// The lists this device syncs.
    public var lists: [ZoneID] { state.zones.values.filter { !$0.pendingDelete }.map(\.zone).sorted() }

    // MARK: Sync

    /// Push, then pull (Spec/SYNC.md §7).
    @discardableResult
    public func sync() async -> SyncReport { await sync(fetching: nil) }

    /// Push, then fetch only the zones that hints named (Spec/SYNC.md §7.7), with no database
    /// request: one request per hinted zone, none for a zone whose head this device holds (its
    /// own upload came back as a hint). A hint naming a zone this device does not sync yet (a new
    /// share) makes it a full sync. No hints: push only.
    @discardableResult
    public func sync(hinted: [ZoneHint]) async -> SyncReport { await sync(fetching: hinted) }

    /// Fetches every list anew from the service, then syncs (a troubleshooting menu's "re-fetch
    /// every list"; `jlog sync --refetch`): each list's copy is replaced by the service's, as
    /// after an expired token (Spec/SYNC.md §7.5), its history fetched again, and changes not yet
    /// uploaded are kept and sent. A list being shopped waits for shopping to end.
    public func refetchAllLists() async -> SyncReport {
        for name in state.zones.keys.sorted() where state.zones[name]?.pendingDelete == false {
            state.zones[name]?.refetchWanted = true
            refetchCauses[name] = .requested
        }
        try? save()
        return await sync()
    }

    /// A report an app attaches to a support mail (Shopping UK's diagnostic log): the engine's
    /// configuration, the service it talks to (`SyncService.diagnosticName`: an address, never a
    /// credential), every list's queues, token, oldest queued changes and last error, and the
    /// problems of the last syncs. No list's contents.
    public func diagnosticReport() -> String {
        let now = clock.now()
        var lines = ["JournalLog sync diagnostics, \(ISO8601Time.format(now))",
                     "service: \(service.diagnosticName)",
                     "options: pageLimit \(options.pageLimit), uploadCarries \(options.uploadCarries), uploadBatchEntries \(options.uploadBatchEntries), "
                        + "maxAttempts \(options.maxAttempts), maxHeldEntries \(options.maxHeldEntries), fetchesHistoryAfterRefetch \(options.fetchesHistoryAfterRefetch)",
                     "totals: \(totals.localChanges) local changes, \(totals.entriesSent) sent, \(totals.entriesUploaded) uploaded"]
        lines += status().reportLines(now: now)
        lines.append(recentProblems.isEmpty ? "no problems in recent syncs" : "recent problems (oldest first):")
        for (at, p) in recentProblems { lines.append("  \(ISO8601Time.format(at)) \(p.description)") }
        return lines.joined(separator: "\n")
    }

    /// One sync in the app's log (`SyncEngineOptions.logger`).
    private func logSummary(_ r: SyncReport) {
        let log = options.logger
        let idle = r.uploaded == 0 && r.applied == 0 && r.held == 0 && r.refetched.isEmpty && r.firstFetched.isEmpty && r.gone.isEmpty
        log.log(level: idle && r.problems.isEmpty ? .debug : .info, "sync", metadata: [
            "complete": "\(r.isComplete)", "uploaded": "\(r.uploaded)", "applied": "\(r.applied)", "held": "\(r.held)",
            "refetched": "\(r.refetched.count + r.firstFetched.count)", "followed": "\(r.compactionsFollowed)", "deferred": "\(r.deferred.count)",
        ])
        for p in r.problems {
            log.log(level: p.reason == .newerVersion ? .notice : .warning, "\(p.description)", metadata: p.zone.map { ["list": "\($0)"] } ?? [:])
        }
    }

    /// The most problems `diagnosticReport()` keeps from recent syncs.
    static let maxRecentProblems = 50

    /// A sync bounded by `deadline` (and by cancelling its task), for an app woken in the
    /// background (iOS gives it about 30 s): the cheap, visible work first (the push, then the
    /// `hinted` lists, then the other changed lists), and no new step once the deadline has
    /// passed; a service call still under way at the deadline is cut off, as a lost connection
    /// is (nothing acknowledged is lost; it is asked again later). A re-fetched list's history
    /// is left for later (`ShoppingList.history()` fetches it on first view). The report says
    /// what it did, what it left (`deferred`, `timedOut`) and what to answer the system
    /// (`backgroundResult`).
    public func sync(until deadline: ContinuousClock.Instant, hinted: [ZoneHint] = []) async -> SyncReport {
        await withTaskGroup(of: SyncReport?.self) { group in
            group.addTask { await self.sync(fetching: hinted.isEmpty ? nil : hinted, deadline: deadline) }
            group.addTask {
                // The watchdog: at the deadline the sync's task is cancelled, cutting off a call
                // under way (a little after it: the sync itself starts nothing new past it).
                try? await Task.sleep(until: deadline + .milliseconds(20), clock: .continuous)
                return nil
            }
            var report = SyncReport()
            for await r in group {
                if let r {
                    report = r
                    group.cancelAll()
                    break
                } else {
                    group.cancelAll()
                }
            }
            return report
        }
    }

    /// `sync()` (`hinted` nil) or `sync(hinted:)`, bounded by `deadline` when given.
    private func sync(fetching hinted: [ZoneHint]?, deadline: ContinuousClock.Instant? = nil) async -> SyncReport {
        var report = SyncReport()
        report.deadline = deadline
        guard state.account != nil else {
            report.signedOut = true
            return report
        }
        let sentBefore = totals.entriesSent
        if !checkedNewerChanges {
            clearNewerChangesThisVersionReads()
            checkedNewerChanges = true
        }
        await push(&report)
        if report.mayContinue {
            if let hinted {
                await pull(hinted: hinted, &report)
                // A bounded sync goes on to the other lists while it has time.
                if deadline != nil && report.mayContinue { await pull(&report) }
            } else {
                await pull(&report)
            }
        }
        if report.mayContinue && options.fetchesHistoryAfterRefetch && deadline == nil { await fetchWantedHistories(&report) }
        if report.mayContinue { await restoreSignedOutChanges(&report) }
        if deadline != nil { noteDeferred(&report) }
        for name in state.zones.keys.sorted() where state.zones[name]?.holdsNewerChanges == true {
            report.problems.append(SyncProblem(reason: .newerVersion, zone: state.zones[name]?.zone,
                                               message: "the list holds changes from a newer version of the app, kept and synced but not shown: update the app to see them"))
        }
        logSummary(report)
        let at = clock.now()
        recentProblems += report.problems.map { (at, $0) }
        if recentProblems.count > Self.maxRecentProblems { recentProblems.removeFirst(recentProblems.count - Self.maxRecentProblems) }
        state.lastSync = report.isComplete ? clock.now() : state.lastSync
        let problem = report.problems.first { $0.reason != .unreachable }
        state.lastError = (problem?.description ?? (report.offline ? "offline" : nil)).map(Self.bounded)
        try? save()
        report.sent = totals.entriesSent - sentBefore
        return report
    }

    /// The lists a bounded sync leaves for later, and whether its time ran out.
    private func noteDeferred(_ report: inout SyncReport) {
        let out = Task.isCancelled || report.deadline.map { ContinuousClock.now >= $0 } == true
        report.deferred = state.zones.keys.sorted().compactMap { name in
            guard let z = state.zones[name], !z.pendingDelete,
                  z.needsFetch || z.replacing != nil || !z.toApply.isEmpty || z.refetchWanted else { return nil }
            return z.zone
        }
        // Past the deadline at the end: a step may have been skipped or cut (a database page not
        // read names no list to defer), so the sync does not claim to be complete.
        report.timedOut = report.timedOut || out
    }

    /// Handles a service error common to every call; returns true when the sync must stop.
    func stop(on error: SyncError, _ report: inout SyncReport, zone: String? = nil) -> Bool {
        // A bounded sync's call cut off at its deadline is no failure: the rest is deferred.
        if Task.isCancelled && report.deadline != nil {
            report.timedOut = true
            return true
        }
        let reason = SyncProblem.reason(for: error)
        switch error {
        case .networkUnavailable:
            report.offline = true
            report.problems.append(SyncProblem(reason: reason, zone: nil, message: error.description))
            return true
        case .notAuthenticated:
            // The credential was refused (expired, revoked, a proxy's hiccup): syncing stops and
            // says why; the lists and their queued changes stay until the app signs out.
            report.signedOut = true
            note("the service refused this device's credential: sign in again (the lists stay on the device)", zone: nil, reason: reason, &report)
            return true
        case .quotaExceeded:
            report.quotaExceeded = true
            note("the account's quota is exceeded: changes stay queued", zone: zone, reason: reason, &report)
            return false
        case .rateLimited, .serviceBusy:
            report.throttled = true
            note("the service is busy: \(error)", zone: zone, reason: reason, &report)
            return true
        default:
            note(error.description, zone: zone, reason: reason, &report)
            return false
        }
    }

    func note(_ message: String, zone: String?, reason: SyncProblem.Reason = .local, _ report: inout SyncReport) {
        report.problems.append(SyncProblem(reason: reason, zone: zone.flatMap(ZoneID.init(storeName:)), message: message))
        // Bounded: the state file keeps it (SyncStateCodec reads at most 4,096 bytes).
        if let zone, state.zones[zone] != nil { state.zones[zone]!.lastError = Self.bounded(message) }
    }

    /// `text` cut to at most 1,000 UTF-8 bytes, at a character boundary.
    static func bounded(_ text: String) -> String {
        guard text.utf8.count > 1_000 else { return text }
        var out = ""
        for c in text {
            if out.utf8.count + c.utf8.count > 997 { break }
            out.append(c)
        }
        return out + "…"
    }

    /// One service call with the waits of Spec/SYNC.md §4.1, as uploads have: `rateLimited` and
    /// `serviceBusy` are tried again after their `retryAfter` (or a jittered backoff), at most
    /// `maxAttempts` tries in all; then the error goes to the caller, which stops the sync.
    func retrying<T>(_ call: () async throws(SyncError) -> T) async throws(SyncError) -> T {
        var attempt = 0
        while true {
            do { return try await call() } catch {
                switch error {
                case .rateLimited(let after), .serviceBusy(let after):
                    attempt += 1
                    guard attempt < options.maxAttempts else { throw error }
                    await backoff(attempt: attempt, retryAfter: after)
                default:
                    throw error
                }
            }
        }
    }

    /// A token as the state file keeps it (1–1,024 bytes, Spec/SYNC.md I2): any other is the
    /// service's error, refused before anything of its answer is kept.
    static func checked(_ token: ServiceToken) throws(SyncError) -> ServiceToken {
        let n = token.text.utf8.count
        guard n >= 1 && n <= 1_024 else { throw .invalidRequest("the service answered a token of \(n) bytes; a token is 1–1,024 bytes") }
        return token
    }

    /// Waits before retrying a request: the service's `retryAfter`, or jittered exponential backoff.
    func backoff(attempt: Int, retryAfter: Duration?) async {
        if let retryAfter { return await clock.sleep(for: retryAfter) }
        let base = options.backoffBase * (1 << min(attempt, 20))
        let capped = min(base, options.backoffMax)
        let jitter = 0.5 + Double(rng.next() % 1_000) / 1_000
        await clock.sleep(for: capped * jitter)
    }

    // MARK: Sign-out and sign-in

    /// Signs the device out, as an app does when its user signs out: lists hosted on the service
    /// leave the device, and local changes not yet uploaded are kept for when the same account
    /// signs in again (Spec/SYNC.md §7.6). A refused credential alone does not do this.
    public func signOut() {
        var report = SyncReport()
        signOut(&report)
    }

    func signOut(_ report: inout SyncReport) {
        report.signedOut = true
        var kept: [JournalEntry] = []
        // Lists the service does not hold yet stay (they are this device's alone), and so do
        // deletions still to send: both go up after signing in again.
        let local = state.zones.filter { $0.value.pendingDelete || ($0.value.zone.owner == state.account && !$0.value.existsOnService) }
        let names = state.zones.keys.filter { local[$0] == nil }.sorted()
        for name in names { kept += ((try? pendingLocal(name))?.entries ?? []).map(\.entry) }
        // The kept changes are saved before any list leaves: a crash between loses none.
        state.signedOut += kept
        state.signedOutAccount = state.signedOutAccount ?? state.account
        state.account = nil
        state.zones = local
        state.databaseTokens = [:]
        try? save()
        for name in names {
            if let info = store.zone(name), !info.isDeleted { _ = try? store.deleteZone(name) }
        }
    }

    /// Signs in as another account on this store (Part 7: another iCloud account): this
    /// account's lists leave the device, their changes not yet uploaded kept apart for it (as a
    /// sign-out keeps them; they go up when it signs in here again), and the returned engine, the
    /// device as `replica` (`newAccount` or `newAccount:device`), fetches the new account's lists
    /// at its first sync. Use the returned engine from then on, never this one. Refused (`invalid`)
    /// while this account has lists the service does not hold yet, or deletions still to send:
    /// sync first, so nothing of them is left without an account.
    public func switchAccount(to service: any SyncService, replica newReplica: String) throws(SyncEngineError) -> SyncEngine {
        guard SyncNames.account(ofAuthor: newReplica) == service.account else {
            throw .invalid("the replica \(newReplica) is not a device of account \(service.account)")
        }
        // A list on this device only would leave with the account, and no sync ever sends it.
        let local = state.zones.values.filter { $0.localOnly && !$0.pendingDelete }.map(\.zone.storeName).sorted()
        guard local.isEmpty else {
            throw .invalid("\(local.count) lists of \(state.account ?? "this account") are on this device only (\(local.joined(separator: ", "))): share or delete them before switching accounts, or they would be lost")
        }
        let unsynced = state.zones.values.filter { $0.pendingDelete || ($0.zone.owner == state.account && !$0.existsOnService) }
        guard unsynced.isEmpty else {
            throw .invalid("\(unsynced.count) lists of \(state.account ?? "this account") are not on the service yet, or their deletion is still to send (\(unsynced.map(\.zone.storeName).sorted().joined(separator: ", "))): sync before switching accounts")
        }
        var report = SyncReport()
        signOut(&report)
        state.replica = newReplica
        state.account = service.account
        try save()
        return try SyncEngine(store: store, service: service, replica: newReplica, clock: clock, seed: rng.next(), options: options)
    }

    /// Signs in with `service` (the same account only): after a refused credential, syncing goes
    /// on where it stopped, nothing fetched again; after `signOut()`, the next sync fetches every
    /// list anew, and the kept changes of the same account go back on top.
    public func signIn(_ service: any SyncService) throws(SyncEngineError) {
        guard SyncNames.account(ofAuthor: replica) == service.account else {
            throw .invalid("the replica \(replica) is not a device of account \(service.account)")
        }
        self.service = service
        state.account = service.account
        try save()
    }

    /// The kept changes of the same account go to the service before they are in any list again
    /// (Spec/SYNC.md §7.6): each list that is back and live has its kept changes uploaded, and
    /// what the service stores comes back with the pull that follows, as anyone's change does. A
    /// change the service stored before and has since purged is answered `saved` and never comes
    /// back, as on every other device; appending it here first would show it on this device only.
    /// A change the service refuses is reported and dropped; one that could not be sent (offline,
    /// busy, its list not back) stays kept for a later sync.
    func restoreSignedOutChanges(_ report: inout SyncReport) async {
        // Kept changes are restored by their own account only (several may wait, after switches).
        let mine = state.signedOut.filter { SyncNames.account(ofAuthor: $0.author) == state.account }
        guard !mine.isEmpty else { return }
        var done: [String: Set<CompactID>] = [:]
        var saved: [String: Set<CompactID>] = [:]
        var stopped = false
        /// Kept changes of a list that is going away: reported and dropped, never left for good.
        func dropKept(_ name: String, _ why: String, _ report: inout SyncReport) {
            for e in mine where e.zone == name {
                done[name, default: []].insert(e.id)
                report.rejected.append((e.id, why))
            }
        }
        zones: for name in Set(mine.map(\.zone)).sorted() {
            if state.zones[name]?.pendingDelete == true {
                dropKept(name, "its list was deleted on this device", &report)
                continue
            }
            guard let z = state.zones[name], z.replacing == nil, let info = store.zone(name), !info.isDeleted else { continue }
            for batch in uploadBatches(mine.filter { $0.zone == name }) {
                let outcome: SendOutcome
                do { outcome = try await send(batch, to: z.zone, carrying: false, &report) } catch {
                    switch error {
                    case .zoneNotFound where z.zone.owner == state.account:
                        // Made again by the next push; its kept changes follow on the sync after.
                        state.zones[name]?.existsOnService = false
                        continue zones
                    case .zoneNotFound:
                        dropKept(name, "its list is gone from the service", &report)
                        removeLocal(name, reason: .deleted, &report)
                        continue zones
                    case .zoneDeleted(let reason):
                        dropKept(name, "its list is gone from the service", &report)
                        removeLocal(name, reason: reason, &report)
                        continue zones
                    default:
                        stopped = stop(on: error, &report, zone: name)
                        if stopped { break zones }
                        continue zones
                    }
                }
                report.uploaded += outcome.saved.count
                totals.entriesUploaded += outcome.saved.count
                saved[name, default: []].formUnion(outcome.saved)
                done[name, default: []].formUnion(outcome.saved)
                for (id, why) in outcome.refused.sorted(by: { $0.key < $1.key }) {
                    done[name, default: []].insert(id)
                    report.rejected.append((id, why.description))
                }
                if let why = outcome.stoppedBy {
                    stopped = stop(on: why, &report, zone: name)
                    if stopped { break zones }
                    continue zones
                }
            }
        }
        state.signedOut.removeAll { done[$0.zone]?.contains($0.id) == true }
        if state.signedOut.isEmpty { state.signedOutAccount = nil }
        try? save()
        guard !saved.isEmpty, !stopped, report.mayContinue else { return }
        // What the service stored comes back now; as it came from the service, it counts as
        // uploaded (the mark passes it, never a change still waiting). Only those lists: the
        // others were pulled a moment ago, and one waiting to be fetched anew would try its
        // failing push a second time in this sync.
        await pull(&report, only: Set(saved.keys))
        for (name, ids) in saved {
            guard let p = try? pendingLocal(name) else { continue }
            var through: SequenceNumber? = nil
            for e in p.entries {
                guard ids.contains(e.entry.id) else { break }
                through = e.sequence
            }
            if let through { advanceUploaded(name, to: through) }
        }
    }
}

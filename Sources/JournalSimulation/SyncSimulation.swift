import Foundation
import JournalLog
import JournalQuery
import JournalService
import JournalSync
import ListModel
import JournalTesting

/// A seeded multi-device run (Spec/SYNC.md §8, `jlog simulate`): devices, each with its own store
/// on a simulated disk, edit shared lists at random while a faulty service drops, duplicates,
/// delays and refuses their requests, while they go offline, lose power, and while the service
/// compacts (expiring tokens), restarts and loses power itself, and owners share, remove and
/// delete. Then everything syncs until quiet, and the run checks that every device holds exactly
/// the service's lists and histories, that the service's lists equal a full replay of its log,
/// that no acknowledged local change was lost and nothing was stored twice. Everything runs in
/// one task on virtual time, so a seed replays exactly.
/// What a sealed simulation needs of cryptography (`jlog simulate --sealed`, Spec/SEALING.md),
/// handed in by its caller so that the simulation itself needs none: each account's keys, the
/// engine's sealing, key records, and sealing and opening a text with an account's keys as a
/// list's key records give them.
package struct SimulationSealing: Sendable {
    /// An account's public keys, as its devices publish them.
    package var published: @Sendable (_ account: String) -> PublishedAccountKeys
    /// The sealing an account's engine uses (`SyncEngine.useSealing`).
    package var engineSealing: @Sendable (_ account: String) -> any SealedListSealing
    /// The key record that begins the epoch after `records`' newest (epoch 1 for none) in
    /// `zone`, by `creator` for `members`; nil when the creator holds no key of the newest epoch.
    package var nextRecord: @Sendable (_ records: [EpochKeyRecord], _ zone: ZoneID, _ creator: String, _ members: [String],
                                       _ reason: EpochKeyRecord.Reason) -> EpochKeyRecord?
    /// `text` sealed for `binding` under the newest epoch of `records`, with `account`'s keys;
    /// nil when the account holds no key of that epoch.
    package var seal: @Sendable (_ text: String, _ binding: SealBinding, _ records: [EpochKeyRecord], _ account: String) -> SealedValue?
    /// The text `value` holds for `binding`, opened with `account`'s keys; nil when it does not open.
    package var open: @Sendable (_ value: SealedValue, _ binding: SealBinding, _ records: [EpochKeyRecord], _ account: String) -> String?
    /// Replaces `account`'s keys with new ones its current keys vouch for (SEALING.md §4.7): the
    /// keys to publish. Nil: accounts keep their keys.
    package var changeKeys: (@Sendable (_ account: String) -> PublishedAccountKeys)?
    /// Takes back the last `changeKeys` of `account`, whose new keys the service did not take.
    package var keepKeys: (@Sendable (_ account: String) -> Void)?

    package init(published: @escaping @Sendable (String) -> PublishedAccountKeys,
                 engineSealing: @escaping @Sendable (String) -> any SealedListSealing,
                 nextRecord: @escaping @Sendable ([EpochKeyRecord], ZoneID, String, [String], EpochKeyRecord.Reason) -> EpochKeyRecord?,
                 seal: @escaping @Sendable (String, SealBinding, [EpochKeyRecord], String) -> SealedValue?,
                 open: @escaping @Sendable (SealedValue, SealBinding, [EpochKeyRecord], String) -> String?,
                 changeKeys: (@Sendable (String) -> PublishedAccountKeys)? = nil, keepKeys: (@Sendable (String) -> Void)? = nil) {
        self.published = published
        self.engineSealing = engineSealing
        self.nextRecord = nextRecord
        self.seal = seal
        self.open = open
        self.changeKeys = changeKeys
        self.keepKeys = keepKeys
    }
}

package struct SimulationOptions: Sendable {
    package var replicas = 5
    package var ops = 1_000
    package var seed: UInt64 = 1
    /// Inject service faults (`serviceFaults`), partitions, power losses and restarts.
    package var faults = true
    /// Which faults, when `faults` holds.
    package var serviceFaults = ServiceFaults.all
    package var partitions = true
    package var powerLosses = true
    package var serviceRestarts = true
    /// Accounts the devices belong to (at most `replicas`).
    package var accounts = 3
    package var retentionDays: Int64 = 2
    /// Seals every list's item texts and names (`jlog simulate --sealed`, Spec/SEALING.md): the
    /// simulation stays free of cryptography, its caller hands it the sealer.
    package var sealing: SimulationSealing? = nil
    /// The service's storage when not the engine's in-memory store (`jlog simulate --database`:
    /// PostgreSQL), made with the run's clock; it outlives a service restart, as a database does.
    package var storage: (@Sendable (_ now: @escaping @Sendable () -> Int64) throws -> any ServiceStorage)? = nil
    /// Faults of the service's storage (`FaultyStorage`), when `faults` holds: the database not
    /// answering, answers lost after a commit, damage read, slow calls. Nil: none.
    package var storageFaults: StorageFaults? = nil

    package init() {}
}

package struct SimulationResult: Sendable {
    package var seed: UInt64
    package var replicas: Int
    package var ops: Int
    package var converged: Bool
    /// Acknowledged local changes missing from the service's history at the end.
    package var lost: Int
    /// Entry ids stored twice in one zone's log, anywhere.
    package var duplicated: Int
    /// Distinct entries a device uploaded per local change it made: 1 when every change goes up
    /// once and nothing fetched goes back up (less when a list went away before its upload).
    package var uploadsPerChange: Double
    /// Entries sent per local change, retries after faults included.
    package var sendsPerChange = 0.0
    /// Entries a device uploaded that another device authored: always 0.
    package var foreignUploads = 0
    package var localChanges: Int
    package var entriesSent: Int
    package var faultsInjected = 0
    package var powerLosses = 0
    package var serviceRestarts = 0
    package var compactions = 0
    package var purged = 0
    package var refetches = 0
    /// Epochs begun (sealed runs): by the simulated apps (creation, joins) and by engines a
    /// departure's `rotationDue` asked.
    package var rotations = 0
    /// Sealed changes refused for their epoch that engines made again under a newer key.
    package var reissued = 0
    /// Accounts' keys replaced (sealed runs; SEALING.md §4.7).
    package var keyChanges = 0
    /// Re-fetches by cause (`RefetchCause`), compactions devices followed in place, and
    /// re-fetches a compaction caused (`tokenExpired`, `cannotFollow`) on a device whose last
    /// complete full sync was within the retention. The last is counted, not judged: a complete
    /// sync can leave one list's token behind (a list being shopped, whose fetch is held; a
    /// re-fetch that waits for shopping to end), and a failed compaction run leaves no record
    /// (Spec/SYNC.md §6.2 rule 10).
    package var refetchCauses: [String: Int] = [:]
    package var compactionsFollowed = 0
    package var refetchesWithinRetention = 0
    package var membershipChanges = 0
    /// Syncs of one hinted list (`sync(hinted:)`), no database request.
    package var hintedSyncs = 0
    package var settleRounds = 0
    /// Failures the service's storage injected (`FaultyStorage`), and the compaction runs and
    /// service starts they failed (each tried again later, as a node does).
    package var storageFaultsInjected = 0
    package var compactionsFailed = 0
    package var startsFailed = 0
    /// Devices signed out at the end: the simulation revokes no credential, so any is a failure
    /// read as a refusal.
    package var signedOut = 0
    /// Lists paged by a reader that began while a compaction rewrote the log and was served to
    /// the end, so its entries were compared with the service's (`WindowReader`).
    package var windowReads = 0
    /// Sealed runs: the sealed texts the devices' lists showed at the end, and those that did not
    /// open (each one a problem).
    package var sealedTexts = 0
    package var unopened = 0
    /// The first differences found, for a failing seed.
    package var problems: [String] = []
    package var seconds = 0.0
}

/// Routes a device's calls to the current service core: a restart replaces it.
final class CoreBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: ServiceCore
    init(_ core: ServiceCore) { value = core }
    var core: ServiceCore {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}

/// What one device sent up: the distinct ids, and any it did not author.
final class UploadLedger: @unchecked Sendable {
    private let lock = NSLock()
    private var ids = Set<CompactID>()
    private var foreign = 0
    func record(_ entries: [JournalEntry], replica: String) {
        lock.withLock {
            for e in entries {
                ids.insert(e.id)
                if e.author != replica { foreign += 1 }
            }
        }
    }
    var counts: (distinct: Int, foreign: Int) { lock.withLock { (ids.count, foreign) } }
}

/// One device's way to the service in the simulation: to whichever core the run holds now (it
/// restarts), noting every upload in the device's ledger.
struct RoutedService: ForwardingSyncService {
    let box: CoreBox
    let account: String
    let replica: String
    let ledger = UploadLedger()
    /// Each call's credential is judged first, as a server's middleware does.
    let credentials: SimulatedCredentials

    func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
        let caller = try credentials.authenticate(account).account()
        if case .upload(let entries, _, _, _) = call { ledger.record(entries, replica: replica) }
        return try box.core.perform(ServiceCaller(account: caller, device: replica), call)
    }
}

/// The simulation's credentials: every account's is valid (the run revokes none), and each
/// lookup reads through the service's storage, so an injected storage failure makes it
/// `unavailable`, never `refused`: a device signed out at the end is a failure read as a refusal.
final class SimulatedCredentials: @unchecked Sendable {
    private let lock = NSLock()
    private var storageNow: (any ServiceStorage)?
    var storage: (any ServiceStorage)? {
        get { lock.withLock { storageNow } }
        set { lock.withLock { storageNow = newValue } }
    }

    func authenticate(_ account: String) -> Authentication {
        guard let storage else { return .accepted(account: account) }
        do { _ = try storage.zoneInfo("_service/members") } catch { return .unavailable(error) }
        return .accepted(account: account)
    }
}

package enum SyncSimulation {
    static func storeOptions(_ fs: any FileSystem) -> StoreOptions {
        var o = StoreOptions(durability: .always, segmentSize: 32 << 10, preallocate: false)
        o.fileSystem = fs
        o.indexCheckpointBytes = 64 << 10
        return o
    }

    final class Node {
        let replica: String
        let account: String
        let fs = MemoryFileSystem()
        var store: JournalStore
        var engine: SyncEngine
        let service: FaultyService
        let ledger: UploadLedger
        var starts: UInt64 = 0
        /// When this device last finished a complete sync (the simulation's clock), if ever.
        var lastComplete: Int64? = nil
        /// Totals of the engines this node ran before the current one.
        var earlier = SyncTotals()

        /// The engine's sealing in a sealed run, given again to each engine a restart makes.
        var sealing: (any SealedListSealing)?

        init(replica: String, account: String, box: CoreBox, credentials: SimulatedCredentials, clock: VirtualClock, seed: UInt64) throws {
            seed0 = seed
            self.replica = replica
            self.account = account
            let routed = RoutedService(box: box, account: account, replica: replica, credentials: credentials)
            ledger = routed.ledger
            self.service = FaultyService(routed, faults: ServiceFaults(), seed: seed ^ 0x5EED)
            try fs.createDirectory("/d")
            store = try JournalStore.open("/d/local.wal", options: SyncSimulation.storeOptions(fs))
            engine = try SyncEngine(store: store, service: service, replica: replica, clock: clock, seed: seed, options: Self.options(seed))
        }

        /// Half the devices (by seed) fetch a re-fetched list's history only when asked.
        static func options(_ seed: UInt64) -> SyncEngineOptions {
            var o = SyncEngineOptions()
            o.fetchesHistoryAfterRefetch = seed & 1 == 0
            return o
        }
        let seed0: UInt64

        func restart(clock: VirtualClock, seed: UInt64, crash: MemoryFileSystem.CrashMode) async throws {
            let t = await engine.totals
            earlier.localChanges += t.localChanges
            earlier.entriesSent += t.entriesSent
            earlier.entriesUploaded += t.entriesUploaded
            try? store.close()
            fs.crash(crash)
            store = try JournalStore.open("/d/local.wal", options: SyncSimulation.storeOptions(fs))
            starts += 1
            engine = try SyncEngine(store: store, service: service, replica: replica, clock: clock, seed: seed &+ starts &* 0x9E37_79B9_7F4A_7C15,
                                    options: Self.options(seed0))
            if let sealing { await engine.useSealing(sealing) }
        }
    }

    /// A local change the sim made and the engine acknowledged.
    struct Acked {
        var id: CompactID
        var zone: String
        var account: String
        /// The account's access generation for the zone when it was made: a removal since voids it.
        var generation: Int
    }

    package static func run(_ options: SimulationOptions) async -> SimulationResult {
        let started = Date()
        var result = SimulationResult(seed: options.seed, replicas: options.replicas, ops: options.ops, converged: false, lost: 0,
                                      duplicated: 0, uploadsPerChange: 0, localChanges: 0, entriesSent: 0)
        do {
            try await simulate(options, &result)
        } catch {
            result.problems.insert("the run stopped: \(error)", at: 0)
        }
        result.converged = result.converged && result.problems.isEmpty
        result.seconds = Date().timeIntervalSince(started)
        return result
    }

    static func simulate(_ o: SimulationOptions, _ result: inout SimulationResult) async throws {
        let run = try SimulationRun(o, result: result)
        defer { result = run.result }
        try await run.start()
        for _ in 0..<o.ops { try await run.step() }
        try await run.finish()
    }

    /// A zone's entries as the service's storage holds them, in order.
    static func serviceEntries(_ storage: any ServiceStorage, _ zone: String) throws -> [JournalEntry] {
        var all: [JournalEntry] = []
        var token: FeedToken? = nil
        while true {
            let page = try storage.zoneChanges(zone, since: token, limit: 10_000)
            all += page.entries.map(\.entry)
            token = page.token
            if !page.moreComing { return all }
        }
    }

    /// Every service list's participants.
    static func memberships(_ core: ServiceCore, zones: [ZoneInfo]) -> [String: Set<String>] {
        var m: [String: Set<String>] = [:]
        for z in zones where !z.isDeleted {
            if let id = ZoneID(storeName: z.name) { m[z.name] = Set(core.members(of: id)) }
        }
        return m
    }

    /// Rounds of syncing every device until a round changes nothing anywhere.
    /// Counts what one sync of `node` did (at `now`, the simulation's clock) into `result`.
    static func tally(_ r: SyncReport, of node: Node, now: Int64, retention: Int64, full: Bool = true, _ result: inout SimulationResult) {
        result.reissued += r.reissued
        result.rotations += r.rotations
        result.refetches += r.refetched.count + r.firstFetched.count
        result.compactionsFollowed += r.compactionsFollowed
        for (cause, n) in r.refetchCauses { result.refetchCauses[cause.rawValue, default: 0] += n }
        let byCompaction = (r.refetchCauses[.tokenExpired] ?? 0) + (r.refetchCauses[.cannotFollow] ?? 0)
        if byCompaction > 0, let last = node.lastComplete, now - last < retention {
            result.refetchesWithinRetention += byCompaction
        }
        // Only a full sync fetches every list the device has (a hinted one fetches one), and
        // only when shopping kept none of them from it.
        if r.isComplete && full && r.waitingForShopping.isEmpty { node.lastComplete = now }
    }

    static func settle(_ nodes: [Node], now: Int64, retention: Int64, _ result: inout SimulationResult) async throws {
        for _ in 0..<40 {
            result.settleRounds += 1
            var moved = false
            for n in nodes {
                let r = await n.engine.sync()
                tally(r, of: n, now: now, retention: retention, &result)
                if r.signedOut {
                    result.signedOut += 1
                    result.problems.append("\(n.replica) was signed out, though no credential was revoked")
                    return
                }
                if r.sent > 0 || r.applied > 0 || !r.refetched.isEmpty || !r.firstFetched.isEmpty || !r.gone.isEmpty || !r.isComplete { moved = true }
            }
            if !moved { return }
        }
        result.problems.append("the devices did not settle in 40 rounds")
    }

    static func check(_ nodes: [Node], core: ServiceCore, store: JournalStore?, acked: [Acked], generation: [String: Int],
                      _ result: inout SimulationResult) throws {
        var serviceLists: [String: (ListState, ActivityLog)] = [:]
        for z in try core.storage.allZones() where !z.isDeleted && !z.name.hasPrefix("_") {
            let entries = try serviceEntries(core.storage, z.name)
            var full = ListReducer(zone: z.name)
            for e in entries { _ = full.apply(e) }
            var state = full.state()
            if let store {
                let m = try ListQuery(store: store, fs: store.fileSystem).materialise(z.name)
                if full.state() != m.state { result.problems.append("service \(z.name): materialise differs from a full replay of its log") }
                state = m.state
            }
            let ids = entries.map(\.id)
            result.duplicated += ids.count - Set(ids).count
            serviceLists[z.name] = (state, try core.storage.history(of: z.name))
        }
        for n in nodes {
            let dq = ListQuery(store: n.store, fs: n.fs)
            let visible = Set(serviceLists.keys.filter { name in
                ZoneID(storeName: name)?.owner == n.account || core.members(of: ZoneID(storeName: name)!).contains(n.account)
            })
            let held = try SyncStatus(state: awaitState(n), store: n.store)
            let lists = Set(held.lists.filter { !$0.pendingDelete }.map(\.zone.storeName))
            if lists != visible {
                result.problems.append("\(n.replica) syncs \(lists.sorted()), the service gives it \(visible.sorted())")
            }
            for name in visible.sorted() {
                guard let (state, history) = serviceLists[name] else { continue }
                do {
                    let mine = try dq.materialise(name).state
                    if mine != state {
                        let a = mine.items.map { "\($0.id):\($0.state == .markedOff ? "x" : "o")" }
                        let b = state.items.map { "\($0.id):\($0.state == .markedOff ? "x" : "o")" }
                        result.problems.append("\(n.replica) \(name): the list differs from the service's: device-only "
                            + "\(Set(a).subtracting(b).sorted().prefix(5)), service-only \(Set(b).subtracting(a).sorted().prefix(5)), "
                            + "named \(mine.name) / \(state.name)")
                    }
                    let held = try dq.history(name).log
                    if held != history {
                        let a = Set(held.allEvents().map(\.entryID)), b = Set(history.allEvents().map(\.entryID))
                        let gone = history.allEvents().filter { !a.contains($0.entryID) }.map { "\($0.kind) \($0.entryID) by \($0.author)" }
                        result.problems.append("\(n.replica) \(name): the history differs from the service's (\(a.subtracting(b).count) events the service lacks, \(b.subtracting(a).count) missing: \(gone.prefix(4)); \(a.count) vs \(b.count))")
                    }
                    let ids = try dq.entries(name).entries.map(\.1.id)
                    result.duplicated += ids.count - Set(ids).count
                } catch {
                    result.problems.append("\(n.replica) \(name): \(error)")
                }
            }
        }
        // Every acknowledged change of a list that still exists, by an account that kept access.
        var historyIDs: [String: Set<CompactID>] = [:]
        for (name, (_, log)) in serviceLists { historyIDs[name] = Set(log.allEvents().map(\.entryID)) }
        for a in acked {
            guard let ids = historyIDs[a.zone] else { continue }
            guard generation[a.account + "|" + a.zone, default: 0] == a.generation else { continue }
            let owner = ZoneID(storeName: a.zone)?.owner
            guard owner == a.account || core.members(of: ZoneID(storeName: a.zone)!).contains(a.account) else { continue }
            // A sealed change refused for its epoch reaches the service made again, under an id
            // derived from the refused one (SEALING.md §5.2), once for each epoch it missed (a
            // list whose epochs move on often moves several on while a change waits).
            let made = sequence(first: a.id) { SyncEngine.reissuedID(of: $0) }.prefix(64)
            if !made.contains(where: ids.contains) {
                result.lost += 1
                var detail = ""
                if result.problems.count < 20 {
                    for n in nodes {
                        let found = (try? ListQuery(store: n.store, fs: n.fs).entries(a.zone).entries.first { $0.1.id == a.id }) ?? nil
                        if let found { detail += " [on \(n.replica) at \(found.0): \(found.1.operation.name) by \(found.1.author)]" }
                    }
                }
                if result.problems.count < 20 { result.problems.append("lost: \(a.id) in \(a.zone) by \(a.account)" + detail) }
            }
        }
        result.converged = result.problems.isEmpty && result.lost == 0 && result.duplicated == 0
        if result.problems.count > 20 { result.problems.removeSubrange(20...) }
    }

    /// The engine's state, read back from its file (the actor's copy is the same once it saved).
    static func awaitState(_ n: Node) throws -> SyncState {
        try SyncStateCodec.decode(try AtomicFile.read("/d/local.wal/" + "sync/state", fs: n.fs, limit: SyncStateCodec.maxFileBytes))
    }
}

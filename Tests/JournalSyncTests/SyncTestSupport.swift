import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalPostgres
import JournalService
import ListModel
@testable import JournalSync
import JournalTesting
import JournalSimulation

/// A service and devices, all in memory, on one virtual clock. The service runs over the
/// engine's store, or over PostgreSQL when `JLOG_TEST_BACKEND=postgres` (and `JLOG_TEST_POSTGRES`
/// names the database): one suite, two backends (`scripts/test.sh` runs both).
final class World: @unchecked Sendable {
    /// The database the service runs over, or nil for the engine's store.
    static let postgres: String? = {
        let env = ProcessInfo.processInfo.environment
        return env["JLOG_TEST_BACKEND"] == "postgres" ? env["JLOG_TEST_POSTGRES"] : nil
    }()
    /// Whether the service runs over the engine's store (tests of its files need it).
    static var isEngine: Bool { postgres == nil }

    let clock = VirtualClock(startingAt: 1_795_424_400_000)
    let serverFS = MemoryFileSystem()
    /// The engine's store (nil over PostgreSQL).
    var serverStore: JournalStore!
    /// The PostgreSQL storage (nil over the engine's store).
    var database: PostgresServiceStorage?
    /// The database's URL with this world's schema (nil over the engine's store).
    var databaseURL: String?
    var core: ServiceCore
    let limits: ServiceLimits
    /// The storage with faults the service runs over, when the world was made with them: its
    /// `isDown` is an outage of the database (or store) under the service.
    var faulty: FaultyStorage?

    init(limits: ServiceLimits = ServiceLimits(), storageFaults: Bool = false) throws {
        self.limits = limits
        let clock = self.clock
        if let url = Self.postgres {
            let located = url + "&schema=w\(UInt64.random(in: 0...UInt64.max))"
            databaseURL = located
            let storage = try PostgresServiceStorage.openWaiting(located, now: { clock.now() })
            database = storage
            faulty = storageFaults ? FaultyStorage(storage, seed: 1) : nil
            core = try ServiceCore(storage: faulty ?? storage, limits: limits, now: { clock.now() })
            return
        }
        try serverFS.createDirectory("/srv")
        var o = StoreOptions(durability: .always, segmentSize: 16 << 10, preallocate: false)
        o.fileSystem = serverFS
        serverStore = try JournalStore.open("/srv/service.wal", options: o)
        faulty = storageFaults ? FaultyStorage(serverStore, seed: 1) : nil
        core = try ServiceCore(storage: faulty ?? serverStore, engine: serverStore,
                               devices: DeviceFetches(loadingFrom: "/srv/service.wal/" + DeviceFetches.file, fs: serverFS),
                               limits: limits, now: { clock.now() })
    }

    deinit { database?.closeInBackground() }

    /// A service that purges what finished more than `retentionMillis` ago.
    convenience init(retentionMillis: Int64) throws {
        var limits = ServiceLimits()
        limits.retentionMillis = retentionMillis
        try self.init(limits: limits)
    }

    /// The service restarted (its process died): the store reopened, the core rebuilt.
    func restartService() throws {
        let clock = self.clock
        if let database {
            core = try ServiceCore(storage: database, limits: limits, now: { clock.now() })
            return
        }
        try? serverStore.close()
        var o = StoreOptions(durability: .always, segmentSize: 16 << 10, preallocate: false)
        o.fileSystem = serverFS
        serverStore = try JournalStore.open("/srv/service.wal", options: o)
        core = try ServiceCore(store: serverStore, limits: limits, now: { clock.now() })
    }

    func device(_ replica: String, options: SyncEngineOptions = SyncEngineOptions(),
                service: ((LocalService) -> any SyncService)? = nil) throws -> Device {
        try Device(world: self, replica: replica, options: options, wrap: service)
    }

    /// A device whose every call goes through `script` (kept across its restarts).
    func device(_ replica: String, options: SyncEngineOptions = SyncEngineOptions(), script: Script) throws -> Device {
        let clock = self.clock
        return try Device(world: self, replica: replica, options: options) { ScriptedService($0, script: script, clock: clock) }
    }

    /// The ids of the zone's entries as the service's log holds them, in log order.
    func serviceEntryIDs(_ zone: ZoneID) throws -> [CompactID] {
        try serviceEntries(zone).map(\.id)
    }

    /// The zone's entries as the service's storage holds them, in order.
    func serviceEntries(_ zone: ZoneID) throws -> [JournalEntry] {
        var all: [JournalEntry] = []
        var token: FeedToken? = nil
        while true {
            let page = try core.storage.zoneChanges(zone.storeName, since: token, limit: 10_000)
            all += page.entries.map(\.entry)
            token = page.token
            if !page.moreComing { return all }
        }
    }

    /// Moves time on and lets the service compact (what it alone decides, Spec/SYNC.md §6).
    @discardableResult
    func compact(after millis: Int64) throws -> ListCompactionReport {
        clock.advance(by: millis)
        return try core.compact(now: clock.now())
    }

    /// The list as the service holds it.
    func serviceList(_ zone: ZoneID) throws -> ListState {
        guard database != nil else { return try ListQuery(store: serverStore, fs: serverFS).materialise(zone.storeName).state }
        var reducer = ListReducer(zone: zone.storeName)
        _ = reducer.apply(contentsOf: try serviceEntries(zone))
        return reducer.state()
    }

    /// The ids of the entries the service holds for the list.
    func serviceIDs(_ zone: ZoneID) throws -> Set<CompactID> { Set(try serviceEntries(zone).map(\.id)) }

    func serviceHistory(_ zone: ZoneID) throws -> ActivityLog {
        try core.storage.history(of: zone.storeName)
    }
}

/// One device: its own store (in memory) and sync engine.
final class Device: @unchecked Sendable {
    let world: World
    let replica: String
    let fs = MemoryFileSystem()
    var store: JournalStore
    var engine: SyncEngine
    let wrap: ((LocalService) -> any SyncService)?
    var options: SyncEngineOptions
    var account: String { SyncNames.account(ofAuthor: replica) }

    init(world: World, replica: String, options: SyncEngineOptions = SyncEngineOptions(),
         wrap: ((LocalService) -> any SyncService)?) throws {
        self.world = world
        self.replica = replica
        self.wrap = wrap
        self.options = options
        try fs.createDirectory("/dev")
        var o = StoreOptions(durability: .always, segmentSize: 8 << 10, preallocate: false)
        o.fileSystem = fs
        store = try JournalStore.open("/dev/local.wal", options: o)
        engine = try SyncEngine(store: store, service: Device.service(world, SyncNames.account(ofAuthor: replica), wrap),
                                replica: replica, clock: world.clock, seed: Device.seed(replica, 0), options: options)
    }

    static func service(_ world: World, _ account: String, _ wrap: ((LocalService) -> any SyncService)?) -> any SyncService {
        let local = LocalService(core: world.core, account: account)
        return wrap?(local) ?? local
    }

    /// The device lost power: unsynced writes are gone; the store and engine start again.
    func powerLoss(_ mode: MemoryFileSystem.CrashMode = .dropUnsynced) throws {
        try? store.close()
        fs.crash(mode)
        try reopen()
    }

    /// The app restarted cleanly (the store closed first).
    func restart(options: SyncEngineOptions? = nil) throws {
        if let options { self.options = options }
        try? store.close()
        try reopen()
    }

    func reopen() throws {
        var o = StoreOptions(durability: .always, segmentSize: 8 << 10, preallocate: false)
        o.fileSystem = fs
        store = try JournalStore.open("/dev/local.wal", options: o)
        restarts += 1
        engine = try SyncEngine(store: store, service: Device.service(world, account, wrap), replica: replica, clock: world.clock,
                                seed: Device.seed(replica, restarts), options: options)
    }

    var restarts: UInt64 = 0

    /// A seed of its own per device and start, stable across runs (ids never collide).
    static func seed(_ replica: String, _ start: UInt64) -> UInt64 {
        replica.utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 } &+ start &* 0x9E37_79B9_7F4A_7C15
    }

    func list(_ zone: ZoneID) throws -> ListState {
        try ListQuery(store: store, fs: fs).materialise(zone.storeName).state
    }

    func history(_ zone: ZoneID) throws -> ActivityLog {
        try ListQuery(store: store, fs: fs).history(zone.storeName).log
    }

    @discardableResult
    func add(_ text: String, _ zone: ZoneID, after: CompactID? = nil) async throws -> CompactID {
        let item = CompactID(text.lowercased().replacingOccurrences(of: " ", with: "-"))!
        try await engine.record(.add(item: item, text: text, after: after), in: zone)
        return item
    }

    @discardableResult
    func sync() async -> SyncReport { await engine.sync() }

    /// The ids of the zone's entries in this device's log, in log order.
    func entryIDs(_ zone: ZoneID) throws -> [CompactID] {
        try ListQuery(store: store, fs: fs).entries(zone.storeName).entries.map(\.1.id)
    }

    /// Whether this device's store holds the zone live.
    func holds(_ zone: ZoneID) -> Bool { store.zone(zone.storeName).map { !$0.isDeleted } ?? false }

    func status() async -> SyncStatus { await engine.status() }

    /// The list's status line on this device (nil when it does not sync it).
    func status(_ zone: ZoneID) async -> SyncStatus.List? { await engine.status().lists.first { $0.zone == zone } }

    /// A new connection to the service for this device's account, through its wrapper (to sign in with).
    func connection() -> any SyncService { Device.service(world, account, wrap) }
}

/// How the devices differ from the service for one list: each must show the service's list,
/// with an equal digest and history, and no log (the service's included) may hold an id twice.
func convergenceProblems(_ world: World, _ devices: [Device], _ zone: ZoneID) throws -> [String] {
    var problems: [String] = []
    let service = try world.serviceList(zone)
    let serviceHistory = try world.serviceHistory(zone)
    let serviceIDs = try world.serviceEntryIDs(zone)
    if serviceIDs.count != Set(serviceIDs).count { problems.append("the service stores an entry twice") }
    for d in devices {
        guard d.holds(zone) else {
            problems.append("\(d.replica) does not hold \(zone)")
            continue
        }
        let mine = try d.list(zone)
        if mine != service {
            problems.append("\(d.replica) shows \(describe(mine)), the service \(describe(service))")
        }
        if mine.digest != service.digest { problems.append("\(d.replica)'s digest differs from the service's") }
        if try d.history(zone) != serviceHistory { problems.append("\(d.replica)'s history differs from the service's") }
        let ids = try d.entryIDs(zone)
        if ids.count != Set(ids).count { problems.append("\(d.replica) stores an entry twice") }
    }
    return problems
}

/// Every device shows the service's list (see `convergenceProblems`).
func expectConverged(_ world: World, _ devices: [Device], _ zone: ZoneID, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let problems = try convergenceProblems(world, devices, zone)
    #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
}

/// A list in a line: `Milk(x) Bread(o)` (x: marked off), for messages.
func describe(_ s: ListState) -> String {
    s.items.map { "\($0.text)(\($0.state == .markedOff ? "x" : "o"))" }.joined(separator: " ")
        + (s.participants.isEmpty ? "" : " with \(s.participants)")
}

/// A list `owner` made and the service holds.
func sharedList(_ owner: Device, with others: [Device], name: String = "weekly") async throws -> ZoneID {
    let list = try await owner.engine.createList(name)
    await owner.sync()
    var invited = Set<String>()
    for d in others where d.account != owner.account && invited.insert(d.account).inserted {
        let invitation = try await owner.engine.share(list, with: d.account)
        _ = try await d.engine.accept(invitation)
    }
    return list
}

let day: Int64 = 86_400_000
let hour: Int64 = 3_600_000

/// Syncs every device until a whole round changes nothing.
func settle(_ devices: [Device], rounds: Int = 6) async {
    for _ in 0..<rounds {
        for d in devices { await d.sync() }
    }
}

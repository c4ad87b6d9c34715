import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync

/// A service and devices, all in memory, on one virtual clock.
final class World: @unchecked Sendable {
    let clock = VirtualClock(startingAt: 1_795_424_400_000)
    let serverFS = MemoryFileSystem()
    var serverStore: JournalStore
    var core: ServiceCore
    let limits: ServiceLimits

    init(limits: ServiceLimits = ServiceLimits()) throws {
        self.limits = limits
        try serverFS.createDirectory("/srv")
        var o = StoreOptions(durability: .always, segmentSize: 16 << 10, preallocate: false)
        o.fileSystem = serverFS
        serverStore = try JournalStore.open("/srv/service.wal", options: o)
        let clock = self.clock
        core = try ServiceCore(store: serverStore, limits: limits, now: { clock.now() })
    }

    /// The service restarted (its process died): the store reopened, the core rebuilt.
    func restartService() throws {
        try? serverStore.close()
        var o = StoreOptions(durability: .always, segmentSize: 16 << 10, preallocate: false)
        o.fileSystem = serverFS
        serverStore = try JournalStore.open("/srv/service.wal", options: o)
        let clock = self.clock
        core = try ServiceCore(store: serverStore, limits: limits, now: { clock.now() })
    }

    func device(_ replica: String, service: ((LocalService) -> any SyncService)? = nil) throws -> Device {
        try Device(world: self, replica: replica, wrap: service)
    }

    /// The list as the service holds it.
    func serviceList(_ zone: ZoneID) throws -> ListState {
        try ListQuery(store: serverStore, fs: serverFS).materialise(zone.storeName).state
    }

    func serviceHistory(_ zone: ZoneID) throws -> ActivityLog {
        try ListQuery(store: serverStore, fs: serverFS).history(zone.storeName).log
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
    var account: String { SyncNames.account(ofAuthor: replica) }

    init(world: World, replica: String, wrap: ((LocalService) -> any SyncService)?) throws {
        self.world = world
        self.replica = replica
        self.wrap = wrap
        try fs.createDirectory("/dev")
        var o = StoreOptions(durability: .always, segmentSize: 8 << 10, preallocate: false)
        o.fileSystem = fs
        store = try JournalStore.open("/dev/local.wal", options: o)
        engine = try SyncEngine(store: store, service: Device.service(world, SyncNames.account(ofAuthor: replica), wrap),
                                replica: replica, clock: world.clock, seed: Device.seed(replica, 0))
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

    func reopen() throws {
        var o = StoreOptions(durability: .always, segmentSize: 8 << 10, preallocate: false)
        o.fileSystem = fs
        store = try JournalStore.open("/dev/local.wal", options: o)
        restarts += 1
        engine = try SyncEngine(store: store, service: Device.service(world, account, wrap), replica: replica, clock: world.clock,
                                seed: Device.seed(replica, restarts))
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
}

/// Syncs every device until a whole round changes nothing.
func settle(_ devices: [Device], rounds: Int = 6) async {
    for _ in 0..<rounds {
        for d in devices { await d.sync() }
    }
}

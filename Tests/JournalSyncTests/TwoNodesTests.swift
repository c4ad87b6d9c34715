import Foundation
import Testing
import JournalLog
import JournalPostgres
import JournalService
@testable import JournalSync

/// Two service nodes over one PostgreSQL database (SYNC.md §11): devices reach either node on
/// any call, and every node answers as one service would. Over PostgreSQL only.
@Suite(.enabled(if: World.postgres != nil, "two nodes share a PostgreSQL database")) struct TwoNodesTests {
    /// A second node beside `world`'s: its own connections and memory, the same database.
    static func secondNode(_ world: World) throws -> ServiceCore {
        let clock = world.clock
        let storage = try PostgresServiceStorage.openWaiting(try #require(world.databaseURL), now: { clock.now() })
        return try ServiceCore(storage: storage, limits: world.limits, now: { clock.now() })
    }

    /// A device whose calls alternate between the two nodes.
    struct Alternating: ForwardingSyncService {
        let nodes: [ServiceCore]
        let account: String
        let turn = Counter()
        func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
            try nodes[turn.next() % nodes.count].perform(caller: account, call)
        }
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func next() -> Int { lock.withLock { defer { n += 1 }; return n } }
    }

    static func alternating(_ nodes: [ServiceCore]) -> (LocalService) -> any SyncService {
        { Alternating(nodes: nodes, account: $0.account) }
    }

    @Test func aListSharedThroughOneNodeIsFetchedThroughTheOther() async throws {
        let world = try World()
        let other = try Self.secondNode(world)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        let invitation = try world.core.shareZone(caller: "alice", zone: list, with: "bob")
        // bob joins through the second node, then syncs through the first.
        _ = try other.acceptShare(caller: "bob", invitation: invitation)
        let tablet = try world.device("bob:tablet")
        await tablet.sync()
        #expect(try tablet.list(list).items.map(\.text) == ["Milk"])
        #expect(world.core.members(of: list) == ["bob"])
    }

    @Test func devicesSpreadOverBothNodesConverge() async throws {
        let world = try World()
        let nodes = [world.core, try Self.secondNode(world)]
        let phone = try world.device("alice:phone", service: Self.alternating(nodes))
        let ipad = try world.device("alice:ipad", service: Self.alternating(nodes.reversed()))
        let list = try await phone.engine.createList("weekly")
        await phone.sync()
        await ipad.sync()
        for n in 0..<12 {
            try await (n % 2 == 0 ? phone : ipad).add("item \(n)", list)
            await phone.sync()
            await ipad.sync()
        }
        await phone.sync()
        #expect(try phone.list(list).items.count == 12)
        #expect(try phone.list(list) == ipad.list(list))
        #expect(try world.serviceEntryIDs(list).count == Set(try world.serviceEntryIDs(list)).count)
    }

    @Test func aCompactionByOneNodeSendsTheOthersDevicesBackToTheSnapshot() async throws {
        let world = try World(retentionMillis: day)
        let other = try Self.secondNode(world)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        try await phone.add("Eggs", list)
        try await phone.engine.record(.markOff(item: milk), in: list)
        await phone.sync()
        let original = try #require(try world.serviceEntries(list).first {
            if case .add(let item, _, _) = $0.operation { return item == milk } else { return false }
        })
        world.clock.advance(by: 2 * day)
        let report = try other.compact(now: world.clock.now())
        #expect(report.zones.map(\.zone) == [list.storeName])
        // A device of the first node finds its token expired there too, and re-fetches.
        let r = await phone.sync()
        #expect(r.refetched == [list])
        #expect(try phone.list(list).items.map(\.text) == ["Eggs"])
        // A late retry of the purged add, through the first node, is acknowledged, not stored.
        let retry = try world.core.upload(caller: "alice", entries: [original], to: list)
        #expect(retry.saved == [original.id])
        #expect(try world.serviceList(list).items.map(\.text) == ["Eggs"], "the bought item never comes back")
    }
}

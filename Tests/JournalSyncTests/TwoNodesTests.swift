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

    /// Alice's phone makes a list, adds Milk and Eggs, buys the Milk and syncs through `world`'s
    /// node; with the list, the add of Milk as the service stored it (a later retry of it).
    static func milkBoughtEggsToBuy(_ world: World) async throws -> (Device, ZoneID, JournalEntry) {
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        try await phone.add("Eggs", list)
        try await phone.engine.record(.markOff(item: milk), in: list)
        await phone.sync()
        let original = try #require(try world.serviceEntries(list).first {
            if case .add(let item, _, _) = $0.operation { return item == milk } else { return false }
        })
        return (phone, list, original)
    }

    @Test func aCompactionByOneNodeIsFollowedByTheOthersDevices() async throws {
        let world = try World(retentionMillis: day)
        let other = try Self.secondNode(world)
        let (phone, list, original) = try await Self.milkBoughtEggsToBuy(world)
        world.clock.advance(by: 2 * day)
        let report = try other.compact(now: world.clock.now())
        #expect(report.zones.map(\.zone) == [list.storeName])
        // A device of the first node meets the compaction record there too, and follows it.
        let r = await phone.sync()
        #expect(r.refetched.isEmpty && r.compactionsFollowed == 1, "\(r.errors)")
        #expect(try phone.list(list).items.map(\.text) == ["Eggs"])
        // A late retry of the purged add, through the first node, is acknowledged, not stored.
        let retry = try world.core.upload(caller: "alice", entries: [original], to: list)
        #expect(retry.saved == [original.id])
        #expect(try world.serviceList(list).items.map(\.text) == ["Eggs"], "the bought item never comes back")
    }

    /// A node uploads against the zone's row as it last read it: when another node compacted the
    /// list since, the append refuses that row and the upload starts over from a fresh one, so a
    /// late retry of a purged add is still acknowledged and never stored again.
    @Test func anUploadThroughANodeThatLastSawTheListBeforeAnotherNodeCompactedItIsNotStoredAgain() async throws {
        let world = try World(retentionMillis: day)
        let other = try Self.secondNode(world)
        // Synced through the first node, which keeps the row it read (mark 0).
        let (_, list, original) = try await Self.milkBoughtEggsToBuy(world)
        world.clock.advance(by: 2 * day)
        #expect(try other.compact(now: world.clock.now()).zones.map(\.zone) == [list.storeName])
        let retry = try world.core.upload(caller: "alice", entries: [original], to: list)
        #expect(retry.saved == [original.id])
        #expect(try world.serviceList(list).items.map(\.text) == ["Eggs"], "the bought item never comes back")
    }

    /// A list another node deleted since this node last read it answers `zoneDeleted` to an
    /// upload, as it would to a node that never read it: nothing is stored.
    @Test func anUploadThroughANodeThatLastSawALiveListAnotherNodeDeletedAnswersDeleted() async throws {
        let world = try World()
        let other = try Self.secondNode(world)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        try other.deleteZone(caller: "alice", zone: list)
        let wall = world.clock.now()
        let tea = JournalEntry(id: CompactID("late-tea")!, zone: list.storeName, author: "alice:phone", wallTime: wall,
                               clock: HybridTime(derivedFromWallTime: wall), operation: .add(item: CompactID("tea")!, text: "Tea", after: nil))
        #expect(throws: SyncError.zoneDeleted(reason: .deleted)) {
            try world.core.upload(caller: "alice", entries: [tea], to: list)
        }
        #expect(throws: SyncError.zoneDeleted(reason: .deleted)) {
            try other.upload(caller: "alice", entries: [tea], to: list)
        }
    }

    /// Eight uploaders, half through each node, while a reader pages the zone with its tokens,
    /// each page from the other node: the reader's pages cover every entry exactly once, in
    /// order (no token ever skips an entry that commits later), over several runs.
    @Test(arguments: 0..<3)
    func concurrentUploadsThroughTwoNodesAreEachReadExactlyOnce(_ run: Int) async throws {
        let world = try World()
        let nodes = [world.core, try Self.secondNode(world)]
        let zone = ZoneID(owner: "alice", name: "busy")!
        try world.core.createZone(caller: "alice", zone: zone)
        let perUploader = 20
        let clock = world.clock
        let uploaders = (0..<8).map { u in
            ThreadRun {
                for n in 0..<perUploader {
                    let wall = clock.now()
                    var e = JournalEntry(id: CompactID("-")!, zone: zone.storeName, author: "alice:u\(u)", wallTime: wall,
                                         clock: HybridTime(derivedFromWallTime: wall),
                                         operation: .add(item: CompactID("u\(u)-\(n)")!, text: "item \(u) \(n)", after: nil))
                    e.id = CompactID("r\(run)-u\(u)-\(n)")!
                    _ = try nodes[u % 2].upload(caller: "alice", entries: [e], to: zone)
                }
            }
        }
        var seen: [CompactID] = []
        var token: ServiceToken? = nil
        var turn = 0
        func page() throws -> ZoneChangesPage {
            turn += 1
            return try nodes[turn % 2].fetchZoneChanges(caller: "alice", zone: zone, since: token, limit: 7)
        }
        while uploaders.contains(where: { !$0.isDone }) {
            let p = try page()
            seen += p.entries.map(\.id)
            token = p.token
        }
        for u in uploaders { try u.result() }
        while true {
            let p = try page()
            seen += p.entries.map(\.id)
            token = p.token
            if !p.moreComing && p.entries.isEmpty { break }
        }
        #expect(seen.count == 8 * perUploader, "every entry read")
        #expect(Set(seen).count == seen.count, "none read twice")
        #expect(seen == (try world.serviceEntryIDs(zone)), "in the order they were stored")
    }

    /// A node whose database does not answer says it is busy: never that a list does not exist
    /// or that nothing changed (a device would drop the list, or move its token past changes).
    @Test func aNodeWhoseDatabaseDoesNotAnswerIsBusyNotEmpty() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        await phone.sync()
        let node = try Self.secondNode(world)
        await (node.storage as! PostgresServiceStorage).database.close()
        #expect(throws: SyncError.serviceBusy(retryAfter: .seconds(1))) {
            try node.fetchZoneChanges(caller: "alice", zone: list, since: nil, limit: 10)
        }
        #expect(throws: SyncError.serviceBusy(retryAfter: .seconds(1))) {
            try node.fetchDatabaseChanges(caller: "alice", scope: .private, since: nil, limit: 10)
        }
    }

    /// Sharing over a database that does not answer is busy too: an invitation is never refused
    /// as one to a list that is gone, and a list is never made again for want of an answer.
    @Test func aNodeWhoseDatabaseDoesNotAnswerIsBusyForSharing() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        await phone.sync()
        let invitation = try world.core.shareZone(caller: "alice", zone: list, with: "bob")
        let node = try Self.secondNode(world)
        await (node.storage as! PostgresServiceStorage).database.close()
        #expect(throws: SyncError.serviceBusy(retryAfter: .seconds(1))) { try node.acceptShare(caller: "bob", invitation: invitation) }
        #expect(throws: SyncError.serviceBusy(retryAfter: .seconds(1))) { try node.shareZone(caller: "alice", zone: list, with: "carol") }
        #expect(throws: SyncError.serviceBusy(retryAfter: .seconds(1))) { try node.createZone(caller: "alice", zone: list) }
    }

    /// A world with a second node, and alice's list made and synced through the first.
    static func aliceListOnTwoNodes() async throws -> (World, other: ServiceCore, ZoneID) {
        let world = try World()
        let other = try secondNode(world)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        await phone.sync()
        return (world, other, list)
    }

    /// The owner stops sharing through one node: an invitation issued before it is void on every
    /// node, whether or not anyone had joined (SYNC.md §5.3).
    @Test func stoppingSharingThroughOneNodeVoidsAnInvitationOnTheOther() async throws {
        let (world, other, list) = try await Self.aliceListOnTwoNodes()
        let invitation = try world.core.shareZone(caller: "alice", zone: list, with: "mallory")
        try world.core.stopSharing(caller: "alice", zone: list)
        // Through `perform`, as a node answers a request (it reads what other nodes wrote first).
        #expect(throws: SyncError.zoneNotFound) { try other.perform(caller: "mallory", .acceptShare(invitation)) }
        #expect(throws: SyncError.zoneNotFound) { try other.perform(caller: "mallory", .fetchZoneChanges(zone: list, since: nil, limit: 10)) }
        #expect(other.members(of: list).isEmpty && world.core.members(of: list).isEmpty)
    }

    /// A participant who joins through one node is hinted on the other, where its hint channel
    /// is (SYNC.md §7.7): the account concerned hears its join as it hears its removal.
    @Test func aJoinThroughOneNodeIsHintedToTheParticipantOnTheOther() async throws {
        let (world, other, list) = try await Self.aliceListOnTwoNodes()
        let hints = try #require(other.hints.subscribe("bob"))
        let invitation = try world.core.shareZone(caller: "alice", zone: list, with: "bob")
        _ = try world.core.acceptShare(caller: "bob", invitation: invitation)
        // What the node does on the signal of a write to the service's records (ServiceNode.follow).
        try other.catchUp()
        other.hints.finishAll()   // what was hinted stays readable; nothing more comes
        var it = hints.makeAsyncIterator()
        #expect(await it.next()?.zone == list.storeName)
    }

    /// `body` on a thread of its own.
    final class ThreadRun: @unchecked Sendable {
        private let lock = NSLock()
        private var outcome: Result<Void, any Error>?
        init(_ body: @escaping @Sendable () throws -> Void) {
            Thread { [self] in
                let r = Result { try body() }
                lock.withLock { outcome = r }
            }.start()
        }
        var isDone: Bool { lock.withLock { outcome != nil } }
        func result() throws {
            while !isDone { usleep(1_000) }
            try lock.withLock { outcome! }.get()
        }
    }
}

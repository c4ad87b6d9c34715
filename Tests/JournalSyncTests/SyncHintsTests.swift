import Foundation
import Testing
import JournalService
@testable import JournalSync

@Suite struct SyncHintsTests {
    /// A burst of hints that arrives before the engine looks costs one sync, not one per hint.
    @Test func aBurstOfHintsCoalescesIntoOneSync() async throws {
        let world = try World()
        let alice = try world.device("alice:phone")
        let hints = SyncHints()
        for _ in 0..<100 { hints.hint() }
        hints.finish()
        let syncs = await alice.engine.run(hints: hints)
        #expect(syncs == 1)
    }

    /// A hint carries no data: the engine fetches, so what changed arrives whatever the hint said.
    @Test func aHintMakesTheEngineFetch() async throws {
        let world = try World()
        let alice = try world.device("alice:phone"), ipad = try world.device("alice:ipad")
        let list = try await alice.engine.createList("weekly")
        try await alice.add("Milk", list)
        await alice.sync()
        let hints = SyncHints()
        hints.hint()
        hints.finish()
        await ipad.engine.run(hints: hints)
        #expect(try ipad.list(list).items.map(\.text) == ["Milk"])
    }
}

/// Hints that name a zone (Spec/SYNC.md §7.7): the engine fetches that zone only, with no
/// database request, and not at all when it holds the head the hint names.
@Suite struct ZoneHintsTests {
    /// Alice and Bob share a list; the calls each makes from now on are counted.
    struct Family {
        let world: World
        let alice: Device, bob: Device
        let aliceCalls: CallLog, bobCalls: CallLog
        let list: ZoneID
    }

    func family() async throws -> Family {
        let world = try World()
        let aliceCalls = CallLog(), bobCalls = CallLog()
        let alice = try world.device("alice:phone") { CountingService($0, aliceCalls) }
        let bob = try world.device("bob:phone") { CountingService($0, bobCalls) }
        let list = try await alice.engine.createList("weekly")
        _ = try await alice.add("Milk", list)
        await alice.sync()
        _ = try await bob.engine.accept(try await alice.engine.share(list, with: "bob"))
        await bob.sync()
        await alice.sync()
        aliceCalls.forget()
        bobCalls.forget()
        return Family(world: world, alice: alice, bob: bob, aliceCalls: aliceCalls, bobCalls: bobCalls, list: list)
    }

    @Test func aHintNamingAZoneFetchesThatZoneAlone() async throws {
        let f = try await family()
        _ = try await f.alice.add("Eggs", f.list)
        #expect(await f.alice.engine.sync(hinted: []).isComplete)
        #expect(f.aliceCalls.names == ["upload"], "a sync with no hints only pushes")
        let r = await f.bob.engine.sync(hinted: [ZoneHint(zone: f.list, head: nil)])
        #expect(r.isComplete && r.applied == 1)
        #expect(f.bobCalls.names == ["fetchZoneChanges"])
        #expect(try f.bob.list(f.list).items.map(\.text).sorted() == ["Eggs", "Milk"])
    }

    /// The service's hint for Alice's upload names the head her upload's answer gave her: she
    /// makes no request for it; Bob, who does not hold it, fetches once.
    @Test func aHintWithTheHeadTheDeviceHoldsCostsNoRequest() async throws {
        let f = try await family()
        let heard = try #require(f.world.core.hints.subscribe("alice"))
        var it = heard.makeAsyncIterator()
        _ = try await f.alice.add("Eggs", f.list)
        await f.alice.engine.sync(hinted: [])
        let hint = try #require(await it.next())
        #expect(hint.zone == f.list.storeName)
        let head = try #require(hint.head)
        f.aliceCalls.forget()
        #expect(await f.alice.engine.sync(hinted: [ZoneHint(zone: f.list, head: head)]).isComplete)
        #expect(f.aliceCalls.names == [])
        let r = await f.bob.engine.sync(hinted: [ZoneHint(zone: f.list, head: head)])
        #expect(r.applied == 1 && f.bobCalls.names == ["fetchZoneChanges"])
        // Bob now holds that head too: the same hint again costs him nothing.
        f.bobCalls.forget()
        await f.bob.engine.sync(hinted: [ZoneHint(zone: f.list, head: head)])
        #expect(f.bobCalls.names == [])
    }

    /// A hint for a list the device does not sync is a full sync: only the database says which
    /// lists it has (a list shared with it a moment ago, say).
    @Test func aHintNamingAnUnknownZoneIsAFullSync() async throws {
        let f = try await family()
        let other = try #require(ZoneID(owner: "alice", name: "party"))
        let r = await f.bob.engine.sync(hinted: [ZoneHint(zone: other, head: nil)])
        #expect(r.isComplete)
        #expect(f.bobCalls.names.contains("fetchBothDatabases"))
    }

    /// Hints over more lists than `maxNamedZones` collapse into one full sync.
    @Test func hintsOverManyZonesCollapseIntoAFullSync() throws {
        let hints = SyncHints()
        let zone = { (i: Int) in ZoneID(owner: "alice", name: "list \(i)")! }
        hints.hint(zone(0), head: ZoneHead("h1"))
        hints.hint(zone(0), head: ZoneHead("h2"))
        #expect(hints.take() == [ZoneHint(zone: zone(0), head: ZoneHead("h2"))])
        for i in 0...SyncHints.maxNamedZones { hints.hint(zone(i)) }
        #expect(hints.take() == nil)
        hints.hint(zone(1))
        hints.hint()
        hints.hint(zone(2))
        #expect(hints.take() == nil, "a full hint waiting covers the named ones after it")
    }

    /// A subscriber that lost a hint (it did not read) finds a `*` among those it keeps.
    @Test func aSubscriberThatLostAHintIsToldToFetchEverything() async throws {
        let hub = HintHub()
        let stream = try #require(hub.subscribe("alice"))
        for i in 0..<(HintHub.buffered + 3) { hub.changed("alice/list \(i)", head: nil, for: ["alice"]) }
        hub.finishAll()
        var kept: [ServiceHint] = []
        for await h in stream { kept.append(h) }
        #expect(kept.count == HintHub.buffered)
        #expect(kept.last == .everything)
    }
}

/// The names of the calls a device made, in order.
final class CallLog: @unchecked Sendable {
    private let lock = NSLock()
    private var calls: [String] = []
    var names: [String] { lock.withLock { calls } }
    func append(_ name: String) { lock.withLock { calls.append(name) } }
    func forget() { lock.withLock { calls = [] } }
}

/// Logs every call's name, then forwards it.
struct CountingService: ForwardingSyncService {
    let inner: LocalService
    let log: CallLog
    init(_ inner: LocalService, _ log: CallLog) {
        self.inner = inner
        self.log = log
    }
    var account: String { inner.account }
    func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
        log.append(call.name)
        return try await inner.forward(call)
    }
}

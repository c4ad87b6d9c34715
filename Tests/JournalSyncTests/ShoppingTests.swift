import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync

/// Shopping mode (MERGE.md §7): while someone is in the shop, remote changes do not move the
/// list under their finger.
@Suite struct ShoppingTests {
    /// Alice and Bob share Milk and Bread; Bob goes shopping.
    static func shopping() async throws -> (World, alice: Device, bob: Device, ZoneID, milk: CompactID) {
        let world = try World()
        let alice = try world.device("alice:phone"), bob = try world.device("bob:phone")
        let list = try await sharedList(alice, with: [bob])
        let milk = try await alice.add("Milk", list)
        try await alice.add("Bread", list, after: milk)
        await settle([alice, bob], rounds: 2)
        try await bob.engine.setShopping(true, in: list)
        return (world, alice, bob, list, milk)
    }

    /// Remote adds (and changes to what they add) are stored but held back, adds are offered as notifications, the hold
    /// survives a power loss, and ending shopping applies them.
    @Test func remoteChangesAreHeldDurablyAndApplyWhenShoppingEnds() async throws {
        let (world, alice, bob, list, milk) = try await Self.shopping()
        let before = try bob.list(list)
        let eggs = try await alice.add("Eggs", list)
        try await alice.engine.record(.markOff(item: eggs), in: list)
        await alice.sync()

        let r = await bob.sync()
        #expect(r.held == 2 && r.applied == 0)
        #expect(try bob.list(list) == before, "the visible list did not move")
        #expect(await bob.engine.notifications(in: list).map(\.text) == ["Eggs"])
        #expect(await bob.engine.notifications(in: list).first?.addedBy == "alice:phone")
        #expect(await bob.status(list)?.held == 2)

        try bob.powerLoss()
        #expect(try bob.list(list) == before)
        #expect(await bob.status(list)?.shopping == true)
        #expect(await bob.status(list)?.held == 2, "held entries survived the power loss")
        #expect(await bob.engine.notifications(in: list).map(\.text) == ["Eggs"])
        await bob.sync()
        #expect(await bob.status(list)?.held == 2, "nothing is held twice")

        try await bob.engine.setShopping(false, in: list)
        let after = try bob.list(list)
        #expect(after.items.first { $0.id == eggs }?.state == .markedOff)
        #expect(after.items.first { $0.id == milk }?.state == .active)
        #expect(await bob.status(list)?.held == 0)
        await settle([alice, bob], rounds: 2)
        try expectConverged(world, [alice, bob], list)
    }

    /// A list that must be fetched anew (a change of Bob's the service refused) is not replaced
    /// while Bob shops: remote changes go on being held, and the re-fetch runs once shopping ends.
    @Test func aListWaitingToBeFetchedAnewKeepsHoldingWhileShopping() async throws {
        let (world, alice, bob, list, _) = try await Self.shopping()
        let jam = try await bob.engine.record(.add(item: CompactID("jam")!, text: "Jam", after: nil), in: list)
        var other = jam
        other.operation = .add(item: CompactID("jam")!, text: "Apricot jam", after: nil)
        _ = try world.core.upload(caller: "bob", entries: [other], to: list)
        try await alice.add("Eggs", list)
        await alice.sync()
        let r = await bob.sync()
        #expect(r.rejected.map(\.id) == [jam.id], "\(r.errors)")
        #expect(r.refetched.isEmpty, "not replaced while shopping")
        #expect(r.held == 1)
        #expect(try bob.list(list).items.map(\.text) == ["Jam", "Milk", "Bread"])
        try await bob.engine.setShopping(false, in: list)
        await settle([alice, bob], rounds: 2)
        #expect(try bob.list(list).items.map(\.text).sorted() == ["Apricot jam", "Bread", "Eggs", "Milk"])
        try expectConverged(world, [alice, bob], list)
    }

    /// An add of an item the list already shows (another device added it again) is no news.
    @Test func anAddOfAnItemTheListShowsIsNotOffered() async throws {
        let (_, alice, bob, list, milk) = try await Self.shopping()
        try await alice.engine.record(.add(item: milk, text: "Milk", after: nil), in: list)
        _ = try await alice.add("Eggs", list)
        await alice.sync()
        #expect(await bob.sync().held == 2)
        #expect(await bob.engine.notifications(in: list).map(\.text) == ["Eggs"])
    }

    /// Local changes made while shopping push as usual, and do not come back as notifications
    /// of one's own adds.
    @Test func localChangesPushAsUsualWhileShopping() async throws {
        let (world, alice, bob, list, milk) = try await Self.shopping()
        let tea = try await bob.add("Tea", list)
        try await bob.engine.record(.markOff(item: milk), in: list)
        let r = await bob.sync()
        #expect(r.uploaded == 2)
        #expect(try bob.list(list).items.first { $0.id == milk }?.state == .markedOff, "a local change shows at once")
        await alice.sync()
        #expect(try alice.list(list).items.contains { $0.id == tea })
        #expect(try world.serviceList(list).items.first { $0.id == milk }?.state == .markedOff)
        await bob.sync()
        #expect(await bob.engine.notifications(in: list).isEmpty, "bob's own add is no news to bob")
        #expect(await bob.status(list)?.held == 0, "bob's own entries are not held back from bob")
    }

    /// Applying one notification shows that item only; the rest stay held.
    @Test func applyingOneNotificationShowsThatItemOnly() async throws {
        let (_, alice, bob, list, _) = try await Self.shopping()
        let eggs = try await alice.add("Eggs", list)
        let jam = try await alice.add("Jam", list)
        await alice.sync()
        await bob.sync()
        let notes = await bob.engine.notifications(in: list)
        #expect(notes.map(\.text) == ["Eggs", "Jam"])
        try await bob.engine.applyHeld([notes[0].entryID], in: list)
        let shown = try bob.list(list).items.map(\.id)
        #expect(shown.contains(eggs) && !shown.contains(jam))
        #expect(await bob.engine.notifications(in: list).map(\.text) == ["Jam"])
    }

    /// A compaction while shopping must not move the list either: its record is held with the
    /// rest until shopping ends, and what was held stays held and offered until then.
    @Test func aReFetchWhileShoppingStillHoldsRemoteChangesBack() async throws {
        let world = try World(retentionMillis: day)
        let alice = try world.device("alice:phone"), bob = try world.device("bob:phone")
        let list = try await sharedList(alice, with: [bob])
        let milk = try await alice.add("Milk", list)
        let jam = try await alice.add("Jam", list, after: milk)
        try await alice.engine.record(.markOff(item: jam), in: list)
        await settle([alice, bob], rounds: 2)
        try await bob.engine.setShopping(true, in: list)
        let eggs = try await alice.add("Eggs", list)
        await alice.sync()
        await bob.sync()
        #expect(await bob.engine.notifications(in: list).map(\.text) == ["Eggs"])

        let report = try world.compact(after: 2 * day)   // Jam goes
        #expect(report.zones.map(\.zone) == [list.storeName])
        let r = await bob.sync()
        #expect(r.refetched.isEmpty, "the compaction waits for shopping to end")
        #expect(try !bob.list(list).items.contains { $0.id == eggs }, "Eggs showed while shopping")
        #expect(await bob.engine.notifications(in: list).map(\.text) == ["Eggs"], "the notification was lost")
        try await bob.engine.setShopping(false, in: list)
        #expect(try bob.list(list).items.contains { $0.id == eggs })
        // The compaction record was held with the rest, and followed when shopping ended.
        #expect(await bob.sync().refetched.isEmpty)
        await settle([alice, bob], rounds: 2)
        try expectConverged(world, [alice, bob], list)
    }
}

extension ShoppingTests {
    /// `held` never passes its bound: at it the fetch stops, the rest waits on the service, and
    /// it all arrives once shopping ends.
    @Test func heldEntriesStopAtTheirBoundAndTheRestWaitsOnTheService() async throws {
        let world = try World()
        let alice = try world.device("alice:phone")
        var options = SyncEngineOptions()
        options.maxHeldEntries = 3
        let bob = try world.device("bob:phone", options: options)
        let list = try await sharedList(alice, with: [bob])
        await settle([alice, bob], rounds: 2)
        try await bob.engine.setShopping(true, in: list)
        for i in 0..<5 { try await alice.add("Item \(i)", list) }
        await alice.sync()
        await bob.sync()
        let second = await bob.sync()
        #expect(second.waitingForShopping == [list], "the report names the list shopping kept behind")
        #expect(await bob.status(list)?.held == 3)
        #expect(await bob.status(list)?.needsFetch == true, "the rest waits on the service")
        try await bob.engine.setShopping(false, in: list)
        await settle([alice, bob], rounds: 2)
        #expect(try bob.list(list).items.count == 5)
        try expectConverged(world, [alice, bob], list)
    }
}

/// Shopping keeps the list still, but not blind (SYNC.md §7.8): what changes an item on Bob's
/// screen reaches him at once, so two people who split up in the shop do not buy the milk twice.
@Suite struct ShoppingAtOnceTests {
    @Test func alicesMarkOffOfTheMilkReachesBobWhileHeShops() async throws {
        let (world, alice, bob, list, milk) = try await ShoppingTests.shopping()
        try await alice.engine.record(.markOff(item: milk), in: list)
        await alice.sync()
        let r = await bob.sync()
        #expect(r.applied == 1 && r.held == 0)
        #expect(try bob.list(list).items.first { $0.id == milk }?.state == .markedOff)
        try await bob.engine.setShopping(false, in: list)
        try expectConverged(world, [alice, bob], list)
    }

    @Test func aDeleteAndARenameApplyAtOnceAndANewItemWaits() async throws {
        let (world, alice, bob, list, milk) = try await ShoppingTests.shopping()
        let order = try bob.list(list).items.map(\.id)
        try await alice.engine.record(.delete(item: milk), in: list)
        try await alice.engine.record(.rename(name: "Saturday"), in: list)
        try await alice.add("Eggs", list)
        await alice.sync()
        let r = await bob.sync()
        #expect(r.applied == 2 && r.held == 1)
        let shown = try bob.list(list)
        #expect(shown.name == "Saturday")
        #expect(shown.items.map(\.id) == order.filter { $0 != milk }, "nothing moved; the milk is gone")
        #expect(await bob.engine.notifications(in: list).map(\.text) == ["Eggs"])
        #expect(await bob.engine.heldChanges(in: list) == HeldChanges(byKind: [.add: 1], other: 0))
        try await bob.engine.setShopping(false, in: list)
        await settle([alice, bob], rounds: 2)
        try expectConverged(world, [alice, bob], list)
    }

    /// A mark-off of an item Bob does not see yet waits with its add, and comes with it when he
    /// taps the notification.
    @Test func aMarkOffOfANewItemWaitsWithItsAdd() async throws {
        let (_, alice, bob, list, _) = try await ShoppingTests.shopping()
        let eggs = try await alice.add("Eggs", list)
        try await alice.engine.record(.markOff(item: eggs), in: list)
        await alice.sync()
        #expect(await bob.sync().held == 2)
        #expect(await bob.engine.heldChanges(in: list).byKind == [.add: 1, .markOff: 1])
        let tap = try #require(await bob.engine.notifications(in: list).first)
        try await bob.engine.applyHeld([tap.entryID], in: list)
        #expect(try bob.list(list).items.first { $0.id == eggs }?.state == .markedOff)
        #expect(await bob.engine.heldChanges(in: list).total == 0)
    }
}

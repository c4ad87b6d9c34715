import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync

/// A list leaving an account (Spec/SYNC.md §5): whatever the reason, its devices remove the
/// local copy and the sync report says why (`SyncReport.gone`).
@Suite struct ZoneGoneTests {
    /// Alice (phone, iPad) shares a list with Bob (phone, iPad); every device holds it.
    static func family() async throws -> (World, alice: Device, aliceIpad: Device, bob: Device, bobIpad: Device, ZoneID) {
        let world = try World()
        let alice = try world.device("alice:phone"), aliceIpad = try world.device("alice:ipad")
        let bob = try world.device("bob:phone"), bobIpad = try world.device("bob:ipad")
        let list = try await sharedList(alice, with: [bob])
        try await alice.add("Milk", list)
        await settle([alice, aliceIpad, bob, bobIpad], rounds: 2)
        for d in [alice, aliceIpad, bob, bobIpad] { #expect(d.holds(list), "\(d.replica) has the list") }
        return (world, alice, aliceIpad, bob, bobIpad, list)
    }

    static func expectGone(_ d: Device, _ list: ZoneID, _ reason: ZoneGoneReason, sourceLocation: SourceLocation = #_sourceLocation) async {
        let r = await d.sync()
        #expect(r.gone == [ZoneGone(zone: list, reason: reason)], "\(d.replica): \(r.gone)", sourceLocation: sourceLocation)
        #expect(!d.holds(list), "\(d.replica) still holds the list", sourceLocation: sourceLocation)
        #expect(await d.engine.lists.isEmpty, "\(d.replica) still syncs it", sourceLocation: sourceLocation)
        #expect(await d.sync().gone.isEmpty, "\(d.replica) was told twice", sourceLocation: sourceLocation)
    }

    /// The owner deleted the list: it leaves every device of every account, reason `deleted`.
    @Test func anOwnerDeletingTheListRemovesItEverywhere() async throws {
        let (_, alice, aliceIpad, bob, bobIpad, list) = try await Self.family()
        try await alice.engine.deleteList(list)
        #expect(!alice.holds(list))
        #expect(await alice.sync().isComplete)
        for d in [aliceIpad, bob, bobIpad] { await Self.expectGone(d, list, .deleted) }
    }

    /// The owner removed a participant: the list leaves that participant's devices, reason
    /// `removed`, and stays with the owner.
    @Test func anOwnerRemovingAParticipantRemovesTheListFromItsDevices() async throws {
        let (world, alice, aliceIpad, bob, bobIpad, list) = try await Self.family()
        try await alice.engine.remove("bob", from: list)
        for d in [bob, bobIpad] { await Self.expectGone(d, list, .removed) }
        await settle([alice, aliceIpad], rounds: 2)
        #expect(try alice.list(list).participants.isEmpty)
        try expectConverged(world, [alice, aliceIpad], list)
    }

    /// A participant left: the list leaves its other devices too, reason `left`.
    @Test func aParticipantLeavingRemovesTheListFromItsOtherDevices() async throws {
        let (world, alice, aliceIpad, bob, bobIpad, list) = try await Self.family()
        try await bob.engine.deleteList(list)
        #expect(!bob.holds(list))
        #expect(await bob.sync().isComplete)
        #expect(world.core.members(of: list).isEmpty, "the leave reached the service")
        await Self.expectGone(bobIpad, list, .left)
        await settle([alice, aliceIpad], rounds: 2)
        #expect(try alice.list(list).participants.isEmpty)
    }

    /// The owner stopped sharing: the list leaves every participant, reason `sharingStopped`.
    @Test func anOwnerStoppingSharingRemovesTheListFromEveryParticipant() async throws {
        let (world, alice, aliceIpad, bob, bobIpad, list) = try await Self.family()
        try await alice.engine.stopSharing(list)
        for d in [bob, bobIpad] { await Self.expectGone(d, list, .sharingStopped) }
        await settle([alice, aliceIpad], rounds: 2)
        try expectConverged(world, [alice, aliceIpad], list)
    }

    /// A removed participant with changes queued learns of it from its upload: the list goes,
    /// reported once, and the changes go with it.
    @Test func aRemovedParticipantLearnsOfItFromItsUpload() async throws {
        let (world, alice, _, bob, _, list) = try await Self.family()
        let tea = try await bob.engine.record(.add(item: CompactID("tea")!, text: "Tea", after: nil), in: list)
        try await alice.engine.remove("bob", from: list)
        let r = await bob.sync()
        #expect(r.gone == [ZoneGone(zone: list, reason: .removed)])
        #expect(!bob.holds(list))
        #expect(try !world.serviceEntryIDs(list).contains(tea.id))
    }

    /// A list deleted and made again under the same name before a device hears of either: the
    /// device drops the old copy and takes the new one, with nothing of the old left.
    @Test func aListDeletedAndMadeAgainIsFetchedAnew() async throws {
        let world = try World()
        let phone = try world.device("alice:phone"), ipad = try world.device("alice:ipad")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await settle([phone, ipad], rounds: 1)
        try await phone.engine.deleteList(list)
        await phone.sync()
        #expect(try await phone.engine.createList("weekly") == list)
        try await phone.add("Tea", list)
        await phone.sync()
        await settle([phone, ipad], rounds: 2)
        #expect(try world.serviceList(list).items.map(\.text) == ["Tea"])
        #expect(ipad.holds(list), "the iPad dropped the list made again")
        #expect(await ipad.engine.lists == [list])
        try expectConverged(world, [phone, ipad], list)
    }
}

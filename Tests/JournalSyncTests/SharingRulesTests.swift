import Foundation
import Testing
import JournalLog
import JournalService
@testable import JournalSync

/// Sharing as the series describes it (Parts 4, 5, 7; Spec/SYNC.md §5): one who left comes back
/// with the invitation it has, one the owner removed cannot; at most 100 participants; the last
/// participant removed voids what is outstanding.
@Suite struct SharingRulesTests {
    /// alice's list "weekly" on the service, and an invitation for bob.
    static func aliceInvitesBob(_ world: World) throws -> (ZoneID, ShareInvitation) {
        let list = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: list)
        return (list, try world.core.shareZone(caller: "alice", zone: list, with: "bob"))
    }

    /// Also after the service restarted: the leave is read back as `left` (a mark before a
    /// record that says `removed`, which an older node reads as a removal).
    @Test(arguments: [false, true])
    func aParticipantWhoLeftComesBackWithTheInvitationItHas(restart: Bool) throws {
        let world = try World()
        let (list, invitation) = try Self.aliceInvitesBob(world)
        _ = try world.core.acceptShare(caller: "bob", invitation: invitation)
        try world.core.removeParticipant(caller: "bob", participant: "bob", from: list)   // bob deletes the list
        if restart { try world.restartService() }
        #expect(world.core.members(of: list).isEmpty)
        #expect(try world.core.acceptShare(caller: "bob", invitation: invitation) == list)
        #expect(world.core.members(of: list) == ["bob"])
    }

    @Test func oneTheOwnerRemovedCannotComeBackWithIt() throws {
        let world = try World()
        let (list, invitation) = try Self.aliceInvitesBob(world)
        _ = try world.core.acceptShare(caller: "bob", invitation: invitation)
        try world.core.removeParticipant(caller: "alice", participant: "bob", from: list)
        #expect(throws: SyncError.zoneNotFound) { try world.core.acceptShare(caller: "bob", invitation: invitation) }
    }

    @Test func theHundredAndFirstParticipantIsRefused() throws {
        let world = try World()
        let list = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: list)
        let invitations = try (1...101).map { try world.core.shareZone(caller: "alice", zone: list, with: "friend\($0)") }
        for (k, invitation) in invitations.prefix(100).enumerated() {
            _ = try world.core.acceptShare(caller: "friend\(k + 1)", invitation: invitation)
        }
        #expect(throws: SyncError.tooManyParticipants(limit: 100)) { try world.core.acceptShare(caller: "friend101", invitation: invitations[100]) }
        #expect(throws: SyncError.tooManyParticipants(limit: 100)) { try world.core.shareZone(caller: "alice", zone: list, with: "friend102") }
        #expect(world.core.members(of: list).count == 100)
    }

    /// Removing the last participant stops sharing: an invitation still outstanding is void.
    @Test func removingTheLastParticipantVoidsWhatIsOutstanding() throws {
        let world = try World()
        let (list, invitation) = try Self.aliceInvitesBob(world)
        _ = try world.core.acceptShare(caller: "bob", invitation: invitation)
        let forCarol = try world.core.shareZone(caller: "alice", zone: list, with: "carol")
        try world.core.removeParticipant(caller: "alice", participant: "bob", from: list)
        #expect(throws: SyncError.zoneNotFound) { try world.core.acceptShare(caller: "carol", invitation: forCarol) }
    }

    /// The owner sees who is invited and has not accepted, and withdraws one invitation.
    @Test func theOwnerSeesPendingInvitationsAndWithdrawsOne() async throws {
        let world = try World()
        let (list, invitation) = try Self.aliceInvitesBob(world)
        _ = try world.core.acceptShare(caller: "bob", invitation: invitation)
        let forCarol = try world.core.shareZone(caller: "alice", zone: list, with: "carol")
        let alice = LocalService(core: world.core, account: "alice")
        #expect(try await alice.fetchParticipants(list) == [ShareParticipant(account: "bob", status: .member),
                                                            ShareParticipant(account: "carol", status: .invited)])
        try await alice.removeParticipant("carol", from: list)
        #expect(try await alice.fetchParticipants(list) == [ShareParticipant(account: "bob", status: .member)])
        #expect(throws: SyncError.zoneNotFound) { try world.core.acceptShare(caller: "carol", invitation: forCarol) }
        await #expect(throws: SyncError.self) { try await LocalService(core: world.core, account: "bob").fetchParticipants(list) }
    }

    /// The invitee sees who invites to which list before accepting; the name travels in the
    /// invitation only, never to the service.
    @Test func theInviteeSeesTheListsNameAndWhoInvitesBeforeAccepting() async throws {
        let world = try World()
        let alice = try world.device("alice:phone"), bob = try world.device("bob:phone")
        let weekly = try await alice.engine.createList(named: "weekly")
        try await weekly.rename("Saturday shop")
        await alice.sync()
        let invitation = try await alice.engine.share(weekly.zone, with: "bob")
        #expect(SyncEngine.preview(of: invitation) == InvitationPreview(owner: "alice", listName: "Saturday shop"))
        #expect(try await bob.engine.accept(invitation) == weekly.zone)
        await bob.sync()
        #expect(try bob.list(weekly.zone).name == "Saturday shop")
    }

    /// A sealed list's owner shows the name it opened and its key fingerprint (preview version
    /// 2, SEALING.md §4.4): the invitee reads both, the service receives neither.
    @Test func aSealedListsInvitationCarriesTheOwnersFingerprintToTheInviteeOnly() async throws {
        let world = try World()
        let alice = try world.device("alice:phone"), bob = try world.device("bob:phone")
        let zone = try await alice.engine.createList(SealedZone.name(random: Array(0..<16)))
        await alice.sync()
        let shown = InvitationPreview(owner: "alice", listName: "Pharmacy", ownerKeys: Array(repeating: 7, count: 32))
        let invitation = try await alice.engine.share(zone, with: "bob", preview: shown)
        #expect(SyncEngine.preview(of: invitation) == shown)
        #expect(try await bob.engine.accept(invitation) == zone)
        // A version-1 preview reads as before, with no fingerprint.
        let plain = try await alice.engine.share(zone, with: "carol")
        #expect(SyncEngine.preview(of: plain)?.ownerKeys == nil)
    }

    /// A list made local-only stays on the device until it is shared, then goes up whole.
    @Test func aLocalOnlyListGoesUpWhenShared() async throws {
        let world = try World()
        let alice = try world.device("alice:phone"), bob = try world.device("bob:phone")
        let party = try await alice.engine.createList(named: "party", localOnly: true)
        try await party.add("Cake")
        #expect(await alice.sync().isComplete)
        #expect((try? world.serviceIDs(party.zone)) == nil, "not on the service")
        _ = try await bob.engine.accept(try await alice.engine.share(party.zone, with: "bob"))
        await settle([alice, bob], rounds: 2)
        #expect(try bob.list(party.zone).items.map(\.text) == ["Cake"])
    }

    /// Stop sharing, keep the list on this device only (Part 7): it leaves the service, the
    /// participants' devices and the owner's other devices; the owner's device keeps it with its
    /// history; shared again, it goes up as the owner device's copy, others' items included.
    @Test func stopSharingCanKeepTheListOnTheOwnersDeviceOnlyAndItGoesUpWhenSharedAgain() async throws {
        let world = try World()
        let phone = try world.device("alice:phone"), tablet = try world.device("alice:tablet")
        let bob = try world.device("bob:phone"), carol = try world.device("carol:phone")
        let weekly = try await phone.engine.createList(named: "weekly")
        try await weekly.rename("Weekly")
        try await weekly.markOff(try await weekly.add("Milk"))
        _ = try await bob.engine.accept(try await phone.engine.share(weekly.zone, with: "bob"))
        await settle([phone, tablet, bob], rounds: 2)
        _ = try await bob.engine.list(weekly.zone).add("Bread")
        await settle([phone, tablet, bob], rounds: 2)

        let before = try phone.list(weekly.zone)
        #expect(Set(before.items.map(\.text)) == ["Milk", "Bread"])
        try await phone.engine.stopSharing(weekly.zone, keepingItOnThisDeviceOnly: true)
        await settle([phone, tablet, bob], rounds: 2)
        #expect((try? world.serviceIDs(weekly.zone)) == nil, "off the service")
        #expect(await bob.engine.lists.isEmpty)
        #expect(await tablet.engine.lists.isEmpty)
        #expect(try phone.list(weekly.zone) == before)
        #expect(try phone.history(weekly.zone).allEvents().contains { $0.author == "bob:phone" }, "the history stays here")
        try await weekly.add("Eggs")
        let kept = try phone.list(weekly.zone)
        #expect(await phone.sync().isComplete)
        #expect((try? world.serviceIDs(weekly.zone)) == nil, "a sync sends it nowhere")

        _ = try await carol.engine.accept(try await phone.engine.share(weekly.zone, with: "carol"))
        await settle([phone, tablet, carol], rounds: 3)
        let shown = try phone.list(weekly.zone)
        #expect(shown.name == "Weekly")
        #expect(shown.items.map(\.text) == kept.items.map(\.text))
        #expect(shown.items.map(\.state) == kept.items.map(\.state))
        #expect(shown.items.first { $0.text == "Milk" }?.state == .markedOff)
        #expect(try carol.list(weekly.zone).items.map(\.text) == kept.items.map(\.text))
        #expect(try carol.list(weekly.zone).digest == shown.digest)
    }
}

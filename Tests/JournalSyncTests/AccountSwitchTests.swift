import Foundation
import Testing
import JournalLog
import JournalService
import ListModel
@testable import JournalSync

/// Signing in as another account on the same store (Part 7): the previous account's lists leave,
/// its unsent changes kept apart for it; the new account's lists arrive; switching back restores.
@Suite struct AccountSwitchTests {
    @Test func theOtherAccountsListsArriveAndTheFirstsComeBackWithTheirQueuedChange() async throws {
        let world = try World()
        let alice = try world.device("alice:tablet")
        let bob = try world.device("bob:phone")
        let aliceList = try await alice.engine.createList("weekly")
        try await alice.add("Milk", aliceList)
        await alice.sync()
        let bobList = try await bob.engine.createList("party")
        try await bob.add("Cake", bobList)
        await bob.sync()
        let tea = try await alice.add("Tea", aliceList)   // queued when the tablet switches

        let asBob = try await alice.engine.switchAccount(to: LocalService(core: world.core, account: "bob"), replica: "bob:tablet")
        let r = await asBob.sync()
        #expect(r.isComplete, "\(r.errors)")
        #expect(await asBob.lists == [bobList], "alice's list left the device")
        #expect(try await asBob.state(of: bobList).items.map(\.text) == ["Cake"])
        #expect(!(try world.serviceList(aliceList).items.contains { $0.id == tea }), "alice's change is kept for her, not sent as bob")

        let asAlice = try await asBob.switchAccount(to: LocalService(core: world.core, account: "alice"), replica: "alice:tablet")
        #expect(await asAlice.sync().isComplete)
        await asAlice.sync()
        #expect(await asAlice.lists == [aliceList])
        #expect(try world.serviceList(aliceList).items.map(\.text).sorted() == ["Milk", "Tea"], "her kept change went up")
    }

    @Test func aListNotYetOnTheServiceMustSyncFirst() async throws {
        let world = try World()
        let alice = try world.device("alice:tablet") { OfflineService(account: $0.account) }
        _ = try await alice.engine.createList("weekly")
        var refused = false
        do { _ = try await alice.engine.switchAccount(to: LocalService(core: world.core, account: "bob"), replica: "bob:tablet") } catch {
            if case .invalid(let why) = error { refused = why.contains("sync before switching") }
        }
        #expect(refused)
    }

    /// A list kept on this device only is never synced: the switch says to share or delete it,
    /// not to sync (which would never help).
    @Test func aListOnThisDeviceOnlyIsSharedOrDeletedFirst() async throws {
        let world = try World()
        let alice = try world.device("alice:tablet")
        let party = try await alice.engine.createList(named: "party", localOnly: true)
        await alice.sync()
        var refused = ""
        do { _ = try await alice.engine.switchAccount(to: LocalService(core: world.core, account: "bob"), replica: "bob:tablet") } catch {
            if case .invalid(let why) = error { refused = why }
        }
        #expect(refused.contains("share or delete"))
        #expect(refused.contains(party.zone.storeName))
    }
}

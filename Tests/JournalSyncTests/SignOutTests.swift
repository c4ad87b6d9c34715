import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync

/// Signing out (Spec/SYNC.md §7.6): a refused credential stops syncing and keeps everything;
/// `signOut()` makes lists leave the device, local changes not yet uploaded are kept, and signing
/// in again with the same account brings both back.
@Suite struct SignOutTests {
    /// A 401 (an expired credential, a proxy's hiccup) stops syncing and says why; the lists stay,
    /// changes made meanwhile queue, and signing in again with the same account fetches nothing
    /// anew: zones go on from their tokens and the queued change goes up once.
    @Test func aRefusedCredentialKeepsTheListsAndSigningInGoesOn() async throws {
        let world = try World()
        let script = Script()
        let phone = try world.device("alice:phone", script: script)
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        script.signedOut = true
        let r = await phone.sync()
        #expect(r.signedOut && !r.isComplete)
        #expect(r.errors.contains { $0.contains("refused this device's credential") }, "\(r.errors)")
        #expect(phone.holds(list), "the list stayed")
        #expect(await phone.engine.lists == [list])
        #expect(await phone.status().account == "alice")
        try await phone.add("Tea", list)
        #expect(await phone.status(list)?.queued == 1)
        script.signedOut = false
        try await phone.engine.signIn(phone.connection())
        script.forgetLog()
        let again = await phone.sync()
        #expect(again.isComplete, "\(again.errors)")
        #expect(again.refetched.isEmpty, "nothing fetched anew")
        #expect(await phone.status(list)?.queued == 0)
        #expect(try world.serviceList(list).items.map(\.text).sorted() == ["Milk", "Tea"])
    }

    /// Signed out, the lists go and the unuploaded changes are kept; signed in again, the lists
    /// come back and the kept changes are delivered, once.
    @Test func signingOutKeepsUnuploadedChangesAndSigningInDeliversThem() async throws {
        let world = try World()
        let script = Script()
        let phone = try world.device("alice:phone", script: script)
        let ipad = try world.device("alice:ipad")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        let tea = try await phone.engine.record(.add(item: CompactID("tea")!, text: "Tea", after: nil), in: list)

        script.signedOut = true
        let r = await phone.sync()
        #expect(r.signedOut && !r.isComplete)
        await phone.engine.signOut()
        #expect(!phone.holds(list), "the list left the device")
        #expect(await phone.engine.lists.isEmpty)
        let status = await phone.status()
        #expect(status.account == nil)
        #expect(status.keptAcrossSignOut == 1)
        await #expect(throws: SyncEngineError.self) { try await phone.engine.record(.rename(name: "x"), in: list) }
        #expect(await phone.sync().signedOut, "no sync while signed out")

        script.signedOut = false
        try await phone.engine.signIn(phone.connection())
        await settle([phone, ipad], rounds: 2)
        #expect(phone.holds(list))
        #expect(await phone.engine.lists == [list])
        #expect(await phone.status().keptAcrossSignOut == 0)
        #expect(await phone.status(list)?.queued == 0)
        #expect(try world.serviceEntryIDs(list).filter { $0 == tea.id }.count == 1, "the kept change was delivered once")
        try expectConverged(world, [phone, ipad], list)
        #expect(try phone.list(list).items.map(\.text) == ["Tea", "Milk"] || phone.list(list).items.map(\.text) == ["Milk", "Tea"])
    }

    /// A kept change the service stored (its answer was lost) and then purged, with the item
    /// bought on another device, stays gone after signing in again: the kept change goes to the
    /// service first (answered `saved`), and only what the service holds comes back.
    @Test func aKeptChangeThatWasPurgedDoesNotComeBack() async throws {
        let start = try await StaleDeviceTests.breadWithALostAnswer()
        let (world, script, phone, ipad, list, bread) = (start.world, start.script, start.phone, start.ipad, start.list, start.bread)

        script.signedOut = true
        #expect(await phone.sync().signedOut)
        await phone.engine.signOut()
        #expect(await phone.status().keptAcrossSignOut == 1)
        await ipad.sync()
        try await ipad.engine.record(.markOff(item: CompactID("bread")!), in: list)
        await ipad.sync()
        try world.compact(after: 2 * day)
        #expect(try !world.serviceEntryIDs(list).contains(bread.id), "Bread's add was purged")

        script.signedOut = false
        try await phone.engine.signIn(phone.connection())
        let r = await phone.sync()
        #expect(r.rejected.isEmpty, "\(r.rejected)")
        #expect(await phone.status().keptAcrossSignOut == 0)
        await settle([phone, ipad])
        try expectConverged(world, [phone, ipad], list)
        #expect(try phone.list(list).items.map(\.text) == ["Milk"], "Bread came back on the phone only")
        #expect(await phone.status(list)?.queued == 0)
    }

    /// A list made here and never uploaded is a local change too: it survives a sign-out and
    /// reaches the service once the same account signs in again.
    @Test func aListNeverUploadedSurvivesSignOut() async throws {
        let world = try World()
        let script = Script()
        let phone = try world.device("alice:phone", script: script)
        script.offline = true
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        #expect(await phone.sync().offline)
        script.offline = false
        script.signedOut = true
        #expect(await phone.sync().signedOut)
        await phone.engine.signOut()
        script.signedOut = false
        try await phone.engine.signIn(phone.connection())
        await settle([phone], rounds: 3)
        #expect(await phone.engine.lists == [list])
        #expect(await phone.status().keptAcrossSignOut == 0, "the kept change is still waiting")
        #expect(try world.serviceList(list).items.map(\.text) == ["Milk"])
    }

    /// A list deleted here while offline is a local change too: a sign-out in between does not
    /// bring it back, and the deletion reaches the service.
    @Test func aListDeletedBeforeSignOutStaysDeleted() async throws {
        let world = try World()
        let script = Script()
        let phone = try world.device("alice:phone", script: script)
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        script.offline = true
        try await phone.engine.deleteList(list)
        #expect(await phone.sync().offline)
        script.offline = false
        script.signedOut = true
        #expect(await phone.sync().signedOut)
        await phone.engine.signOut()
        script.signedOut = false
        try await phone.engine.signIn(phone.connection())
        await settle([phone], rounds: 2)
        #expect(await phone.engine.lists.isEmpty, "the deleted list came back")
        #expect(!phone.holds(list))
        #expect(try world.core.storage.zoneInfo(list.storeName)?.isDeleted == true, "the deletion never reached the service")
    }
}

import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync

@Suite struct SyncEngineTests {
    /// Two family members share a list through the service: each sees the other's changes.
    @Test func twoDevicesShareAList() async throws {
        let world = try World()
        let alice = try world.device("alice:phone"), bob = try world.device("bob:phone")
        let list = try await alice.engine.createList("weekly")
        let milk = try await alice.add("Milk", list)
        try await alice.add("Bread", list, after: milk)
        let r = await alice.sync()
        #expect(r.isComplete, "\(r.errors)")
        #expect(r.uploaded == 2)
        let invitation = try await alice.engine.share(list, with: "bob")
        #expect(try await bob.engine.accept(invitation) == list)
        await bob.sync()
        #expect(try bob.list(list).items.map(\.text) == ["Milk", "Bread"])
        try await bob.engine.record(.markOff(item: milk), in: list)
        await bob.sync()
        await alice.sync()
        let a = try alice.list(list), b = try bob.list(list), s = try world.serviceList(list)
        #expect(a == b && b == s)
        #expect(a.items.first?.state == .markedOff)
        // The join is in the history, on every replica.
        #expect(try alice.history(list).participantEvents().map(\.kind) == [.joined])
        #expect(a.participants == ["bob"])
    }

    /// Entries that came from the service are never uploaded again.
    @Test func remoteEntriesAreNotUploadedBack() async throws {
        let world = try World()
        let alice = try world.device("alice:phone"), ipad = try world.device("alice:ipad")
        let list = try await alice.engine.createList("weekly")
        for i in 0..<5 { try await alice.add("Item \(i)", list) }
        await alice.sync()
        await ipad.sync()
        #expect(try ipad.list(list).items.count == 5)
        let r = await ipad.sync()
        #expect(r.sent == 0)
        try await ipad.add("Tea", list)
        let r2 = await ipad.sync()
        #expect(r2.sent == 1 && r2.uploaded == 1)
        let totals = await ipad.engine.totals
        #expect(totals.entriesSent == totals.localChanges)
    }
}

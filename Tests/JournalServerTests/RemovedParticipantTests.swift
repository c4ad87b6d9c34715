import Foundation
import Testing
import JournalLog
import JournalService
import JournalSync
import JournalSyncWire

/// A participant the owner removes (Spec/SYNC.md §5.2, §5.5) is shut out on its very next
/// request, and its devices let the list go.
@Suite struct RemovedParticipantTests {
    /// Alice's list `weekly` with an item, shared with bob, whose device (over HTTP) holds it.
    static func setUp() async throws -> (TestServer, alice: HTTPDevice, bob: HTTPDevice, bobCredential: DeviceCredential, ZoneID) {
        let server = try await TestServer()
        let bobCredential = try server.credential("bob")
        let alice = try HTTPDevice(server, replica: "alice:phone", credential: try server.credential("alice"))
        let bob = try HTTPDevice(server, replica: "bob:phone", credential: bobCredential)
        let list = try await alice.engine.createList("weekly")
        try await alice.add("Milk", to: list)
        #expect(await alice.sync().isComplete)
        _ = try await bob.engine.accept(try await alice.engine.share(list, with: "bob"))
        #expect(await bob.sync().isComplete)
        #expect(try bob.list(list).items.map(\.text) == ["Milk"])
        return (server, alice, bob, bobCredential, list)
    }

    /// The removed participant's next fetch of the zone answers 410 zoneDeleted, reason removed
    /// (and so does an upload).
    @Test func aRemovedParticipantsNextRequestIsRefused() async throws {
        let (server, alice, _, bob, list) = try await Self.setUp()
        let before = try await server.send(.GET, HTTPBinding.zonePath(list) + "/changes", as: bob)
        #expect(before.status == 200)
        try await alice.engine.remove("bob", from: list)
        let fetch = try await server.send(.GET, HTTPBinding.zonePath(list) + "/changes", as: bob)
        #expect(fetch.status == 410, "\(fetch)")
        #expect(fetch.error?.error == "zoneDeleted" && fetch.error?.reason == "removed", "\(fetch)")
        let upload = try await server.upload([addEntry(list, author: "bob:phone", text: "Beer")], to: list, as: bob)
        #expect(upload.status == 410 && upload.error?.reason == "removed", "\(upload)")
        #expect(try server.serverList(list).items.map(\.text) == ["Milk"])
        await server.stop()
    }

    /// The removed participant's device reports the list gone, reason removed, and holds it no
    /// more; its change made meanwhile goes with it.
    @Test func aRemovedParticipantsDeviceLetsTheListGo() async throws {
        let (server, alice, bob, _, list) = try await Self.setUp()
        try await bob.add("Beer", to: list)
        try await alice.engine.remove("bob", from: list)
        let report = await bob.sync()
        #expect(report.gone == [ZoneGone(zone: list, reason: .removed)], "\(report.gone) \(report.errors)")
        #expect(!bob.holds(list))
        #expect(await bob.engine.lists.isEmpty)
        #expect(try server.serverList(list).items.map(\.text) == ["Milk"], "bob's change did not reach the list")
        await server.stop()
    }
}

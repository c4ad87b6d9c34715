import AsyncHTTPClient
import Foundation
import Testing
import JournalLog
import JournalService
import JournalSync
import JournalSyncWire
import NIOCore
import NIOHTTP1

/// One account against another's zones (Spec/SYNC.md §5.1, I7): alice can neither read, write,
/// delete nor share bob's zones, and cannot even learn that they exist: every answer about bob's
/// zone is byte for byte the answer about a zone that never existed.
@Suite struct AccessControlTests {
    /// Bob's zone `groceries` (one item, shared with carol), a zone of his he deleted, and the
    /// credentials of alice, bob and carol.
    struct World {
        let server: TestServer
        let alice: DeviceCredential, bob: DeviceCredential, carol: DeviceCredential
        let groceries: ZoneID, deleted: ZoneID, neverExisted: ZoneID
        let item: JournalEntry

        static func make() async throws -> World {
            let server = try await TestServer()
            let alice = try server.credential("alice"), bob = try server.credential("bob"), carol = try server.credential("carol")
            let groceries = ZoneID(owner: "bob", name: "groceries")!, deleted = ZoneID(owner: "bob", name: "old list")!
            let bobs = server.client(bob)
            try await bobs.createZone(groceries)
            let item = addEntry(groceries, author: "bob:phone")
            _ = try await bobs.upload([item], to: groceries)
            let invitation = try await bobs.shareZone(groceries, with: "carol")
            _ = try await server.client(carol).acceptShare(invitation)
            try await bobs.createZone(deleted)
            try await bobs.deleteZone(deleted)
            return World(server: server, alice: alice, bob: bob, carol: carol, groceries: groceries, deleted: deleted,
                         neverExisted: ZoneID(owner: "bob", name: "never existed")!, item: item)
        }

        /// Bob's zone is as he left it: live, its item there, carol a member.
        func expectUntouched(sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let page = try await server.client(bob).fetchZoneChanges(groceries, since: nil, limit: 100)
            #expect(page.entries.contains(item), "bob's item is still there", sourceLocation: sourceLocation)
            #expect(!page.entries.contains { SyncNames.account(ofAuthor: $0.author) == "alice" }, "nothing of alice's got in",
                    sourceLocation: sourceLocation)
            #expect(server.core.members(of: groceries) == ["carol"], sourceLocation: sourceLocation)
            #expect(server.store.zone(groceries.storeName)?.isDeleted == false, sourceLocation: sourceLocation)
        }
    }

    /// Every call alice could make on a zone of bob's, and what any such zone answers.
    enum Trespass: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case fetchZoneChanges, fetchZoneHistory, fetchZoneHistoryPage, fetchZoneSnapshot, upload, deleteZone, shareZone, stopSharing, removeParticipant, removeSelf, createZone

        var testDescription: String { rawValue }

        func request(_ zone: ZoneID) -> (HTTPMethod, String, [UInt8]?, String?) {
            let path = HTTPBinding.zonePath(zone)
            switch self {
            case .fetchZoneChanges: return (.GET, path + "/changes", nil, nil)
            case .fetchZoneHistory: return (.GET, path + "/history", nil, nil)
            case .fetchZoneSnapshot: return (.GET, path + "/snapshot", nil, nil)
            case .fetchZoneHistoryPage: return (.GET, path + "/history/pages", nil, nil)
            case .upload:
                return (.POST, path + "/entries", WireBatch.encode([addEntry(zone, author: "alice:phone", text: "Sneaked in")]), WireBatch.mediaType)
            case .deleteZone: return (.DELETE, path, nil, nil)
            case .shareZone: return (.POST, path + "/invitations", jsonBytes(HTTPBinding.ParticipantJSON(participant: "alice")), "application/json")
            case .stopSharing: return (.DELETE, path + "/participants", nil, nil)
            case .removeParticipant: return (.DELETE, path + "/participants/carol", nil, nil)
            case .removeSelf: return (.DELETE, path + "/participants/alice", nil, nil)
            case .createZone: return (.PUT, path, nil, nil)
            }
        }

        /// What a zone alice may not see answers: 404 zoneNotFound; creating a zone in another
        /// account's name is refused before any zone is looked at.
        var expected: (status: Int, error: String) { self == .createZone ? (400, "invalidRequest") : (404, "zoneNotFound") }
    }

    /// A zone alice may not see answers exactly (status and body bytes) like one that never
    /// existed and like one deleted, for every call, and the call changes nothing.
    @Test(arguments: Trespass.allCases)
    func anotherAccountsZoneAnswersLikeOneThatNeverExisted(_ call: Trespass) async throws {
        let w = try await World.make()
        var answers: [RawResponse] = []
        for zone in [w.groceries, w.neverExisted, w.deleted] {
            let (method, path, body, type) = call.request(zone)
            answers.append(try await w.server.send(method, path, as: w.alice, body: body, contentType: type))
        }
        let (existing, never, deleted) = (answers[0], answers[1], answers[2])
        #expect(existing.status == call.expected.status, "\(existing)")
        #expect(existing.error?.error == call.expected.error, "\(existing)")
        // The same error, and the same bytes (a body that differs in any way tells the zone exists).
        #expect(existing.error != nil && existing.error == never.error && existing.error == deleted.error, "\(existing) / \(never) / \(deleted)")
        #expect(existing.status == never.status && existing.body == never.body, "bob's zone: \(existing); no zone: \(never)")
        #expect(existing.status == deleted.status && existing.body == deleted.body, "bob's zone: \(existing); deleted: \(deleted)")
        #expect(existing.header("Content-Type") == never.header("Content-Type"))
        try await w.expectUntouched()
        await w.server.stop()
    }

    /// Neither of alice's databases lists bob's zones, from no token or from a token taken
    /// before bob changed them.
    @Test func anotherAccountsZonesAreInNeitherDatabase() async throws {
        let w = try await World.make()
        let alice = w.server.client(w.alice)
        try await alice.createZone(ZoneID(owner: "alice", name: "mine")!)
        var tokens: [DatabaseScope: ServiceToken] = [:]
        for scope in DatabaseScope.allCases {
            let page = try await alice.fetchDatabaseChanges(scope, since: nil, limit: 1_000)
            #expect(page.changed.allSatisfy { $0.owner == "alice" }, "\(scope): \(page.changed)")
            #expect(page.deleted.isEmpty, "\(scope): \(page.deleted)")
            tokens[scope] = page.token
        }
        // Bob changes, deletes and creates zones; carol leaves his shared one.
        let bob = w.server.client(w.bob)
        _ = try await bob.upload([addEntry(w.groceries, author: "bob")], to: w.groceries)
        try await bob.createZone(ZoneID(owner: "bob", name: "new")!)
        try await bob.deleteZone(ZoneID(owner: "bob", name: "new")!)
        try await w.server.client(w.carol).removeParticipant("carol", from: w.groceries)
        for scope in DatabaseScope.allCases {
            let page = try await alice.fetchDatabaseChanges(scope, since: tokens[scope], limit: 1_000)
            #expect(page.changed.isEmpty && page.deleted.isEmpty, "\(scope): \(page)")
        }
        await w.server.stop()
    }

    /// The zone of the first `changed` event in a hint channel's text, once its line is whole.
    static func firstHint(_ text: String) -> String? {
        guard let r = text.range(of: "event: changed\ndata: "), let end = text[r.upperBound...].firstIndex(of: "\n") else { return nil }
        return String(text[r.upperBound..<end])
    }

    /// Alice's hint channel never names a zone of bob's: the first change it reports is her own,
    /// made after bob's.
    @Test func anotherAccountsChangesAreNotHintedToIt() async throws {
        let w = try await World.make()
        let server = w.server, alice = w.alice, bob = w.bob, groceries = w.groceries
        let mine = ZoneID(owner: "alice", name: "mine")!
        let first = try await withTimeout(10, "alice's first hint") { () -> String in
            // Subscribed: bob changes his zone, then alice hers.
            let text = try await readHints(server, as: alice, timeout: 10, onReady: {
                _ = try await server.upload([addEntry(groceries, author: "bob")], to: groceries, as: bob)
                try await server.client(bob).createZone(ZoneID(owner: "bob", name: "another")!)
                try await server.client(alice).createZone(mine)
            }, until: { Self.firstHint($0) != nil })
            return Self.firstHint(text) ?? "(the channel ended)"
        }
        #expect(first == mine.storeName)
        await w.server.stop()
    }

    /// The same refusal is the same bytes every time (so that comparing bodies, as a prober
    /// would, tells nothing): twenty fetches of a zone alice may not see answer one body.
    @Test func theSameRefusalIsTheSameBytesEveryTime() async throws {
        let w = try await World.make()
        var bodies = Set<[UInt8]>()
        for zone in [w.groceries, w.neverExisted] {
            for _ in 0..<10 { bodies.insert(try await w.server.send(.GET, HTTPBinding.zonePath(zone) + "/changes", as: w.alice).body) }
        }
        #expect(bodies.count == 1, "\(bodies.map { String(decoding: $0, as: UTF8.self) })")
        await w.server.stop()
    }

    /// An invitation addressed to dave gets alice nowhere: zoneNotFound, and alice does not
    /// join (dave still can).
    @Test func anInvitationForAnotherAccountIsRefused() async throws {
        let w = try await World.make()
        let dave = try w.server.credential("dave")
        let invitation = try await w.server.client(w.bob).shareZone(w.groceries, with: "dave")
        let r = try await w.server.send(.POST, "/v1/invitations/accept", as: w.alice,
                                        body: jsonBytes(HTTPBinding.InvitationJSON(invitation: invitation.text)), contentType: "application/json")
        #expect(r.status == 404 && r.error?.error == "zoneNotFound", "\(r)")
        #expect(!w.server.core.members(of: w.groceries).contains("alice"))
        #expect(try await w.server.client(dave).acceptShare(invitation) == w.groceries)
        await w.server.stop()
    }
}

import Foundation
import Testing
import JournalLog
import JournalSync
import JournalSyncHTTP
import JournalSyncWire

/// `GET …/participants` (Spec/SYNC.md §5.2): the owner's view of members and pending invitations.
@Suite struct ParticipantsOverHTTPTests {
    @Test func theOwnerListsMembersAndPendingInvitations() async throws {
        let server = try await TestServer()
        let alice = try server.client(try server.credential("alice"))
        let bob = try server.client(try server.credential("bob"))
        _ = try server.credential("carol")
        let list = ZoneID(owner: "alice", name: "weekly")!
        try await alice.createZone(list)
        _ = try await bob.acceptShare(try await alice.shareZone(list, with: "bob"))
        _ = try await alice.shareZone(list, with: "carol")
        #expect(try await alice.fetchParticipants(list) == [ShareParticipant(account: "bob", status: .member),
                                                            ShareParticipant(account: "carol", status: .invited)])
        await #expect(throws: SyncError.self) { try await bob.fetchParticipants(list) }
        await server.stop()
    }
}

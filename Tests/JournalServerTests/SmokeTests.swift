import Foundation
import Testing
import JournalLog
import JournalService
import JournalSync

@Suite struct ServerSmokeTests {
    /// The server answers an authenticated caller with its account, and stops when asked.
    @Test func aCredentialAuthenticatesItsAccount() async throws {
        let server = try await TestServer()
        let alice = server.client(try server.credential("alice"))
        #expect(try await alice.whoAmI() == "alice")
        await server.stop()
    }
}

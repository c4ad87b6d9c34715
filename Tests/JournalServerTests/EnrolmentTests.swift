import Foundation
import Testing
import JournalLog
import JournalServer
import JournalService
import JournalSync
import JournalSyncHTTP
import JournalSyncHTTPNIO
import JournalSyncWire

/// Devices that enrol themselves with the app's identity provider's token (issue 49 point 8,
/// Spec/SYNC.md §9.2, enrolment): the token becomes a per-device credential of the account it names, made
/// on first sight; refusals say which check failed; keys that cannot be read are a retry, never a
/// refusal; each account enrols a bounded number of devices; a server without a provider enrols none.
@Suite struct EnrolmentTests {
    static let provider = try! TestIdentityProvider()

    /// A server whose devices enrol with `provider`'s tokens, its JWKS in a file.
    static func server(maxDevices: Int = DeviceEnrolment.maxDevicesPerAccount, source: IdentityProvider.KeySource? = nil,
                       options: ServerOptions = ServerOptions()) async throws -> TestServer {
        let identity = IdentityProvider(policy: provider.policy, source: try source ?? .file(provider.jwksFile()))
        return try await TestServer(options: options, identity: identity, maxDevicesPerAccount: maxDevices)
    }

    static func enrol(_ server: TestServer, _ token: String) async throws(SyncError) -> DeviceCredential {
        try await HTTPSyncService.enrol(server: server.url, identityToken: token, transport: AsyncHTTPClientTransport())
    }

    @Test func aNewPersonsTokenMakesTheirAccountAndADeviceCredentialThatSyncs() async throws {
        let server = try await Self.server()
        defer { Task { await server.stop() } }
        #expect(try server.accounts.accountExists("dora", now: nowMillis()) == false)
        let credential = try await Self.enrol(server, Self.provider.token(TestIdentityProvider.claims("dora")))
        #expect(credential.account == "dora")
        #expect(try await server.client(credential).whoAmI() == "dora")
        // Made on first sight: others can invite the account now.
        #expect(try server.accounts.accountExists("dora", now: nowMillis()))
    }

    @Test func eachEnrolmentIsADeviceOfItsOwnThatCanBeRevokedAlone() async throws {
        let server = try await Self.server()
        defer { Task { await server.stop() } }
        let token = try Self.provider.token(TestIdentityProvider.claims("dora"), alg: "RS256")
        let phone = try await Self.enrol(server, token), tablet = try await Self.enrol(server, token)
        #expect(phone.id != tablet.id)
        try server.accounts.revoke(phone.id, now: nowMillis())
        await #expect(throws: SyncError.notAuthenticated) { try await server.client(phone).whoAmI() }
        #expect(try await server.client(tablet).whoAmI() == "dora")
    }

    @Test func aRefusedTokenIs401WithTheReasonAndMakesNoAccount() async throws {
        let server = try await Self.server()
        defer { Task { await server.stop() } }
        let expired = try Self.provider.token(TestIdentityProvider.claims("eve") { $0["exp"] = Int(Date().timeIntervalSince1970) - 7_200 })
        let r = try await server.send(.POST, "/v1/enrol", authorization: "Bearer " + expired)
        #expect(r.status == 401)
        #expect(r.header("WWW-Authenticate") != nil)
        let body = try JSONDecoder().decode(HTTPBinding.ErrorJSON.self, from: Data(r.body))
        #expect(body.error == "notAuthenticated")
        #expect(body.message.contains("expired"))
        #expect(try server.accounts.accountExists("eve", now: nowMillis()) == false)
    }

    @Test func aDeviceCredentialIsNotAnIdentityToken() async throws {
        let server = try await Self.server()
        defer { Task { await server.stop() } }
        let credential = try server.credential("alice")
        await #expect(throws: SyncError.notAuthenticated) { try await Self.enrol(server, credential.text) }
        let r = try await server.send(.POST, "/v1/enrol", authorization: nil)
        #expect(r.status == 401)
    }

    @Test func keysThatCannotBeReadAreARetryNotARefusal() async throws {
        // The provider's JWKS URL does not answer (nothing listens on port 1).
        let server = try await Self.server(source: .url(URL(string: "http://127.0.0.1:1/jwks.json")!))
        defer { Task { await server.stop() } }
        let token = try Self.provider.token(TestIdentityProvider.claims("dora"))
        let r = try await server.send(.POST, "/v1/enrol", authorization: "Bearer " + token)
        #expect(r.status == 503)
        #expect(r.header("Retry-After") != nil)
        await #expect(throws: SyncError.serviceBusy(retryAfter: .seconds(5))) { try await Self.enrol(server, token) }
    }

    @Test func anAccountEnrolsAtMostTheLimitOfDevices() async throws {
        let server = try await Self.server(maxDevices: 2)
        defer { Task { await server.stop() } }
        let token = try Self.provider.token(TestIdentityProvider.claims("dora"), alg: "EdDSA")
        _ = try await Self.enrol(server, token)
        let second = try await Self.enrol(server, token)
        await #expect(throws: SyncError.tooManyDevices(limit: 2)) { try await Self.enrol(server, token) }
        // Revoking one makes room.
        try server.accounts.revoke(second.id, now: nowMillis())
        _ = try await Self.enrol(server, token)
    }

    @Test func aServerWithoutAProviderEnrolsNoOne() async throws {
        let server = try await TestServer()
        defer { Task { await server.stop() } }
        let token = try Self.provider.token(TestIdentityProvider.claims("dora"))
        await #expect { try await Self.enrol(server, token) } throws: { error in
            if case SyncError.invalidRequest(let why) = error { return why.contains("--jwks") }
            return false
        }
    }

    @Test func madeUpTokensAreRateLimitedBeforeTheirSignaturesAreChecked() async throws {
        var options = ServerOptions()
        options.requestsPerSecond = 0.01
        options.burst = 2
        let server = try await Self.server(options: options)
        defer { Task { await server.stop() } }
        let forged = try TestIdentityProvider().token(TestIdentityProvider.claims("mallory"))
        #expect(try await server.send(.POST, "/v1/enrol", authorization: "Bearer " + forged).status == 401)
        #expect(try await server.send(.POST, "/v1/enrol", authorization: "Bearer " + forged).status == 401)
        let third = try await server.send(.POST, "/v1/enrol", authorization: "Bearer " + forged)
        #expect(third.status == 429)
        #expect(third.header("Retry-After") != nil)
    }
}

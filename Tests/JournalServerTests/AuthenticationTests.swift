import Foundation
import Testing
import JournalLog
@testable import JournalService
import JournalSync
import JournalSyncWire
import NIOHTTP1

/// Credentials (Spec/SYNC.md §9.2): a request without a valid one gets 401 notAuthenticated with
/// a WWW-Authenticate challenge, on every endpoint but health, and the refusals all look alike.
@Suite struct AuthenticationTests {
    /// Every authenticated endpoint, on alice's zone `groceries` (shared with bob).
    static func endpoints(_ zone: ZoneID) -> [(HTTPMethod, String, [UInt8]?, String?)] {
        let path = HTTPBinding.zonePath(zone)
        return [
            (.GET, "/v1/account", nil, nil),
            (.GET, "/v1/databases/private/changes", nil, nil),
            (.GET, "/v1/databases/shared/changes", nil, nil),
            (.GET, "/v1/databases/changes", nil, nil),
            (.PUT, path, nil, nil),
            (.DELETE, path, nil, nil),
            (.POST, path + "/entries", WireBatch.encode([addEntry(zone, author: "alice")]), WireBatch.mediaType),
            (.GET, path + "/changes", nil, nil),
            (.GET, path + "/history", nil, nil),
            (.GET, path + "/snapshot", nil, nil),
            (.POST, path + "/invitations", jsonBytes(HTTPBinding.ParticipantJSON(participant: "bob")), "application/json"),
            (.POST, "/v1/invitations/accept", jsonBytes(HTTPBinding.InvitationJSON(invitation: "jsi1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")), "application/json"),
            (.DELETE, path + "/participants", nil, nil),
            (.DELETE, path + "/participants/bob", nil, nil),
            (.GET, "/v1/hints", nil, nil),
        ]
    }

    enum BadCredential: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case missing, notBearer, emptyBearer, malformed, tamperedSecret, anotherAccountsName, unknownID, expired, revoked
        var testDescription: String { rawValue }
    }

    /// Alice's zone, with an item and bob as a member; alice's and bob's credentials.
    static func setUp() async throws -> (TestServer, alice: DeviceCredential, bob: DeviceCredential, ZoneID) {
        let server = try await TestServer()
        let alice = try server.credential("alice"), bob = try server.credential("bob")
        let zone = ZoneID(owner: "alice", name: "groceries")!
        let client = server.client(alice)
        try await client.createZone(zone)
        _ = try await client.upload([addEntry(zone, author: "alice")], to: zone)
        _ = try await server.client(bob).acceptShare(try await client.shareZone(zone, with: "bob"))
        return (server, alice, bob, zone)
    }

    /// The Authorization header a device with this kind of bad credential sends (nil: none).
    static func authorization(_ kind: BadCredential, _ server: TestServer, alice: DeviceCredential) async throws -> String? {
        switch kind {
        case .missing: return nil
        case .notBearer: return "Basic " + Data("alice:\(alice.secret)".utf8).base64EncodedString()
        case .emptyBearer: return "Bearer "
        case .malformed: return "Bearer jlc1.alice.not-a-credential"
        case .tamperedSecret:
            let first = alice.secret.first == "A" ? "B" : "A"
            return DeviceCredential(account: "alice", id: alice.id, secret: first + alice.secret.dropFirst()).bearer
        case .anotherAccountsName:
            return DeviceCredential(account: "bob", id: alice.id, secret: alice.secret).bearer
        case .unknownID: return DeviceCredential.issue(for: "alice").bearer
        case .expired: return try server.credential("alice", expiresAt: nowMillis() - 60_000).bearer
        case .revoked:
            let doomed = try server.credential("alice")
            let before = try await server.send(.GET, "/v1/account", as: doomed)
            #expect(before.status == 200, "the credential worked before: \(before)")
            // As `jlog accounts revoke` does, from another process: through its own directory.
            #expect(try AccountDirectory(store: server.store.path).revoke(doomed.id, now: nowMillis()) == 1)
            return doomed.bearer
        }
    }

    /// A missing, malformed, tampered, unknown, expired or revoked credential gets 401 with a
    /// WWW-Authenticate challenge on every endpoint, the same error each time, and changes nothing.
    @Test(arguments: BadCredential.allCases)
    func aBadCredentialIsRefusedOnEveryEndpoint(_ kind: BadCredential) async throws {
        let (server, alice, _, zone) = try await Self.setUp()
        let authorization = try await Self.authorization(kind, server, alice: alice)
        let reference = try await server.send(.GET, "/v1/account", authorization: nil)
        #expect(reference.error?.error == "notAuthenticated", "\(reference)")
        for (method, path, body, type) in Self.endpoints(zone) {
            let r = try await server.send(method, path, authorization: authorization, body: body, contentType: type)
            #expect(r.status == 401, "\(method) \(path): \(r)")
            #expect(r.header("WWW-Authenticate")?.hasPrefix("Bearer") == true, "\(method) \(path): \(r.headers)")
            #expect(r.error != nil && r.error == reference.error, "\(method) \(path): refused unlike the others: \(r)")
        }
        // Nothing was done: the zone is there with its item, bob still a member.
        let page = try await server.client(alice).fetchZoneChanges(zone, since: nil, limit: 100)
        #expect(page.entries.filter { if case .add = $0.operation { true } else { false } }.count == 1)
        #expect(server.core.members(of: zone) == ["bob"])
        await server.stop()
    }

    /// The scheme's name is case-insensitive and one or more spaces may follow it (RFC 7235,
    /// SYNC.md §9.2): `bearer`, `BEARER` and `Bearer  ` authenticate like `Bearer `.
    @Test(arguments: ["bearer ", "BEARER ", "BeArEr ", "Bearer  ", "bearer   "])
    func theSchemeIsMatchedWhateverItsCase(_ scheme: String) async throws {
        let (server, alice, _, _) = try await Self.setUp()
        let r = try await server.send(.GET, "/v1/account", authorization: scheme + alice.text)
        #expect(r.status == 200, "\(scheme.debugDescription): \(r)")
        await server.stop()
    }

    /// A scheme that only starts like Bearer is not Bearer.
    @Test func aSchemeThatOnlyBeginsLikeBearerIsRefused() async throws {
        let (server, alice, _, _) = try await Self.setUp()
        for authorization in ["Bearerx " + alice.text, "Bearer" + alice.text, "Bear " + alice.text] {
            let r = try await server.send(.GET, "/v1/account", authorization: authorization)
            #expect(r.status == 401, "\(authorization.prefix(12)): \(r)")
        }
        await server.stop()
    }

    /// The accounts file keeps SHA-256 of the secret's text as 64 lowercase hex digits
    /// (SYNC.md §9.2): files written by earlier servers must keep authenticating.
    @Test func theStoredHashIsTheSecretsSHA256InLowercaseHex() {
        #expect(AccountDirectory.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(AccountDirectory.secret("abc", hashesTo: AccountDirectory.hash("abc")))
        #expect(!AccountDirectory.secret("abd", hashesTo: AccountDirectory.hash("abc")))
        #expect(!AccountDirectory.secret("abc", hashesTo: AccountDirectory.hash("abc").uppercased()))
        #expect(!AccountDirectory.secret("abc", hashesTo: String(AccountDirectory.hash("abc").dropLast())))
    }

    /// An account name may hold dots (SYNC.md §1); its credential still parses, from the right.
    @Test func anAccountWithDotsAuthenticates() async throws {
        let server = try await TestServer()
        let credential = try server.credential("john.smith")
        #expect(DeviceCredential(credential.text) == credential)
        let r = try await server.send(.GET, "/v1/account", as: credential)
        #expect(r.status == 200, "\(r)")
        #expect(String(decoding: r.body, as: UTF8.self).contains("john.smith"))
        await server.stop()
    }

    /// A credential's text parses only in its exact form: prefix, account, 11 and 43 characters.
    @Test func onlyTheExactFormParses() {
        let c = DeviceCredential.issue(for: "a.b")
        #expect(DeviceCredential(c.text) == c)
        for bad in ["jlc2.a.b.\(c.id).\(c.secret)", "jlc1..\(c.id).\(c.secret)", "jlc1.\(c.id).\(c.secret)",
                    "jlc1.a.b.\(c.id)x.\(c.secret)", "jlc1.a.b.\(c.id).\(c.secret).", "jlc1.a b.\(c.id).\(c.secret)",
                    "jlc1._a.\(c.id).\(c.secret)", "jlc1...\(c.id).\(c.secret)", "jlc1.\(String(repeating: ".", count: 3)).\(c.id).\(c.secret)", "jlc1.a.b.\(c.id)\(c.secret)", "", "...", "jlc1.a.b.\(c.id).\(c.secret.dropLast())"] {
            #expect(DeviceCredential(bad) == nil, "\(bad)")
        }
    }

    /// Health needs no credential and says nothing but that the server runs.

    @Test func healthNeedsNoCredentialAndRevealsNothing() async throws {
        let server = try await TestServer()
        let r = try await server.send(.GET, "/v1/health", authorization: nil)
        #expect(r.status == 200 && r.text == #"{"status":"ok"}"#, "\(r)")
        await server.stop()
    }

    /// A revocation is seen on the next request even when the accounts file was rewritten more
    /// than once since the server last read it (`jlog accounts add`, then `jlog accounts
    /// revoke`, each a process of its own): a file replaced twice often comes back with the
    /// inode the server last read (ext4 reuses the inode freed by the first replacement), which
    /// must not hide either change. Up to 30 rounds, each: a request (the server reads the file),
    /// a credential added and the previous one revoked, then both tried.
    @Test func aRevocationIsSeenAfterSeveralChangesToTheAccountsFile() async throws {
        let server = try await TestServer()
        var current = try server.credential("alice")
        for round in 0..<30 {
            let before = try await server.send(.GET, "/v1/account", as: current)
            #expect(before.status == 200, "round \(round): \(before)")
            let next = try AccountDirectory(store: server.store.path).issue(account: "alice", now: nowMillis(), expiresAt: nil)
            #expect(try AccountDirectory(store: server.store.path).revoke(current.id, now: nowMillis()) == 1)
            let revoked = try await server.send(.GET, "/v1/account", as: current)
            let added = try await server.send(.GET, "/v1/account", as: next)
            #expect(revoked.status == 401, "round \(round): the revoked credential still works: \(revoked)")
            #expect(added.status == 200, "round \(round): the new credential does not work yet: \(added)")
            if revoked.status != 401 || added.status != 200 { break }
            current = next
        }
        await server.stop()
    }
}

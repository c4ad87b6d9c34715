import Foundation
import Testing
import JournalLog
import JournalSeal
import JournalSync
import JournalSyncHTTP
import JournalSyncWire

/// `PUT /v1/account/keys` and `GET /v1/accounts/{account}/keys` (Spec/SYNC.md §5.6): an account
/// publishes its public keys once; any account reads them; none published reads as nil.
@Suite struct AccountKeysOverHTTPTests {
    /// A valid Ed25519 public key (RFC 8032's first test key) and an X25519 one (RFC 7748's).
    static let identity = Array("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a".hexBytes)
    static let wrap = Array("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a".hexBytes)

    @Test func anAccountPublishesItsKeysOnceAndAnyAccountReadsThem() async throws {
        let server = try await TestServer()
        let alice = try server.client(try server.credential("alice"))
        let bob = try server.client(try server.credential("bob"))
        let keys = PublishedAccountKeys(account: "alice", identity: Self.identity, wrap: Self.wrap)
        #expect(try await bob.fetchAccountKeys("alice") == nil)
        try await alice.publishAccountKeys(keys)
        try await alice.publishAccountKeys(keys)
        #expect(try await bob.fetchAccountKeys("alice") == keys)
        await #expect(throws: SyncError.self, "a vouch that is not her keys' signature") {
            try await alice.publishAccountKeys(PublishedAccountKeys(account: "alice", identity: Self.wrap, wrap: Self.wrap, vouch: Array(repeating: 1, count: 64)))
        }
        await #expect(throws: SyncError.self) { try await bob.publishAccountKeys(keys) }
        await server.stop()
    }

    /// `PUT` and `GET /v1/account/recovery` (Spec/SYNC.md §5.7): the caller's own kit only.
    @Test func anAccountStoresAndFetchesItsRecoveryKit() async throws {
        let server = try await TestServer()
        let alice = try server.client(try server.credential("alice"))
        let bob = try server.client(try server.credential("bob"))
        #expect(try await alice.fetchRecoveryKit() == nil)
        try await alice.storeRecoveryKit(Array(0..<93))
        #expect(try await alice.fetchRecoveryKit() == Array(0..<93))
        #expect(try await bob.fetchRecoveryKit() == nil)
        await #expect(throws: SyncError.self) { try await bob.storeRecoveryKit([UInt8](repeating: 1, count: 300)) }
        await server.stop()
    }

    /// `PUT` and `GET /v1/account/links/{link}` (Spec/SYNC.md §5.8): a new device of alice's
    /// opens the keys her phone sealed for its offer; bob's fetch of the link finds nothing.
    @Test func aNewDeviceGetsTheAccountKeysThroughALink() async throws {
        let server = try await TestServer()
        let phone = try server.client(try server.credential("alice"))
        let laptop = try server.client(try server.credential("alice"))
        let bob = try server.client(try server.credential("bob"))
        let keys = AccountKeys(account: "alice")
        let request = DeviceLinkRequest()
        #expect(try await laptop.fetchDeviceLink(request.offer.linkID) == nil)
        let offer = try #require(DeviceLinkOffer(request.offer.description))
        try await phone.depositDeviceLink(offer.linkID, sealed: try DeviceLink.seal(keys, for: offer))
        let sealed = try #require(try await laptop.fetchDeviceLink(request.offer.linkID))
        #expect(try request.open(sealed, account: "alice").raw == keys.raw)
        #expect(try await bob.fetchDeviceLink(request.offer.linkID) == nil)
        let bad = try await server.send(.GET, "/v1/account/links/ABC", as: try server.credential("alice"))
        #expect(bad.status == 400)
        await server.stop()
    }
}

private extension String {
    var hexBytes: [UInt8] { stride(from: 0, to: count, by: 2).map { UInt8(dropFirst($0).prefix(2), radix: 16)! } }
}

import AsyncHTTPClient
import Foundation
import JournalService
import JournalServer
import JournalSync
import Testing

/// `GET /v1/hints` outlives the request that opened it (SYNC.md §7.7): what it may say, and to
/// whom, is decided again while it runs.
struct HintChannelTests {
    /// A credential revoked while its channel is open ends the channel: a stolen device would
    /// otherwise go on hearing of every zone its account sees, new shares included.
    @Test func aRevokedCredentialsChannelEnds() async throws {
        var options = ServerOptions()
        options.hintKeepAlive = .milliseconds(50)
        let server = try await TestServer(options: options)
        let alice = try server.credential("alice")
        let path = server.store.path
        let text = try await withTimeout(15, "the revoked channel's end") {
            try await readHints(server, as: alice) {
                let revoked = try AccountDirectory(store: path).revoke(alice.id, now: nowMillis())
                #expect(revoked == 1)
            }
        }
        #expect(text.hasPrefix("event: ready"))
        // The subscription ends once the channel's tasks notice (not necessarily at once).
        for _ in 0..<200 where server.core.hints.subscriptions > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.core.hints.subscriptions == 0)
        await server.stop()
    }

    /// An account holds at most `maxPerAccount` channels; the next is refused with 429, and
    /// another account is not affected.
    @Test func anAccountsChannelsAreCapped() {
        let hub = HintHub(maxPerAccount: 2)
        let first = hub.subscribe("alice"), second = hub.subscribe("alice")
        #expect(first != nil && second != nil)
        #expect(hub.subscribe("alice") == nil)
        let bobs = hub.subscribe("bob")
        #expect(bobs != nil)
        #expect(hub.subscriptions == 3)
    }
}

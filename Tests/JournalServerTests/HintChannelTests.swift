import AsyncHTTPClient
import Foundation
import JournalService
import JournalServer
@testable import JournalSync
import JournalSyncWire
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

    /// A channel whose connection the client closes frees its place at once, not at the next
    /// keep-alive (an hour here): a client that opens and closes channels quickly is never
    /// locked out of its own hints.
    @Test func aClosedChannelFreesItsPlace() async throws {
        var options = ServerOptions()
        options.hintKeepAlive = .seconds(3600)
        let server = try await TestServer(options: options)
        let alice = try server.credential("alice")
        let port = server.port, bearer = alice.bearer
        for round in 0..<(server.core.hints.maxPerAccount + 8) {
            let head = try await onThread { () -> String in
                let c = try RawConnection(port: port, receiveTimeoutSeconds: 10)
                c.send("GET /v1/hints HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: \(bearer)\r\n\r\n")
                var got: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 4096)
                while !String(decoding: got, as: UTF8.self).contains("event: ready") {
                    let n = chunk.withUnsafeMutableBytes { recv(c.fd, $0.baseAddress, $0.count, 0) }
                    if n <= 0 { break }
                    got += chunk[0..<n]
                }
                return String(decoding: got, as: UTF8.self)
            }
            #expect(head.hasPrefix("HTTP/1.1 200"), "channel \(round): \(head.prefix(80))")
            // The connection is closed here (RawConnection's deinit); the next round may find the
            // server not done with it yet, which the bound above leaves room for.
            for _ in 0..<500 where server.core.hints.subscriptions > 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(server.core.hints.subscriptions == 0, "after channel \(round)")
        }
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

    /// An upload's hint names the zone and the head the uploading device now holds (SYNC.md
    /// §7.7): the device that reads it back skips the fetch; a device that lost hints reads `*`.
    @Test func aChangedEventNamesTheZoneAndTheHeadAfterIt() async throws {
        let server = try await TestServer()
        let alice = try server.credential("alice")
        let phone = try HTTPDevice(server, replica: "alice:phone", credential: alice)
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", to: list)
        #expect(await phone.sync().isComplete)
        let text = try await withTimeout(15, "the upload's hint") {
            try await readHints(server, as: alice, onReady: {
                try await phone.add("Eggs", to: list)
                #expect(await phone.sync().isComplete)
            }, until: { $0.contains("event: changed") && $0.hasSuffix("\n\n") })
        }
        let hints = SyncHints()
        var event = HintEvent()
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(3) {
            event.take(Array(line.utf8))?.deliver(to: hints)
        }
        let held = try #require(await phone.engine.state.zones[list.storeName]?.head)
        #expect(hints.take() == [ZoneHint(zone: list, head: held)])
        await server.stop()
    }

    /// The channel's events as a device reads them: a zone and its head, a zone alone, `*`, and
    /// events it does not know (a full sync each).
    @Test func aDeviceReadsEachKindOfHint() {
        func read(_ text: String) -> [ZoneHint]? {
            let hints = SyncHints()
            var event = HintEvent()
            for line in Array(text.utf8).split(separator: 0x0A, omittingEmptySubsequences: false) { event.take(Array(line))?.deliver(to: hints) }
            return hints.take()
        }
        let list = ZoneID(owner: "alice", name: "weekly")!
        #expect(read("event: changed\ndata: alice/weekly\ndata: h0123456789abcdef\n\n") == [ZoneHint(zone: list, head: ZoneHead("h0123456789abcdef"))])
        #expect(read("event: changed\r\ndata: alice/weekly\r\n\r\n") == [ZoneHint(zone: list, head: nil)])
        #expect(read("event: changed\ndata: alice/weekly\ndata: not a head\n\n") == [ZoneHint(zone: list, head: nil)])
        #expect(read("event: changed\ndata: *\n\n") == nil)
        #expect(read("event: ready\ndata: subscribed\n\n") == nil)
        #expect(read(": keep-alive\n\n") == [])
    }
}

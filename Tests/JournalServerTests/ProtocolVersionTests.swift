import Foundation
import Testing
import JournalLog
import JournalSync
import JournalSyncHTTP
import JournalSyncWire

/// The protocol version over HTTP (Spec/SYNC.md §3.13), and a newer version's list change
/// travelling through `jlog serve` to an older device.
@Suite struct ProtocolVersionTests {
    @Test func everyAnswerNamesTheServersVersionAndAnOldOneIsRefusedInWords() async throws {
        let server = try await TestServer()
        let alice = try server.credential("alice")
        let ok = try await server.send(.GET, "/v1/databases/private/changes", authorization: alice.bearer,
                                       headers: [(HTTPBinding.protocolHeader, "2")])
        #expect(ok.status == 200)
        #expect(ok.header(HTTPBinding.protocolHeader) == String(HTTPBinding.protocolVersion))
        let old = try await server.send(.GET, "/v1/databases/private/changes", authorization: alice.bearer,
                                        headers: [(HTTPBinding.protocolHeader, "0")])
        #expect(old.status == 426)
        #expect(String(decoding: old.body, as: UTF8.self).contains("\"incompatible\""))
        await server.stop()
    }

    @Test func aNewerChangeReachesAnOlderDeviceThroughTheServer() async throws {
        let server = try await TestServer()
        let phone = try HTTPDevice(server, replica: "alice:phone", credential: try server.credential("alice"))
        let ipad = try HTTPDevice(server, replica: "alice:ipad", credential: try server.credential("alice"))
        let list = try await phone.engine.createList("weekly")
        try await phone.engine.recordUnchecked(.opaque(kind: 0x50, body: [9, 9]), in: list)
        #expect(await phone.sync().isComplete)
        let r = await ipad.sync()
        #expect(r.isComplete, "\(r.errors)")
        #expect(r.problems.map(\.reason) == [.newerVersion])
        await server.stop()
    }
}

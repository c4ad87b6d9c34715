import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import JournalSync
import JournalSyncHTTP
import JournalSyncWire
import ListModel

/// A new device installs a compacted list from the server's snapshot over HTTP, and fetches its
/// history compressed (Spec/SYNC.md §3.10, §9.5).
@Suite struct SnapshotOverHTTPTests {
    /// Alice's list of 40 items, 30 bought, compacted by the server two days later.
    static func compactedList(_ server: TestServer) async throws -> (HTTPDevice, ZoneID) {
        let phone = try HTTPDevice(server, replica: "alice:phone", credential: try server.credential("alice"))
        let list = try await phone.engine.createList("weekly")
        for i in 0..<40 {
            let item = CompactID("item-\(i)")!
            try await phone.engine.record(.add(item: item, text: "thing number \(i)", after: nil), in: list)
            if i < 30 { try await phone.engine.record(.markOff(item: item), in: list) }
        }
        #expect(await phone.sync().isComplete)
        let report = try server.core.compact(now: Int64(Date().timeIntervalSince1970 * 1000) + 2 * 86_400_000)
        #expect(report.zones.map(\.zone) == [list.storeName])
        return (phone, list)
    }

    static func limits() -> ServiceLimits {
        var l = ServiceLimits()
        l.retentionMillis = 86_400_000
        return l
    }

    @Test func aNewDeviceInstallsTheServersSnapshotAndConverges() async throws {
        let server = try await TestServer(limits: Self.limits())
        let (_, list) = try await Self.compactedList(server)
        let ipad = try HTTPDevice(server, replica: "alice:ipad", credential: try server.credential("alice"))
        let r = await ipad.sync()
        #expect(r.isComplete, "\(r.errors)")
        #expect(r.firstFetched == [list])
        let first = try ipad.store.changes(in: list.storeName, since: nil, limit: 1).entries.first?.entry
        #expect(first.map(ListBase.isBase) == true, "the list starts from the server's snapshot")
        let served = try server.serverList(list)
        #expect(try ipad.list(list) == served)
        #expect(try ipad.list(list).digest == served.digest)
        #expect(try ListQuery(store: ipad.store, fs: ipad.fs).history(list.storeName).log
                == ListQuery(store: server.store).history(list.storeName).log)
        await server.stop()
    }

    /// The phone uploads after the server compacted its list: the answer carries the compaction
    /// record (`carry`, SYNC.md §3.11), and the phone follows it, fetching nothing anew.
    @Test func anUploadAfterACompactionCarriesTheRecordBack() async throws {
        let server = try await TestServer(limits: Self.limits())
        let (phone, list) = try await Self.compactedList(server)
        try await phone.engine.record(.add(item: CompactID("tea")!, text: "Tea", after: nil), in: list)
        let r = await phone.sync()
        #expect(r.isComplete, "\(r.errors)")
        #expect(r.compactionsFollowed == 1)
        #expect(r.refetched.isEmpty)
        #expect(try phone.list(list) == server.serverList(list))
        await server.stop()
    }

    @Test func theSnapshotRouteAnswersNoContentForAListNeverCompacted() async throws {
        let server = try await TestServer(limits: Self.limits())
        let alice = try server.credential("alice")
        let zone = ZoneID(owner: "alice", name: "fresh")!
        try await server.client(alice).createZone(zone)
        let a = try await server.send(.GET, HTTPBinding.zonePath(zone) + "/snapshot", as: alice)
        #expect(a.status == 204)
        #expect(try await server.client(alice).fetchZoneSnapshot(zone) == nil)
        await server.stop()
    }

    @Test func aHistoryComesCompressedToAClientThatTakesIt() async throws {
        let server = try await TestServer(limits: Self.limits())
        let (phone, list) = try await Self.compactedList(server)
        _ = phone
        let alice = try server.credential("alice")
        let path = HTTPBinding.zonePath(list) + "/history"
        let plain = try await server.send(.GET, path, authorization: alice.bearer)
        let packed = try await server.send(.GET, path, authorization: alice.bearer, headers: [("Accept", CompressedBody.mediaType)])
        #expect(plain.header("Content-Type") == "application/octet-stream")
        #expect(packed.header("Content-Type") == CompressedBody.mediaType)
        #expect(packed.body.count < plain.body.count)
        #expect(try CompressedBody.decode(packed.body, limit: 1 << 20) == plain.body)
        #expect(try await server.client(alice).fetchZoneHistory(list) == plain.body)
        await server.stop()
    }

    @Test func aHistoryComesInPagesWithTheNextCursorInAHeader() async throws {
        var limits = Self.limits()
        limits.maxHistoryPageEvents = 16
        let server = try await TestServer(limits: limits)
        let (_, list) = try await Self.compactedList(server)
        let alice = try server.credential("alice")
        let client = server.client(alice)
        var log = ActivityLog(zone: list.storeName)
        var cursor: HistoryCursor? = nil, pages = 0
        repeat {
            let page = try await client.fetchZoneHistoryPage(list, after: cursor)
            try HistoryPieceCodec.decode(page.bytes, into: &log)
            cursor = page.next
            pages += 1
        } while cursor != nil && pages < 100
        #expect(pages > 2)
        #expect(log == (try ListQuery(store: server.store).history(list.storeName).log))
        let first = try await server.send(.GET, HTTPBinding.zonePath(list) + "/history/pages", authorization: alice.bearer)
        #expect(first.status == 200)
        #expect(first.header(HTTPBinding.historyNextHeader) != nil)
        let refused = try await server.send(.GET, HTTPBinding.zonePath(list) + "/history/pages?after=nonsense", authorization: alice.bearer)
        #expect(refused.status == 400)
        await server.stop()
    }

    @Test func aCompressedBodyThatDoesNotCheckOutIsRefused() throws {
        let raw = Array(repeating: Array("milk bread eggs ".utf8), count: 64).flatMap { $0 }
        var packed = try #require(CompressedBody.encode(raw))
        #expect(try CompressedBody.decode(packed, limit: raw.count) == raw)
        #expect(throws: CompressedBody.Failure.tooLarge(raw.count)) { try CompressedBody.decode(packed, limit: raw.count - 1) }
        packed[packed.count - 1] ^= 0x01
        #expect(throws: CompressedBody.Failure.self) { try CompressedBody.decode(packed, limit: raw.count) }
        #expect(throws: CompressedBody.Failure.badFraming) { try CompressedBody.decode([1, 2, 3], limit: 10) }
        #expect(CompressedBody.encode(Array(raw.prefix(100))) == nil, "too small to be worth it")
    }
}

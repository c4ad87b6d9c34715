import Foundation
import Testing
import AsyncHTTPClient
import JournalLog
import JournalSeal
import JournalServer
import JournalService
import JournalSync
import JournalTesting
import ListModel

/// No plaintext in what `jlog serve` writes beside its store (Spec/SEALING.md §6): its logs, at
/// every level, and its metrics. Two accounts share a sealed list and a plain one over HTTP,
/// every text, name and colour a random canary; they edit, the owner removes the other with a
/// rotation, the service compacts on demand, and a device reads the snapshot and every history
/// page. Then the server's log lines, its metrics page and its store's files are scanned: no
/// canary of the sealed list anywhere, every canary of the plain list in the store (the scan's
/// positive control).
@Suite(.serialized) struct SealedCanaryOverHTTPTests {
    @Test func noTextOfASealedListIsInTheServersLogsOrMetrics() async throws {
        let log = CapturedLog()
        var options = ServerOptions()
        let metricsPort = try ObservabilityTests.freePort()
        options.metrics = ("127.0.0.1", metricsPort, ObservabilityTests.registry)
        var limits = ServiceLimits()
        limits.retentionMillis = 1
        let clock = ServerClock()
        let server = try await TestServer(limits: limits, options: options, logger: log.logger("jlog-serve"), clock: clock)
        let accounts = ["alice": AccountKeys(account: "alice"), "bob": AccountKeys(account: "bob")]
        let alice = try HTTPDevice(server, replica: "alice:phone", credential: try server.credential("alice"))
        let bob = try HTTPDevice(server, replica: "bob:phone", credential: try server.credential("bob"))
        for (device, account) in [(alice, "alice"), (bob, "bob")] {
            let p = accounts[account]!.publicKeys
            try await device.service.publishAccountKeys(PublishedAccountKeys(account: account, identity: p.identity, wrap: p.wrap))
        }
        let sealed = try await alice.engine.createList(SealedZone.name(random: (0..<16).map { _ in UInt8.random(in: 0...255) }))
        let plain = try await alice.engine.createList("control")
        var secret: [String] = [], control: [String] = []
        func canary(_ into: inout [String]) -> String {
            let c = CanaryScan.canary()
            into.append(c)
            return c
        }
        var epochs: [ListKey] = []
        func rotate(_ members: [String], _ reason: EpochKeyRecord.Reason) async throws {
            let key = ListKey.random(epoch: UInt64(epochs.count + 1))
            let record = try EpochKeys.record(for: key, previous: epochs.last, reason: reason, zone: sealed.storeName,
                                              members: members.map { accounts[$0]!.publicKeys }, creator: accounts["alice"]!)
            _ = try await alice.engine.recordKeys(record, in: sealed)
            epochs.append(key)
        }
        @discardableResult
        func sealedAdd(_ text: String, on device: HTTPDevice) async throws -> CompactID {
            let sealer = TextSealer(key: epochs.last!, zone: sealed.storeName), item = CompactID.random()
            try await device.engine.record(in: sealed) { s in
                try sealer.add(text, item: item, after: nil, entry: s.id, author: s.author, clock: s.clock, wallTime: s.wallTime).operation
            }
            return item
        }
        func sealedRename(_ text: String, colour: Bool) async throws {
            let sealer = TextSealer(key: epochs.last!, zone: sealed.storeName)
            try await alice.engine.record(in: sealed) { s in
                try sealer.rename(to: text, colour: colour, entry: s.id, author: s.author, clock: s.clock, wallTime: s.wallTime).operation
            }
        }

        try await rotate(["alice"], .creation)
        let first = try await sealedAdd(canary(&secret), on: alice)
        for _ in 0..<2 { try await sealedAdd(canary(&secret), on: alice) }
        try await sealedRename(canary(&secret), colour: false)
        try await sealedRename(canary(&secret), colour: true)
        for _ in 0..<3 { try await alice.add(canary(&control), to: plain) }
        await alice.sync()
        for list in [sealed, plain] { _ = try await bob.engine.accept(try await alice.engine.share(list, with: "bob")) }
        try await rotate(["alice", "bob"], .joined)
        for _ in 0..<2 { _ = await alice.sync(); _ = await bob.sync() }
        try await sealedAdd(canary(&secret), on: bob)
        try await bob.add(canary(&control), to: plain)
        for _ in 0..<2 { _ = await bob.sync(); _ = await alice.sync() }
        try await rotate(["alice"], .removal)
        try await sealedAdd(canary(&secret), on: alice)
        try await alice.engine.record(.delete(item: first), in: sealed)
        _ = await alice.sync()
        clock.advance(by: 2 * 60_000)

        var compact = HTTPClientRequest(url: "http://127.0.0.1:\(metricsPort)/compact")
        compact.method = .POST
        let compacted = try await HTTPClient.shared.execute(compact, timeout: .seconds(30))
        let outcome = String(buffer: try await compacted.body.collect(upTo: 1 << 20))
        #expect(compacted.status == .ok, "\(outcome)")
        #expect(try await alice.service.fetchZoneSnapshot(sealed) != nil, "the compaction built the sealed list's snapshot")
        var cursor: HistoryCursor? = nil
        repeat { cursor = try await alice.service.fetchZoneHistoryPage(sealed, after: cursor).next } while cursor != nil
        _ = await alice.sync()
        let metrics = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(metricsPort)/metrics"), timeout: .seconds(5))
        let page = Array(String(buffer: try await metrics.body.collect(upTo: 8 << 20)).utf8)
        let logged = Array(log.text.utf8)
        #expect(log.text.contains("/v1/zones/alice/\(sealed.name)/entries"), "the log holds every request, the sealed list's uploads among them")
        let files = try FileManager.default.subpathsOfDirectory(atPath: server.dir).compactMap {
            FileManager.default.contents(atPath: server.dir + "/" + $0).map(Array.init)
        }
        await server.stop()

        #expect(!logged.isEmpty && !page.isEmpty, "the scan reads a log and a metrics page")
        #expect(CanaryScan.found(secret, in: [logged]).isEmpty, "sealed texts in the server's log")
        #expect(CanaryScan.found(secret, in: [page]).isEmpty, "sealed texts in the server's metrics")
        #expect(CanaryScan.found(secret, in: files).isEmpty, "sealed texts in the server's store")
        #expect(CanaryScan.found(control, in: files) == Set(control), "the scan finds the plain list's texts (positive control)")
    }
}

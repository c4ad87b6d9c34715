import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import AsyncHTTPClient
import JournalLog
import JournalServer
import JournalService
import JournalSync
import JournalSyncWire
import Prometheus

/// What an operator watches: readiness beside health, and the metrics apart from the API.
@Suite(.serialized) struct ObservabilityTests {
    @Test func aServerWhoseStoreTakesWritesIsReady() async throws {
        let server = try await TestServer()
        let a = try await server.send(.GET, "/v1/ready", authorization: nil)
        #expect(a.status == 200)
        #expect(String(decoding: a.body, as: UTF8.self).contains("ready"))
        await server.stop()
    }

    @Test func aServerWhoseStoreRefusesWritesIsNotReadyAndSaysWhy() async throws {
        let server = try await TestServer()
        try server.store.close()
        let a = try await server.send(.GET, "/v1/ready", authorization: nil)
        #expect(a.status == 503)
        #expect(String(decoding: a.body, as: UTF8.self).contains("unready"))
        let health = try await server.send(.GET, "/v1/health", authorization: nil)
        #expect(health.status == 200, "alive all the same")
        await server.stop()
    }

    /// A loopback port nothing listens on now (the kernel's pick for port 0).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// The process's swift-metrics backend, bootstrapped once for every test that reads it.
    static let registry: PrometheusCollectorRegistry = ServerMetrics.bootstrapPrometheus()

    @Test func theMetricsAddressCountsRequestsByRouteAndUploads() async throws {
        var options = ServerOptions()
        let port = try Self.freePort()
        options.metrics = ("127.0.0.1", port, Self.registry)
        let server = try await TestServer(options: options)
        let alice = try server.credential("alice")
        let zone = ZoneID(owner: "alice", name: "weekly")!
        try await server.client(alice).createZone(zone)
        _ = try await server.upload([addEntry(zone, author: "alice:phone")], to: zone, as: alice)
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(5))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        #expect(response.status == .ok)
        #expect(text.contains(#"hb_requests{http_route="/v1/zones/{owner}/{name}/entries""#), "\(text.prefix(400))")
        #expect(text.contains("jlog_entries_saved_total"))
        let api = try await server.send(.GET, "/metrics", authorization: nil)
        #expect(api.status == 404, "never on the API's port")
        await server.stop()
    }

    /// An operator (or a test) runs a compaction now, on the metrics address only (SYNC.md §11.5).
    @Test func aCompactionRunsOnDemandOnTheMetricsAddressOnly() async throws {
        var options = ServerOptions()
        let port = try Self.freePort()
        options.metrics = ("127.0.0.1", port, Self.registry)
        let server = try await TestServer(options: options)
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/compact")
        request.method = .POST
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
        #expect(response.status == .ok && text.contains("\"zonesCompacted\":0"), "\(text)")
        let api = try await server.send(.POST, "/compact", authorization: nil)
        #expect(api.status == 404, "never on the API's port")
        await server.stop()
    }
}

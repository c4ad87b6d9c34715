import Foundation
import JournalLog
import JournalSync
import JournalSyncHTTP
import JournalSyncWire
import JournalTesting
import Testing

/// A server nobody answers at: the sync says so, with what the transport said (issue 36).
@Suite struct UnreachableServerTests {
    @Test func anUnansweredRequestCarriesItsCause() async throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/phone")
        var options = StoreOptions(durability: .always, segmentSize: 64 << 10, preallocate: false)
        options.fileSystem = fs
        let store = try JournalStore.open("/phone/local.wal", options: options)
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        let service = HTTPSyncService(server: "http://127.0.0.1:1", credential: DeviceCredential.issue(for: "alice"))
        let engine = try SyncEngine(store: store, service: service, replica: "alice:phone")
        _ = try await engine.createList("weekly")
        let report = await engine.sync()
        #expect(report.offline)
        let problem = try #require(report.problems.first)
        #expect(problem.reason == .unreachable)
        #expect(problem.message.contains("/v1/"), "the cause names the request: \(problem.message)")
    }
}

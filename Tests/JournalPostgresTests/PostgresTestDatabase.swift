import Foundation
import JournalLog
import JournalPostgres
import Logging
import PostgresNIO

/// The PostgreSQL the tests use: `JLOG_TEST_POSTGRES`, a `postgres://` URL that `scripts/test.sh`
/// sets after starting a private cluster (`scripts/postgres.sh`). Each test gets a schema of its
/// own, so tests share the cluster and never each other's tables.
enum PostgresTestDatabase {
    static let url = ProcessInfo.processInfo.environment["JLOG_TEST_POSTGRES"]
    static let missing = "JLOG_TEST_POSTGRES is not set: scripts/test.sh starts a private PostgreSQL cluster and sets it"

    static var location: PostgresLocation {
        get throws { try PostgresLocation(url ?? "") }
    }

    /// A new, empty schema's name.
    static func freshSchema() async throws -> String {
        let name = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var quiet = Logger(label: "test")
        quiet.logLevel = .error
        let client = PostgresClient(configuration: try location.clientConfiguration, backgroundLogger: quiet)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            try await client.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA \(name)"))
            group.cancelAll()
        }
        return name
    }

    /// Storage over a fresh schema (a node of its own when called twice with one schema).
    static func open(_ schema: String) async throws -> PostgresStorage {
        try await PostgresStorage.open(try location, connections: 8, schema: schema)
    }

    static func entry(_ id: String, _ zone: String, text: String = "milk") -> JournalEntry {
        JournalEntry(id: CompactID(id)!, zone: zone, author: "alice:phone", wallTime: 1_795_424_400_000,
                     clock: HybridTime(physicalMillis: 1_795_424_400_000, counter: 0),
                     operation: .add(item: CompactID("item-" + id)!, text: text, after: nil))
    }
}

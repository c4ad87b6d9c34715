@testable import JournalPostgres
import PostgresNIO
import Testing

/// The schema is applied on start, once, in order; a newer one is refused (Spec/SYNC.md §11.1).
@Suite(.enabled(if: PostgresTestDatabase.url != nil, Comment(rawValue: PostgresTestDatabase.missing)))
struct SchemaMigrationTests {
    @Test func anEmptyDatabaseIsBroughtToTheNewestSchemaOnce() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let first = try await PostgresTestDatabase.open(schema)
        #expect(first.migrated == Array(1...SchemaMigrations.newest))
        #expect(try await first.schemaVersion() == SchemaMigrations.newest)
        await first.close()
        let again = try await PostgresTestDatabase.open(schema)
        #expect(again.migrated == [])
        await again.close()
    }

    @Test func nodesStartingAtOnceApplyEachMigrationOnce() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let nodes = try await withThrowingTaskGroup(of: PostgresStorage.self) { group in
            for _ in 0..<4 { group.addTask { try await PostgresTestDatabase.open(schema) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(nodes.flatMap(\.migrated) == Array(1...SchemaMigrations.newest))
        for n in nodes { await n.close() }
    }

    @Test func aSchemaNewerThanThisProgramIsRefused() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let node = try await PostgresTestDatabase.open(schema)
        try await node.execute("INSERT INTO jlog_migrations (version, name) VALUES (99, 'from the future')")
        await node.close()
        await #expect(throws: PostgresStorageError.schemaTooNew(found: 99, known: SchemaMigrations.newest)) {
            try await PostgresTestDatabase.open(schema)
        }
    }
}

import JournalPostgres
import Testing

/// Writes on one node signal the others through LISTEN/NOTIFY (Spec/SYNC.md §11.4).
@Suite(.enabled(if: PostgresTestDatabase.url != nil, Comment(rawValue: PostgresTestDatabase.missing)))
struct PostgresChangeSignalsTests {
    /// The next signal, or nil after `seconds`.
    static func next(_ it: inout AsyncStream<PostgresChangeSignal>.Iterator, within seconds: Int = 10) async -> PostgresChangeSignal? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        return await withTaskGroup(of: PostgresChangeSignal?.self) { group in
            var local = it
            group.addTask { try? await Task.sleep(until: deadline); return nil }
            let value = await local.next()
            group.cancelAll()
            it = local
            return value
        }
    }

    @Test func anAppendOnOneNodeSignalsItsZoneToAnother() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let a = try await PostgresTestDatabase.open(schema), b = try await PostgresTestDatabase.open(schema)
        var signals = b.changeSignals().makeAsyncIterator()
        #expect(await Self.next(&signals) == .listening)
        try await a.makeZone("alice/weekly")
        #expect(await Self.next(&signals) == .zone("alice/weekly"))
        _ = try await a.append([PostgresTestDatabase.entry("e1", "alice/weekly")], to: "alice/weekly")
        #expect(await Self.next(&signals) == .zone("alice/weekly"))
        await a.close()
        await b.close()
    }

    /// A node hints its devices when it writes: its own writes' signals are not delivered back.
    @Test func aNodeDoesNotHearItsOwnWrites() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let a = try await PostgresTestDatabase.open(schema), b = try await PostgresTestDatabase.open(schema)
        var signals = a.changeSignals().makeAsyncIterator()
        #expect(await Self.next(&signals) == .listening)
        try await a.makeZone("alice/weekly")
        _ = try await a.append([PostgresTestDatabase.entry("e1", "alice/weekly")], to: "alice/weekly")
        try await b.makeZone("bob/groceries")
        #expect(await Self.next(&signals) == .zone("bob/groceries"))
        await a.close()
        await b.close()
    }

    @Test func aRefusedAppendSignalsNothing() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let a = try await PostgresTestDatabase.open(schema), b = try await PostgresTestDatabase.open(schema)
        try await a.makeZone("alice/weekly")
        _ = try await a.append([PostgresTestDatabase.entry("e1", "alice/weekly")], to: "alice/weekly")
        var signals = b.changeSignals().makeAsyncIterator()
        #expect(await Self.next(&signals) == .listening)
        _ = try? await a.append([PostgresTestDatabase.entry("e1", "alice/weekly", text: "other")], to: "alice/weekly")
        try await a.makeZone("bob/groceries")
        // The next signal is the zone made after the refusal: the refused append sent none.
        #expect(await Self.next(&signals) == .zone("bob/groceries"))
        await a.close()
        await b.close()
    }

    @Test func aLostListeningConnectionIsListenedToAgainAndSaysSo() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let a = try await PostgresTestDatabase.open(schema), b = try await PostgresTestDatabase.open(schema)
        var signals = b.changeSignals().makeAsyncIterator()
        #expect(await Self.next(&signals) == .listening)
        // The database ends the listening connection (a failover, an operator, a network cut).
        try await a.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'jlog-\(schema)' AND query LIKE 'LISTEN%'")
        #expect(await Self.next(&signals) == .listening)
        try await a.makeZone("alice/weekly")
        #expect(await Self.next(&signals) == .zone("alice/weekly"))
        await a.close()
        await b.close()
    }
}

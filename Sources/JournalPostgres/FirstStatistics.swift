import Logging
import PostgresNIO
import Synchronization

/// Makes sure `jlog_records` has planner statistics once it holds entries. Until a table is first
/// analysed PostgreSQL guesses every equality's selectivity, and the lookup of the ids an append
/// carries (`PostgresStorage.commit`) then ties between the unique index on (zone, incarnation,
/// entry_id) and the zone's index on (zone, incarnation, position), and may take the second:
/// a scan of the zone's every entry under the positions lock (measured: 1.9 ms a batch instead of
/// 0.05 on a 13,000-entry table, every node's appends waiting). Autovacuum analyses it in time
/// (within a minute of the table growing); this closes the window before: after each
/// `threshold` entries a node appends, it asks whether the table was ever analysed, and if not
/// analyses it, until it has been. Nodes doing so at once only analyse it twice.
final class FirstStatistics: Sendable {
    /// Entries appended between two looks.
    let threshold: Int
    private let state = Mutex<(appended: Int, done: Bool)>((0, false))

    init(threshold: Int = 1_000) { self.threshold = threshold }

    /// Counts `n` entries appended; true when it is time to look.
    func appended(_ n: Int) -> Bool {
        state.withLock { s in
            guard !s.done else { return false }
            s.appended += n
            guard s.appended >= threshold else { return false }
            s.appended = 0
            return true
        }
    }

    /// Analyses `jlog_records` if it never was; stops looking once it was.
    func analyseIfNever(_ client: PostgresClient, _ logger: Logger) async {
        do {
            var never = false
            for try await n in try await client.query("""
                SELECT last_analyze IS NULL AND last_autoanalyze IS NULL FROM pg_stat_user_tables
                WHERE relid = 'jlog_records'::regclass
                """, logger: logger).decode(Bool.self) { never = n }
            if never { try await client.query("ANALYZE jlog_records", logger: logger) }
            state.withLock { $0.done = true }
        } catch {
            // Only a faster plan is lost; the next threshold looks again.
            logger.debug("could not analyse jlog_records", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}

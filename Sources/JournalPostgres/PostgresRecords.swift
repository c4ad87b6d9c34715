import JournalLog
import NIOCore
import PostgresNIO

/// Records at positions (Spec/SYNC.md §11.2). Every write that takes positions first locks the
/// one row of `jlog_positions` and holds it until it commits: writers take turns, each gets the
/// positions after the last committed one, and the row's value is the next position. So positions
/// commit in order, none is ever skipped, and a reader that sees N+1 sees N: a token (a position)
/// can never pass an entry that commits later. A writer that fails rolls back its positions too.
extension PostgresStorage {
    /// Record kinds in `jlog_records`.
    enum RecordKind: Int16 {
        case entry = 0
        case zoneMade = 1
        case zoneDeleted = 2
        case lowWaterMark = 3
    }

    /// Makes the zone's first incarnation, or answers its live one; the incarnation.
    @discardableResult
    public func makeZone(_ name: String) async throws(PostgresStorageError) -> SequenceNumber {
        try await Self.mapped {
            try await client.withTransaction(logger: logger) { c in
                let next = try await Self.lockPositions(c, logger)
                if let z = try await Self.zoneInfo(name, on: c, logger), !z.isDeleted { return z.incarnation }
                try await c.query("""
                    INSERT INTO jlog_zones (name, incarnation, last_change) VALUES (\(name), \(next), \(next))
                    ON CONFLICT (name) DO UPDATE SET incarnation = \(next), low_water_mark = 0, last_change = \(next),
                        deleted_at = NULL, deletion_reason = NULL, entry_count = 0, history_through = 0
                    """, logger: logger)
                try await self.writeRecord(.zoneMade, zone: name, incarnation: next, at: next, on: c)
                return SequenceNumber(next)
            }
        }
    }

    /// Under the positions lock (`lockPositions`), the one way a write other than an append of
    /// entries takes its position (§11.2): the zone's record of `kind` at `position`, the next
    /// position moved past it, and the other nodes signalled at the commit (§11.4). Appends of
    /// entries do the same in one prepared statement (`InsertEntriesStatement`).
    func writeRecord(_ kind: RecordKind, zone: String, incarnation: Int64, body: [UInt8] = [], at position: Int64,
                     on c: PostgresConnection) async throws {
        try await c.query("""
            INSERT INTO jlog_records (position, zone, incarnation, kind, body)
            VALUES (\(position), \(zone), \(incarnation), \(kind.rawValue), \(ByteBuffer(bytes: body)))
            """, logger: logger)
        try await c.query("UPDATE jlog_positions SET next = \(position + 1)", logger: logger)
        try await notifyChange(zone, on: c)
    }

    /// The zone incarnation's entries after `position`, in order, at most `limit`.
    public func entries(of zone: String, incarnation: SequenceNumber, after position: SequenceNumber,
                        limit: Int) async throws(PostgresStorageError) -> [(position: SequenceNumber, entry: JournalEntry)] {
        let rows: [(Int64, ByteBuffer)] = try await Self.mapped {
            var out: [(Int64, ByteBuffer)] = []
            let query: PostgresQuery = """
                SELECT position, body FROM jlog_records
                WHERE zone = \(zone) AND incarnation = \(Int64(incarnation)) AND position > \(Int64(position)) AND kind = \(RecordKind.entry.rawValue)
                ORDER BY position LIMIT \(max(1, limit))
                """
            for try await row in try await client.query(query, logger: logger).decode((Int64, ByteBuffer).self) { out.append(row) }
            return out
        }
        var out: [(position: SequenceNumber, entry: JournalEntry)] = []
        out.reserveCapacity(rows.count)
        for (p, body) in rows {
            do { out.append((SequenceNumber(p), try EntryCodec.decode(Array(buffer: body)))) } catch {
                throw .damaged("the entry at position \(p) of zone \(zone): \(error)")
            }
        }
        return out
    }

    /// The zones whose newest record lies after `position`, by that record's position (each
    /// zone once, at its newest), at most `limit`: what a database feed pages through. A zone
    /// that changes again moves past the page, never below it; and since positions commit in
    /// order (§11.2), a change committed after a page was read lies after the page's last position.
    public func changedZones(after position: SequenceNumber, limit: Int) async throws(PostgresStorageError) -> [ZoneInfo] {
        try await Self.mapped {
            try await client.withConnection { c in
                try await Self.zoneInfos("""
                    SELECT \(unescaped: Self.zoneColumns) FROM jlog_zones
                    WHERE last_change > \(Int64(position)) ORDER BY last_change LIMIT \(max(1, limit))
                    """, on: c, logger)
            }
        }
    }

    /// The highest position written and committed (0: none); `damaged` when `jlog_positions` has
    /// lost its row (every reader of the horizon agrees: `horizon(on:)`).
    public func horizon() async throws(PostgresStorageError) -> SequenceNumber {
        try await Self.mapped { try await client.withConnection { c in try await Self.horizon(on: c, logger) } }
    }

    /// Locks the positions row until the transaction ends; the next position.
    static func lockPositions(_ c: PostgresConnection, _ logger: Logger) async throws -> Int64 {
        for try await next in try await c.execute(LockPositionsStatement(), logger: logger) { return next }
        throw PostgresStorageError.damaged("jlog_positions has no row")
    }

    static func idBytes(_ id: CompactID) -> [UInt8] {
        var w = ByteWriter(capacity: 24)
        id.encoded(into: &w)
        return w.bytes
    }
}

import JournalLog
import NIOCore
import PostgresNIO

/// Zones as the service reads them (`ZoneInfo`, TOKENS.md §1), the database's identity and keys,
/// and reads in one snapshot of the database.
extension PostgresStorage {
    /// The columns of `jlog_zones` a `ZoneInfo` is made of, in `zoneInfo`'s order.
    static let zoneColumns = "name, incarnation, low_water_mark, last_change, deleted_at, deletion_reason, entry_count, history_through"

    typealias ZoneRow = (String, Int64, Int64, Int64, Int64?, Int16?, Int64, Int64)

    static func zoneInfo(_ r: ZoneRow) -> ZoneInfo {
        ZoneInfo(name: r.0, incarnation: SequenceNumber(r.1), deletedAt: r.4.map { SequenceNumber($0) },
                 deletionReason: r.4 == nil ? nil : ZoneDeletionReason(rawValue: UInt8(clamping: r.5 ?? 0)) ?? .deleted,
                 entryCount: Int(r.6), lastChange: SequenceNumber(r.3), lowWaterMark: SequenceNumber(r.2),
                 historyThrough: SequenceNumber(r.7))
    }

    /// Zones matching `condition` (a fixed SQL fragment with the query's bindings), by name.
    static func zoneInfos(_ query: PostgresQuery, on c: PostgresConnection, _ logger: Logger) async throws -> [ZoneInfo] {
        var out: [ZoneInfo] = []
        for try await row in try await c.query(query, logger: logger).decode(ZoneRow.self) { out.append(zoneInfo(row)) }
        return out
    }

    static func zoneInfo(_ name: String, on c: PostgresConnection, _ logger: Logger) async throws -> ZoneInfo? {
        try await zoneInfos("SELECT \(unescaped: zoneColumns) FROM jlog_zones WHERE name = \(name)", on: c, logger).first
    }

    /// The highest position committed (0: none), as the connection's snapshot sees it.
    static func horizon(on c: PostgresConnection, _ logger: Logger) async throws -> SequenceNumber {
        for try await next in try await c.query("SELECT next FROM jlog_positions", logger: logger).decode(Int64.self) {
            return SequenceNumber(next - 1)
        }
        throw PostgresStorageError.damaged("jlog_positions has no row")
    }

    /// Runs `body` in one read-only transaction that sees one snapshot of the database: the
    /// horizon, a zone's row and its entries agree even while nodes write.
    func reading<T: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> T) async throws(PostgresStorageError) -> T {
        try await Self.mapped {
            try await client.withConnection { c in
                try await c.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
                do {
                    let value = try await body(c)
                    try await c.query("COMMIT", logger: logger)
                    return value
                } catch {
                    _ = try? await c.query("ROLLBACK", logger: logger)
                    throw error
                }
            }
        }
    }

    /// The 128-bit value named `name` in `jlog_keys`, made (random) by the first node that asks.
    package func key(_ name: String) async throws(PostgresStorageError) -> (UInt64, UInt64) {
        var g = SystemRandomNumberGenerator()
        let made = (Int64(bitPattern: g.next()), Int64(bitPattern: g.next()))
        return try await Self.mapped {
            try await client.query("INSERT INTO jlog_keys (name, k0, k1) VALUES (\(name), \(made.0), \(made.1)) ON CONFLICT (name) DO NOTHING",
                                   logger: logger)
            for try await (k0, k1) in try await client.query("SELECT k0, k1 FROM jlog_keys WHERE name = \(name)", logger: logger)
                .decode((Int64, Int64).self) {
                return (UInt64(bitPattern: k0), UInt64(bitPattern: k1))
            }
            throw PostgresStorageError.damaged("jlog_keys lost \(name)")
        }
    }
}

extension PostgresStorage {
    /// Every zone's newest incarnation, or those `owner` owns (`owner/…`), by name.
    package func zoneInfos(_ owner: String?) async throws(PostgresStorageError) -> [ZoneInfo] {
        try await Self.mapped {
            try await client.withConnection { c in
                if let owner {
                    // Names are `owner/list` and an owner has no `/`: a range scan of the primary key.
                    return try await Self.zoneInfos("""
                        SELECT \(unescaped: Self.zoneColumns) FROM jlog_zones WHERE name > \(owner + "/") AND name < \(owner + "0") ORDER BY name
                        """, on: c, logger)
                }
                return try await Self.zoneInfos("SELECT \(unescaped: Self.zoneColumns) FROM jlog_zones ORDER BY name", on: c, logger)
            }
        }
    }

    /// The zone's newest incarnation as the service reads it, or nil for a zone never made.
    package func zoneInfo(_ name: String) async throws(PostgresStorageError) -> ZoneInfo? {
        try await Self.mapped { try await client.withConnection { c in try await Self.zoneInfo(name, on: c, logger) } }
    }
}

extension PostgresStorage {
    /// The newest last change of these zones (0: none of them made).
    package func lastChange(ofAny zones: [String]) async throws(PostgresStorageError) -> SequenceNumber {
        try await Self.mapped {
            for try await last in try await client.query("SELECT coalesce(max(last_change), 0) FROM jlog_zones WHERE name = ANY(\(zones))",
                                                         logger: logger).decode(Int64.self) {
                return SequenceNumber(last)
            }
            return 0
        }
    }
}

extension PostgresStorage {
    /// The highest position every entry at or below which had arrived by `time` (each entry's
    /// `arrived_at`, stamped by the node that took it; records of zones carry none).
    package func arrivedThrough(by time: Int64) async throws(PostgresStorageError) -> SequenceNumber {
        try await reading { c in
            let h = try await Self.horizon(on: c, self.logger)
            for try await first in try await c.query("""
                SELECT min(position) FROM jlog_records WHERE arrived_at > \(time)
                """, logger: self.logger).decode(Int64?.self) {
                if let first { return SequenceNumber(first - 1) }
            }
            return h
        }
    }
}

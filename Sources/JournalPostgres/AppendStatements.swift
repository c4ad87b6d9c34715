import NIOCore
import PostgresNIO

// The statements of an append's transaction (`PostgresStorage.commit`), prepared: they run under
// the positions lock, so the time PostgreSQL spends planning them is time every other node's
// appends wait. Each is planned once per connection. (The lookup of the ids held is not: a
// generic plan made while the table was small scanned whole zones later, 3 ms a batch.)

/// Locks the positions row until the transaction ends; the next position.
struct LockPositionsStatement: PostgresPreparedStatement {
    static let sql = "SELECT next FROM jlog_positions FOR UPDATE"
    typealias Row = Int64

    func makeBindings() throws -> PostgresBindings { PostgresBindings() }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Int64.self) }
}

/// Inserts the entries, moves each changed zone's last change and count, sets the next position,
/// and notifies `channel` of each changed zone at the commit (`from`: the writer's signal tag
/// and a tab before the zone, `PostgresStorage.signal`): all in one statement.
struct InsertEntriesStatement: PostgresPreparedStatement {
    static let sql = """
        WITH inserted AS (
            INSERT INTO jlog_records (position, zone, incarnation, kind, entry_id, body, arrived_at)
            SELECT p, z, n, \(PostgresStorage.RecordKind.entry.rawValue), i, b, a
            FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bytea[], $5::bytea[], $6::bigint[]) AS t(p, z, n, i, b, a)),
        zones AS (
            UPDATE jlog_zones SET last_change = t.l, entry_count = entry_count + t.c
            FROM unnest($7::text[], $8::bigint[], $9::bigint[]) AS t(z, l, c) WHERE name = t.z),
        positions AS (
            UPDATE jlog_positions SET next = $10)
        SELECT pg_notify($11, $12 || t.z) FROM unnest($7::text[]) AS t(z)
        """
    typealias Row = Void

    let rows: PostgresStorage.Rows
    let changed: [String], lasts: [Int64], counts: [Int64]
    let next: Int64
    let channel: String
    let from: String

    func makeBindings() throws -> PostgresBindings {
        var b = PostgresBindings(capacity: 12)
        b.append(rows.positions)
        b.append(rows.zones)
        b.append(rows.incarnations)
        b.append(rows.ids)
        b.append(rows.bodies)
        b.append(rows.arrivals)
        b.append(changed)
        b.append(lasts)
        b.append(counts)
        b.append(next)
        b.append(channel)
        b.append(from)
        return b
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {}
}

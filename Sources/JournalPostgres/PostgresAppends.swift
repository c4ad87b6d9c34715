import Foundation
import JournalLog
import NIOCore
import PostgresNIO

/// One upload's entries waiting to be appended, encoded once (FORMAT.md §6, as stored).
struct AppendRequest: Sendable {
    var zone: String
    var entries: [(id: CompactID, key: [UInt8], body: [UInt8])]
    /// Refused (`markMoved`) unless the zone's low-water mark is still this (nil: no check).
    var expectedMark: SequenceNumber? = nil
    /// When the service received the entries (milliseconds, the service's clock).
    var arrivedAt: Int64 = Int64(Date().timeIntervalSince1970 * 1000)
}

extension PostgresStorage {
    /// Appends `entries` to the zone's live incarnation, all or nothing: an id the zone holds with
    /// the same content is not stored again; with other content the whole append is refused
    /// (`idConflict`). Durable once it returns (the commit's, as the server is configured).
    /// Appends that arrive while another commits share the next transaction (`AppendBatcher`),
    /// each keeping its own outcome.
    public func append(_ entries: [JournalEntry], to zone: String) async throws(PostgresStorageError) -> PostgresAppend {
        try await append(entries, to: zone, expectingMark: nil)
    }

    /// `append(_:to:)`, refused with `markMoved` when the zone's mark is no longer `mark`.
    package func append(_ entries: [JournalEntry], to zone: String, expectingMark mark: SequenceNumber?,
                        arrivedAt: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) async throws(PostgresStorageError) -> PostgresAppend {
        let request = AppendRequest(zone: zone, entries: entries.map { (id: $0.id, key: Self.idBytes($0.id), body: EntryCodec.encode($0)) },
                                    expectedMark: mark, arrivedAt: arrivedAt)
        if let batcher { return try await batcher.submit(request).get() }
        return try await commit([request])[0].get()
    }

    /// Appends each request in one transaction, in order, under the positions lock (SYNC.md §11.2):
    /// a request that names no live zone or carries a conflicting id is refused alone; the others
    /// take consecutive positions. A failed transaction fails every request (none was stored).
    func commit(_ requests: [AppendRequest]) async -> [Result<PostgresAppend, PostgresStorageError>] {
        do throws(PostgresStorageError) {
            return try await Self.mapped {
                try await client.withTransaction(logger: logger) { c in try await self.commit(requests, on: c) }
            }
        } catch {
            return requests.map { _ in .failure(error) }
        }
    }

    func commit(_ requests: [AppendRequest], on c: PostgresConnection) async throws -> [Result<PostgresAppend, PostgresStorageError>] {
        let next = try await Self.lockPositions(c, logger)
        let names = Array(Set(requests.map(\.zone)))
        var live: [String: Int64] = [:], marks: [String: Int64] = [:]
        for try await (name, inc, mark) in try await c.query("""
            SELECT name, incarnation, low_water_mark FROM jlog_zones WHERE name = ANY(\(names)) AND deleted_at IS NULL
            """, logger: logger).decode((String, Int64, Int64).self) {
            live[name] = inc
            marks[name] = mark
        }
        // What the zones hold of the ids these requests carry: (zone, id) → body.
        var held: [String: [[UInt8]: [UInt8]]] = [:]
        let keys = requests.flatMap { $0.entries.map { ByteBuffer(bytes: $0.key) } }
        for try await (zone, inc, key, body) in try await c.query("""
            SELECT zone, incarnation, entry_id, body FROM jlog_records WHERE zone = ANY(\(names)) AND entry_id = ANY(\(keys))
            """, logger: logger).decode((String, Int64, ByteBuffer, ByteBuffer).self) where live[zone] == inc {
            held[zone, default: [:]][Array(buffer: key)] = Array(buffer: body)
        }
        var rows = Rows(), results: [Result<PostgresAppend, PostgresStorageError>] = []
        var lastChange: [String: Int64] = [:], added: [String: Int64] = [:]
        for r in requests {
            guard let inc = live[r.zone] else {
                results.append(.failure(.zoneNotFound(r.zone)))
                continue
            }
            if let expected = r.expectedMark, marks[r.zone] != Int64(expected) {
                results.append(.failure(.markMoved(r.zone)))
                continue
            }
            var zoneHeld = held[r.zone] ?? [:]
            var append = PostgresAppend(saved: [], alreadyHeld: [])
            var mine = Rows()
            var conflict: CompactID? = nil
            for e in r.entries {
                if let body = zoneHeld[e.key] {
                    // A compactor's `place` matches any retry of the add it replaced (TOKENS.md §2).
                    guard body == e.body || (try? EntryCodec.decode(body))?.operation.isPlace == true else { conflict = e.id; break }
                    append.alreadyHeld.append(e.id)
                    continue
                }
                zoneHeld[e.key] = e.body
                let p = next + Int64(rows.count + mine.count)
                mine.add(p, r.zone, inc, e.key, e.body, arrived: r.arrivedAt)
                append.saved.append((e.id, SequenceNumber(p)))
            }
            if let conflict {
                results.append(.failure(.idConflict(zone: r.zone, id: conflict.description)))
                continue
            }
            held[r.zone] = zoneHeld
            rows.append(mine)
            if let last = mine.positions.last { lastChange[r.zone] = last }
            added[r.zone, default: 0] += Int64(mine.count)
            results.append(.success(append))
        }
        guard let last = rows.positions.last else { return results }
        // One statement writes it all, and notifies at the commit (fewer round trips under the lock).
        let changed = Array(lastChange.keys), lasts = changed.map { lastChange[$0]! }, counts = changed.map { added[$0]! }
        try await c.query("""
            WITH inserted AS (
                INSERT INTO jlog_records (position, zone, incarnation, kind, entry_id, body, arrived_at)
                SELECT p, z, n, \(RecordKind.entry.rawValue), i, b, a
                FROM unnest(\(rows.positions)::bigint[], \(rows.zones)::text[], \(rows.incarnations)::bigint[], \(rows.ids)::bytea[],
                            \(rows.bodies)::bytea[], \(rows.arrivals)::bigint[]) AS t(p, z, n, i, b, a)),
            zones AS (
                UPDATE jlog_zones SET last_change = t.l, entry_count = entry_count + t.c
                FROM unnest(\(changed)::text[], \(lasts)::bigint[], \(counts)::bigint[]) AS t(z, l, c) WHERE name = t.z),
            positions AS (
                UPDATE jlog_positions SET next = \(last + 1))
            SELECT pg_notify(\(changesChannel), t.z) FROM unnest(\(changed)::text[]) AS t(z)
            """, logger: logger)
        return results
    }

    /// The columns of records to insert, one array each (inserted with `unnest`).
    struct Rows {
        var positions: [Int64] = [], zones: [String] = [], incarnations: [Int64] = [], ids: [ByteBuffer] = [], bodies: [ByteBuffer] = []
        var arrivals: [Int64] = []
        var count: Int { positions.count }

        mutating func add(_ p: Int64, _ zone: String, _ inc: Int64, _ key: [UInt8], _ body: [UInt8], arrived: Int64) {
            arrivals.append(arrived)
            positions.append(p)
            zones.append(zone)
            incarnations.append(inc)
            ids.append(ByteBuffer(bytes: key))
            bodies.append(ByteBuffer(bytes: body))
        }

        mutating func append(_ other: Rows) {
            positions += other.positions
            zones += other.zones
            incarnations += other.incarnations
            ids += other.ids
            bodies += other.bodies
            arrivals += other.arrivals
        }
    }
}

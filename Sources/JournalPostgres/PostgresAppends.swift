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
    /// Refused (`keysMoved`) if the zone holds any of these ids (a sealed zone's next key record
    /// or rotation-due marker: SEALING.md §5.1).
    var absent: [[UInt8]] = []
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
    package func append(_ entries: [JournalEntry], to zone: String, expectingMark mark: SequenceNumber?, absent: [CompactID] = [],
                        arrivedAt: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) async throws(PostgresStorageError) -> PostgresAppend {
        let request = AppendRequest(zone: zone, entries: entries.map { (id: $0.id, key: Self.idBytes($0.id), body: EntryCodec.encode($0)) },
                                    expectedMark: mark, absent: absent.map(Self.idBytes), arrivedAt: arrivedAt)
        if let batcher { return try await batcher.submit(request).get() }
        return try await commit([request])[0].get()
    }

    /// Appends each request in one transaction, in order, under the positions lock (SYNC.md §11.2):
    /// a request that names no live zone or carries a conflicting id is refused alone; the others
    /// take consecutive positions. A failed transaction fails every request (none was stored).
    func commit(_ requests: [AppendRequest]) async -> [Result<PostgresAppend, PostgresStorageError>] {
        do throws(PostgresStorageError) {
            let outcome = try await Self.mapped {
                try await client.withTransaction(logger: logger) { c in try await self.commit(requests, on: c) }
            }
            if firstStatistics.appended(outcome.reduce(0) { $0 + ((try? $1.get())?.saved.count ?? 0) }) {
                Task(executorPreference: BridgeExecutor.shared) { [client, logger, firstStatistics] in await firstStatistics.analyseIfNever(client, logger) }
            }
            return outcome
        } catch {
            return requests.map { _ in .failure(error) }
        }
    }

    func commit(_ requests: [AppendRequest], on c: PostgresConnection) async throws -> [Result<PostgresAppend, PostgresStorageError>] {
        let next = try await Self.lockPositions(c, logger)
        let names = Array(Set(requests.map(\.zone)))
        // The live zones, and what they hold of the ids these requests carry ((zone, id) → body),
        // by one statement: a row per zone and id sought (the body nil when not held).
        var live: [String: Int64] = [:], marks: [String: Int64] = [:]
        var held: [String: [[UInt8]: [UInt8]]] = [:]
        let sought = requests.flatMap { r in (r.entries.map(\.key) + r.absent).map { (zone: r.zone, key: ByteBuffer(bytes: $0)) } }
        // Each id sought by its own lookup, which only the unique index answers: the cost follows
        // the batch, never the zone's size, whatever the table's statistics say (a join let the
        // planner scan whole zones while the table was not yet analysed: 1–3 ms a batch).
        let zones = sought.map(\.zone), keys = sought.map(\.key)
        for try await (name, inc, mark, key, body) in try await c.query("""
            SELECT z.name, z.incarnation, z.low_water_mark, k.id,
                   (SELECT r.body FROM jlog_records r WHERE r.zone = z.name AND r.incarnation = z.incarnation AND r.entry_id = k.id)
            FROM jlog_zones z LEFT JOIN unnest(\(zones)::text[], \(keys)::bytea[]) AS k(zone, id) ON k.zone = z.name
            WHERE z.name = ANY(\(names)::text[]) AND z.deleted_at IS NULL
            """, logger: logger).decode((String, Int64, Int64, ByteBuffer?, ByteBuffer?).self) {
            live[name] = inc
            marks[name] = mark
            if let key, let body { held[name, default: [:]][Array(buffer: key)] = Array(buffer: body) }
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
            if r.absent.contains(where: { zoneHeld[$0] != nil }) {
                results.append(.failure(.keysMoved(r.zone)))
                continue
            }
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
        for try await _ in try await c.execute(InsertEntriesStatement(rows: rows, changed: changed, lasts: lasts, counts: counts,
                                                                       next: last + 1, channel: changesChannel, from: signalTag + "\t"), logger: logger) {}
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

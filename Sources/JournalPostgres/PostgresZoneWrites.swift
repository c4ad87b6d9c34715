import JournalLog
import NIOCore
import PostgresNIO

/// The service's writes beyond appends (SYNC.md §11.3): deleting a zone, raising its mark, and
/// appending a batch that spans zones all or nothing. Each takes the positions lock like an
/// append (§11.2), so its record's position commits in order with everything else.
extension PostgresStorage {
    /// Deletes the zone's live incarnation (its entries, history and snapshots go with it);
    /// the position of the deletion.
    package func removeZone(_ name: String, reason: ZoneDeletionReason = .deleted) async throws(PostgresStorageError) -> SequenceNumber {
        try await Self.mapped {
            try await client.withTransaction(logger: logger) { c in
                let next = try await Self.lockPositions(c, logger)
                guard let z = try await Self.zoneInfo(name, on: c, logger), !z.isDeleted else { throw PostgresStorageError.zoneNotFound(name) }
                let inc = Int64(z.incarnation)
                try await c.query("""
                    UPDATE jlog_zones SET deleted_at = \(next), deletion_reason = \(Int16(reason.rawValue)), last_change = \(next), entry_count = 0
                    WHERE name = \(name)
                    """, logger: logger)
                try await c.query("""
                    INSERT INTO jlog_deleted_zones (name, incarnation, deleted_at, reason) VALUES (\(name), \(inc), \(next), \(Int16(reason.rawValue)))
                    """, logger: logger)
                try await c.query("DELETE FROM jlog_records WHERE zone = \(name) AND incarnation = \(inc)", logger: logger)
                try await c.query("DELETE FROM jlog_history_pieces WHERE zone = \(name) AND incarnation = \(inc)", logger: logger)
                try await c.query("DELETE FROM jlog_snapshots WHERE zone = \(name) AND incarnation = \(inc)", logger: logger)
                try await self.writeRecord(.zoneDeleted, zone: name, incarnation: inc, at: next, on: c)
                return SequenceNumber(next)
            }
        }
    }

    /// Raises the live zone's low-water mark to `mark` (never lowers it): tokens issued under a
    /// lower one expire. A raise is a record of the zone, so the database feed shows it changed.
    package func raiseMark(_ name: String, to mark: SequenceNumber) async throws(PostgresStorageError) {
        try await Self.mapped {
            try await client.withTransaction(logger: logger) { c in
                let next = try await Self.lockPositions(c, logger)
                guard let z = try await Self.zoneInfo(name, on: c, logger), !z.isDeleted else { throw PostgresStorageError.zoneNotFound(name) }
                guard mark > z.lowWaterMark else { return }
                try await self.raiseMark(name, incarnation: z.incarnation, to: mark, at: next, on: c)
            }
        }
    }

    /// Under the positions lock: the mark raised, as the record at `position` (`writeRecord`).
    func raiseMark(_ name: String, incarnation: SequenceNumber, to mark: SequenceNumber, at position: Int64,
                   on c: PostgresConnection) async throws {
        try await c.query("""
            UPDATE jlog_zones SET low_water_mark = greatest(low_water_mark, \(Int64(mark))), last_change = \(position) WHERE name = \(name)
            """, logger: logger)
        var body = ByteWriter()
        body.varint(mark)
        try await writeRecord(.lowWaterMark, zone: name, incarnation: Int64(incarnation), body: body.bytes, at: position, on: c)
    }

    /// Appends every request in one transaction, all or nothing: the first refusal (a zone not
    /// live, a conflicting id) is thrown and nothing is stored.
    package func appendAll(_ entries: [JournalEntry], arrivedAt: Int64) async throws(PostgresStorageError) -> [PostgresAppend] {
        var order: [String] = [], byZone: [String: [JournalEntry]] = [:]
        for e in entries {
            if byZone[e.zone] == nil { order.append(e.zone) }
            byZone[e.zone, default: []].append(e)
        }
        let requests = order.map { z in
            AppendRequest(zone: z, entries: byZone[z]!.map { (id: $0.id, key: Self.idBytes($0.id), body: EntryCodec.encode($0)) }, arrivedAt: arrivedAt)
        }
        return try await Self.mapped {
            try await client.withTransaction(logger: logger) { c in
                try await self.commit(requests, on: c).map { r throws(PostgresStorageError) in try r.get() }
            }
        }
    }
}

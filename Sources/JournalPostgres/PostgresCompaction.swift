import JournalLog
import JournalQuery
import ListModel
import NIOCore
import PostgresNIO

/// What compacting one zone in the database did.
package enum PostgresZoneCompaction: Sendable {
    /// Compacted: the zone's report, and the positions purged and written over.
    case compacted(ZoneCompaction, purged: [SequenceNumber], rewritten: [SequenceNumber])
    /// Nothing to compact, and why.
    case skipped(CompactionSkip)
    /// Deleted or made again since it was listed, or another node is compacting it: left alone.
    case passed
}

/// Compaction by the list rules (COMPACTION.md §1–§2, SYNC.md §11.5) of one zone in one
/// transaction: the retention planner's decisions (the same code as the engine's compactor),
/// the purged entries' events as the next history piece, a snapshot of what stays, and the
/// mark raised to the snapshot's sequence, all committed together or not at all. A node killed
/// mid-way leaves nothing half done. The transaction holds the positions lock (§11.2), so no
/// append lands in the zone meanwhile, and an advisory lock per zone, so another node's
/// compactor passes the zone by instead of waiting to redo it.
extension PostgresStorage {
    /// The advisory lock's first key: "jlog compaction".
    static let compactionLockClass: Int32 = 0x6A6C_6F63

    package func compactZone(_ name: String, incarnation: SequenceNumber, cutoff: Int64, arrivedThrough: SequenceNumber,
                             purgeWillBegin: @escaping @Sendable () -> Void) async throws(PostgresStorageError) -> PostgresZoneCompaction {
        try await Self.mapped {
            try await client.withTransaction(logger: logger) { c in
                var locked = false
                for try await got in try await c.query("""
                    SELECT pg_try_advisory_xact_lock(\(Self.compactionLockClass), hashtext(current_schema() || '/' || \(name)))
                    """, logger: logger).decode(Bool.self) { locked = got }
                guard locked else { return .passed }
                let next = try await Self.lockPositions(c, logger)
                let horizon = SequenceNumber(next - 1)
                guard let info = try await Self.zoneInfo(name, on: c, logger), !info.isDeleted, info.incarnation == incarnation else { return .passed }
                let entries = try await Self.entries(name, incarnation: incarnation, after: 0, through: horizon, limit: Int(Int32.max), on: c, logger)
                let decisions: [RetentionDecision]
                switch Self.decide(entries, info: info, horizon: horizon, cutoff: cutoff, arrivedThrough: arrivedThrough) {
                case .decisions(let d): decisions = d
                case .skip(let why): return .skipped(why)
                }
                let links = try await Self.pieceLinks(info, on: c, logger)
                if let why = Self.chainProblem(links, info), info.lowWaterMark > 0 {
                    // A new piece after a broken chain would hide the loss (COMPACTION.md §4).
                    throw PostgresStorageError.damaged("the history of \(name) is incomplete (\(why)): not compacted")
                }
                purgeWillBegin()
                return try await self.apply(decisions, to: entries, info: info, through: horizon, previous: links.first, at: next, on: c)
            }
        }
    }

    /// The planner's decisions for the zone (passes until one finds nothing more), or why it has
    /// nothing to compact: what the engine's compactor decides, over the rows read. A list its
    /// reader refuses (a base it cannot apply) is skipped whole before anything is written
    /// (COMPACTION.md §1.1): the snapshot written here would otherwise be a state that is not the list's.
    static func decide(_ entries: [FeedEntry], info: ZoneInfo, horizon: SequenceNumber, cutoff: Int64,
                       arrivedThrough: SequenceNumber) -> Decided {
        var planner = RetentionPlanner()
        for e in entries { planner.add(e.sequence, e.entry) }
        if planner.bases > 0, let why = ListBase.refusal(zone: info.name, entries.lazy.map(\.entry)) {
            return .skip(.baseUnreadable(reason: why))
        }
        // The engine's rule (`CompactionMark`): no consumers here, the horizon for the sealed log.
        let bounds = CompactionMark.Bounds(lowWaterMark: info.lowWaterMark, unheld: min(horizon, info.lastChange), ceiling: horizon,
                                           arrivedThrough: arrivedThrough)
        let mark: SequenceNumber, first: RetentionDecision
        switch CompactionMark.decide(planner, cutoff: cutoff, bounds: bounds) {
        case .compact(let m, let f): (mark, first) = (m, f)
        case .skip(let why): return .skip(why)
        }
        var decisions = [first]
        RetentionPasses.more(&decisions, cutoff: cutoff, mark: mark) { (each: (SequenceNumber, JournalEntry) -> Void) in
            for e in entries { each(e.sequence, e.entry) }
        }
        return .decisions(decisions)
    }

    /// The planner's decisions, or why there are none.
    enum Decided {
        case decisions([RetentionDecision])
        case skip(CompactionSkip)
    }

    /// Writes what `decisions` say, under the transaction's locks: purged rows deleted,
    /// rewritten ones replaced, their events in a new history piece after `previous`, a
    /// snapshot of what stays at `through`, and the mark raised to it as the record at `position`.
    private func apply(_ decisions: [RetentionDecision], to entries: [FeedEntry], info: ZoneInfo, through: SequenceNumber,
                       previous: PieceLink?, at position: Int64, on c: PostgresConnection) async throws -> PostgresZoneCompaction {
        var walks = decisions.map { $0.walk() }
        var piece = HistoryPieceEncoder(HistoryPieceHeader(zone: info.name, incarnation: info.incarnation, sequence: through,
                                                           previous: previous?.sequence ?? 0, previousCRC: previous?.crc ?? 0, complete: false))
        var reducer = ListReducer(zone: info.name)
        var purged: [SequenceNumber] = [], rewritten: [SequenceNumber] = []
        var replaced = (positions: [Int64](), bodies: [ByteBuffer]())
        // What devices need to follow the purge (SYNC.md §6.7), as the engine's compactor collects it.
        var followed: ZoneCompaction.Followed? = ZoneCompaction.Followed()
        let before = CompactionRecord.followFrom(mark: info.lowWaterMark, entries: entries.lazy.map(\.entry))
        (followed!.followFrom, followed!.followPosition) = before
        for e in entries {
            let verdict = RetentionPasses.verdict(&walks, e.sequence, e.entry)
            if verdict != .keep { piece.add(e.entry) }
            switch verdict {
            case .keep: _ = reducer.apply(e.entry)
            case .purge:
                purged.append(e.sequence)
                if followed?.note(e.entry, at: e.sequence, replacement: nil) == false { followed = nil }
            case .replace(let op):
                if followed?.note(e.entry, at: e.sequence, replacement: op) == false { followed = nil }
                var x = e.entry
                x.operation = op
                rewritten.append(e.sequence)
                replaced.positions.append(Int64(e.sequence))
                replaced.bodies.append(ByteBuffer(bytes: EntryCodec.encode(x)))
                _ = reducer.apply(x)
            }
        }
        piece.finish()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(piece.pending.bytes.count)
        bytes += piece.takeChunk()
        let crc = bytes.withUnsafeBytes { HistoryPieceCodec.storedCRC($0) } ?? 0
        let snapshot = SnapshotCodec.encode(reducer: reducer, incarnation: info.incarnation, sequence: through)
        let (name, inc) = (info.name, Int64(info.incarnation))
        try await c.query("DELETE FROM jlog_records WHERE position = ANY(\(purged.map { Int64($0) }))", logger: logger)
        try await c.query("""
            UPDATE jlog_records SET body = t.b FROM unnest(\(replaced.positions)::bigint[], \(replaced.bodies)::bytea[]) AS t(p, b)
            WHERE position = t.p
            """, logger: logger)
        try await c.query("""
            INSERT INTO jlog_history_pieces (zone, incarnation, sequence, crc, body)
            VALUES (\(name), \(inc), \(Int64(through)), \(Int64(crc)), \(ByteBuffer(bytes: bytes)))
            """, logger: logger)
        // The newest snapshot is the only one a device re-fetches from; older ones rest on entries now purged.
        try await c.query("DELETE FROM jlog_snapshots WHERE zone = \(name) AND incarnation = \(inc)", logger: logger)
        try await c.query("""
            INSERT INTO jlog_snapshots (zone, incarnation, sequence, body) VALUES (\(name), \(inc), \(Int64(through)), \(ByteBuffer(bytes: snapshot)))
            """, logger: logger)
        try await c.query("""
            UPDATE jlog_zones SET entry_count = entry_count - \(Int64(purged.count)), history_through = \(Int64(through)) WHERE name = \(name)
            """, logger: logger)
        try await raiseMark(name, incarnation: info.incarnation, to: through, at: position, on: c)
        var done = ZoneCompaction(zone: name, incarnation: info.incarnation, lowWaterMark: through, chosen: purged.count,
                                  rewritten: rewritten.count, snapshotSequence: through)
        done.previousMark = info.lowWaterMark
        followed?.digest = reducer.stateDigest()
        done.followed = followed
        return .compacted(done, purged: purged, rewritten: rewritten)
    }
}

import JournalLog
import ListModel
import NIOCore
import PostgresNIO

/// A zone's history pieces and snapshots in the database (SYNC.md §11.3): the bytes the engine
/// would write to its files (SNAPSHOT.md §1, §5), read whole or a range at a time.
extension PostgresStorage {
    /// One piece's place in its zone's chain: its sequence, stored CRC and header.
    struct PieceLink: Sendable {
        var sequence: SequenceNumber
        var crc: UInt32
        var header: HistoryPieceHeader
    }

    /// Bytes of a piece enough to hold its header (magic, versions, flags, sequences, CRC and a
    /// zone name of at most 255 bytes).
    static let headerBytes = 512

    /// The incarnation's pieces, newest first, by their headers.
    static func pieceLinks(_ info: ZoneInfo, on c: PostgresConnection, _ logger: Logger) async throws -> [PieceLink] {
        var out: [PieceLink] = []
        let rows = try await c.query("""
            SELECT sequence, crc, substring(body FROM 1 FOR \(Int32(headerBytes))) FROM jlog_history_pieces
            WHERE zone = \(info.name) AND incarnation = \(Int64(info.incarnation)) ORDER BY sequence DESC
            """, logger: logger)
        for try await (s, crc, head) in rows.decode((Int64, Int64, ByteBuffer).self) {
            let bytes = Array(buffer: head)
            let header: HistoryPieceHeader?
            do { header = try bytes.withUnsafeBytes { b throws(ActivityLogError) in try HistoryPieceCodec.decodeHeader(b) } } catch {
                throw PostgresStorageError.damaged("history piece \(s) of \(info.name): \(error)")
            }
            guard let header else { throw PostgresStorageError.damaged("history piece \(s) of \(info.name) has no header") }
            out.append(PieceLink(sequence: SequenceNumber(s), crc: UInt32(truncatingIfNeeded: crc), header: header))
        }
        return out
    }

    /// Why the chain (newest first) does not hold every purged event, or nil (COMPACTION.md §4):
    /// each piece names the one before it by sequence and CRC, the oldest names none, and the
    /// newest reaches the mark and the reach the zone records.
    static func chainProblem(_ links: [PieceLink], _ info: ZoneInfo) -> String? {
        for (k, link) in links.enumerated() {
            guard link.header.sequence == link.sequence, link.header.incarnation == info.incarnation else {
                return "piece \(link.sequence) names sequence \(link.header.sequence) of incarnation \(link.header.incarnation)"
            }
            if link.header.complete { return nil }
            if k + 1 < links.count {
                let older = links[k + 1]
                guard link.header.previous == older.sequence, link.header.previousCRC == older.crc else {
                    return "piece \(link.sequence) follows \(link.header.previous), not the piece \(older.sequence) before it"
                }
            } else if link.header.previous != 0 {
                return "piece \(link.sequence) follows \(link.header.previous), which is missing"
            }
        }
        guard info.lowWaterMark > 0 else { return nil }
        let reach = max(info.lowWaterMark, info.historyThrough)
        guard let newest = links.first else { return "the zone was compacted through \(info.lowWaterMark) and has no history piece" }
        return newest.sequence >= reach ? nil : "the newest piece reaches \(newest.sequence), below \(reach)"
    }

    /// The newest piece of the zone's chain (sequence and CRC), the chain checked; nil when it
    /// has none. `historyIncomplete`'s reason when the chain is broken.
    package func historyChainHead(_ zone: String) async throws(PostgresStorageError) -> Result<(sequence: SequenceNumber, crc: UInt32)?, HistoryProblem> {
        try await reading { c in
            guard let info = try await Self.zoneInfo(zone, on: c, self.logger), !info.isDeleted else { return .failure(.zoneGone) }
            let links = try await Self.pieceLinks(info, on: c, self.logger)
            if let why = Self.chainProblem(links, info) { return .failure(.incomplete(why)) }
            return .success(links.first.map { ($0.sequence, $0.crc) })
        }
    }

    /// The zone's activity history, whole: its pieces' events and its log's (COMPACTION.md §4).
    package func history(of zone: String) async throws(PostgresStorageError) -> Result<ActivityLog, HistoryProblem> {
        try await reading { c in
            guard let info = try await Self.zoneInfo(zone, on: c, self.logger), !info.isDeleted else { return .failure(.zoneGone) }
            var log = ActivityLog(zone: zone)
            switch try await Self.storedHistory(info, into: &log, on: c, self.logger) {
            case .success: break
            case .failure(let p): return .failure(p)
            }
            let h = try await Self.horizon(on: c, self.logger)
            for e in try await Self.entries(zone, incarnation: info.incarnation, after: 0, through: h, limit: Int(Int32.max), on: c, self.logger) {
                _ = log.record(e.entry)
            }
            return .success(log)
        }
    }

    /// The ids the zone's pieces hold and its log no longer does: what compaction purged.
    package func purgedIDs(of zone: String) async throws(PostgresStorageError) -> Result<Set<CompactID>, HistoryProblem> {
        try await reading { c in
            guard let info = try await Self.zoneInfo(zone, on: c, self.logger), !info.isDeleted else { return .success([]) }
            var log = ActivityLog(zone: zone)
            switch try await Self.storedHistory(info, into: &log, on: c, self.logger) {
            case .success: break
            case .failure(let p): return .failure(p)
            }
            var ids = Set(log.allEvents().map(\.entryID))
            guard !ids.isEmpty else { return .success([]) }
            var keys: [ByteBuffer] = []
            for id in ids { keys.append(ByteBuffer(bytes: Self.idBytes(id))) }
            for try await key in try await c.query("""
                SELECT entry_id FROM jlog_records WHERE zone = \(zone) AND incarnation = \(Int64(info.incarnation)) AND entry_id = ANY(\(keys))
                """, logger: self.logger).decode(ByteBuffer.self) {
                if let id = Self.compactID(Array(buffer: key)) { ids.remove(id) }
            }
            return .success(ids)
        }
    }

    /// Decodes the incarnation's pieces into `log`, the chain checked first.
    static func storedHistory(_ info: ZoneInfo, into log: inout ActivityLog, on c: PostgresConnection,
                              _ logger: Logger) async throws -> Result<Void, HistoryProblem> {
        let links = try await pieceLinks(info, on: c, logger)
        if let why = chainProblem(links, info) {
            // Nothing was purged: the log holds every event.
            return info.lowWaterMark == 0 ? .success(()) : .failure(.incomplete(why))
        }
        for link in links {
            let bytes = try await pieceBody(info, at: link.sequence, range: nil, on: c, logger)
            do { _ = try HistoryPieceCodec.decode(bytes, into: &log) } catch {
                return .failure(.incomplete("piece \(link.sequence): damaged (\(error))"))
            }
            if link.header.complete { break }
        }
        return .success(())
    }

    /// A piece's bytes, or the range of them.
    static func pieceBody(_ info: ZoneInfo, at sequence: SequenceNumber, range: Range<Int>?, on c: PostgresConnection,
                          _ logger: Logger) async throws -> [UInt8] {
        let query: PostgresQuery
        if let range {
            query = """
                SELECT substring(body FROM \(Int32(clamping: range.lowerBound + 1)) FOR \(Int32(clamping: range.count))) FROM jlog_history_pieces
                WHERE zone = \(info.name) AND incarnation = \(Int64(info.incarnation)) AND sequence = \(Int64(sequence))
                """
        } else {
            query = """
                SELECT body FROM jlog_history_pieces
                WHERE zone = \(info.name) AND incarnation = \(Int64(info.incarnation)) AND sequence = \(Int64(sequence))
                """
        }
        for try await body in try await c.query(query, logger: logger).decode(ByteBuffer.self) { return Array(buffer: body) }
        throw PostgresStorageError.damaged("history piece \(sequence) of \(info.name) is missing")
    }

    /// A piece's length in bytes.
    package func historyPieceLength(_ info: ZoneInfo, at sequence: SequenceNumber) async throws(PostgresStorageError) -> Int {
        try await Self.mapped {
            for try await n in try await client.query("""
                SELECT length(body) FROM jlog_history_pieces
                WHERE zone = \(info.name) AND incarnation = \(Int64(info.incarnation)) AND sequence = \(Int64(sequence))
                """, logger: logger).decode(Int32.self) { return Int(n) }
            throw PostgresStorageError.damaged("history piece \(sequence) of \(info.name) is missing")
        }
    }

    /// Bytes `range` of a piece.
    package func historyPiece(_ info: ZoneInfo, at sequence: SequenceNumber, range: Range<Int>) async throws(PostgresStorageError) -> [UInt8] {
        try await Self.mapped { try await client.withConnection { c in try await Self.pieceBody(info, at: sequence, range: range, on: c, logger) } }
    }

    /// The sequence of the incarnation's newest piece, or 0.
    package func newestHistory(_ info: ZoneInfo) async throws(PostgresStorageError) -> SequenceNumber {
        try await Self.mapped {
            for try await s in try await client.query("""
                SELECT coalesce(max(sequence), 0) FROM jlog_history_pieces WHERE zone = \(info.name) AND incarnation = \(Int64(info.incarnation))
                """, logger: logger).decode(Int64.self) { return SequenceNumber(s) }
            return 0
        }
    }

    /// The incarnation's newest snapshot at or above its mark and within the horizon, with its
    /// sequence; nil when it has none.
    package func newestSnapshot(_ info: ZoneInfo) async throws(PostgresStorageError) -> (bytes: [UInt8], sequence: SequenceNumber)? {
        try await reading { c in
            let h = try await Self.horizon(on: c, self.logger)
            for try await (s, body) in try await c.query("""
                SELECT sequence, body FROM jlog_snapshots WHERE zone = \(info.name) AND incarnation = \(Int64(info.incarnation))
                  AND sequence >= \(Int64(info.lowWaterMark)) AND sequence <= \(Int64(h)) ORDER BY sequence DESC LIMIT 1
                """, logger: self.logger).decode((Int64, ByteBuffer).self) {
                return (Array(buffer: body), SequenceNumber(s))
            }
            return nil
        }
    }

    static func compactID(_ bytes: [UInt8]) -> CompactID? {
        bytes.withUnsafeBytes { b -> CompactID? in
            var r = ByteReader(b)
            return try? CompactID.decoded(&r)
        }
    }
}

/// Why a zone's history cannot be read whole.
package enum HistoryProblem: Error, Sendable {
    /// The zone is gone (deleted, or never made).
    case zoneGone
    /// The chain of pieces lacks purged events (COMPACTION.md §4): the reason.
    case incomplete(String)
}

import JournalCodec
import JournalLog
import JournalQuery
import JournalSync
import ListModel

/// One history piece of a zone, read a window at a time (Spec/SYNC.md §3.12): checked against
/// its CRC a chunk at a time, its events decoded from windows, so a reader holds one window
/// whatever the piece's size (up to 256 MiB).
struct PieceWindows {
    /// Bytes a window holds: a page's worth of events and one more whole.
    static let windowBytes = (1 << 20) + HistoryPieceCodec.maxEventBytes

    let store: any ServiceStorage
    let zone: ZoneInfo
    let sequence: SequenceNumber
    let length: Int

    /// The piece at `sequence`, whose stored file CRC must be `crc` (what its successor, or the
    /// chain's check, named): another file under its name is refused.
    init(store: any ServiceStorage, zone: ZoneInfo, sequence: SequenceNumber, crc: UInt32) throws(SyncError) {
        self.store = store
        self.zone = zone
        self.sequence = sequence
        do throws(QueryError) { length = try store.historyPieceLength(of: zone, at: sequence) } catch { throw Self.unavailable(zone, error) }
        guard length >= 10 else { throw damaged("\(length) bytes") }
        let tail = try read(length - 4..<length)
        guard tail.withUnsafeBytes({ HistoryPieceCodec.storedCRC($0) }) == crc else { throw damaged("not the piece its successor names") }
    }

    /// Its header, nil for an older writer's whole history (major 1).
    func header() throws(SyncError) -> HistoryPieceHeader? {
        let head = try read(0..<min(length, 512))
        let header: HistoryPieceHeader?
        do { header = try head.withUnsafeBytes { b throws(ActivityLogError) in try HistoryPieceCodec.decodeHeader(b) } } catch { throw damaged("\(error)") }
        if let header, header.zone != zone.name || header.incarnation != zone.incarnation || header.sequence != sequence {
            throw damaged("its header names another piece")
        }
        return header
    }

    /// Checks every byte against the stored CRC, a chunk at a time.
    func checkWhole(crc: UInt32) throws(SyncError) {
        var sum: UInt32 = 0, at = 0
        while at < length - 4 {
            let chunk = try read(at..<min(length - 4, at + (1 << 20)))
            sum = CRC32C.extend(sum, chunk)
            at += chunk.count
        }
        guard sum == crc else { throw damaged("checksum mismatch") }
    }

    /// All of it (an older writer's whole history, read as such files always were).
    func whole() throws(SyncError) -> [UInt8] { try read(0..<length) }

    /// Gives the events from `from` on to `body`, window by window, until it answers false or
    /// they end: where it stopped, and whether they ended.
    func walk(from: HistoryPieceResume, _ body: (HistoryPieceEvent) -> Bool) throws(SyncError) -> (HistoryPieceResume, Bool) {
        let eventsEnd = length - 4
        var at = from
        while true {
            guard at.offset <= eventsEnd else { throw damaged("a position past its events") }
            let end = min(eventsEnd, at.offset + Self.windowBytes)
            let window = try read(at.offset..<end)
            var stopped = false
            let result: Result<(HistoryPieceResume, Bool), ActivityLogError> = window.withUnsafeBytes { w in
                do throws(ActivityLogError) {
                    return .success(try HistoryPieceCodec.events(in: w, from: at, reachesEnd: end == eventsEnd) { e in
                        if body(e) { return true }
                        stopped = true
                        return false
                    })
                } catch { return .failure(error) }
            }
            let ended: Bool
            do { (at, ended) = try result.get() } catch { throw damaged("\(error)") }
            if ended || stopped { return (at, ended) }
        }
    }

    private func read(_ range: Range<Int>) throws(SyncError) -> [UInt8] {
        do throws(QueryError) { return try store.historyPiece(of: zone, at: sequence, range: range) } catch { throw Self.unavailable(zone, error) }
    }

    private func damaged(_ why: String) -> SyncError {
        ServiceContext.historyUnavailable(zone.name, "history piece at \(sequence): damaged (\(why))")
    }

    /// A piece that cannot be read is the operator's to repair (COMPACTION.md §4), never transient.
    static func unavailable(_ zone: ZoneInfo, _ error: QueryError) -> SyncError {
        if case .historyIncomplete(_, let why) = error { return ServiceContext.historyUnavailable(zone.name, why) }
        return ServiceContext.historyUnavailable(zone.name, "\(error)")
    }
}

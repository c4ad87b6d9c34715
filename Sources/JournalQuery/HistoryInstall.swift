import JournalLog
import ListModel

extension ListQuery {
    /// The newest piece of the zone's history chain, its sequence and stored CRC, the chain
    /// checked by headers and the newest piece's bytes against its CRC (what a paged read starts
    /// from, SYNC.md §3.12); nil when the zone has none. `historyIncomplete` as `historyHead`.
    package func historyChainHead(_ zone: String) throws(QueryError) -> (sequence: SequenceNumber, crc: UInt32)? {
        try historyHead(zone).map { ($0.file.sequence, $0.crc) }
    }

    /// The length of the zone incarnation's history piece at `sequence`; `historyIncomplete` when
    /// it is missing, unreadable or over the format's size.
    package func historyPieceLength(_ zone: String, incarnation: SequenceNumber, sequence: SequenceNumber) throws(QueryError) -> Int {
        let (path, name) = piecePath(zone, incarnation, sequence)
        do throws(JournalError) {
            let file = try fs.openForReading(path)
            defer { file.close() }
            let size = try file.size()
            guard size <= Int64(HistoryPieceCodec.maxBytes) else {
                throw JournalError.notAStore(path: path, reason: "a history file of \(size) bytes")
            }
            return Int(size)
        } catch {
            throw .historyIncomplete(zone: zone, reason: "\(name): unreadable (\(error))")
        }
    }

    /// The bytes `range` of that piece (a window of it: a reader holds one at a time);
    /// `historyIncomplete` when they cannot be read whole.
    package func historyPieceBytes(_ zone: String, incarnation: SequenceNumber, sequence: SequenceNumber, range: Range<Int>) throws(QueryError) -> [UInt8] {
        let (path, name) = piecePath(zone, incarnation, sequence)
        do throws(JournalError) {
            let file = try fs.openForReading(path)
            defer { file.close() }
            var bytes = [UInt8](repeating: 0, count: range.count)
            let n: Result<Int, JournalError> = bytes.withUnsafeMutableBytes { b in
                do throws(JournalError) { return .success(try file.read(into: b, at: Int64(range.lowerBound))) } catch { return .failure(error) }
            }
            guard try n.get() == range.count else { throw JournalError.io(operation: "read (file shrank)", path: path, errno: 5) }
            return bytes
        } catch {
            throw .historyIncomplete(zone: zone, reason: "\(name): unreadable (\(error))")
        }
    }

    private func piecePath(_ zone: String, _ incarnation: SequenceNumber, _ sequence: SequenceNumber) -> (path: String, name: String) {
        let name = SnapshotDirectory.fileName(zone: zone, incarnation: incarnation, sequence: sequence, kind: .history)
        return (store.path + "/" + SnapshotDirectory.name + "/" + name, name)
    }
}

/// A whole history installed as it arrives, page by page (Spec/SYNC.md §7.5 step 5): the events
/// go to one complete piece at `sequence`, written a chunk at a time and put in place only by
/// `finish`, each entry id once (the first met, as a reader keeps it). Memory: one chunk and the
/// ids written (16 bytes each), never the history.
package final class HistoryInstall {
    private let writer: HistoryPieceWriter
    private var written = Set<CompactID>()

    /// Starts the piece; a piece of the zone past `sequence` already there is refused (it would
    /// be newer than this history).
    package init(_ query: ListQuery, zone: String, incarnation: SequenceNumber, sequence: SequenceNumber) throws(QueryError) {
        let newer = SnapshotDirectory.list(store: query.store.path, zone: zone, incarnation: incarnation, kind: .history, fs: query.fs)
            .first { $0.sequence > sequence }
        if let newer {
            throw .storage(.invalidEntry("zone \(zone) has a history piece at \(newer.sequence), past \(sequence): a whole history at \(sequence) would be older"))
        }
        let header = HistoryPieceHeader(zone: zone, incarnation: incarnation, sequence: sequence, complete: true)
        do { writer = try HistoryPieceWriter(store: query.store.path, header: header, fs: query.fs) } catch { throw .storage(error) }
    }

    /// Events written so far.
    package var events: Int { written.count }

    /// Adds an event another piece (a page) holds, unless its entry id is written already.
    package func add(_ e: HistoryPieceEvent) throws(QueryError) {
        guard !written.contains(e.entry) else { return }
        do { try writer.add(e) } catch { throw .storage(error) }
        written.insert(e.entry)
    }

    /// Adds an entry's event (none for kinds the history does not keep), unless its id is written.
    package func add(_ e: JournalEntry) throws(QueryError) {
        guard !written.contains(e.id) else { return }
        let added: Bool
        do { added = try writer.add(e) } catch { throw .storage(error) }
        if added { written.insert(e.id) }
    }

    /// Puts the piece in place, durably.
    package func finish() throws(QueryError) {
        do { _ = try writer.finish() } catch { throw .storage(error) }
    }

    /// Drops it: the temporary file goes, nothing changes.
    package func abandon() { writer.abandon() }
}

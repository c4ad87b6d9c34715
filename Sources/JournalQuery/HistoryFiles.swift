import JournalLog
import ListModel

/// A history file as its first bytes and its last four say: no event is read.
struct PieceHead {
    var file: SnapshotFile
    /// nil for a major-1 file (an older writer's whole history): complete.
    var header: HistoryPieceHeader?
    /// The stored `fileCRC` (the last four bytes).
    var crc: UInt32

    var isComplete: Bool { header?.complete ?? true }
    var previous: SequenceNumber { header?.previous ?? 0 }
}

/// Where a zone's chain of history pieces, walked from the newest back, stops.
enum ChainEnd: Equatable {
    /// No history file at all.
    case none
    /// At a complete piece: the log is replayed after its sequence.
    case complete(SequenceNumber)
    /// At the first piece (it names none): the whole log is replayed.
    case first
    /// Short of either: a piece is missing, damaged or not the one its successor names.
    case broken(String)
}

extension ListQuery {
    /// Reads a history file's head (header and stored CRC) without its events.
    func pieceHead(_ f: SnapshotFile) throws(QueryError) -> PieceHead {
        func read(_ file: any StorageFile, _ count: Int, at offset: Int64) throws(JournalError) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            let n: Result<Int, JournalError> = bytes.withUnsafeMutableBytes { b in
                do throws(JournalError) { return .success(try file.read(into: b, at: offset)) } catch { return .failure(error) }
            }
            guard try n.get() == count else { throw JournalError.io(operation: "read (file shrank)", path: f.path, errno: 5) }
            return bytes
        }
        let head: [UInt8], tail: [UInt8]
        do throws(JournalError) {
            let file = try fs.openForReading(f.path)
            defer { file.close() }
            let size = try file.size()
            guard size >= 10, size <= Int64(HistoryPieceCodec.maxBytes) else {
                throw JournalError.notAStore(path: f.path, reason: "a history file of \(size) bytes")
            }
            head = try read(file, Int(min(size, 512)), at: 0)
            tail = try read(file, 4, at: size - 4)
        } catch {
            throw .historyIncomplete(zone: "", reason: "\(f.name): unreadable (\(error))")
        }
        let header: HistoryPieceHeader?
        do { header = try head.withUnsafeBytes { b throws(ActivityLogError) in try HistoryPieceCodec.decodeHeader(b) } } catch {
            throw .historyIncomplete(zone: "", reason: "\(f.name): damaged (\(error))")
        }
        return PieceHead(file: f, header: header, crc: tail.withUnsafeBytes { HistoryPieceCodec.storedCRC($0)! })
    }

    /// Walks the zone incarnation's history pieces from the newest back, through each piece the
    /// one before names, until a complete or a first piece. `load` reads one piece (its head, or
    /// all of it) and says what it is; `files` are newest first.
    func walkChain(_ files: [SnapshotFile], incarnation: SequenceNumber,
                   load: (SnapshotFile) throws(QueryError) -> (header: HistoryPieceHeader?, crc: UInt32)) -> (chain: [SnapshotFile], end: ChainEnd) {
        guard var file = files.first else { return ([], .none) }
        var chain: [SnapshotFile] = []
        var expected: UInt32? = nil
        while true {
            let loaded: (header: HistoryPieceHeader?, crc: UInt32)
            do { loaded = try load(file) } catch {
                if case .historyIncomplete(_, let reason) = error { return (chain, .broken(reason)) }
                return (chain, .broken("\(file.name): \(error)"))
            }
            if let expected, loaded.crc != expected {
                return (chain, .broken("\(file.name) is not the piece its successor names (its CRC is \(hex32(loaded.crc)), not \(hex32(expected)))"))
            }
            if let h = loaded.header, h.incarnation != incarnation || h.sequence != file.sequence {
                return (chain, .broken("\(file.name): its header names incarnation \(h.incarnation), sequence \(h.sequence)"))
            }
            chain.append(file)
            guard let h = loaded.header, !h.complete else { return (chain, .complete(file.sequence)) }
            if h.previous == 0 { return (chain, .first) }
            guard let next = files.first(where: { $0.sequence == h.previous }) else {
                return (chain, .broken("\(file.name) follows a piece at sequence \(h.previous), which is missing"))
            }
            expected = h.previousCRC
            file = next
        }
    }

    /// Why a chain cannot stand for the history of `info`'s incarnation, or nil: it must read
    /// whole, and its newest piece must reach both the low-water mark and what the log says the
    /// pieces reach (`historyThrough`, COMPACTION.md §4). Why both: a run may purge more below an
    /// unchanged mark into a newer piece, and only the log, which is never restored from an
    /// older copy apart from the pieces, can tell that newer piece is gone.
    static func chainProblem(_ chain: [SnapshotFile], _ end: ChainEnd, info: ZoneInfo) -> String? {
        let mark = info.lowWaterMark, reach = info.historyThrough
        switch end {
        case .broken(let why): return why
        case .none where mark > 0:
            return "no readable history file, and " + (reach > mark ? "the log says the history reaches \(reach)" : "the low-water mark is \(mark)")
        default:
            guard let newest = chain.first, newest.sequence < max(mark, reach) else { return nil }
            if newest.sequence < reach {
                return "the newest history piece runs through \(newest.sequence), but the log says the history reaches \(reach): a newer piece is missing (restore it from a backup)"
            }
            return "the newest history piece runs through \(newest.sequence), below the low-water mark \(mark)"
        }
    }

    /// The zone's history files of its live incarnation, newest first, and the zone.
    func historyFiles(_ zone: String) throws(QueryError) -> (files: [SnapshotFile], info: ZoneInfo) {
        guard let info = store.zone(zone) else { throw .feed(.zoneNotFound(zone)) }
        if let d = info.deletedAt { throw .feed(.zoneDeleted(zone: zone, at: d, reason: info.deletionReason ?? .deleted)) }
        return (SnapshotDirectory.list(store: store.path, zone: zone, incarnation: info.incarnation, kind: .history, fs: fs), info)
    }

    /// The whole history the pieces hold (events of entries the log may no longer hold), and the
    /// sequence to replay the log after (nil: all of it). Once the zone's low-water mark is above
    /// 0, a chain that stops short, or whose newest piece is below the mark or below the reach
    /// the log records, is `historyIncomplete`.
    func readHistoryPieces(_ zone: String) throws(QueryError) -> (log: ActivityLog, through: SequenceNumber?, warnings: [String]) {
        let (files, info) = try historyFiles(zone)
        var log = ActivityLog(zone: zone)
        let (chain, end) = walkChain(files, incarnation: info.incarnation) { f throws(QueryError) in
            let bytes: [UInt8]
            do { bytes = try SnapshotDirectory.read(f.path, limit: HistoryPieceCodec.maxBytes, fs: fs) } catch {
                throw .historyIncomplete(zone: zone, reason: "\(f.name): unreadable (\(error))")
            }
            do {
                var header = try HistoryPieceCodec.decode(bytes, into: &log)
                if header.major == ActivityLogCodec.major { return (nil, bytes.withUnsafeBytes { HistoryPieceCodec.storedCRC($0)! }) }
                header.major = HistoryPieceCodec.major
                return (header, bytes.withUnsafeBytes { HistoryPieceCodec.storedCRC($0)! })
            } catch {
                throw .historyIncomplete(zone: zone, reason: "\(f.name): damaged (\(error))")
            }
        }
        let mark = info.lowWaterMark
        if let problem = Self.chainProblem(chain, end, info: info) {
            guard mark == 0 else { throw .historyIncomplete(zone: zone, reason: problem) }
            // Nothing was purged: the log holds every event.
            return (ActivityLog(zone: zone), nil, ["history pieces passed over (the log holds every event): " + problem])
        }
        if case .complete(let s) = end { return (log, s, []) }
        return (log, nil, [])
    }

    /// Whether a list installed from a base still lacks the history from before it: its first
    /// entry is a base and no whole (complete) piece ends its chain of history pieces. Pieces a
    /// device wrote when it followed compactions (Spec/SYNC.md §6.7) hold only what they purged
    /// after the base; the history from before it is on the service until fetched. Headers only.
    package func lacksHistoryBeforeBase(_ zone: String) -> Bool {
        guard let info = store.zone(zone), !info.isDeleted,
              let first = try? store.changes(in: zone, since: nil, limit: 1).entries.first, ListBase.isBase(first.entry) else { return false }
        guard info.lowWaterMark > 0, let (files, _) = try? historyFiles(zone) else { return true }
        let (_, end) = walkChain(files, incarnation: info.incarnation) { f throws(QueryError) in
            let h = try pieceHead(f)
            return (h.header, h.crc)
        }
        if case .complete = end { return false }
        return true
    }

    /// The newest piece of the zone's chain, checked by headers only (no event is read): what a
    /// new piece follows. nil when there is none. A chain that stops short, or whose newest
    /// piece lies below the low-water mark above 0 or below the reach the log records, is
    /// `historyIncomplete`: a new piece after it would hide the loss.
    func historyHead(_ zone: String) throws(QueryError) -> PieceHead? {
        let (files, info) = try historyFiles(zone)
        var heads: [String: PieceHead] = [:]
        let (chain, end) = walkChain(files, incarnation: info.incarnation) { f throws(QueryError) in
            let h = try pieceHead(f)
            heads[f.name] = h
            return (h.header, h.crc)
        }
        let mark = info.lowWaterMark
        var problem = Self.chainProblem(chain, end, info: info)
        // The piece a new one names by its CRC must hold what that CRC says.
        if problem == nil, let newest = chain.first, let head = heads[newest.name], let why = checksumProblem(head) { problem = why }
        if let problem {
            guard mark == 0 else { throw .historyIncomplete(zone: zone, reason: problem) }
            return nil  // nothing was purged: a new chain starts
        }
        return chain.first.flatMap { heads[$0.name] }
    }

    /// Why the piece's bytes do not match its stored CRC (read a chunk at a time), or nil.
    func checksumProblem(_ head: PieceHead) -> String? {
        do throws(JournalError) {
            let file = try fs.openForReading(head.file.path)
            defer { file.close() }
            let size = try file.size()
            var crc: UInt32 = 0, at: Int64 = 0
            var chunk = [UInt8](repeating: 0, count: HistoryPieceEncoder.chunkBytes)
            while at < size - 4 {
                let n = Int(min(Int64(chunk.count), size - 4 - at))
                let read: Result<Int, JournalError> = chunk.withUnsafeMutableBytes { b in
                    do throws(JournalError) { return .success(try file.read(into: UnsafeMutableRawBufferPointer(rebasing: b[0..<n]), at: at)) }
                    catch { return .failure(error) }
                }
                guard try read.get() == n else { return "\(head.file.name): shorter than its size" }
                crc = chunk.withUnsafeBytes { CRC32C.extend(crc, UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                at += Int64(n)
            }
            return crc == head.crc ? nil : "\(head.file.name): damaged (checksum mismatch)"
        } catch {
            return "\(head.file.name): unreadable (\(error))"
        }
    }

    /// History files of the zone's live incarnation that its chain does not need: older than the
    /// complete piece it ends at (once that one reads whole), or off the chain. None while the
    /// chain is broken: what is left may be all there is to repair it from.
    func historyPiecesNoChainNeeds(_ info: ZoneInfo) -> [SnapshotFile] {
        let files = SnapshotDirectory.list(store: store.path, zone: info.name, incarnation: info.incarnation, kind: .history, fs: fs)
        guard files.count > 1 else { return [] }
        let (chain, end) = walkChain(files, incarnation: info.incarnation) { f throws(QueryError) in
            let h = try pieceHead(f)
            return (h.header, h.crc)
        }
        switch end {
        case .first: break
        case .complete:
            // Only a whole history that reads whole stands in for what is before it.
            guard let last = chain.last, let bytes = try? SnapshotDirectory.read(last.path, limit: HistoryPieceCodec.maxBytes, fs: fs),
                  (try? HistoryPieceCodec.decode(bytes)) != nil else { return [] }
        case .none, .broken: return []
        }
        let kept = Set(chain.map(\.name))
        return files.filter { !kept.contains($0.name) }
    }

    /// Starts the zone's next history piece, covering the log through `sequence` (or through
    /// the newest piece's, if that is higher: coverage never goes back). It follows the newest
    /// piece; one under the same name is merged into it (its events first), never lost.
    func startHistoryPiece(_ zone: String, incarnation: SequenceNumber, sequence: SequenceNumber) throws(QueryError) -> HistoryPieceWriter {
        let head = try historyHead(zone)
        var header = HistoryPieceHeader(zone: zone, incarnation: incarnation, sequence: max(sequence, head?.file.sequence ?? 0),
                                        previous: head?.file.sequence ?? 0, previousCRC: head?.crc ?? 0, complete: false)
        var merged: ActivityLog? = nil
        if let head, head.file.sequence == header.sequence {
            // A run at the same sequence wrote this one (nothing was appended to the zone since):
            // the new piece takes its place, holding its events too.
            let bytes: [UInt8]
            var log = ActivityLog(zone: zone)
            do {
                bytes = try SnapshotDirectory.read(head.file.path, limit: HistoryPieceCodec.maxBytes, fs: fs)
                _ = try HistoryPieceCodec.decode(bytes, into: &log)
            } catch {
                throw .historyIncomplete(zone: zone, reason: "\(head.file.name) cannot be read to add to it (\(error))")
            }
            header.previous = head.header?.previous ?? 0
            header.previousCRC = head.header?.previousCRC ?? 0
            header.complete = head.isComplete
            merged = log
        }
        if header.previous == 0 { header.previousCRC = 0 }
        do { return try HistoryPieceWriter(store: store.path, header: header, fs: fs, merging: merged) } catch { throw .storage(error) }
    }
}

/// Writes one history piece as it is produced, a chunk at a time, to a temporary file that is
/// synced and renamed into place (then the directory synced) on `finish`: a crash leaves the old
/// file or the new one, never a mix, and memory stays at one chunk whatever the piece's length.
final class HistoryPieceWriter {
    let header: HistoryPieceHeader
    let path: String
    private let temp: String
    private let fs: any FileSystem
    private let file: any StorageFile
    private var encoder: HistoryPieceEncoder
    private var written: Int64 = 0
    /// The events of the piece this one replaces (same name): written first, and not again.
    private let merged: ActivityLog?
    private var closed = false

    init(store: String, header: HistoryPieceHeader, fs: any FileSystem, merging: ActivityLog? = nil) throws(JournalError) {
        self.header = header
        self.fs = fs
        let dir = store + "/" + SnapshotDirectory.name
        if fs.kind(of: dir) == .missing {
            try fs.createDirectory(dir)
            try fs.syncDirectory(store)
        }
        path = dir + "/" + SnapshotDirectory.fileName(zone: header.zone, incarnation: header.incarnation, sequence: header.sequence, kind: .history)
        temp = path + ".tmp"
        file = try fs.openFile(temp, create: true, truncate: true)
        encoder = HistoryPieceEncoder(header)
        merged = merging
        if let merging {
            encoder.add(contentsOf: merging)
            try flush(force: false)
        }
    }

    /// Events written so far.
    var events: Int { encoder.events }

    /// Whether it takes the place of a piece under its name (holding that one's events too).
    var isMerging: Bool { merged != nil }

    /// Adds every event of `log` with its item texts.
    func add(contentsOf log: ActivityLog) throws(JournalError) {
        encoder.add(contentsOf: log)
        try flush(force: false)
    }

    /// Adds the entry's event (nothing for kinds the history does not keep); whether it did.
    @discardableResult
    func add(_ e: JournalEntry) throws(JournalError) -> Bool {
        if let merged, merged.holds(e.id) { return false }
        let added = encoder.add(e)
        try flush(force: false)
        return added
    }

    /// Adds one event as another piece stored it.
    func add(_ e: HistoryPieceEvent) throws(JournalError) {
        encoder.add(e)
        try flush(force: false)
    }

    private func flush(force: Bool) throws(JournalError) {
        guard force || encoder.pending.bytes.count >= HistoryPieceEncoder.chunkBytes else { return }
        let chunk = encoder.takeChunk()
        guard written + Int64(chunk.count) <= Int64(HistoryPieceCodec.maxBytes) else {
            throw JournalError.invalidEntry("the history piece of zone \(header.zone) would pass \(HistoryPieceCodec.maxBytes) bytes; compact it in smaller steps (an earlier --now)")
        }
        try file.write(chunk, at: written)
        written += Int64(chunk.count)
    }

    /// Ends the piece and puts it in place, durably. Returns its file and size.
    func finish() throws(JournalError) -> (SnapshotFile, Int) {
        do {
            encoder.finish()
            try flush(force: true)
            try file.sync()
            file.close()
            closed = true
        } catch {
            abandon()
            throw error
        }
        try fs.rename(temp, path)
        try fs.syncDirectory(parentOf(path))
        return (SnapshotDirectory.parse(String(path.split(separator: "/").last!), in: parentOf(path))!, Int(written))
    }

    /// Drops the piece (a failed run): the temporary file goes, the chain is as it was.
    func abandon() {
        if !closed { file.close() }
        closed = true
        try? fs.remove(temp)
    }
}

/// Brings the zone index up to date on open: starts from the checkpoint, skips the records it
/// covers (their CRCs are still checked by the scan), and replays the rest. If the checkpoint's
/// last frame is not in the log exactly as recorded, the checkpoint is stale and open rebuilds.
struct IndexBuilder {
    /// The checkpoint files as read (INDEX.md §5): the checkpoint with its journal applied, or
    /// nil and why it cannot be used.
    struct Loaded {
        var checkpoint: ZoneIndexCheckpoint?
        var unusable: String
        var journalRecords: Int
    }

    let checkpoint: ZoneIndexCheckpoint?
    var missingReason = "no checkpoint"
    var catalog: ZoneCatalog
    var replayed = 0
    /// Records of the index journal applied to the checkpoint file (INDEX.md §5).
    var journalRecords = 0
    var lastFrame: CoveredFrame?
    private var passed = false
    private var mismatch = false

    init(checkpoint loaded: Loaded) {
        checkpoint = loaded.checkpoint
        missingReason = loaded.unusable
        journalRecords = loaded.journalRecords
        catalog = loaded.checkpoint.map(ZoneCatalog.init(checkpoint:)) ?? ZoneCatalog()
        passed = loaded.checkpoint == nil
    }

    init(checkpoint: ZoneIndexCheckpoint?) { self.init(checkpoint: Loaded(checkpoint: checkpoint, unusable: "no checkpoint", journalRecords: 0)) }

    /// Whether the catalog may be used as built for a log whose segments name `storeID`: every
    /// record visited is in it, and a checkpoint, if any, is this store's and matched the log.
    func isUsable(storeID: (UInt64, UInt64)?) -> Bool {
        isCurrent && (checkpoint.map { $0.storeID == (storeID ?? $0.storeID) } ?? true)
    }

    /// Why the index must be rebuilt from the whole log when `isUsable` says no.
    var rebuildReason: String { checkpoint == nil ? missingReason : "the checkpoint does not match the log" }

    /// Where a usable catalog came from: the checkpoint, or the whole log when there was none.
    var usableSource: IndexSource { checkpoint == nil ? .rebuilt(reason: missingReason) : .checkpoint }

    /// What this builder did, as an open reports it (`source` as the open decided).
    func report(source: IndexSource) -> IndexOpenReport {
        var r = IndexOpenReport()
        r.source = source
        r.recordsReplayed = replayed
        if source == .checkpoint, let checkpoint {
            r.journalRecords = journalRecords
            r.checkpointSequence = checkpoint.coveredSequence
        }
        return r
    }

    /// True when the catalog reflects every record visited.
    var isCurrent: Bool { passed && !mismatch }

    mutating func visit(_ r: RecordView) throws {
        guard let base = SegmentName(fileName: r.segment)?.base else { return }
        lastFrame = CoveredFrame(segment: base, offset: r.offset, crc: r.crc, lastSequence: r.lastSequence)
        if !passed {
            guard let c = checkpoint, !mismatch else { return }
            if base == c.coveredSegment && r.offset == c.coveredOffset {
                if r.crc == c.coveredCRC && r.lastSequence == c.coveredSequence { passed = true } else { mismatch = true }
            } else if base > c.coveredSegment {
                mismatch = true
            }
            return
        }
        guard !mismatch else { return }
        let events: [LogEvent]
        do { events = try LogReader.decode(r) } catch { throw PayloadDamage(error: error) }
        catalog.observe(events, segment: base, offset: r.offset)
        replayed += 1
    }

    /// The checkpoint with its journal's records applied (and how many), or nil with the reason
    /// it could not be used.
    static func loadCheckpoint(store: String, fs: any FileSystem) -> Loaded {
        func unusable(_ why: String) -> Loaded { Loaded(checkpoint: nil, unusable: why, journalRecords: 0) }
        let path = store + "/" + StoreLayout.indexFile
        guard fs.kind(of: path) == .file else { return unusable("no checkpoint") }
        do {
            let bytes = try AtomicFile.read(path, fs: fs, limit: ZoneIndexCodec.maxFileBytes)
            let decoded: Result<ZoneIndexCheckpoint, ZoneIndexCodec.DecodeError> = bytes.withUnsafeBytes { b in
                do throws(ZoneIndexCodec.DecodeError) { return .success(try ZoneIndexCodec.decode(b)) } catch { return .failure(error) }
            }
            switch decoded {
            case .success(let c):
                if let why = c.inconsistency() { return unusable("the checkpoint is inconsistent (\(why))") }
                let (extended, records) = extended(c, crc: ZoneIndexJournalCodec.fileCRC(bytes), store: store, fs: fs)
                return Loaded(checkpoint: extended, unusable: "", journalRecords: records)
            case .failure(let e): return unusable("the checkpoint is damaged (\(e))")
            }
        } catch {
            return unusable("the checkpoint cannot be read (\(error))")
        }
    }
}

extension IndexBuilder {
    /// The checkpoint with its journal's records applied (INDEX.md §5): those that read whole and
    /// leave a checkpoint a writer could have produced. A journal that cannot be read, or names
    /// another file, adds nothing: what it held is replayed from the log.
    static func extended(_ c: ZoneIndexCheckpoint, crc: UInt32, store: String, fs: any FileSystem) -> (ZoneIndexCheckpoint, Int) {
        let path = store + "/" + StoreLayout.indexJournalFile
        guard fs.kind(of: path) == .file,
              let bytes = try? AtomicFile.read(path, fs: fs, limit: ZoneIndexCodec.maxFileBytes) else { return (c, 0) }
        let applied = bytes.withUnsafeBytes { ZoneIndexJournalCodec.apply($0, to: c, baseCRC: crc) }
        guard applied.records > 0, applied.checkpoint.inconsistency() == nil else { return (c, 0) }
        return (applied.checkpoint, applied.records)
    }
}

/// Reads single frames by location, checking each one's chained CRC from the four bytes before
/// it (or the segment header's `previousChain` for a segment's first frame). Reads exactly the
/// frame's bytes: a feed call touches only the frames it serves.
final class FrameFetcher {
    let store: String
    let fs: any FileSystem
    let segments: [SequenceNumber]
    /// Files already open for the segments, by ordinal (a reader's consistent set); others are
    /// opened by name on first use and closed with the fetcher.
    private let given: [Int: any StorageFile]
    private var open: [Int: (file: any StorageFile, size: Int64, previousChain: UInt32)] = [:]
    private var owned: [any StorageFile] = []
    private var buffer: [UInt8] = []

    init(store: String, fs: any FileSystem, segments: [SequenceNumber], files: [Int: any StorageFile] = [:]) {
        self.store = store
        self.fs = fs
        self.segments = segments
        given = files
    }

    deinit {
        for f in owned { f.close() }
    }

    private func read(_ file: any StorageFile, _ count: Int, at offset: Int64) throws(JournalError) {
        if buffer.count < count { buffer = [UInt8](repeating: 0, count: max(count, 4_096)) }
        let result: Result<Int, JournalError> = buffer.withUnsafeMutableBytes { b in
            do throws(JournalError) {
                return .success(try file.read(into: UnsafeMutableRawBufferPointer(rebasing: b[0..<count]), at: offset))
            } catch { return .failure(error) }
        }
        guard try result.get() == count else { throw JournalError.io(operation: "read (file shrank)", path: store, errno: 5) }
    }

    private func segment(_ ordinal: Int) throws(JournalError) -> (file: any StorageFile, size: Int64, previousChain: UInt32) {
        if let o = open[ordinal] { return o }
        let name = SegmentName(base: segments[ordinal]).fileName
        let file: any StorageFile
        if let f = given[ordinal] {
            file = f
        } else {
            file = try fs.openForReading(store + "/" + name)
            owned.append(file)
        }
        do {
            let size = try file.size()
            guard size >= Int64(SegmentHeader.size) else { throw JournalError.corruption(Corruption(
                segment: name, offset: 0, lastGoodSequence: 0, problem: .badSegmentHeader(.truncated(Int(size))), isTornTail: false)) }
            try read(file, SegmentHeader.size, at: 0)
            let decoded: Result<SegmentHeader, SegmentHeader.DecodeError> = buffer.withUnsafeBytes { b in
                do throws(SegmentHeader.DecodeError) { return .success(try SegmentHeader.decode(UnsafeRawBufferPointer(rebasing: b[0..<SegmentHeader.size]))) }
                catch { return .failure(error) }
            }
            switch decoded {
            case .success(let h):
                open[ordinal] = (file, size, h.previousChain)
                return (file, size, h.previousChain)
            case .failure(let e):
                throw JournalError.corruption(Corruption(segment: name, offset: 0, lastGoodSequence: 0, problem: .badSegmentHeader(e), isTornTail: false))
            }
        }
    }

    /// The decoded events of the frame at `location`; batch entries at or below `after`, or not
    /// in `zone`, are skipped without being decoded.
    func events(at location: UInt64, after: SequenceNumber = 0, zone: [UInt8]? = nil) throws(JournalError) -> [LogEvent] {
        try frame(at: location) { view throws(CodecError) in
            if view.header.type == RecordType.batch.rawValue {
                return try BatchCodec.decode(view.payload, firstSequence: view.header.sequence, after: after, zone: zone).map { .entry($0.0, $0.1) }
            }
            return try LogReader.decode(view)
        }
    }

    /// The entries of the frame at `location`, handed to `body` as they are decoded (as
    /// `events` skips, so may this), until it returns false. Returns whether `body` took them all.
    /// A feed page goes through here: collecting a frame's events first would copy every entry.
    func forEachEntry(at location: UInt64, after: SequenceNumber, zone: [UInt8]?,
                      _ body: (SequenceNumber, consuming JournalEntry) -> Bool) throws(JournalError) -> Bool {
        try forEachEntry(at: location, after: after, zone: zone) { s, e, _ in body(s, e) }
    }

    /// `forEachEntry`, with each entry's encoding as stored (valid only during the call).
    func forEachEntry(at location: UInt64, after: SequenceNumber, zone: [UInt8]?,
                      _ body: (SequenceNumber, consuming JournalEntry, UnsafeRawBufferPointer) -> Bool) throws(JournalError) -> Bool {
        try frame(at: location) { view throws(CodecError) in
            if view.header.type == RecordType.batch.rawValue {
                var going = true
                try BatchCodec.decode(view.payload, firstSequence: view.header.sequence, after: after, zone: zone, withEncoding: { s, e, bytes in
                    going = body(s, e, bytes)
                    return going
                })
                return going
            }
            if view.header.type == RecordType.entry.rawValue {
                guard view.header.sequence > after else { return true }
                let e = try EntryCodec.decode(view.payload)
                return body(view.header.sequence, e, view.payload)
            }
            return true
        }
    }

    /// The last sequence the frame at `location` consumes (its own for a record that takes one).
    func lastSequence(at location: UInt64) throws(JournalError) -> SequenceNumber {
        try frame(at: location) { view throws(CodecError) in
            if view.header.type == RecordType.batch.rawValue { return view.header.sequence + (try BatchCodec.summary(view.payload)).lastDelta }
            return view.header.sequence
        }
    }

    /// Reads the frame at `location`, checks its chained checksum, and decodes it with `decode`.
    /// A damaged frame or payload is reported with its segment, offset and the last good sequence.
    private func frame<T>(at location: UInt64, _ decode: (RecordView) throws(CodecError) -> T) throws(JournalError) -> T {
        let ordinal = Int(location >> 32), offset = Int64(location & 0xFFFF_FFFF)
        let s = try segment(ordinal)
        let name = SegmentName(base: segments[ordinal]).fileName
        func damaged(_ p: Corruption.Problem, _ seq: SequenceNumber) -> JournalError {
            .corruption(Corruption(segment: name, offset: offset, lastGoodSequence: seq, problem: p, isTornTail: false))
        }
        guard offset >= Int64(SegmentHeader.size), offset + Int64(Frame.overhead) <= s.size else {
            throw damaged(.lengthPastEOF(length: 0, available: s.size - offset), 0)
        }
        let first = offset == Int64(SegmentHeader.size)
        try read(s.file, Frame.headerSize + 4, at: offset - 4)
        let (seed, h) = buffer.withUnsafeBytes { b in (b.u32le, Frame.parseHeader(UnsafeRawBufferPointer(b), at: 4)) }
        let chain = first ? s.previousChain : seed
        guard Int(h.length) <= Limits.maxPayloadBytes else { throw damaged(.badLength(h.length), h.sequence &- 1) }
        guard offset + Int64(h.frameSize) <= s.size else {
            throw damaged(.lengthPastEOF(length: h.length, available: s.size - offset), h.sequence &- 1)
        }
        try read(s.file, h.frameSize, at: offset)
        let result: Result<T, JournalError> = buffer.withUnsafeBytes { all in
            let fb = UnsafeRawBufferPointer(rebasing: all[0..<h.frameSize])
            switch Frame.scan(fb, at: 0, chain: chain) {
            case .frame(let h, let range, let crc):
                let view = RecordView(segment: name, offset: offset, header: h, payload: UnsafeRawBufferPointer(rebasing: fb[range]),
                                      crc: crc, lastSequence: h.sequence)
                do throws(CodecError) {
                    return .success(try decode(view))
                } catch {
                    return .failure(damaged(.badPayload(error), h.sequence &- 1))
                }
            case .crcMismatch(_, let stored, let computed):
                return .failure(damaged(.crcMismatch(stored: stored, computed: computed), h.sequence &- 1))
            default:
                return .failure(damaged(.lengthPastEOF(length: h.length, available: s.size - offset), h.sequence &- 1))
            }
        }
        return try result.get()
    }
}

/// Small files replaced atomically: written under a temporary name, synced, renamed into place,
/// and the directory synced, so a crash leaves the old file or the new one, never a mix.
package enum AtomicFile {
    package static func write(_ bytes: [UInt8], to path: String, fs: any FileSystem) throws(JournalError) {
        let dir = parentDirectory(path)
        if fs.kind(of: dir) == .missing {
            try fs.createDirectory(dir)
            try fs.syncDirectory(parentDirectory(dir))
        }
        let temp = path + ".tmp"
        let file = try fs.openFile(temp, create: true, truncate: true)
        do throws(JournalError) {
            try file.write(bytes, at: 0)
            try file.sync()
            file.close()
        } catch {
            file.close()
            throw error
        }
        try fs.rename(temp, path)
        try fs.syncDirectory(dir)
    }

    /// The whole file, refusing one larger than `limit` before allocating for it.
    package static func read(_ path: String, fs: any FileSystem, limit: Int) throws(JournalError) -> [UInt8] {
        let file = try fs.openForReading(path)
        defer { file.close() }
        return try read(file, path: path, limit: limit)
    }

    /// The whole of an open file (`path` names it in errors), refusing one larger than `limit`.
    package static func read(_ file: any StorageFile, path: String, limit: Int) throws(JournalError) -> [UInt8] {
        let size = try file.size()
        guard size <= Int64(limit) else { throw JournalError.notAStore(path: path, reason: "\(size) bytes is larger than the \(limit)-byte limit") }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        let result: Result<Int, JournalError> = bytes.withUnsafeMutableBytes { b in
            do throws(JournalError) { return .success(try file.read(into: b, at: 0)) } catch { return .failure(error) }
        }
        return Array(bytes.prefix(try result.get()))
    }
}

/// The 128-bit key that signs change tokens: `KEY` holds 16 random bytes and their CRC32C. The
/// same format keeps the sync service's invitation key (`service/invite.key`).
package enum StoreKey {
    static func loadOrCreate(store: String, fs: any FileSystem) throws(JournalError) -> (UInt64, UInt64) {
        try loadOrCreate(file: store + "/" + StoreLayout.keyFile, fs: fs)
    }

    /// The key in the file at `path`, made (and written atomically, its directory too) when there
    /// is none; `storeKeyDamaged` for a file that is not one.
    package static func loadOrCreate(file path: String, fs: any FileSystem) throws(JournalError) -> (UInt64, UInt64) {
        if fs.kind(of: path) == .file {
            let b = try AtomicFile.read(path, fs: fs, limit: 64)
            guard b.count == 20, CRC32C.extend(0, Array(b[0..<16])) == UInt32(b[16]) | UInt32(b[17]) << 8 | UInt32(b[18]) << 16 | UInt32(b[19]) << 24 else {
                throw JournalError.storeKeyDamaged(path: path)
            }
            return b.withUnsafeBytes { ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self).littleEndian,
                                        $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self).littleEndian) }
        }
        var g = SystemRandomNumberGenerator()
        let key = (g.next() as UInt64, g.next() as UInt64)
        var w = ByteWriter(capacity: 20)
        w.u64(key.0)
        w.u64(key.1)
        w.u32(CRC32C.extend(0, w.bytes))
        try AtomicFile.write(w.bytes, to: path, fs: fs)
        return key
    }

    /// The key of a store opened only for reading: nil when the store has none yet.
    static func load(store: String, fs: any FileSystem) throws(JournalError) -> (UInt64, UInt64)? {
        guard fs.kind(of: store + "/" + StoreLayout.keyFile) == .file else { return nil }
        return try loadOrCreate(store: store, fs: fs)
    }
}

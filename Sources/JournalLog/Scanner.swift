import CCRC32C

/// How recovery treats damage, with RocksDB's meanings (Spec/FORMAT.md §9).
public enum RecoveryMode: String, Sendable, CaseIterable {
    /// kAbsoluteConsistency: any damage, even a torn tail, is an error.
    case strict
    /// kTolerateCorruptedTailRecords (default): a torn tail of the last segment is cut off
    /// and its bytes kept aside; any other damage is an error.
    case tolerateTail
    /// kPointInTimeRecovery: stop at the first damage anywhere; what follows is set aside.
    case pointInTime
    /// kSkipAnyCorruptedRecords: keep every intact record, skipping damaged ones. Read-only.
    case salvage
}

/// A record handed to a scan visitor. `payload` is borrowed: valid only during the call.
package struct RecordView {
    package let segment: String
    package let offset: Int64
    package let header: Frame.Header
    package let payload: UnsafeRawBufferPointer
    package let crc: UInt32
    /// The last sequence the record consumes (equal to `header.sequence` except for batches).
    package let lastSequence: SequenceNumber
}

/// A segment file in a store directory: `<20-digit base sequence>.seg`.
package struct SegmentName: Sendable, Hashable, Comparable {
    package static let suffix = ".seg"
    package let base: SequenceNumber

    package init(base: SequenceNumber) { self.base = base }

    package init?(fileName: String) {
        guard fileName.hasSuffix(SegmentName.suffix) else { return nil }
        let digits = fileName.dropLast(SegmentName.suffix.count)
        guard digits.count == 20, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let v = UInt64(digits) else { return nil }
        base = v
    }

    package var fileName: String {
        let d = String(base)
        return String(repeating: "0", count: 20 - d.count) + d + SegmentName.suffix
    }

    package static func < (a: SegmentName, b: SegmentName) -> Bool { a.base < b.base }
}

/// What scanning one segment found.
package struct SegmentSummary: Sendable {
    package var name: String
    package var header: SegmentHeader?
    package var fileSize: Int64
    /// Offset just past the last intact record: where an appender continues.
    package var validEnd: Int64
    package var firstSequence: SequenceNumber?
    package var lastSequence: SequenceNumber
    /// The chain value the next record (or the next segment's header) continues from.
    package var endChain: UInt32
    package var records: Int = 0
    package var skippedBytes: Int64 = 0
    package var sealed = false
}

/// Streams a segment through a bounded buffer; memory never grows with the file.
final class SegmentReader {
    let file: any StorageFile
    let fileSize: Int64
    private var buffer: UnsafeMutableRawBufferPointer
    private var bufferStart: Int64 = 0
    private var bufferCount = 0
    static let chunk = 1 << 20

    init(file: any StorageFile, fileSize: Int64) {
        self.file = file
        self.fileSize = fileSize
        // Small files (a copied-out segment, a fuzz input) get a small buffer; it grows on demand.
        buffer = .allocate(byteCount: Int(max(64, min(Int64(SegmentReader.chunk), fileSize))), alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Bytes `[offset, offset + count)`, which must lie inside the file; `count` is at most one frame.
    func window(_ offset: Int64, _ count: Int) throws(JournalError) -> UnsafeRawBufferPointer {
        precondition(count >= 0 && offset >= 0 && offset + Int64(count) <= fileSize)
        if offset >= bufferStart && offset + Int64(count) <= bufferStart + Int64(bufferCount) {
            let s = Int(offset - bufferStart)
            return UnsafeRawBufferPointer(rebasing: buffer[s..<s + count])
        }
        if count > buffer.count {
            buffer.deallocate()
            buffer = .allocate(byteCount: max(count, buffer.count * 2), alignment: 16)
        }
        let want = Int(min(Int64(buffer.count), fileSize - offset))
        let got = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
        bufferStart = offset
        bufferCount = got
        guard got >= count else { throw JournalError.io(operation: "read (file shrank)", path: "", errno: 5) }
        return UnsafeRawBufferPointer(rebasing: buffer[0..<count])
    }

    /// Just past the last non-zero byte at or after `from` (`from` when all are zero): the end of
    /// what was ever written, ignoring a pre-zeroed fill.
    func endOfData(from: Int64) throws(JournalError) -> Int64 {
        var end = from
        var at = from
        while let nz = try firstNonZero(from: at) {
            let n = Int(min(Int64(SegmentReader.chunk), fileSize - nz))
            let w = try window(nz, n)
            end = nz + Int64(w.lastIndex(where: { $0 != 0 })! + 1)
            at = nz + Int64(n)
        }
        return end
    }

    /// The first non-zero byte in `[from, fileSize)`, or nil when all are zero.
    func firstNonZero(from: Int64) throws(JournalError) -> Int64? {
        var at = from
        while at < fileSize {
            let n = Int(min(Int64(SegmentReader.chunk), fileSize - at))
            let w = try window(at, n)
            let i = jl_first_nonzero(w.baseAddress!, w.count)
            if i < w.count { return at + Int64(i) }
            at += Int64(n)
        }
        return nil
    }
}

/// Thrown by a scan visitor for a record whose checksum holds but whose payload does not decode:
/// the scanner reports it as corruption at that frame and applies its recovery mode to it.
struct PayloadDamage: Error {
    var error: CodecError
}

/// Reads a run of segments in order, checks every link of the chain, and applies a recovery mode.
struct StoreScanner {
    let fs: any FileSystem
    let mode: RecoveryMode
    /// Problems found, in order. Outside salvage there is at most one: scanning stops there.
    var problems: [Corruption] = []
    var summaries: [SegmentSummary] = []
    /// Where the kept prefix ends when a problem stopped the scan: segment index and offset.
    var cut: (segment: Int, offset: Int64)?
    /// With `liveTail`: damage at the end of the last segment, taken as the current end of a log
    /// a writer may be appending to (not reported as a problem). A reader looks again later.
    var liveTailProblem: Corruption?

    init(fs: any FileSystem, mode: RecoveryMode) {
        self.fs = fs
        self.mode = mode
    }

    var lastSequence: SequenceNumber { summaries.last?.lastSequence ?? 0 }

    /// Scans `paths` (segment files in base order). `standalone` skips the checks that need
    /// the previous segment (or, for the first, the store's start), for a single segment copied
    /// out of a store.
    mutating func scan(paths: [String], standalone: Bool = false,
                       visit: (RecordView) throws -> Void) throws {
        var files: [ScanInput] = []
        defer { for f in files { f.file.close() } }
        for path in paths {
            files.append(ScanInput(name: String(path.split(separator: "/").last ?? Substring(path)), file: try fs.openForReading(path)))
        }
        try scan(files: files, standalone: standalone, visit: visit)
    }

    /// One segment to scan: its name (as reports give it) and an open file.
    struct ScanInput {
        var name: String
        var file: any StorageFile
    }

    /// Scans open segment files in base order. `liveTail`: damage at the end of the last one is
    /// the current end of a log being appended to (`liveTailProblem`), not a problem. `resume`:
    /// the first file is the segment this summary describes, scanned on from its valid end (a
    /// reader catching up with a writer).
    mutating func scan(files: [ScanInput], standalone: Bool = false, liveTail: Bool = false, resume: SegmentSummary? = nil,
                       visit: (RecordView) throws -> Void) throws {
        var storeID: (UInt64, UInt64)? = resume?.header?.storeID
        var chain: UInt32? = resume?.endChain
        var lastSeq: SequenceNumber = resume?.lastSequence ?? 0
        for (index, input) in files.enumerated() {
            let isLast = index == files.count - 1
            let size = try input.file.size()
            let reader = SegmentReader(file: input.file, fileSize: size)
            var summary = SegmentSummary(name: input.name, header: nil, fileSize: size, validEnd: 0, lastSequence: lastSeq,
                                         endChain: chain ?? 0)
            if index == 0, let resume {
                summary = resume
                summary.fileSize = size
            }
            let stop = try scanSegment(reader: reader, name: input.name, isLast: isLast, standalone: standalone,
                                       liveTail: liveTail && isLast, resuming: index == 0 && resume != nil,
                                       storeID: &storeID, chain: &chain, lastSeq: &lastSeq, summary: &summary, visit: visit)
            summaries.append(summary)
            if stop {
                cut = (index, summary.validEnd)
                return
            }
        }
    }

    /// Records a problem. Returns true when the scan must stop (outside salvage), after
    /// throwing if the mode does not accept it.
    private mutating func report(_ c: Corruption) throws -> Bool {
        problems.append(c)
        switch mode {
        case .strict: throw JournalError.corruption(c)
        case .tolerateTail:
            if !c.isTornTail { throw JournalError.corruption(c) }
            return true
        case .pointInTime:
            // With the store's start missing there is no prefix to keep: cutting there would set
            // every segment aside and begin a new store (FORMAT.md §9.2).
            if case .missingEarlierSegment = c.problem { throw JournalError.corruption(c) }
            return true
        case .salvage: return false
        }
    }

    // Returns true when scanning must stop after this segment.
    private mutating func scanSegment(reader: SegmentReader, name: String, isLast: Bool, standalone: Bool, liveTail: Bool, resuming: Bool,
                                      storeID: inout (UInt64, UInt64)?, chain: inout UInt32?, lastSeq: inout SequenceNumber,
                                      summary: inout SegmentSummary, visit: (RecordView) throws -> Void) throws -> Bool {
        let size = reader.fileSize
        func corruption(_ at: Int64, _ p: Corruption.Problem, torn: Bool = false) -> Corruption {
            Corruption(segment: name, offset: at, lastGoodSequence: lastSeq, problem: p, isTornTail: torn && isLast)
        }
        /// Records a problem in the frames; true when the scan stops there. At a live tail, it is
        /// the end. (A segment's header is never live: a writer renames a segment into place
        /// only once its header is written and synced, so header damage is reported as such.)
        func report(_ c: Corruption) throws -> Bool {
            if liveTail {
                liveTailProblem = c
                return true
            }
            return try self.report(c)
        }
        var ch: UInt32
        var pos: Int64
        var sealed = false
        if resuming, let header = summary.header {
            // Catching up: the header and everything before `validEnd` were read already.
            ch = summary.endChain
            pos = summary.validEnd
            sealed = summary.sealed
            lastSeq = summary.lastSequence
            _ = header
        } else {
        // Header. A store lists only well-named segments; a standalone file may have any name.
        let parsedName = SegmentName(fileName: name)
        let headerBytes = try reader.window(0, Int(min(Int64(SegmentHeader.size), size)))
        let header: SegmentHeader
        do {
            header = try SegmentHeader.decode(headerBytes)
        } catch {
            let torn = size < SegmentHeader.size || headerBytes.allSatisfy { $0 == 0 }
            if try self.report(corruption(0, .badSegmentHeader(error), torn: torn)) { return true }
            // Salvage: resync inside the segment, seeding from the header's chain field if readable.
            summary.skippedBytes = size
            return false
        }
        summary.header = header
        if let id = storeID, id != header.storeID {
            if try self.report(corruption(0, .foreignSegment)) { return true }
            return false
        }
        storeID = header.storeID
        guard header.baseSequence >= 1 && header.baseSequence < SequenceLimit.max else {
            if try self.report(corruption(0, .baseSequenceMismatch(expected: parsedName?.base ?? 1, found: header.baseSequence))) { return true }
            return false
        }
        if let n = parsedName, header.baseSequence != n.base {
            if try self.report(corruption(0, .baseSequenceMismatch(expected: n.base, found: header.baseSequence))) { return true }
            return false
        }
        if !standalone {
            // The first segment read continues the store's own start (FORMAT.md §3.3): no version
            // of the format deletes whole segments, so one that does not had a predecessor that is
            // now missing. A segment file read on its own (`standalone`) may be any segment's copy.
            let expected = chain ?? SegmentHeader.firstChain(storeID: header.storeID)
            if expected != header.previousChain {
                let problem: Corruption.Problem = chain == nil
                    ? .missingEarlierSegment(expected: expected, found: header.previousChain)
                    : .chainBreak(expected: expected, found: header.previousChain)
                if try self.report(corruption(0, problem)) { return true }
            }
        }
        if !standalone, header.baseSequence <= lastSeq {
            if try self.report(corruption(0, .sequenceOutOfOrder(previous: lastSeq, found: header.baseSequence))) { return true }
        }
        ch = header.previousChain
        lastSeq = max(lastSeq, header.baseSequence &- 1)
        pos = Int64(SegmentHeader.size)
        summary.validEnd = pos
        summary.lastSequence = lastSeq
        summary.endChain = ch
        }

        frames: while pos < size {
            let remaining = size - pos
            if remaining < Int64(Frame.headerSize) {
                if try reader.firstNonZero(from: pos) == nil { break frames }
                if try report(corruption(pos, .cutOffHeader(available: remaining), torn: true)) { return true }
                break frames
            }
            let hb = try reader.window(pos, Frame.headerSize)
            let h = Frame.parseHeader(hb, at: 0)
            if h.isZero {
                guard let nz = try reader.firstNonZero(from: pos) else { break frames }
                // The search starts right after the zero header (a frame's own first bytes may be
                // zero); its zero-run jump skips the rest of the fill.
                let next = try resync(reader, from: pos + 1, lastSeq: lastSeq)
                let intactAfter = isLast ? next != nil : true
                if try report(corruption(nz, .dataAfterZeroTail, torn: !intactAfter)) { return true }
                if let next { summary.skippedBytes += next - pos; pos = next; ch = try seed(reader, next); continue frames }
                summary.skippedBytes += try reader.endOfData(from: pos) - pos
                break frames
            }
            var problem: Corruption? = nil
            if Int64(h.frameSize) > remaining {
                // A write cut short, unless an intact frame follows (a damaged length field).
                let intactAfter = isLast ? try resync(reader, from: pos + 1, lastSeq: lastSeq) != nil : true
                problem = corruption(pos, .lengthPastEOF(length: h.length, available: remaining), torn: !intactAfter)
            } else if Int(h.length) > Limits.maxPayloadBytes {
                let intactAfter = isLast ? try resync(reader, from: pos + 1, lastSeq: lastSeq) != nil : true
                problem = corruption(pos, .badLength(h.length), torn: !intactAfter)
            } else {
                let fb = try reader.window(pos, h.frameSize)
                switch Frame.scan(fb, at: 0, chain: ch) {
                case .crcMismatch(_, let stored, let computed):
                    // Torn when nothing intact follows: zeros, EOF, or the garbled rest of one last write.
                    let tailClean = !isLast ? false : try reader.firstNonZero(from: pos + Int64(h.frameSize)) == nil
                        || resync(reader, from: pos + 1, lastSeq: lastSeq) == nil
                    problem = corruption(pos, .crcMismatch(stored: stored, computed: computed), torn: tailClean)
                case .frame(let h, let range, let crc):
                    let payload = UnsafeRawBufferPointer(rebasing: fb[range])
                    switch classify(h, payload: payload, lastSeq: lastSeq, sealed: sealed) {
                    case .failure(let p):
                        problem = corruption(pos, p)
                    case .success(let last):
                        do {
                            try visit(RecordView(segment: name, offset: pos, header: h, payload: payload, crc: crc, lastSequence: last))
                        } catch let damage as PayloadDamage {
                            // The checksum holds but the payload does not decode: corruption at
                            // this frame (FORMAT.md §9.1), which each mode treats as any other.
                            if try report(corruption(pos, .badPayload(damage.error))) { return true }
                            summary.skippedBytes += Int64(h.frameSize)
                            pos += Int64(h.frameSize)
                            ch = crc
                            continue frames
                        }
                        if h.type == RecordType.seal.rawValue, let s = try? SealCodec.decode(payload) {
                            sealed = true
                            ch = s.endChain
                            lastSeq = s.lastSequence
                        } else {
                            ch = crc
                            if RecordType.isSkippable(h.type) == false {
                                if summary.firstSequence == nil { summary.firstSequence = h.sequence }
                                lastSeq = last
                            }
                        }
                        pos += Int64(h.frameSize)
                        summary.records += 1
                        summary.validEnd = pos
                        summary.lastSequence = lastSeq
                        summary.endChain = ch
                        continue frames
                    }
                case .truncated, .zero, .badLength:
                    preconditionFailure("window holds the whole frame")
                }
            }
            guard let problem else { continue frames }
            if try report(problem) { return true }
            // Salvage: skip to the next frame that validates against the CRC stored just before it.
            if let next = try resync(reader, from: pos + 1, lastSeq: lastSeq) {
                summary.skippedBytes += next - pos
                pos = next
                ch = try seed(reader, next)
            } else {
                summary.skippedBytes += try reader.endOfData(from: pos) - pos
                break frames
            }
        }
        summary.sealed = sealed
        chain = summary.endChain
        return false
    }

    private func seed(_ reader: SegmentReader, _ at: Int64) throws(JournalError) -> UInt32 {
        try reader.window(at - 4, 4).u32le
    }

    /// Finds the next offset holding a frame that validates when chained from the four bytes
    /// before it (the previous frame's CRC). Candidates must carry a plausible sequence, so
    /// random bytes almost never pass the header test and the search stays linear.
    private func resync(_ reader: SegmentReader, from: Int64, lastSeq: SequenceNumber) throws(JournalError) -> Int64? {
        var p = max(from, Int64(SegmentHeader.size))
        let size = reader.fileSize
        while p + Int64(Frame.overhead) <= size {
            let hb = try reader.window(p - 4, 4 + Frame.headerSize)
            if hb[8] == 0 && hb[4...].allSatisfy({ $0 == 0 }) {
                // A zero run (the pre-zeroed rest of a segment) holds no frame: jump past it.
                guard let nz = try reader.firstNonZero(from: p) else { return nil }
                p = max(p + 1, nz - Int64(Frame.headerSize) + 1)
                continue
            }
            let h = Frame.parseHeader(hb, at: 4)
            let typeOK = RecordType(rawValue: h.type) != nil || RecordType.isSkippable(h.type)
            if typeOK, Int(h.length) <= Limits.maxPayloadBytes, p + Int64(h.frameSize) <= size,
               h.sequence >= lastSeq, h.sequence - lastSeq < 1 << 40 {
                let fb = try reader.window(p - 4, 4 + h.frameSize)
                let seedValue = fb.u32le
                if case .frame = Frame.scan(UnsafeRawBufferPointer(rebasing: fb[4...]), at: 0, chain: seedValue) { return p }
            }
            p += 1
        }
        return nil
    }

    /// Checks type and sequence rules; returns the record's last sequence.
    private func classify(_ h: Frame.Header, payload: UnsafeRawBufferPointer, lastSeq: SequenceNumber,
                          sealed: Bool) -> Result<SequenceNumber, Corruption.Problem> {
        if sealed { return .failure(.sequenceOutOfOrder(previous: lastSeq, found: h.sequence)) }
        guard let type = RecordType(rawValue: h.type) else {
            guard RecordType.isSkippable(h.type) else { return .failure(.unknownType(h.type)) }
            guard h.sequence == lastSeq else { return .failure(.sequenceOutOfOrder(previous: lastSeq, found: h.sequence)) }
            return .success(lastSeq)
        }
        if !type.consumesSequence {
            guard h.sequence == lastSeq else { return .failure(.sequenceOutOfOrder(previous: lastSeq, found: h.sequence)) }
            do {
                let s = try SealCodec.decode(payload)
                guard s.lastSequence >= lastSeq, s.lastSequence < SequenceLimit.max else { return .failure(.sequenceOutOfOrder(previous: lastSeq, found: s.lastSequence)) }
            } catch { return .failure(.badPayload(error)) }
            return .success(lastSeq)
        }
        guard h.sequence > lastSeq, h.sequence < SequenceLimit.max else {
            return .failure(.sequenceOutOfOrder(previous: lastSeq, found: h.sequence))
        }
        if type == .batch {
            do {
                let s = try BatchCodec.summary(payload)
                let (last, overflow) = h.sequence.addingReportingOverflow(s.lastDelta)
                guard !overflow, last < SequenceLimit.max else {
                    return .failure(.badPayload(CodecError(.invalidValue(field: "batch lastDelta"), at: 0)))
                }
                return .success(last)
            } catch { return .failure(.badPayload(error)) }
        }
        return .success(h.sequence)
    }
}

extension UnsafeRawBufferPointer {
    var u32le: UInt32 { loadUnaligned(fromByteOffset: 0, as: UInt32.self).littleEndian }
}

/// Sequences stay below 2^62 (FORMAT.md §4.2), so arithmetic on them can never overflow.
package enum SequenceLimit {
    package static let max: SequenceNumber = 1 << 62
}

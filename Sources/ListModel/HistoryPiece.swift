import JournalCodec

/// What a history piece's header says (Spec/SNAPSHOT.md §5). A zone's history is a chain of
/// pieces: each compaction run appends one holding the events of the entries it removes from the
/// log (a **delta**), naming the piece before it; a **complete** piece holds every event of the
/// incarnation through its sequence and ends the chain. The history is the chain's events plus
/// what the log still holds.
package struct HistoryPieceHeader: Sendable, Equatable {
    package var zone: String
    package var incarnation: SequenceNumber
    /// The piece covers the log through here: every entry at or below it that the log no longer
    /// holds is in this piece or in one it chains back to. Also in the file's name.
    package var sequence: SequenceNumber
    /// The sequence of the piece this one follows (0: none, the chain starts here).
    package var previous: SequenceNumber
    /// That piece's `fileCRC` (its last four bytes), so a different file under its name is noticed.
    package var previousCRC: UInt32
    /// Holds every event of the incarnation through `sequence`; the chain ends here.
    package var complete: Bool
    /// 2; 1 for a whole-history file of an older writer (`ActivityLogCodec`), read as complete.
    package var major: UInt8 = HistoryPieceCodec.major

    package init(zone: String, incarnation: SequenceNumber, sequence: SequenceNumber, previous: SequenceNumber = 0,
                previousCRC: UInt32 = 0, complete: Bool) {
        self.zone = zone
        self.incarnation = incarnation
        self.sequence = sequence
        self.previous = previous
        self.previousCRC = previousCRC
        self.complete = complete
    }
}

/// Writes one history piece event by event, in memory bounded by `chunkBytes`: the caller takes
/// each chunk (`takeChunk`) as it fills and writes it out, so a piece of any length is streamed.
/// Events are written in the order given (a compaction gives them in log order); each entry id
/// at most once is the caller's promise (a reader keeps the first of two).
package struct HistoryPieceEncoder: Sendable {
    /// Bytes encoded but not yet taken.
    package private(set) var pending = ByteWriter(capacity: 1 << 16)
    /// CRC32C of every byte taken so far.
    private var crc: UInt32 = 0
    /// Bytes taken so far.
    package private(set) var taken = 0
    private var authors: [String] = []
    private var lastAuthor = -1
    /// The latest copy of `zone` an entry carried (`zone` itself until one does).
    private var lastZone: String
    private var previousClock: UInt64 = 0
    package private(set) var events = 0
    package let zone: String
    private var finished = false

    package init(_ header: HistoryPieceHeader) {
        zone = header.zone
        lastZone = header.zone
        var w = ByteWriter(capacity: 64 + header.zone.utf8.count)
        w.append(contentsOf: HistoryPieceCodec.magic)
        w.u8(HistoryPieceCodec.major)
        w.u8(HistoryPieceCodec.minor)
        w.u8(header.complete ? 1 : 0)
        w.u8(UInt8(header.zone.utf8.count))
        w.u64(header.incarnation)
        w.u64(header.sequence)
        w.u64(header.previous)
        w.u32(header.previousCRC)
        w.append(contentsOf: Array(header.zone.utf8))
        w.u32(CRC32C.checksum(w.bytes))
        pending = w
    }

    /// Bytes waiting, at least: past this, a writer takes them.
    package static let chunkBytes = 1 << 20

    /// The pending bytes, counted into the CRC, and an empty buffer for what follows.
    package mutating func takeChunk() -> [UInt8] {
        let out = pending.bytes
        crc = CRC32C.extend(crc, out)
        taken += out.count
        pending.bytes.removeAll(keepingCapacity: true)
        return out
    }

    /// Adds the entry's event; false (nothing written) for entries the history does not keep
    /// (opaque kinds, `place`, another zone).
    @discardableResult
    package mutating func add(_ e: JournalEntry) -> Bool {
        if !sameBytes(e.zone, lastZone) {
            guard sameBytes(e.zone, zone) else { return false }
            // Kept: the entries after it in its batch share its storage, and answer at once.
            lastZone = e.zone
        }
        switch e.operation {
        case .add(let item, let text, _): event(.added, e, item: item, addText: .plain(text))
        case .markOff(let item): event(.markedOff, e, item: item)
        case .unmark(let item): event(.unmarked, e, item: item)
        case .delete(let item): event(.deleted, e, item: item)
        case .move(let item, _): event(.moved, e, item: item)
        case .rename(let t): event(.renamed, e, text: .plain(t))
        case .recolour(let t): event(.recoloured, e, text: .plain(t))
        case .join(let p): event(.joined, e, text: .plain(p))
        case .leave(let p): event(.left, e, text: .plain(p))
        case .opaque(SealedChange.addKind...SealedChange.recolourKind, _):
            switch (try? SealedChange(e.operation)) ?? nil {
            case .add(let item, _, let v)?: event(.added, e, item: item, addText: .sealed(SealedText(v, in: e, kind: SealedChange.addKind, item: item)))
            case .rename(let v)?: event(.renamed, e, text: .sealed(SealedText(v, in: e, kind: SealedChange.renameKind, item: nil)))
            case .recolour(let v)?: event(.recoloured, e, text: .sealed(SealedText(v, in: e, kind: SealedChange.recolourKind, item: nil)))
            case nil: return false
            }
        case .opaque, .place: return false
        }
        return true
    }

    private mutating func event(_ kind: ActivityKind, _ e: JournalEntry, item: CompactID? = nil, addText: ListText? = nil, text: ListText? = nil) {
        write(kind: kind, entry: e.id, author: e.author, clock: e.clock.rawValue, wall: e.wallTime, item: item,
              addText: addText, hasAddText: kind == .added, text: text)
    }

    /// One event as the encoding holds it (`addText` only for `added`, with `hasAddText`).
    /// A sealed text is written under its entry kind (0x41 an add carrying its sealed text, 0x42
    /// and 0x43 a sealed rename and recolour), its text as sealed bytes (SNAPSHOT.md §5.2).
    mutating func write(kind: ActivityKind, entry: CompactID, author: String, clock: UInt64, wall: Int64, item: CompactID?,
                        addText: ListText?, hasAddText: Bool, text: ListText?) {
        precondition(!finished, "events after finish")
        let carried = kind == .added ? (hasAddText ? addText : nil) : text
        let sealed = carried?.sealedText
        pending.u8(sealed == nil ? kind.rawValue : kind == .added ? SealedChange.addKind : ActivityLogCodec.sealedKind(kind))
        entry.encoded(into: &pending)
        if lastAuthor >= 0 && sameBytes(authors[lastAuthor], author) {
            pending.varint(UInt64(lastAuthor))
        } else if let a = authors.lastIndex(where: { sameBytes($0, author) }) {
            // The copy just given is kept: the entries after it in its batch share its storage,
            // and `sameBytes` answers for the same storage at once.
            authors[a] = author
            lastAuthor = a
            pending.varint(UInt64(a))
        } else {
            pending.varint(UInt64(authors.count))
            pending.string(author)
            authors.append(author)
            lastAuthor = authors.count - 1
        }
        pending.zigzag(Int64(bitPattern: clock &- previousClock))
        previousClock = clock
        pending.zigzag(wall &- Int64(bitPattern: HybridTime(rawValue: clock).physicalMillis))
        if kind.isItemEvent {
            item!.encoded(into: &pending)
            if kind == .added {
                if let carried {
                    pending.u8(1)
                    Self.put(carried, &pending)
                } else {
                    pending.u8(0)
                }
            }
        } else {
            Self.put(text ?? .plain(""), &pending)
        }
        events += 1
    }

    /// A text as a piece holds it: a string, or sealed bytes (the event's kind says which).
    private static func put(_ t: ListText, _ w: inout ByteWriter) {
        switch t {
        case .plain(let s): w.string(s)
        case .sealed(let v): SnapshotCodec.sealedBytes(v.value, into: &w)
        }
    }

    /// Adds every event of `log` (with its item texts), as `HistoryPieceCodec.encode` does.
    package mutating func add(contentsOf log: ActivityLog) {
        log.forEachStoredEvent { kind, entry, author, clock, wall, item, text, itemText in
            write(kind: kind, entry: entry, author: author, clock: clock, wall: wall, item: item, addText: itemText,
                  hasAddText: itemText != nil, text: text)
        }
    }

    /// Ends the events; the last chunk, with the file CRC, follows in `takeChunk()`.
    package mutating func finish() {
        precondition(!finished, "finished twice")
        pending.u8(0)
        let crc = CRC32C.extend(self.crc, pending.bytes)
        pending.u32(crc)
        finished = true
    }
}

/// History pieces (Spec/SNAPSHOT.md §5): the files a zone's history is kept in once compaction
/// removes entries from the log. Decoding is strict and never traps (fuzzed by `FuzzHistory`).
package enum HistoryPieceCodec {
    package static let magic = ActivityLogCodec.magic
    package static let major: UInt8 = 2
    package static let minor: UInt8 = 0
    /// Largest piece accepted or produced.
    package static let maxBytes = ActivityLogCodec.maxBytes
    /// Bytes before the zone name in a major-2 header.
    static let fixedHeader = 36

    /// The header alone, from a file's first bytes (at most `fixedHeader + 255 + 4` are needed).
    /// A major-1 file (an older writer's whole history) has no header: nil, read it with `decode`.
    package static func decodeHeader(_ bytes: UnsafeRawBufferPointer) throws(ActivityLogError) -> HistoryPieceHeader? {
        guard bytes.count >= 6 else { throw .malformed("truncated", offset: bytes.count) }
        guard magic.elementsEqual(bytes[0..<4]) else { throw .badMagic }
        if bytes[4] == ActivityLogCodec.major { return nil }
        guard bytes[4] == major else { throw .unsupportedMajor(bytes[4]) }
        guard bytes.count >= fixedHeader + 4 else { throw .malformed("truncated", offset: bytes.count) }
        let flags = bytes[6], zoneLength = Int(bytes[7])
        guard flags & ~1 == 0 else { throw .malformed("unknown flags \(flags)", offset: 6) }
        guard zoneLength >= 1 else { throw .malformed("empty zone", offset: 7) }
        let end = fixedHeader + zoneLength
        guard bytes.count >= end + 4 else { throw .malformed("truncated", offset: bytes.count) }
        guard CRC32C.extend(0, UnsafeRawBufferPointer(rebasing: bytes[0..<end])) == bytes.u32At(end) else { throw .checksumMismatch }
        guard let zone = validUTF8String(UnsafeRawBufferPointer(rebasing: bytes[fixedHeader..<end])) else {
            throw .malformed("the zone is not UTF-8", offset: fixedHeader)
        }
        let h = HistoryPieceHeader(zone: zone, incarnation: bytes.u64At(8), sequence: bytes.u64At(16), previous: bytes.u64At(24),
                                   previousCRC: bytes.u32At(32), complete: flags & 1 != 0)
        guard h.sequence < 1 << 62, h.incarnation < 1 << 62, h.incarnation <= h.sequence || h.sequence == 0 else {
            throw .malformed("sequence or incarnation out of range", offset: 8)
        }
        if h.complete || h.previous == 0 {
            guard h.previous == 0, h.previousCRC == 0 else { throw .malformed("a first or complete piece names a previous one", offset: 24) }
        } else {
            guard h.previous < h.sequence else { throw .malformed("the previous piece is not older", offset: 24) }
        }
        return h
    }

    /// Decodes a whole piece (or an older writer's whole history) into `log`, which must be of the
    /// same zone; events `log` already holds (by entry id) are skipped. Returns the header (a
    /// major-1 file's is complete, with incarnation and sequence 0: its file name says them).
    @discardableResult
    package static func decode(_ bytes: UnsafeRawBufferPointer, into log: inout ActivityLog) throws(ActivityLogError) -> HistoryPieceHeader {
        guard bytes.count <= maxBytes else { throw .tooLarge(bytes.count) }
        guard let header = try decodeHeader(bytes) else {
            let whole = try ActivityLogCodec.decode(bytes)
            guard whole.zone == log.zone else { throw .malformed("the history names zone \(whole.zone)", offset: 6) }
            log.merge(whole)
            return HistoryPieceHeader(zone: whole.zone, incarnation: 0, sequence: 0, complete: true).with(major: ActivityLogCodec.major)
        }
        guard header.zone == log.zone else { throw .malformed("the piece names zone \(header.zone)", offset: fixedHeader) }
        // The header and its CRC, the end of the events, the file CRC.
        let eventsStart = fixedHeader + header.zone.utf8.count + 4
        guard bytes.count >= eventsStart + 1 + 4 else { throw .malformed("truncated", offset: bytes.count) }
        let body = UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count - 4)])
        guard CRC32C.extend(0, body) == bytes.u32At(bytes.count - 4) else { throw .checksumMismatch }
        var r = ByteReader(body, offset: eventsStart)
        do throws(CodecError) {
            try decodeEvents(&r, into: &log)
        } catch {
            throw .malformed(error.description, offset: error.offset)
        }
        return header
    }

    package static func decode(_ bytes: [UInt8], into log: inout ActivityLog) throws(ActivityLogError) -> HistoryPieceHeader {
        let result: Result<HistoryPieceHeader, ActivityLogError> = bytes.withUnsafeBytes { p in
            do throws(ActivityLogError) { return .success(try decode(p, into: &log)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Decodes a whole piece on its own: its header and its events (a major-1 file's zone is in
    /// its body).
    package static func decode(_ bytes: [UInt8]) throws(ActivityLogError) -> (header: HistoryPieceHeader, log: ActivityLog) {
        let head: Result<HistoryPieceHeader?, ActivityLogError> = bytes.withUnsafeBytes { p in
            do throws(ActivityLogError) { return .success(try decodeHeader(p)) } catch { return .failure(error) }
        }
        guard let header = try head.get() else {
            let whole = try ActivityLogCodec.decode(bytes)
            return (HistoryPieceHeader(zone: whole.zone, incarnation: 0, sequence: 0, complete: true).with(major: ActivityLogCodec.major), whole)
        }
        var log = ActivityLog(zone: header.zone)
        return (try decode(bytes, into: &log), log)
    }

    /// The piece's `fileCRC` as stored (its last four bytes): what the next piece names.
    package static func storedCRC(_ bytes: UnsafeRawBufferPointer) -> UInt32? {
        bytes.count >= 4 ? bytes.u32At(bytes.count - 4) : nil
    }

    private static func decodeEvents(_ r: inout ByteReader, into log: inout ActivityLog) throws(CodecError) {
        var authors: [String] = []
        var interned: [Int32] = []  // piece's author number → the log's
        var previous: UInt64 = 0
        while let (e, number) = try decodeEvent(&r, zone: log.zone, authors: &authors, previous: &previous) {
            if interned.count < authors.count { interned.append(log.authors.intern(authors[authors.count - 1])) }
            log.recordEvent(entry: e.entry, kind: e.kind, author: interned[number], clock: e.clock, wallTime: e.wallTime, item: e.item,
                            text: e.text, addText: e.addText)
        }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
    }

    /// The next event at `r` and its author's number in the piece, or nil at the `00` byte that
    /// ends them; `authors` (the piece's numbering so far) and `previous` (the clock the next
    /// delta adds to) carry from one to the next.
    static func decodeEvent(_ r: inout ByteReader, zone: String, authors: inout [String], previous: inout UInt64) throws(CodecError) -> (HistoryPieceEvent, Int)? {
        let at = r.offset
        let k = try r.u8()
        if k == 0 { return nil }
        guard let kind = k == SealedChange.addKind ? .added : ActivityLogCodec.kind(k) else {
            throw CodecError(.invalidValue(field: "event kind"), at: at)
        }
        let sealed = k != kind.rawValue
        let entry = try CompactID.decoded(&r, field: "entry")
        let authorAt = r.offset
        let a = try r.varint()
        let author: String
        if a < UInt64(authors.count) {
            author = authors[Int(a)]
        } else if a == UInt64(authors.count) {
            author = try r.string("author", limit: Limits.maxAuthorBytes)
            // Each author is defined once: the encoding stays canonical.
            guard !authors.contains(where: { sameBytes($0, author) }) else {
                throw CodecError(.invalidValue(field: "author defined twice"), at: authorAt)
            }
            authors.append(author)
        } else {
            throw CodecError(.invalidValue(field: "author index"), at: authorAt)
        }
        // Any 64 bits are a clock (a 48-bit physical part and a counter): deltas wrap.
        let clock = previous &+ UInt64(bitPattern: try r.zigzag())
        previous = clock
        let wallAt = r.offset
        let (wall, wallOverflow) = Int64(bitPattern: HybridTime(rawValue: clock).physicalMillis).addingReportingOverflow(try r.zigzag())
        guard !wallOverflow else { throw CodecError(.invalidValue(field: "wallTime"), at: wallAt) }
        var e = HistoryPieceEvent(kind: kind, entry: entry, author: author, clock: clock, wallTime: wall)
        if kind.isItemEvent {
            e.item = try CompactID.decoded(&r, field: "item")
            if kind == .added {
                let flagAt = r.offset
                switch try r.u8() {
                case 0 where !sealed: break
                case 1:
                    e.addText = sealed ? .sealed(SealedText(try SnapshotCodec.sealedValue(&r, "text"), zone: zone, entry: entry, kind: k,
                                                            item: e.item, author: author, clock: HybridTime(rawValue: clock), wallTime: wall))
                        : .plain(try r.string("text", limit: Limits.maxTextBytes, allowEmpty: true))
                default: throw CodecError(.invalidValue(field: "text flag"), at: flagAt)
                }
            }
        } else if sealed {
            e.text = .sealed(SealedText(try SnapshotCodec.sealedValue(&r, "text"), zone: zone, entry: entry, kind: k, item: nil,
                                        author: author, clock: HybridTime(rawValue: clock), wallTime: wall))
        } else {
            let limit = kind == .joined || kind == .left ? Limits.maxAuthorBytes : Limits.maxTextBytes
            e.text = .plain(try r.string("text", limit: limit, allowEmpty: kind == .renamed || kind == .recoloured))
        }
        return (e, Int(a))
    }

    /// A whole history as one piece (what `writeHistory` installs: complete, or a delta when
    /// `header` says so). Events in the log's recording order; each add carries its item's text
    /// when it is the add that text came from.
    package static func encode(_ log: ActivityLog, header: HistoryPieceHeader) -> [UInt8] {
        var e = HistoryPieceEncoder(header)
        e.add(contentsOf: log)
        e.finish()
        return e.takeChunk()
    }
}

extension HistoryPieceHeader {
    func with(major: UInt8) -> HistoryPieceHeader {
        var h = self
        h.major = major
        return h
    }
}

import JournalCodec

/// What an activity event did; the raw values are the operation kinds of FORMAT.md §6.
public enum ActivityKind: UInt8, Hashable, Sendable, CaseIterable {
    case added = 1, markedOff = 2, unmarked = 3, deleted = 4, renamed = 5, recoloured = 6, joined = 7, left = 8

    /// Whether the event is about one item (and so carries `item`).
    public var isItemEvent: Bool { rawValue <= 4 }
}

/// One change in a list's history: who, what, when.
public struct ActivityEvent: Hashable, Sendable {
    public var entryID: CompactID
    public var kind: ActivityKind
    public var author: String
    public var wallTime: Int64
    public var clock: HybridTime
    /// The item, for item events.
    public var item: CompactID?
    /// For item events the item's text (from its winning add, nil if no add is known); the new
    /// name or colour for renames and recolours; the participant for joins and leaves.
    public var text: String?

    public init(entryID: CompactID, kind: ActivityKind, author: String, wallTime: Int64, clock: HybridTime,
                item: CompactID?, text: String?) {
        self.entryID = entryID
        self.kind = kind
        self.author = author
        self.wallTime = wallTime
        self.clock = clock
        self.item = item
        self.text = text
    }

    public var key: ChangeKey { ChangeKey(clock: clock, author: author, entry: entryID) }
}

/// How `ActivityLog` queries match item text. Both ignore case.
public enum TextMatch: Sendable {
    case exact
    case contains
}

/// The history of one zone: every interpreted change (opaque kinds are not), deduplicated by
/// entry id and ordered by (hlc, author, id). Answers "who deleted the milk?", "when did we last
/// buy coffee?" and "what happened to this item?". Pure function of the set of entries recorded.
public struct ActivityLog: Sendable, Equatable {
    public let zone: String
    /// Events by entry id; item events keep no text (it lives in `itemTexts`).
    var events: [CompactID: ActivityEvent] = [:]
    /// Each item's text from its winning add (lowest key, as in the reducer).
    var itemTexts: [CompactID: Register<String>] = [:]

    public init(zone: String) { self.zone = zone }

    public var count: Int { events.count }

    /// Records one entry. Returns false for duplicates, other zones and opaque kinds.
    @discardableResult
    public mutating func record(_ e: JournalEntry) -> Bool {
        guard e.zone.utf8.elementsEqual(zone.utf8), events[e.id] == nil else { return false }
        let kind: ActivityKind
        var item: CompactID? = nil, text: String? = nil
        switch e.operation {
        case .add(let i, let t, _):
            kind = .added
            item = i
            let key = ChangeKey(e)
            if let r = itemTexts[i] {
                if key < r.key { itemTexts[i] = Register(key: key, value: t) }
            } else {
                itemTexts[i] = Register(key: key, value: t)
            }
        case .markOff(let i): kind = .markedOff; item = i
        case .unmark(let i): kind = .unmarked; item = i
        case .delete(let i): kind = .deleted; item = i
        case .rename(let t): kind = .renamed; text = t
        case .recolour(let t): kind = .recoloured; text = t
        case .join(let p): kind = .joined; text = p
        case .leave(let p): kind = .left; text = p
        case .opaque: return false
        }
        events[e.id] = ActivityEvent(entryID: e.id, kind: kind, author: e.author, wallTime: e.wallTime, clock: e.clock,
                                     item: item, text: text)
        return true
    }

    @discardableResult
    public mutating func record<S: Sequence>(contentsOf entries: S) -> Int where S.Element == JournalEntry {
        var n = 0
        for e in entries where record(e) { n += 1 }
        return n
    }

    /// The item's text from its winning add, if an add is known.
    public func text(of item: CompactID) -> String? { itemTexts[item]?.value }

    /// Every event in (hlc, author, id) order, item events with their item's text.
    public func allEvents() -> [ActivityEvent] {
        events.values.map(resolved).sorted { $0.key < $1.key }
    }

    /// "What happened to this item?": its events in clock order.
    public func events(forItem item: CompactID) -> [ActivityEvent] {
        events.values.filter { $0.item == item }.map(resolved).sorted { $0.key < $1.key }
    }

    /// Items whose text matches `text`, ignoring case.
    public func items(matching text: String, _ match: TextMatch = .exact) -> Set<CompactID> {
        let needle = text.lowercased()
        var out: Set<CompactID> = []
        for (id, r) in itemTexts {
            let t = r.value.lowercased()
            if match == .exact ? t == needle : t.contains(needle) { out.insert(id) }
        }
        return out
    }

    /// "Who deleted the milk?": deletions of this item, in clock order.
    public func deletions(of item: CompactID) -> [ActivityEvent] {
        events(forItem: item).filter { $0.kind == .deleted }
    }

    /// "Who deleted the milk?" by text: deletions of every item whose text matches, in clock order.
    public func deletions(ofItemsMatching text: String, _ match: TextMatch = .exact) -> [ActivityEvent] {
        events(of: items(matching: text, match), kind: .deleted)
    }

    /// "When did we last buy coffee?": the latest markOff of any item whose text matches.
    public func lastMarkOff(ofItemsMatching text: String, _ match: TextMatch = .exact) -> ActivityEvent? {
        events(of: items(matching: text, match), kind: .markedOff).last
    }

    /// Joins and leaves, in clock order.
    public func participantEvents() -> [ActivityEvent] {
        events.values.filter { $0.kind == .joined || $0.kind == .left }.sorted { $0.key < $1.key }
    }

    private func events(of items: Set<CompactID>, kind: ActivityKind) -> [ActivityEvent] {
        guard !items.isEmpty else { return [] }
        return events.values.filter { $0.kind == kind && items.contains($0.item!) }.map(resolved).sorted { $0.key < $1.key }
    }

    private func resolved(_ e: ActivityEvent) -> ActivityEvent {
        guard let item = e.item else { return e }
        var e = e
        e.text = itemTexts[item]?.value
        return e
    }
}

// MARK: - Compact encoding

/// Why history bytes were rejected.
public enum ActivityLogError: Error, Equatable, Sendable {
    case badMagic
    case unsupportedMajor(UInt8)
    case checksumMismatch
    case tooLarge(Int)
    case malformed(String, offset: Int)
}

/// The compact, versioned, checksummed form of an `ActivityLog` (Spec/SNAPSHOT.md §5), kept
/// next to a snapshot so that history survives compaction. Lossless for every query: each event
/// is kept; only superseded copies of item text (re-adds that lost) are dropped.
public enum ActivityLogCodec {
    public static let magic: [UInt8] = [0x4A, 0x4C, 0x41, 0x48] // "JLAH"
    public static let major: UInt8 = 1
    public static let minor: UInt8 = 0
    /// Largest encoding accepted or produced.
    public static let maxBytes = 256 << 20

    public static func encode(_ log: ActivityLog) -> [UInt8] {
        let events = log.events.values.sorted { $0.key < $1.key }
        var authorSet: Set<ExactString> = []
        for e in events { authorSet.insert(ExactString(e.author)) }
        for r in log.itemTexts.values { authorSet.insert(ExactString(r.key.author)) }
        let authors = authorSet.map(\.value).sorted(by: utf8Less)
        var authorIndex: [ExactString: Int] = [:]
        for (i, a) in authors.enumerated() { authorIndex[ExactString(a)] = i }
        var itemSet = Set(log.itemTexts.keys)
        for e in events { if let i = e.item { itemSet.insert(i) } }
        let itemIDs = itemSet.sorted()
        var itemIndex: [CompactID: Int] = [:]
        for (i, id) in itemIDs.enumerated() { itemIndex[id] = i }

        var w = ByteWriter(capacity: 64 + events.count * 32)
        w.append(contentsOf: magic)
        w.u8(major)
        w.u8(minor)
        w.string(log.zone)
        w.varint(UInt64(authors.count))
        for a in authors { w.string(a) }
        w.varint(UInt64(itemIDs.count))
        for id in itemIDs {
            id.encoded(into: &w)
            if let r = log.itemTexts[id] {
                w.u8(1)
                w.varint(r.key.clock.rawValue)
                w.varint(UInt64(authorIndex[ExactString(r.key.author)]!))
                r.key.entry.encoded(into: &w)
                w.string(r.value)
            } else {
                w.u8(0)
            }
        }
        w.varint(UInt64(events.count))
        var previous: UInt64 = 0
        for e in events {
            w.u8(e.kind.rawValue)
            e.entryID.encoded(into: &w)
            w.varint(UInt64(authorIndex[ExactString(e.author)]!))
            w.varint(e.clock.rawValue - previous)
            previous = e.clock.rawValue
            w.zigzag(e.wallTime &- Int64(bitPattern: e.clock.physicalMillis))
            if let item = e.item { w.varint(UInt64(itemIndex[item]!)) } else { w.string(e.text ?? "") }
        }
        w.u32(CRC32C.checksum(w.bytes))
        return w.bytes
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(ActivityLogError) -> ActivityLog {
        guard bytes.count <= maxBytes else { throw .tooLarge(bytes.count) }
        guard bytes.count >= 10 else { throw .malformed("truncated", offset: bytes.count) }
        guard magic.elementsEqual(bytes[0..<4]) else { throw .badMagic }
        guard bytes[4] == major else { throw .unsupportedMajor(bytes[4]) }
        let body = UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count - 4)])
        guard CRC32C.extend(0, body) == bytes.u32At(bytes.count - 4) else { throw .checksumMismatch }
        var r = ByteReader(body, offset: 6)
        do throws(CodecError) {
            return try decodeBody(&r)
        } catch {
            throw .malformed(error.description, offset: error.offset)
        }
    }

    public static func decode(_ bytes: [UInt8]) throws(ActivityLogError) -> ActivityLog {
        let result: Result<ActivityLog, ActivityLogError> = bytes.withUnsafeBytes { p in
            do throws(ActivityLogError) { return .success(try decode(p)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private static func decodeBody(_ r: inout ByteReader) throws(CodecError) -> ActivityLog {
        var log = ActivityLog(zone: try r.string("zone", limit: Limits.maxZoneBytes))
        let authors = try decodeAuthors(&r)
        func author(_ r: inout ByteReader) throws(CodecError) -> String {
            let at = r.offset
            let i = try r.varint()
            guard i < UInt64(authors.count) else { throw CodecError(.invalidValue(field: "author index"), at: at) }
            return authors[Int(i)]
        }
        let itemCount = try count(&r, "items", minBytes: 3)
        var items: [CompactID] = []
        items.reserveCapacity(itemCount)
        for _ in 0..<itemCount {
            let at = r.offset
            let id = try CompactID.decoded(&r, field: "item")
            if let last = items.last, !(last < id) { throw CodecError(.invalidValue(field: "item order"), at: at) }
            items.append(id)
            switch try r.u8() {
            case 0: break
            case 1:
                let clock = try clockValue(&r)
                let a = try author(&r)
                let entry = try CompactID.decoded(&r, field: "entry")
                let text = try r.string("text", limit: Limits.maxTextBytes, allowEmpty: true)
                log.itemTexts[id] = Register(key: ChangeKey(clock: clock, author: a, entry: entry), value: text)
            default: throw CodecError(.invalidValue(field: "text flag"), at: r.offset - 1)
            }
        }
        let eventCount = try count(&r, "events", minBytes: 5)
        log.events.reserveCapacity(eventCount)
        var previous: UInt64 = 0
        var previousKey: ChangeKey? = nil
        for _ in 0..<eventCount {
            let at = r.offset
            guard let kind = ActivityKind(rawValue: try r.u8()) else { throw CodecError(.invalidValue(field: "event kind"), at: at) }
            let entryID = try CompactID.decoded(&r, field: "entry")
            let a = try author(&r)
            let deltaAt = r.offset
            let (raw, overflow) = previous.addingReportingOverflow(try r.varint())
            guard !overflow, raw >> 16 < 1 << 48 else { throw CodecError(.invalidValue(field: "clock"), at: deltaAt) }
            previous = raw
            let clock = HybridTime(rawValue: raw)
            let wallAt = r.offset
            let (wall, wallOverflow) = Int64(bitPattern: clock.physicalMillis).addingReportingOverflow(try r.zigzag())
            guard !wallOverflow else { throw CodecError(.invalidValue(field: "wallTime"), at: wallAt) }
            var item: CompactID? = nil, text: String? = nil
            if kind.isItemEvent {
                let ia = r.offset
                let i = try r.varint()
                guard i < UInt64(items.count) else { throw CodecError(.invalidValue(field: "item index"), at: ia) }
                item = items[Int(i)]
            } else {
                let limit = kind == .joined || kind == .left ? Limits.maxAuthorBytes : Limits.maxTextBytes
                text = try r.string("text", limit: limit, allowEmpty: kind == .renamed || kind == .recoloured)
            }
            let e = ActivityEvent(entryID: entryID, kind: kind, author: a, wallTime: wall, clock: clock, item: item, text: text)
            // Strictly increasing keys: canonical, and no entry id twice.
            if let p = previousKey, !(p < e.key) { throw CodecError(.invalidValue(field: "event order"), at: at) }
            guard log.events[entryID] == nil else { throw CodecError(.invalidValue(field: "duplicate entry"), at: at) }
            previousKey = e.key
            log.events[entryID] = e
        }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return log
    }

    static func clockValue(_ r: inout ByteReader) throws(CodecError) -> HybridTime {
        let at = r.offset
        let v = try r.varint()
        guard v >> 16 < 1 << 48 else { throw CodecError(.invalidValue(field: "clock"), at: at) }
        return HybridTime(rawValue: v)
    }

    /// A count that cannot exceed what the remaining bytes could hold (`minBytes` per element).
    /// The author table shared by history and snapshot bodies: a count, then strictly increasing
    /// (by UTF-8 bytes) author strings, so each has exactly one encoding.
    static func decodeAuthors(_ r: inout ByteReader) throws(CodecError) -> [String] {
        let authorCount = try count(&r, "authors", minBytes: 2)
        var authors: [String] = []
        authors.reserveCapacity(authorCount)
        for _ in 0..<authorCount {
            let at = r.offset
            let a = try r.string("author", limit: Limits.maxAuthorBytes)
            if let last = authors.last, !utf8Less(last, a) { throw CodecError(.invalidValue(field: "author order"), at: at) }
            authors.append(a)
        }
        return authors
    }

    static func count(_ r: inout ByteReader, _ field: String, minBytes: Int) throws(CodecError) -> Int {
        let at = r.offset
        let v = try r.varint()
        let limit = r.remaining / minBytes
        guard v <= UInt64(limit) else {
            throw CodecError(.lengthOutOfRange(field: field, length: Int(clamping: v), limit: limit), at: at)
        }
        return Int(v)
    }
}

extension UnsafeRawBufferPointer {
    @inline(__always) func u32At(_ i: Int) -> UInt32 { loadUnaligned(fromByteOffset: i, as: UInt32.self).littleEndian }
    @inline(__always) func u64At(_ i: Int) -> UInt64 { loadUnaligned(fromByteOffset: i, as: UInt64.self).littleEndian }
    @inline(__always) func u16At(_ i: Int) -> UInt16 { loadUnaligned(fromByteOffset: i, as: UInt16.self).littleEndian }
}

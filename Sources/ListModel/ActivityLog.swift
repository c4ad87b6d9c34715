import JournalCodec

/// What an activity event did; the raw values are the operation kinds of FORMAT.md §6.
public enum ActivityKind: UInt8, Hashable, Sendable, CaseIterable {
    /// One case per interpreted operation: an item added, marked off, unmarked or deleted; the list
    /// renamed or recoloured; a participant joined or left.
    case added = 1, markedOff = 2, unmarked = 3, deleted = 4, renamed = 5, recoloured = 6, joined = 7, left = 8
    /// An item moved to another place on the list (MERGE.md §3.5).
    case moved = 0x40

    /// Whether the event is about one item (and so carries `item`).
    public var isItemEvent: Bool { rawValue <= 4 || self == .moved }
}

/// One change in a list's history: who, what, when.
public struct ActivityEvent: Hashable, Sendable {
    /// The id of the entry that made the change.
    public var entryID: CompactID
    /// What the change did.
    public var kind: ActivityKind
    /// The replica (device or person) that made the change.
    public var author: String
    /// Wall-clock milliseconds since 1970, as the author's device saw it; use it to show when.
    public var wallTime: Int64
    /// The entry's hybrid time, which orders events consistently on every replica.
    public var clock: HybridTime
    /// The item, for item events.
    public var item: CompactID?
    /// For item events the item's text (from its winning add, nil if no add is known); the new
    /// name or colour for renames and recolours; the participant for joins and leaves. Nil when
    /// that text is sealed (`sealedText`).
    public var text: String?
    /// The item's text, or the new name or colour, when it is sealed for the list's members
    /// (Spec/SEALING.md §5): a member's device opens it.
    public var sealedText: SealedText?

    /// Creates an event from all its fields.
    public init(entryID: CompactID, kind: ActivityKind, author: String, wallTime: Int64, clock: HybridTime,
                item: CompactID?, text: String?, sealedText: SealedText? = nil) {
        self.entryID = entryID
        self.kind = kind
        self.author = author
        self.wallTime = wallTime
        self.clock = clock
        self.item = item
        self.text = text
        self.sealedText = sealedText
    }

    package var key: ChangeKey { ChangeKey(clock: clock, author: author, entry: entryID) }
}

/// How `ActivityLog` queries match item text. Both ignore case.
public enum TextMatch: Sendable {
    /// The item's whole text equals the query.
    case exact
    /// The item's text contains the query anywhere.
    case contains
}

/// The history of one zone: every interpreted change (opaque kinds are not), deduplicated by
/// entry id and ordered by (hlc, author, id). Answers "who deleted the milk?", "when did we last
/// buy coffee?" and "what happened to this item?". Pure function of the set of entries recorded.
///
/// Storage (ActivityLogStorage.swift): events in one array in recording order, found by entry id
/// through an `IDMap`; items (every item an event names) in another, each with its winning add's
/// text; authors interned by their exact bytes. Ordering happens only when asked for, by sorting
/// indices on a precomputed (clock, author rank) key.
public struct ActivityLog: Sendable, Equatable {
    /// The zone (list) whose history this is.
    public let zone: String
    /// Events in recording (or decoding) order; item events keep no text (it lives in `itemTable`).
    var stored: [StoredEvent] = []
    /// Entry id → index in `stored`.
    var eventIndex = IDMap<Int32>()
    /// Every item an event is about: its id and its text from its winning add (lowest key, as
    /// in the reducer), if an add is known.
    var itemTable: [HistoryItem] = []
    /// Item id → index in `itemTable`.
    var itemIndex = IDMap<Int32>()
    /// How many items have a text.
    var textCount = 0
    /// Every author seen, each once by its exact bytes (possibly some no longer used).
    var authors = AuthorTable()

    package init(zone: String) { self.zone = zone }

    /// How many events are recorded.
    public var count: Int { stored.count }

    /// Whether the event of this entry is recorded.
    package func holds(_ entry: CompactID) -> Bool { eventIndex[entry] != nil }

    /// Records one entry. Returns false for duplicates, other zones, opaque kinds and `place`
    /// (the compactor's, standing in for an add the history already holds).
    @discardableResult
    package mutating func record(_ e: JournalEntry) -> Bool {
        guard sameBytes(e.zone, zone) else { return false }
        let kind: ActivityKind
        var item: CompactID? = nil, text: ListText? = nil, addText: ListText? = nil
        switch e.operation {
        case .add(let i, let t, _): kind = .added; item = i; addText = .plain(t)
        case .markOff(let i): kind = .markedOff; item = i
        case .unmark(let i): kind = .unmarked; item = i
        case .delete(let i): kind = .deleted; item = i
        case .move(let i, _): kind = .moved; item = i
        case .rename(let t): kind = .renamed; text = .plain(t)
        case .recolour(let t): kind = .recoloured; text = .plain(t)
        case .join(let p): kind = .joined; text = .plain(p)
        case .leave(let p): kind = .left; text = .plain(p)
        case .opaque(SealedChange.addKind...SealedChange.recolourKind, _):
            switch (try? SealedChange(e.operation)) ?? nil {
            case .add(let i, _, let v)?: kind = .added; item = i; addText = .sealed(SealedText(v, in: e, kind: SealedChange.addKind, item: i))
            case .rename(let v)?: kind = .renamed; text = .sealed(SealedText(v, in: e, kind: SealedChange.renameKind, item: nil))
            case .recolour(let v)?: kind = .recoloured; text = .sealed(SealedText(v, in: e, kind: SealedChange.recolourKind, item: nil))
            case nil: return false
            }
        case .opaque, .place: return false
        }
        guard eventIndex[e.id] == nil else { return false }
        return recordEvent(entry: e.id, kind: kind, author: authors.intern(e.author), clock: e.clock.rawValue, wallTime: e.wallTime,
                           item: item, text: text, addText: addText)
    }

    /// Records one event (`author` already interned); false when the entry id is recorded
    /// already. `addText` is an add's text, offered to its item (the lowest key wins).
    @discardableResult
    mutating func recordEvent(entry: CompactID, kind: ActivityKind, author: Int32, clock: UInt64, wallTime: Int64,
                              item: CompactID?, text: ListText?, addText: ListText?) -> Bool {
        let n = Int32(stored.count)
        guard eventIndex.findOrInsert(entry, n) == n else { return false }
        var slot: Int32 = -1
        if let item {
            slot = internItem(item)
            if let t = addText {
                offerText(slot, ChangeKey(clock: HybridTime(rawValue: clock), author: authors.strings[Int(author)], entry: entry), author, t)
            }
        }
        stored.append(StoredEvent(entryID: entry, clock: clock, wallTime: wallTime, author: author,
                                  item: slot, kind: kind, text: text))
        return true
    }

    /// Adds every event of `other` (same zone) this log lacks, and its item texts.
    mutating func merge(_ other: ActivityLog) {
        var authorMap = [Int32](repeating: -1, count: other.authors.count)
        for i in other.authors.strings.indices { authorMap[i] = authors.intern(other.authors.strings[i]) }
        for e in other.stored {
            recordEvent(entry: e.entryID, kind: e.kind, author: authorMap[Int(e.author)], clock: e.clock, wallTime: e.wallTime,
                        item: e.item >= 0 ? other.itemTable[Int(e.item)].id : nil, text: e.text, addText: nil)
        }
        for it in other.itemTable {
            guard let r = it.text else { continue }
            offerText(internItem(it.id), r.key, authorMap[Int(it.textAuthor)], r.value)
        }
    }

    /// Every stored event in recording order, item events with the item's text when this event
    /// is the add that text came from (what a history piece writes).
    func forEachStoredEvent(_ body: (ActivityKind, CompactID, String, UInt64, Int64, CompactID?, ListText?, ListText?) -> Void) {
        for e in stored {
            var item: CompactID? = nil, itemText: ListText? = nil
            if e.item >= 0 {
                let it = itemTable[Int(e.item)]
                item = it.id
                if e.kind == .added, let r = it.text, r.key.entry == e.entryID, r.key.clock.rawValue == e.clock,
                   sameBytes(r.key.author, authors.strings[Int(e.author)]) {
                    itemText = r.value
                }
            }
            body(e.kind, e.entryID, authors.strings[Int(e.author)], e.clock, e.wallTime, item, e.text, itemText)
        }
    }

    @discardableResult
    package mutating func record<S: Sequence>(contentsOf entries: S) -> Int where S.Element == JournalEntry {
        var n = 0
        for e in entries where record(e) { n += 1 }
        return n
    }

    /// The item's text from its winning add, if an add is known and its text is plain.
    public func text(of item: CompactID) -> String? {
        guard let s = itemIndex[item] else { return nil }
        return itemTable[Int(s)].text?.value.plain
    }

    /// The item's text from its winning add, plain or sealed, if an add is known.
    public func listText(of item: CompactID) -> ListText? {
        guard let s = itemIndex[item] else { return nil }
        return itemTable[Int(s)].text?.value
    }

    /// Every event in (hlc, author, id) order, item events with their item's text.
    public func allEvents() -> [ActivityEvent] {
        sortedIndices(Array(0..<Int32(stored.count))).map { resolved(Int($0)) }
    }

    /// "What happened to this item?": its events in clock order.
    public func events(forItem item: CompactID) -> [ActivityEvent] {
        guard let slot = itemIndex[item] else { return [] }
        return inOrder { $0.item == slot }
    }

    /// Items whose text matches `text`, ignoring case. A sealed text matches only when `open`
    /// opens it (a member's device passes its keyring's opener; the service has none).
    public func items(matching text: String, _ match: TextMatch = .exact,
                      opening open: (SealedText) -> String? = { _ in nil }) -> Set<CompactID> {
        let needle = text.lowercased()
        var out: Set<CompactID> = []
        for it in itemTable {
            guard let r = it.text else { continue }
            let plain: String?
            switch r.value {
            case .plain(let s): plain = s
            case .sealed(let v): plain = open(v)
            }
            guard let t = plain?.lowercased() else { continue }
            if match == .exact ? t == needle : t.contains(needle) { out.insert(it.id) }
        }
        return out
    }

    /// "Who deleted the milk?": deletions of this item, in clock order.
    public func deletions(of item: CompactID) -> [ActivityEvent] {
        events(forItem: item).filter { $0.kind == .deleted }
    }

    /// "Who deleted the milk?" by text: deletions of every item whose text matches, in clock
    /// order (sealed texts through `open`, as in `items(matching:_:opening:)`).
    public func deletions(ofItemsMatching text: String, _ match: TextMatch = .exact,
                          opening open: (SealedText) -> String? = { _ in nil }) -> [ActivityEvent] {
        events(of: items(matching: text, match, opening: open), kind: .deleted)
    }

    /// "When did we last buy coffee?": the latest markOff of any item whose text matches
    /// (sealed texts through `open`).
    public func lastMarkOff(ofItemsMatching text: String, _ match: TextMatch = .exact,
                            opening open: (SealedText) -> String? = { _ in nil }) -> ActivityEvent? {
        events(of: items(matching: text, match, opening: open), kind: .markedOff).last
    }

    /// Joins and leaves, in clock order.
    public func participantEvents() -> [ActivityEvent] {
        inOrder { $0.kind == .joined || $0.kind == .left }
    }

    private func events(of matching: Set<CompactID>, kind: ActivityKind) -> [ActivityEvent] {
        guard !matching.isEmpty else { return [] }
        var slots = [Bool](repeating: false, count: itemTable.count)
        for id in matching { if let s = itemIndex[id] { slots[Int(s)] = true } }
        return inOrder { $0.kind == kind && $0.item >= 0 && slots[Int($0.item)] }
    }

    /// The events passing `include`, resolved, in (hlc, author, id) order.
    private func inOrder(_ include: (StoredEvent) -> Bool) -> [ActivityEvent] {
        var picked: [Int32] = []
        stored.withUnsafeBufferPointer { p in
            for i in p.indices where include(p[i]) { picked.append(Int32(i)) }
        }
        return sortedIndices(picked).map { resolved(Int($0)) }
    }

    /// Equal iff the same zone, the same events by entry id and the same item texts: what the
    /// dictionaries this storage replaced compared, whatever the order of recording.
    public static func == (a: ActivityLog, b: ActivityLog) -> Bool {
        guard a.zone == b.zone, a.stored.count == b.stored.count, a.textCount == b.textCount else { return false }
        for i in a.stored.indices {
            guard let j = b.eventIndex[a.stored[i].entryID], a.event(i) == b.event(Int(j)) else { return false }
        }
        for it in a.itemTable {
            guard let t = it.text else { continue }
            guard let s = b.itemIndex[it.id], let u = b.itemTable[Int(s)].text, u == t else { return false }
        }
        return true
    }
}

// MARK: - Compact encoding

/// Why history bytes were rejected.
package enum ActivityLogError: Error, Equatable, Sendable {
    case badMagic
    case unsupportedMajor(UInt8)
    case checksumMismatch
    case tooLarge(Int)
    case malformed(String, offset: Int)
}

/// The compact, versioned, checksummed form of an `ActivityLog` (Spec/SNAPSHOT.md §5), kept
/// next to a snapshot so that history survives compaction. Lossless for every query: each event
/// is kept; only superseded copies of item text (re-adds that lost) are dropped.
package enum ActivityLogCodec {
    package static let magic: [UInt8] = [0x4A, 0x4C, 0x41, 0x48] // "JLAH"
    package static let major: UInt8 = 1
    package static let minor: UInt8 = 0
    /// Largest encoding accepted or produced.
    package static let maxBytes = 256 << 20

    package static func encode(_ log: ActivityLog) -> [UInt8] {
        let stored = log.stored, items = log.itemTable
        // Authors: those an event or an item text names, by UTF-8 bytes.
        var used = [Bool](repeating: false, count: log.authors.count)
        stored.withUnsafeBufferPointer { p in for i in p.indices { used[Int(p[i].author)] = true } }
        for it in items where it.textAuthor >= 0 { used[Int(it.textAuthor)] = true }
        let byBytes = log.authors.byteOrder()
        var authorRank = [Int32](repeating: -1, count: log.authors.count)
        var authors: [String] = []
        for a in byBytes where used[Int(a)] {
            authorRank[Int(a)] = Int32(authors.count)
            authors.append(log.authors.strings[Int(a)])
        }
        let order = log.sortedIndices(Array(0..<Int32(stored.count)), rank: authorRank)
        // Items: every one an event names (or with a text), by id.
        let itemOrder = log.sortedItems()
        var itemRank = [Int32](repeating: -1, count: items.count)
        for (r, s) in itemOrder.enumerated() { itemRank[Int(s)] = Int32(r) }

        var w = ByteWriter(capacity: 64 + stored.count * 32)
        w.append(contentsOf: magic)
        w.u8(major)
        w.u8(minor)
        w.string(log.zone)
        w.varint(UInt64(authors.count))
        for a in authors { w.string(a) }
        w.varint(UInt64(itemOrder.count))
        for s in itemOrder {
            let it = items[Int(s)]
            it.id.encoded(into: &w)
            if let r = it.text {
                w.u8(r.value.sealedText == nil ? 1 : 2)
                w.varint(r.key.clock.rawValue)
                w.varint(UInt64(authorRank[Int(it.textAuthor)]))
                r.key.entry.encoded(into: &w)
                switch r.value {
                case .plain(let s): w.string(s)
                case .sealed(let v):
                    w.zigzag(v.binding.wallTime &- Int64(bitPattern: r.key.clock.physicalMillis))
                    SnapshotCodec.sealedBytes(v.value, into: &w)
                }
            } else {
                w.u8(0)
            }
        }
        w.varint(UInt64(stored.count))
        var previous: UInt64 = 0
        stored.withUnsafeBufferPointer { p in
            for i in order {
                let i = Int(i)
                w.u8(p[i].text?.sealedText == nil ? p[i].kind.rawValue : ActivityLogCodec.sealedKind(p[i].kind))
                p[i].entryID.encoded(into: &w)
                w.varint(UInt64(authorRank[Int(p[i].author)]))
                let clock = p[i].clock
                w.varint(clock - previous)
                previous = clock
                w.zigzag(p[i].wallTime &- Int64(bitPattern: HybridTime(rawValue: clock).physicalMillis))
                if p[i].item >= 0 {
                    w.varint(UInt64(itemRank[Int(p[i].item)]))
                } else if let v = p[i].text?.sealedText {
                    SnapshotCodec.sealedBytes(v.value, into: &w)
                } else {
                    w.string(p[i].text?.plain ?? "")
                }
            }
        }
        w.u32(CRC32C.checksum(w.bytes))
        return w.bytes
    }

    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(ActivityLogError) -> ActivityLog {
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

    package static func decode(_ bytes: [UInt8]) throws(ActivityLogError) -> ActivityLog {
        let result: Result<ActivityLog, ActivityLogError> = bytes.withUnsafeBytes { p in
            do throws(ActivityLogError) { return .success(try decode(p)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private static func decodeBody(_ r: inout ByteReader) throws(CodecError) -> ActivityLog {
        var log = ActivityLog(zone: try r.string("zone", limit: Limits.maxZoneBytes))
        let authors = try decodeAuthors(&r)
        // Strictly increasing by bytes, so index order is byte order.
        log.authors = AuthorTable(sortedUnique: authors)
        func author(_ r: inout ByteReader) throws(CodecError) -> Int32 {
            let at = r.offset
            let i = try r.varint()
            guard i < UInt64(authors.count) else { throw CodecError(.invalidValue(field: "author index"), at: at) }
            return Int32(i)
        }
        let itemCount = try count(&r, "items", minBytes: 3)
        var items: [CompactID] = []
        items.reserveCapacity(itemCount)
        // Index in log.itemTable of each listed item; an item without text that no event names is
        // dropped, as it always was.
        var slots: [Int32] = []
        slots.reserveCapacity(itemCount)
        for _ in 0..<itemCount {
            let at = r.offset
            let id = try CompactID.decoded(&r, field: "item")
            if let last = items.last, !(last < id) { throw CodecError(.invalidValue(field: "item order"), at: at) }
            items.append(id)
            let textFlag = try r.u8()
            switch textFlag {
            case 0: slots.append(-1)
            case 1, 2:
                let sealed = textFlag == 2
                let clock = try clockValue(&r)
                let a = try author(&r)
                let entry = try CompactID.decoded(&r, field: "entry")
                let text: ListText
                if sealed {
                    let wallAt = r.offset
                    let (wall, overflow) = Int64(bitPattern: clock.physicalMillis).addingReportingOverflow(try r.zigzag())
                    guard !overflow else { throw CodecError(.invalidValue(field: "wallTime"), at: wallAt) }
                    text = .sealed(SealedText(try SnapshotCodec.sealedValue(&r, "text"), zone: log.zone, entry: entry, kind: SealedChange.addKind,
                                              item: id, author: authors[Int(a)], clock: clock, wallTime: wall))
                } else {
                    text = .plain(try r.string("text", limit: Limits.maxTextBytes, allowEmpty: true))
                }
                let s = log.internItem(id)
                log.offerText(s, ChangeKey(clock: clock, author: authors[Int(a)], entry: entry), a, text)
                slots.append(s)
            default: throw CodecError(.invalidValue(field: "text flag"), at: r.offset - 1)
            }
        }
        let eventCount = try count(&r, "events", minBytes: 5)
        log.stored.reserveCapacity(eventCount)
        log.eventIndex.reserveCapacity(eventCount)
        var previous: UInt64 = 0
        var previousAuthor: Int32 = 0
        var previousEntry: CompactID? = nil
        for _ in 0..<eventCount {
            let at = r.offset
            let kindByte = try r.u8()
            guard let kind = ActivityLogCodec.kind(kindByte) else { throw CodecError(.invalidValue(field: "event kind"), at: at) }
            let sealedText = kindByte != kind.rawValue
            let entryID = try CompactID.decoded(&r, field: "entry")
            let a = try author(&r)
            let deltaAt = r.offset
            let delta = try r.varint()
            let (raw, overflow) = previous.addingReportingOverflow(delta)
            guard !overflow, HybridTime(rawValue: raw).physicalMillis < 1 << 48 else { throw CodecError(.invalidValue(field: "clock"), at: deltaAt) }
            let wallAt = r.offset
            let (wall, wallOverflow) = Int64(bitPattern: HybridTime(rawValue: raw).physicalMillis).addingReportingOverflow(try r.zigzag())
            guard !wallOverflow else { throw CodecError(.invalidValue(field: "wallTime"), at: wallAt) }
            var slot: Int32 = -1, text: ListText? = nil
            if sealedText {
                text = .sealed(SealedText(try SnapshotCodec.sealedValue(&r, "text"), zone: log.zone, entry: entryID, kind: kindByte, item: nil,
                                          author: authors[Int(a)], clock: HybridTime(rawValue: raw), wallTime: wall))
            } else if kind.isItemEvent {
                let ia = r.offset
                let i = try r.varint()
                guard i < UInt64(items.count) else { throw CodecError(.invalidValue(field: "item index"), at: ia) }
                slot = slots[Int(i)]
                if slot < 0 {
                    slot = log.internItem(items[Int(i)])
                    slots[Int(i)] = slot
                }
            } else {
                let limit = kind == .joined || kind == .left ? Limits.maxAuthorBytes : Limits.maxTextBytes
                text = .plain(try r.string("text", limit: limit, allowEmpty: kind == .renamed || kind == .recoloured))
            }
            // Strictly increasing keys (clock, author bytes = author index, entry): canonical,
            // and no entry id twice.
            if let p = previousEntry {
                let increasing = previous != raw ? previous < raw
                    : previousAuthor != a ? previousAuthor < a : p < entryID
                if !increasing { throw CodecError(.invalidValue(field: "event order"), at: at) }
            }
            let n = Int32(log.stored.count)
            guard log.eventIndex.findOrInsert(entryID, n) == n else {
                throw CodecError(.invalidValue(field: "duplicate entry"), at: at)
            }
            previous = raw
            previousAuthor = a
            previousEntry = entryID
            log.stored.append(StoredEvent(entryID: entryID, clock: raw, wallTime: wall, author: a, item: slot,
                                          kind: kind, text: text))
        }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return log
    }

    /// The event kind a byte names: an `ActivityKind`'s own, or a sealed rename's or recolour's
    /// entry kind (0x42, 0x43: the event's text is sealed bytes, SNAPSHOT.md §5).
    static func kind(_ byte: UInt8) -> ActivityKind? {
        switch byte {
        case SealedChange.renameKind: .renamed
        case SealedChange.recolourKind: .recoloured
        default: ActivityKind(rawValue: byte)
        }
    }

    /// The byte of a list-level event whose text is sealed.
    static func sealedKind(_ kind: ActivityKind) -> UInt8 {
        kind == .renamed ? SealedChange.renameKind : SealedChange.recolourKind
    }

    static func clockValue(_ r: inout ByteReader) throws(CodecError) -> HybridTime {
        let at = r.offset
        let v = try r.varint()
        guard HybridTime(rawValue: v).physicalMillis < 1 << 48 else { throw CodecError(.invalidValue(field: "clock"), at: at) }
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
    @inline(__always) package func u32At(_ i: Int) -> UInt32 { loadUnaligned(fromByteOffset: i, as: UInt32.self).littleEndian }
    @inline(__always) func u64At(_ i: Int) -> UInt64 { loadUnaligned(fromByteOffset: i, as: UInt64.self).littleEndian }
    @inline(__always) func u16At(_ i: Int) -> UInt16 { loadUnaligned(fromByteOffset: i, as: UInt16.self).littleEndian }
}

/// One change to one list. Entries are immutable facts; the list state is derived from them.
public struct JournalEntry: Hashable, Sendable {
    /// Unique across all replicas; appending an entry whose id is already stored is a no-op.
    public var id: CompactID
    /// The zone (list) the entry belongs to.
    public var zone: String
    /// The replica (device or person) that made the change.
    public var author: String
    /// Wall-clock milliseconds since 1970-01-01T00:00:00Z, as the author's device saw it.
    public var wallTime: Int64
    /// Orders concurrent changes consistently on every replica, whatever the device clocks say.
    public var clock: HybridTime
    /// What the change does.
    public var operation: EntryOperation

    /// Creates an entry from all its fields.
    public init(id: CompactID, zone: String, author: String, wallTime: Int64, clock: HybridTime, operation: EntryOperation) {
        self.id = id
        self.zone = zone
        self.author = author
        self.wallTime = wallTime
        self.clock = clock
        self.operation = operation
    }
}

/// What an entry does. Kinds 0x40–0xFF are preserved but not interpreted (`opaque`),
/// so a newer minor version can add operations that older readers carry through. (Not
/// `Operation`: that name is Foundation's, and an app importing both could name neither.)
public enum EntryOperation: Hashable, Sendable {
    /// Adds an item placed after `after`, or at the top when `after` is nil.
    case add(item: CompactID, text: String, after: CompactID?)
    /// Marks an item as done (ticked off), keeping it in the list.
    case markOff(item: CompactID)
    /// Returns a marked-off item to the active list.
    case unmark(item: CompactID)
    /// Removes an item from the list.
    case delete(item: CompactID)
    /// Renames the list.
    case rename(name: String)
    /// Changes the list's colour.
    case recolour(colour: String)
    /// A participant (1–64 bytes, like an author) joins the list. Stores of minor version ≥ 1 only.
    case join(participant: String)
    /// A participant leaves the list. Stores of minor version ≥ 1 only.
    case leave(participant: String)
    /// Written only by the compactor, in place of entries it purges: `item` sits in the list's
    /// tree after `after` with this entry's change key, whatever its add says, so an item keeps
    /// its exact place when the finished items it followed are purged (MERGE.md §3.4). Stores of
    /// minor version ≥ 2 only.
    case place(item: CompactID, after: CompactID?)
    /// Moves an item to just after `after` (at the top when nil); the item's latest move decides
    /// where it shows, and items added after it while it stood somewhere stay there (MERGE.md
    /// §3.5). Kind 0x40, the first of the range newer versions define: a reader older than this
    /// one carries it as opaque.
    case move(item: CompactID, after: CompactID?)
    /// A kind this version does not interpret, kept byte for byte: a list change of a newer
    /// version (0x40–0x7F, `isNewerListChange`), or a record of the layers above (0x80–0xFF:
    /// the service's records, a list's base, a compaction record).
    case opaque(kind: UInt8, body: [UInt8])

    /// The first kind of the range a newer version defines list changes in (0x40–0x7F,
    /// Spec/FORMAT.md §6): a reader that does not interpret one stores it, syncs it and hands
    /// it on byte for byte, and its list says it holds changes from a newer version.
    package static let firstNewerListKind: UInt8 = 0x40

    /// Whether this changes who should hold a sealed list's key: a join, or a key record
    /// (Spec/SEALING.md §5.2, a member without a key).
    package var changesWhoHoldsTheKey: Bool {
        switch self {
        case .join: true
        case .opaque(let k, _): k == EpochKeyRecord.kind
        default: false
        }
    }

    /// Whether this is a list change of a newer version than this one (kind 0x41–0x7F, but for
    /// the sealed kinds 0x41–0x43, which this version's list model reads: Spec/MERGE.md §11).
    public var isNewerListChange: Bool {
        if case .opaque(let k, _) = self {
            return k >= Self.firstNewerListKind && k < 0x80 && !(SealedChange.addKind...SealedChange.recolourKind).contains(k)
        }
        return false
    }

    /// The interpreted operation kinds, by their wire byte (Spec/FORMAT.md §6).
    public enum Kind: UInt8, CaseIterable, Sendable {
        /// One case per interpreted operation; the raw value is the kind byte on disk.
        case add = 1, markOff = 2, unmark = 3, delete = 4, rename = 5, recolour = 6, join = 7, leave = 8, place = 9
        /// `move` (MERGE.md §3.5), the first kind of the range newer versions define.
        case move = 0x40
        /// The kind's name as used in JSON and `jlog` output, e.g. `markOff`.
        public var name: String {
            switch self {
            case .add: "add"
            case .markOff: "markOff"
            case .unmark: "unmark"
            case .delete: "delete"
            case .rename: "rename"
            case .recolour: "recolour"
            case .join: "join"
            case .leave: "leave"
            case .place: "place"
            case .move: "move"
            }
        }
        /// The kind with this name; nil if `name` is not a known kind.
        public init?(name: String) {
            guard let k = Kind.allCases.first(where: { $0.name == name }) else { return nil }
            self = k
        }
    }

    /// A compactor's placement (kind 9).
    public var isPlace: Bool {
        if case .place = self { return true }
        return false
    }

    package var kindByte: UInt8 {
        switch self {
        case .add: Kind.add.rawValue
        case .markOff: Kind.markOff.rawValue
        case .unmark: Kind.unmark.rawValue
        case .delete: Kind.delete.rawValue
        case .rename: Kind.rename.rawValue
        case .recolour: Kind.recolour.rawValue
        case .join: Kind.join.rawValue
        case .leave: Kind.leave.rawValue
        case .place: Kind.place.rawValue
        case .move: Kind.move.rawValue
        case .opaque(let k, _): k
        }
    }

    /// `add`, `markOff`, … or `op0x81` for an opaque kind.
    public var name: String {
        if let k = Kind(rawValue: kindByte) { return k.name }
        return "op0x" + String(kindByte, radix: 16)
    }

    /// The item the operation acts on; nil for list-level and opaque operations.
    public var item: CompactID? {
        switch self {
        case .add(let i, _, _), .markOff(let i), .unmark(let i), .delete(let i), .place(let i, _), .move(let i, _): i
        default: nil
        }
    }
}

extension CompactID {
    /// A UUID (version 8, RFC 9562) derived from everything in the entry but its id: SipHash-2-4
    /// of its encoding (with the id field set to the text id "-") under two fixed keys. An entry
    /// imported without an id gets this one, so importing the same file twice stores it once.
    package static func derived(from e: JournalEntry) -> CompactID {
        var probe = e
        probe.id = CompactID("-")!
        let bytes = EntryCodec.encode(probe)
        let hi = SipHash24.hash(key: (0x4A4C_4944_0000_0001, 0x6465_7269_7665_6431), bytes)
        let lo = SipHash24.hash(key: (0x4A4C_4944_0000_0002, 0x6465_7269_7665_6432), bytes)
        return CompactID(uuidHigh: (hi & ~0xF000) | 0x8000, low: (lo & ~(0xC000 << 48)) | (0x8000 << 48))
    }
}

/// The binary form of a JournalEntry (Spec/FORMAT.md §6).
package enum EntryCodec {
    package static let encodingVersion: UInt8 = 1

    package static func encode<W: ByteSink>(_ e: JournalEntry, into w: inout W) {
        withUnsafePointer(to: e) { encode($0, into: &w) }
    }

    /// `encode(_:into:)` for an entry read where it lies (an element of a batch): passed by
    /// value from there, an entry is copied whole first, through its value witness.
    package static func encode<W: ByteSink>(_ e: UnsafePointer<JournalEntry>, into w: inout W) {
        w.u8(encodingVersion)
        e.pointee.id.encode(into: &w)
        w.string(e.pointee.zone)
        w.string(e.pointee.author)
        w.varint(e.pointee.clock.rawValue)
        w.zigzag(e.pointee.wallTime &- Int64(bitPattern: e.pointee.clock.physicalMillis))
        w.u8(e.pointee.operation.kindByte)
        switch e.pointee.operation {
        case .add(let item, let text, let after):
            item.encode(into: &w)
            encodeAfter(after, into: &w)
            w.string(text)
        case .place(let item, let after), .move(let item, let after):
            item.encode(into: &w)
            encodeAfter(after, into: &w)
        case .markOff(let item), .unmark(let item), .delete(let item):
            item.encode(into: &w)
        case .rename(let text), .recolour(let text), .join(let text), .leave(let text):
            w.string(text)
        case .opaque(_, let body):
            body.withUnsafeBytes { w.raw($0) }
        }
    }

    private static func encodeAfter<W: ByteSink>(_ after: CompactID?, into w: inout W) {
        if let after {
            w.u8(1)
            after.encode(into: &w)
        } else {
            w.u8(0)
        }
    }

    private static func decodeAfter(_ r: inout ByteReader) throws(CodecError) -> CompactID? {
        let flagAt = r.offset
        switch try r.u8() {
        case 0: return nil
        case 1: return try CompactID.decode(&r, field: "after")
        default: throw CodecError(.invalidValue(field: "after flag"), at: flagAt)
        }
    }

    package static func encode(_ e: JournalEntry) -> [UInt8] {
        var w = ByteWriter(capacity: 96)
        encode(e, into: &w)
        return w.bytes
    }

    /// Checks that an entry can be encoded within the limits; nil when it can.
    package static func validate(_ e: JournalEntry) -> String? { withUnsafePointer(to: e) { validate($0) } }

    /// `validate(_:)` for an entry read where it lies (see `encode(_:into:)`).
    package static func validate(_ e: UnsafePointer<JournalEntry>) -> String? {
        if e.pointee.zone.isEmpty || e.pointee.zone.utf8.count > Limits.maxZoneBytes { return "zone must be 1...\(Limits.maxZoneBytes) UTF-8 bytes" }
        if e.pointee.author.isEmpty || e.pointee.author.utf8.count > Limits.maxAuthorBytes { return "author must be 1...\(Limits.maxAuthorBytes) UTF-8 bytes" }
        if e.pointee.clock.physicalMillis >= 1 << 48 { return "clock's physical time exceeds 48 bits" }
        if e.pointee.wallTime.subtractingReportingOverflow(Int64(bitPattern: e.pointee.clock.physicalMillis)).overflow {
            return "wall time is too far from the clock's physical time to encode"
        }
        switch e.pointee.operation {
        case .add(_, let t, _), .rename(let t), .recolour(let t):
            if t.utf8.count > Limits.maxTextBytes { return "text must be at most \(Limits.maxTextBytes) UTF-8 bytes" }
        case .join(let p), .leave(let p):
            if p.isEmpty || p.utf8.count > Limits.maxAuthorBytes { return "participant must be 1...\(Limits.maxAuthorBytes) UTF-8 bytes" }
        case .opaque(let k, let body):
            if k < EntryOperation.firstNewerListKind { return "opaque operation kinds are 0x40…0xff (0x0a…0x3f are reserved)" }
            if let defined = EntryOperation.Kind(rawValue: k) { return "kind 0x\(String(k, radix: 16)) is \(defined.name), not opaque" }
            if body.count > Limits.maxPayloadBytes { return "opaque body too large" }
        default: break
        }
        return nil
    }

    /// Decodes exactly one entry spanning all of `bytes`.
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(CodecError) -> JournalEntry {
        var r = ByteReader(bytes)
        return try decode(&r)
    }

    package static func decode(_ bytes: [UInt8]) throws(CodecError) -> JournalEntry {
        let result: Result<JournalEntry, CodecError> = bytes.withUnsafeBytes { p in
            do throws(CodecError) { return .success(try decode(p)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// False only when the encoded entry in `range` is certainly not in `zone` (its UTF-8 bytes):
    /// reads just the version, id and zone. Anything unexpected answers true, so a full decode
    /// reports it.
    package static func entry(_ b: UnsafeRawBufferPointer, _ range: Range<Int>, mayBeIn zone: [UInt8]) -> Bool {
        var r = ByteReader(b, offset: range.lowerBound, end: range.upperBound)
        guard (try? r.u8()) == encodingVersion, let tag = try? r.u8() else { return true }
        switch tag {
        case 1: guard r.remaining >= 16 else { return true }; r.offset += 16
        case 0: guard let n = try? r.length("id", limit: Limits.maxIDBytes) else { return true }; r.offset += n
        default: return true
        }
        guard let n = try? r.length("zone", limit: Limits.maxZoneBytes) else { return true }
        return n == zone.count && zone.withUnsafeBytes { sameBytes(UnsafeRawBufferPointer(rebasing: b[r.offset..<r.offset + n]), $0) }
    }

    /// Decodes one entry that runs from `r.offset` to `r.end`.
    package static func decode(_ r: inout ByteReader) throws(CodecError) -> JournalEntry {
        var fresh = FreshStrings()
        return try decode(&r, &fresh)
    }

    /// `decode`, its zone and author strings from `strings` (a batch's entries repeat them).
    package static func decode<S: StringSource>(_ r: inout ByteReader, _ strings: inout S) throws(CodecError) -> JournalEntry {
        let versionAt = r.offset
        let version = try r.u8()
        guard version == encodingVersion else { throw CodecError(.unsupportedEncodingVersion(version), at: versionAt) }
        let id = try CompactID.decode(&r, field: "id")
        let zone = try r.string("zone", limit: Limits.maxZoneBytes, &strings)
        let author = try r.string("author", limit: Limits.maxAuthorBytes, &strings)
        let clockAt = r.offset
        let clock = HybridTime(rawValue: try r.varint())
        guard clock.physicalMillis < 1 << 48 else { throw CodecError(.invalidValue(field: "clock"), at: clockAt) }
        let wallAt = r.offset
        let (wall, overflow) = Int64(bitPattern: clock.physicalMillis).addingReportingOverflow(try r.zigzag())
        guard !overflow else { throw CodecError(.invalidValue(field: "wallTime"), at: wallAt) }
        let kindAt = r.offset
        let kind = try r.u8()
        let op: EntryOperation
        switch EntryOperation.Kind(rawValue: kind) {
        case .add:
            let item = try CompactID.decode(&r, field: "item")
            let after = try decodeAfter(&r)
            let text = try r.string("text", limit: Limits.maxTextBytes, allowEmpty: true)
            op = .add(item: item, text: text, after: after)
        case .markOff: op = .markOff(item: try CompactID.decode(&r, field: "item"))
        case .unmark: op = .unmark(item: try CompactID.decode(&r, field: "item"))
        case .delete: op = .delete(item: try CompactID.decode(&r, field: "item"))
        case .rename: op = .rename(name: try r.string("name", limit: Limits.maxTextBytes, allowEmpty: true))
        case .recolour: op = .recolour(colour: try r.string("colour", limit: Limits.maxTextBytes, allowEmpty: true))
        case .join: op = .join(participant: try r.string("participant", limit: Limits.maxAuthorBytes))
        case .leave: op = .leave(participant: try r.string("participant", limit: Limits.maxAuthorBytes))
        case .place:
            let item = try CompactID.decode(&r, field: "item")
            op = .place(item: item, after: try decodeAfter(&r))
        case .move:
            let item = try CompactID.decode(&r, field: "item")
            op = .move(item: item, after: try decodeAfter(&r))
        case nil:
            guard kind >= EntryOperation.firstNewerListKind else { throw CodecError(.unknownOperation(kind), at: kindAt) }
            op = .opaque(kind: kind, body: Array(try r.bytes(r.remaining)))
        }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return JournalEntry(id: id, zone: zone, author: author, wallTime: wall, clock: clock, operation: op)
    }
}

import JournalCodec

/// The total order every merge rule uses (Spec/MERGE.md §2): hybrid time, then author (UTF-8
/// bytes), then entry id. Distinct entries never compare equal, so "the last one" is well defined.
public struct ChangeKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var clock: HybridTime
    public var author: String
    public var entry: CompactID

    public init(clock: HybridTime, author: String, entry: CompactID) {
        self.clock = clock
        self.author = author
        self.entry = entry
    }

    public init(_ e: JournalEntry) {
        self.init(clock: e.clock, author: e.author, entry: e.id)
    }

    @inline(__always)
    public static func < (a: ChangeKey, b: ChangeKey) -> Bool {
        if a.clock != b.clock { return a.clock < b.clock }
        if let c = compareUTF8(a.author, b.author), c != 0 { return c < 0 }
        return a.entry < b.entry
    }

    public static func == (a: ChangeKey, b: ChangeKey) -> Bool {
        a.clock == b.clock && a.entry == b.entry && a.author.utf8.elementsEqual(b.author.utf8)
    }

    public func hash(into h: inout Hasher) {
        h.combine(clock)
        h.combine(entry)
    }

    public var description: String { "(\(clock), \(author), \(entry))" }
}

/// Byte-wise comparison of two strings (-1, 0, 1): the same on every platform, unlike `String.<`,
/// which follows Unicode canonical equivalence.
@inline(__always)
func compareUTF8(_ a: String, _ b: String) -> Int? {
    if a.utf8.elementsEqual(b.utf8) { return 0 }
    return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
}

@inline(__always)
func utf8Less(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

/// Canonical binary ids (the FORMAT.md §6 `id` form), written from the public API of CompactID.
enum IDCoding {
    /// Appends the id's FORMAT.md §6 encoding. CompactID keeps its encoder internal to
    /// JournalCodec, so this borrows `EntryCodec`: an entry's encoding is `version u8 | id | …`,
    /// and a probe entry with one-byte zone and author, zero clock and an empty rename ends with
    /// exactly 8 bytes after the id. That is ~20 times faster than going through `description`.
    @inline(__always)
    static func write(_ id: CompactID, into w: inout ByteWriter) {
        let start = w.bytes.count
        EntryCodec.encode(JournalEntry(id: id, zone: "z", author: "a", wallTime: 0, clock: HybridTime(rawValue: 0),
                                       operation: .rename(name: "")), into: &w)
        let length = w.bytes.count - start - 9
        w.bytes.withUnsafeMutableBufferPointer { b in
            for k in 0..<length { b[start + k] = b[start + 1 + k] }
        }
        w.bytes.removeLast(9)
        assert(w.bytes[start...].elementsEqual(slowEncoding(id)), "probe encoding of \(id) differs from its canonical form")
    }

    /// The same bytes from the id's text (used to check the fast path in debug builds).
    static func slowEncoding(_ id: CompactID) -> [UInt8] {
        var w = ByteWriter(capacity: 20)
        let s = id.description
        if let (hi, lo) = canonicalUUID(s) {
            w.u8(1)
            w.u64BigEndian(hi)
            w.u64BigEndian(lo)
        } else {
            w.u8(0)
            w.string(s)
        }
        return w.bytes
    }

    static func read(_ r: inout ByteReader, field: String) throws(CodecError) -> CompactID {
        let at = r.offset
        switch try r.u8() {
        case 1:
            let raw = try r.bytes(16)
            var hi: UInt64 = 0, lo: UInt64 = 0
            for i in 0..<8 { hi = hi << 8 | UInt64(raw[i]) }
            for i in 8..<16 { lo = lo << 8 | UInt64(raw[i]) }
            return CompactID(uuidHigh: hi, low: lo)
        case 0:
            let s = try r.string(field, limit: Limits.maxIDBytes)
            guard canonicalUUID(s) == nil, let id = CompactID(s) else { throw CodecError(.invalidValue(field: field), at: at) }
            return id
        default:
            throw CodecError(.invalidValue(field: field + " tag"), at: at)
        }
    }

    /// The two halves of a lowercase 8-4-4-4-12 UUID, or nil.
    static func canonicalUUID(_ s: String) -> (UInt64, UInt64)? {
        let u = s.utf8
        guard u.count == 36 else { return nil }
        var hi: UInt64 = 0, lo: UInt64 = 0, n = 0, i = 0
        for c in u {
            defer { i += 1 }
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == 0x2D else { return nil }
                continue
            }
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c - 0x30
            case 0x61...0x66: v = c - 0x61 + 10
            default: return nil
            }
            if n < 16 { hi = hi << 4 | UInt64(v) } else { lo = lo << 4 | UInt64(v) }
            n += 1
        }
        return (hi, lo)
    }
}

/// A string compared and hashed by its UTF-8 bytes. Swift's `String` equality follows Unicode
/// canonical equivalence, so "é" and "e\u{301}" would collapse into one dictionary key and the
/// surviving bytes would depend on arrival order; authors and participants must not.
struct ExactString: Hashable, Sendable {
    let value: String

    init(_ value: String) { self.value = value }

    static func == (a: ExactString, b: ExactString) -> Bool { a.value.utf8.elementsEqual(b.value.utf8) }

    func hash(into h: inout Hasher) {
        var s = value
        s.withUTF8 { h.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

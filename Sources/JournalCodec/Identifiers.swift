/// A log position. Sequences start at 1, strictly increase, and may have gaps after compaction.
public typealias SequenceNumber = UInt64

/// An entry or item identifier. Canonical lowercase UUIDs are stored in 16 bytes;
/// anything else is stored as its UTF-8 text (1...64 bytes). Both round-trip exactly.
public struct CompactID: Hashable, Comparable, Sendable, CustomStringConvertible {
    @usableFromInline enum Storage: Hashable, Sendable {
        case uuid(UInt64, UInt64)
        case text(String)
    }
    @usableFromInline let storage: Storage

    /// Nil when `text` is empty or longer than `Limits.maxIDBytes`.
    public init?(_ text: String) {
        if let (hi, lo) = CompactID.parseCanonicalUUID(text) {
            storage = .uuid(hi, lo)
        } else {
            guard !text.isEmpty, text.utf8.count <= Limits.maxIDBytes else { return nil }
            storage = .text(text)
        }
    }

    /// A UUID identifier from its high and low 64 bits, as stored in 16 bytes.
    @inlinable public init(uuidHigh: UInt64, low: UInt64) { storage = .uuid(uuidHigh, low) }

    /// A random version-4 UUID.
    public static func random<G: RandomNumberGenerator>(using g: inout G) -> CompactID {
        let hi = (g.next() & ~0xF000) | 0x4000
        let lo = (g.next() & ~(0xC000 << 48)) | (0x8000 << 48)
        return CompactID(uuidHigh: hi, low: lo)
    }

    /// A random version-4 UUID from the system's secure generator.
    public static func random() -> CompactID {
        var g = SystemRandomNumberGenerator()
        return random(using: &g)
    }

    public var description: String {
        switch storage {
        case .text(let s): return s
        case .uuid(let hi, let lo):
            // Written digit by digit: ids are formatted on every JSON answer a server gives.
            return String(unsafeUninitializedCapacity: 36) { out in
                var i = 0
                for k in 0..<32 {
                    out[i] = EntryJSON.hexDigit(UInt8(truncatingIfNeeded: (k < 16 ? hi : lo) >> UInt64(60 - 4 * (k % 16))) & 15)
                    i += 1
                    if k == 7 || k == 11 || k == 15 || k == 19 {
                        out[i] = 0x2D
                        i += 1
                    }
                }
                return i
            }
        }
    }

    public static func < (a: CompactID, b: CompactID) -> Bool {
        switch (a.storage, b.storage) {
        case (.uuid(let ah, let al), .uuid(let bh, let bl)): return (ah, al) < (bh, bl)
        default: return a.description.utf8.lexicographicallyPrecedes(b.description.utf8)
        }
    }

    @inlinable package func encode<W: ByteSink>(into w: inout W) {
        switch storage {
        case .uuid(let hi, let lo):
            w.u8(1)
            w.u64BigEndian(hi)
            w.u64BigEndian(lo)
        case .text(let s):
            w.u8(0)
            w.string(s)
        }
    }

    static func decode(_ r: inout ByteReader, field: String) throws(CodecError) -> CompactID {
        let at = r.offset
        switch try r.u8() {
        case 0:
            let s = try r.string(field, limit: Limits.maxIDBytes)
            // The text form never holds a canonical UUID: that has exactly one encoding.
            guard CompactID.parseCanonicalUUID(s) == nil else { throw CodecError(.invalidValue(field: field), at: at) }
            return CompactID(storage: .text(s))
        case 1:
            let raw = try r.bytes(16)
            var hi: UInt64 = 0, lo: UInt64 = 0
            for i in 0..<8 { hi = hi << 8 | UInt64(raw[i]) }
            for i in 8..<16 { lo = lo << 8 | UInt64(raw[i]) }
            return CompactID(uuidHigh: hi, low: lo)
        default:
            throw CodecError(.invalidValue(field: field + " tag"), at: at)
        }
    }

    private init(storage: Storage) { self.storage = storage }

    /// The 128 bits of a UUID id (nil for a text id): a cheap, exact hash key for reducers.
    @inlinable public var uuidHalves: (high: UInt64, low: UInt64)? {
        if case .uuid(let hi, let lo) = storage { return (hi, lo) }
        return nil
    }

    /// Writes the id's encoding (FORMAT.md §6): tag, then 16 bytes or a string.
    /// Inlinable, so that an encoder in another module (the history's, the snapshot's) writes
    /// its 17 bytes without a protocol call per field.
    @inlinable package func encoded<W: ByteSink>(into w: inout W) { encode(into: &w) }

    /// Reads one id encoding, as inside an entry.
    package static func decoded(_ r: inout ByteReader, field: String = "id") throws(CodecError) -> CompactID {
        try decode(&r, field: field)
    }

    // Equality is by the stored bytes, not Unicode canonical equivalence: two ids that encode
    // differently are different ids (one is never taken for a duplicate of the other).
    public static func == (a: CompactID, b: CompactID) -> Bool {
        switch (a.storage, b.storage) {
        case (.uuid(let ah, let al), .uuid(let bh, let bl)): return ah == bh && al == bl
        case (.text(let x), .text(let y)): return x.utf8.elementsEqual(y.utf8)
        default: return false
        }
    }

    public func hash(into h: inout Hasher) {
        switch storage {
        case .uuid(let hi, let lo):
            h.combine(hi)
            h.combine(lo)
        case .text(let s):
            h.combine(s.utf8.count)
            for b in s.utf8 { h.combine(b) }
        }
    }

    /// 8-4-4-4-12 lowercase hex, nothing else.
    static func parseCanonicalUUID(_ s: String) -> (UInt64, UInt64)? {
        let u = s.utf8
        guard u.count == 36 else { return nil }
        var hi: UInt64 = 0, lo: UInt64 = 0, n = 0
        for (i, c) in u.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
                continue
            }
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            default: return nil
            }
            if n < 16 { hi = hi << 4 | UInt64(v) } else { lo = lo << 4 | UInt64(v) }
            n += 1
        }
        return (hi, lo)
    }
}

/// A hybrid logical clock value: 48 bits of physical milliseconds and a 16-bit counter.
/// Ordering by it survives skewed device clocks (Kulkarni et al.).
public struct HybridTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// A hybrid time from its parts; `physicalMillis` must fit in 48 bits.
    public init(physicalMillis: UInt64, counter: UInt16) {
        precondition(physicalMillis < 1 << 48, "physical time exceeds 48 bits")
        rawValue = physicalMillis << 16 | UInt64(counter)
    }

    /// The physical part: milliseconds since 1970, the top 48 bits.
    public var physicalMillis: UInt64 { rawValue >> 16 }
    /// The logical counter that orders times within the same millisecond.
    public var counter: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    public static func < (a: HybridTime, b: HybridTime) -> Bool { a.rawValue < b.rawValue }

    /// The greatest hybrid time: physical 2^48 − 1, counter 65,535.
    public static let max = HybridTime(rawValue: .max)

    /// The hybrid time of an entry that has only a wall time (a JSON line without `hlc`):
    /// physical = the wall time clamped to 0 ... 2^48 − 1, counter 0. A function of the wall
    /// time alone, so it does not depend on what arrived before it (FORMAT.md §7).
    public init(derivedFromWallTime wall: Int64) {
        self.init(physicalMillis: UInt64(Swift.min(Swift.max(wall, 0), (1 << 48) - 1)), counter: 0)
    }

    /// `millis:counter`, the form `jlog dump --json` writes and `import` reads.
    public var description: String { "\(physicalMillis):\(counter)" }

    /// Parses the `millis:counter` form; nil if it is malformed or out of range.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        // Digits only: UInt64("+5") would accept a sign (FORMAT.md §7.2).
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }),
              let p = UInt64(parts[0]), p < 1 << 48, let c = UInt16(parts[1]) else { return nil }
        self.init(physicalMillis: p, counter: c)
    }
}

/// Issues hybrid times that strictly increase and never run behind any time observed. At
/// `HybridTime.max` it saturates: it keeps issuing `max` rather than wrapping to 0, which would
/// order the next change before every earlier one (the change key's author and id still order
/// entries issued there).
public struct HybridClock: Sendable {
    /// The most recent time issued or observed; the next tick will be later than this.
    public private(set) var last: HybridTime

    /// A clock resuming after `last`, e.g. the greatest time already in the store.
    public init(last: HybridTime = HybridTime(rawValue: 0)) { self.last = last }

    /// The next local time, given the wall clock in milliseconds.
    public mutating func tick(wallMillis: Int64) -> HybridTime {
        let wall = min(UInt64(clamping: max(0, wallMillis)), (1 << 48) - 1)
        if wall > last.physicalMillis {
            last = HybridTime(physicalMillis: wall, counter: 0)
        } else if last.rawValue < HybridTime.max.rawValue {
            last = HybridTime(rawValue: last.rawValue + 1)
        }
        return last
    }

    /// Moves past a time seen from another replica.
    public mutating func observe(_ t: HybridTime) {
        if t > last { last = t }
    }
}

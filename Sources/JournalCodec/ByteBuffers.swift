/// Appends little-endian integers, LEB128 varints and length-prefixed strings.
@usableFromInline package struct ByteWriter: Sendable {
    @usableFromInline package var bytes: [UInt8]

    @usableFromInline package init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inlinable package mutating func u8(_ v: UInt8) { bytes.append(v) }

    @inlinable package mutating func u16(_ v: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: v))
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
    }

    @inlinable package mutating func u32(_ v: UInt32) {
        for i in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) }
    }

    @inlinable package mutating func u64(_ v: UInt64) {
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }

    /// Network byte order, for UUIDs: one bulk append instead of eight.
    @inlinable package mutating func u64BigEndian(_ v: UInt64) {
        withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable package mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }


    @usableFromInline package mutating func append<C: Collection>(contentsOf c: C) where C.Element == UInt8 {
        bytes.append(contentsOf: c)
    }
}

/// Where encoders write: a growing `ByteWriter`, a `ByteCounter` that only measures, or a
/// `RawByteWriter` filling memory of exactly the measured size. One encoder, generic over the
/// sink, serves all three, so the measured size and the written bytes cannot disagree.
@usableFromInline package protocol ByteSink {
    mutating func u8(_ v: UInt8)
    mutating func varint(_ v: UInt64)
    mutating func u64BigEndian(_ v: UInt64)
    /// Length (varint) and UTF-8 bytes.
    mutating func string(_ s: String)
    mutating func raw(_ p: UnsafeRawBufferPointer)
}

extension ByteWriter: ByteSink {
    @inlinable package mutating func raw(_ p: UnsafeRawBufferPointer) { bytes.append(contentsOf: p) }
}

extension ByteSink {
    @inlinable package mutating func zigzag(_ v: Int64) {
        varint(UInt64(bitPattern: (v << 1) ^ (v >> 63)))
    }

    /// The default `string`: the length, then the bytes through `raw`. Native strings lend
    /// their UTF-8 in place; only bridged ones need `withUTF8`'s copy.
    @inlinable @inline(__always) package mutating func string(_ s: String) {
        if let done: Void = s.utf8.withContiguousStorageIfAvailable({ utf8 in
            varint(UInt64(utf8.count))
            raw(UnsafeRawBufferPointer(utf8))
        }) { return done }
        var s = s
        s.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            raw(UnsafeRawBufferPointer(utf8))
        }
    }
}

/// The bytes of a varint.
@inlinable package func varintLength(_ v: UInt64) -> Int {
    // 1 + (significant bits - 1) / 7, with 0 taking one byte.
    1 + (63 - (v | 1).leadingZeroBitCount) / 7
}

/// Counts the bytes an encoder would write.
@usableFromInline package struct ByteCounter: ByteSink {
    @usableFromInline package private(set) var count = 0
    @usableFromInline package init() {}
    @usableFromInline package mutating func u8(_ v: UInt8) { count += 1 }
    @usableFromInline package mutating func varint(_ v: UInt64) { count += varintLength(v) }
    @usableFromInline package mutating func u64BigEndian(_ v: UInt64) { count += 8 }
    @usableFromInline package mutating func string(_ s: String) {
        let n = s.utf8.count
        count += varintLength(UInt64(n)) + n
    }
    @usableFromInline package mutating func raw(_ p: UnsafeRawBufferPointer) { count += p.count }
}

/// Writes into memory measured beforehand (by `ByteCounter`): each write is a store, with no
/// growth and no uniqueness check, which is what makes encoding a batch cheap. Writing past the
/// end traps: the measure and the writes come from one encoder, so it means a bug, not bad input.
@usableFromInline package struct RawByteWriter: ByteSink {
    @usableFromInline package let base: UnsafeMutableRawBufferPointer
    @usableFromInline package private(set) var offset = 0

    @usableFromInline package init(_ base: UnsafeMutableRawBufferPointer) { self.base = base }

    @inline(__always) mutating func room(_ n: Int) -> UnsafeMutableRawPointer {
        precondition(n <= base.count - offset, "RawByteWriter: more bytes than measured")
        defer { offset += n }
        return base.baseAddress! + offset
    }

    @inline(__always) @usableFromInline package mutating func u8(_ v: UInt8) { room(1).storeBytes(of: v, as: UInt8.self) }

    @inline(__always) @usableFromInline package mutating func varint(_ v: UInt64) {
        let p = room(varintLength(v))
        var v = v, k = 0
        while v >= 0x80 {
            p.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: k, as: UInt8.self)
            v >>= 7
            k += 1
        }
        p.storeBytes(of: UInt8(v), toByteOffset: k, as: UInt8.self)
    }

    @inline(__always) @usableFromInline package mutating func u64BigEndian(_ v: UInt64) { room(8).storeBytes(of: v.bigEndian, as: UInt64.self) }

    @inline(__always) @usableFromInline package mutating func raw(_ p: UnsafeRawBufferPointer) {
        guard p.count > 0 else { return }
        room(p.count).copyMemory(from: p.baseAddress!, byteCount: p.count)
    }
}

/// Bounds-checked reads over borrowed bytes. Every read either succeeds or throws
/// `CodecError` naming the offset; nothing reads past `end`.
@usableFromInline package struct ByteReader {
    @usableFromInline package let base: UnsafeRawBufferPointer
    @usableFromInline package var offset: Int
    @usableFromInline package let end: Int

    @usableFromInline package init(_ base: UnsafeRawBufferPointer, offset: Int = 0, end: Int? = nil) {
        self.base = base
        self.offset = offset
        self.end = end ?? base.count
        precondition(self.offset >= 0 && self.offset <= self.end && self.end <= base.count)
    }

    @inlinable package var remaining: Int { end - offset }
    @inlinable package var isAtEnd: Bool { offset == end }

    @inlinable package mutating func u8() throws(CodecError) -> UInt8 {
        guard offset < end else { throw CodecError(.truncated, at: offset) }
        defer { offset += 1 }
        return base[offset]
    }

    @inlinable package mutating func u32() throws(CodecError) -> UInt32 {
        guard remaining >= 4 else { throw CodecError(.truncated, at: offset) }
        defer { offset += 4 }
        return base.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
    }

    @inlinable package mutating func u64() throws(CodecError) -> UInt64 {
        guard remaining >= 8 else { throw CodecError(.truncated, at: offset) }
        defer { offset += 8 }
        return base.loadUnaligned(fromByteOffset: offset, as: UInt64.self).littleEndian
    }

    @inlinable package mutating func varint() throws(CodecError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        let start = offset
        while true {
            guard offset < end else { throw CodecError(.truncated, at: offset) }
            let b = base[offset]
            offset += 1
            if shift == 63 && b > 1 { throw CodecError(.varintOverflow, at: start) }
            result |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
            if shift > 63 { throw CodecError(.varintOverflow, at: start) }
        }
    }

    @inlinable package mutating func zigzag() throws(CodecError) -> Int64 {
        let v = try varint()
        return Int64(bitPattern: (v >> 1) ^ (0 &- (v & 1)))
    }

    /// A varint length checked against `limit` before anything is allocated.
    @inlinable package mutating func length(_ field: String, limit: Int) throws(CodecError) -> Int {
        let at = offset
        let v = try varint()
        guard v <= UInt64(limit) else {
            throw CodecError(.lengthOutOfRange(field: field, length: Int(clamping: v), limit: limit), at: at)
        }
        let n = Int(v)
        guard n <= remaining else { throw CodecError(.truncated, at: offset) }
        return n
    }

    @inlinable package mutating func bytes(_ n: Int) throws(CodecError) -> UnsafeRawBufferPointer {
        guard n >= 0, n <= remaining else { throw CodecError(.truncated, at: offset) }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: base[offset..<offset + n])
    }

    @usableFromInline package mutating func string(_ field: String, limit: Int, allowEmpty: Bool = false) throws(CodecError) -> String {
        var fresh = FreshStrings()
        return try string(field, limit: limit, allowEmpty: allowEmpty, &fresh)
    }

    /// `string`, through `strings`, which may hand back a string it built before from the same bytes.
    @inline(__always)
    @usableFromInline package mutating func string<S: StringSource>(_ field: String, limit: Int, allowEmpty: Bool = false,
                                                 _ strings: inout S) throws(CodecError) -> String {
        let at = offset
        let n = try length(field, limit: limit)
        if n == 0 && !allowEmpty {
            throw CodecError(.lengthOutOfRange(field: field, length: 0, limit: limit), at: at)
        }
        let raw = try bytes(n)
        guard let s = strings.string(raw) else {
            throw CodecError(.invalidUTF8(field: field), at: at)
        }
        return s
    }
}

/// Where a decoder gets its strings from bytes (nil: not UTF-8).
@usableFromInline package protocol StringSource {
    mutating func string(_ raw: UnsafeRawBufferPointer) -> String?
}

/// Every string validated and built anew.
@usableFromInline package struct FreshStrings: StringSource {
    @usableFromInline package init() {}
    @inline(__always)
    @usableFromInline package func string(_ raw: UnsafeRawBufferPointer) -> String? { validUTF8String(raw) }
}

/// The last few distinct strings decoded, reused when the same bytes come again: a batch repeats
/// its zone and a few authors in every entry, and comparing bytes costs less than validating
/// them and building a string.
@usableFromInline package struct RepeatedStrings: StringSource {
    private var kept: [(bytes: [UInt8], string: String)] = []
    private var next = 0
    /// Longer strings are not kept: the zones (at most 255 bytes) and authors (at most 64) that
    /// come here always fit.
    @usableFromInline package static let maxBytes = Limits.maxZoneBytes
    @usableFromInline package static let capacity = 8

    @usableFromInline package init() {}

    @inline(__always)
    @usableFromInline package mutating func string(_ raw: UnsafeRawBufferPointer) -> String? {
        for k in kept.indices where kept[k].bytes.withUnsafeBytes({ sameBytes($0, raw) }) { return kept[k].string }
        guard let s = validUTF8String(raw) else { return nil }
        if raw.count <= Self.maxBytes {
            if kept.count < Self.capacity {
                kept.append((Array(raw), s))
            } else {
                kept[next] = (Array(raw), s)
                next = (next + 1) % Self.capacity
            }
        }
        return s
    }
}

extension UnsafeRawBufferPointer {
    /// Little-endian fixed-width loads used by the frame and header codecs.
    @inlinable func u32(at i: Int) -> UInt32 { loadUnaligned(fromByteOffset: i, as: UInt32.self).littleEndian }
    @inlinable func u64(at i: Int) -> UInt64 { loadUnaligned(fromByteOffset: i, as: UInt64.self).littleEndian }
    @inlinable func u16(at i: Int) -> UInt16 { loadUnaligned(fromByteOffset: i, as: UInt16.self).littleEndian }
}

/// Whether two strings have the same UTF-8 bytes (not Unicode canonical equivalence), without
/// copying either: native strings, small or not, are contiguous; anything else takes the
/// generic path. Two copies of one string (a zone name decoded once for a batch, then passed
/// along entry by entry) are the same two words, and answer at once.
@inlinable @inline(__always)
package func sameBytes(_ a: String, _ b: String) -> Bool {
    if MemoryLayout<String>.size == 16 && unsafeBitCast(a, to: (UInt64, UInt64).self) == unsafeBitCast(b, to: (UInt64, UInt64).self) { return true }
    guard a.utf8.count == b.utf8.count else { return false }
    let fast = a.utf8.withContiguousStorageIfAvailable { x in
        b.utf8.withContiguousStorageIfAvailable { y in sameBytes(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y)) }
    }
    if let fast, let fast { return fast }
    return a.utf8.elementsEqual(b.utf8)
}

/// Whether `a` and `b` hold the same bytes: eight at a time (the generic `elementsEqual` goes
/// byte by byte, and the feed asks this of every entry in a batch).
@inlinable @inline(__always)
package func sameBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    guard let x = a.baseAddress, let y = b.baseAddress else { return true }
    var i = 0
    while i + 8 <= a.count {
        if x.loadUnaligned(fromByteOffset: i, as: UInt64.self) != y.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
        i += 8
    }
    while i < a.count {
        if x.load(fromByteOffset: i, as: UInt8.self) != y.load(fromByteOffset: i, as: UInt8.self) { return false }
        i += 1
    }
    return true
}

/// Strict UTF-8 decoding: nil for any ill-formed sequence (never a replacement character).
@usableFromInline package func validUTF8String(_ raw: UnsafeRawBufferPointer) -> String? {
    let bytes = raw.bindMemory(to: UInt8.self)
    // ASCII is always valid: skip the generic validating initialiser (a hot spot in reads).
    var ascii = true
    for b in bytes where b >= 0x80 {
        ascii = false
        break
    }
    if ascii { return String(decoding: bytes, as: UTF8.self) }
    if #available(macOS 15, iOS 18, *) {
        return String(validating: bytes, as: UTF8.self)
    }
    let s = String(decoding: bytes, as: UTF8.self)
    return s.utf8.elementsEqual(bytes) ? s : nil
}

/// `0x0000abcd`: how checksums are shown in errors and `jlog` output.
@usableFromInline package func hex32(_ v: UInt32) -> String {
    let s = String(v, radix: 16)
    return "0x" + String(repeating: "0", count: 8 - s.count) + s
}

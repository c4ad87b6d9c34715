import JournalCodec

/// SipHash-2-4 fed incrementally through a small buffer: the state digest (MERGE.md §8) is
/// hashed as its canonical bytes are produced, so the megabytes of a large list's encoding are
/// never held (nor written and read back) at once. Gives exactly `SipHash24.hash` of the
/// concatenated bytes.
struct ReducerDigest {
    private var v0, v1, v2, v3: UInt64
    private let buffer: UnsafeMutablePointer<UInt8>
    private var used = 0
    private var total = 0
    private static let capacity = 1 << 16

    /// Hashes what `body` writes, with `ListState.digestKey`.
    static func hash(_ body: (inout ReducerDigest) -> Void) -> UInt64 {
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        var d = ReducerDigest(key: ListState.digestKey, buffer: buffer)
        body(&d)
        return d.finish()
    }

    private init(key: (UInt64, UInt64), buffer: UnsafeMutablePointer<UInt8>) {
        v0 = 0x736f_6d65_7073_6575 ^ key.0
        v1 = 0x646f_7261_6e64_6f6d ^ key.1
        v2 = 0x6c79_6765_6e65_7261 ^ key.0
        v3 = 0x7465_6462_7974_6573 ^ key.1
        self.buffer = buffer
    }

    @inline(__always)
    private mutating func round() {
        v0 = v0 &+ v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
        v2 = v2 &+ v3; v3 = rotl(v3, 16); v3 ^= v2
        v0 = v0 &+ v3; v3 = rotl(v3, 21); v3 ^= v0
        v2 = v2 &+ v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
    }

    /// Hashes every whole 8-byte word buffered and keeps the rest.
    private mutating func compress() {
        let words = used / 8
        var i = 0
        while i < words {
            let m = UnsafeRawPointer(buffer).loadUnaligned(fromByteOffset: i * 8, as: UInt64.self).littleEndian
            v3 ^= m
            round(); round()
            v0 ^= m
            i += 1
        }
        let rest = used - words * 8
        if rest > 0 && words > 0 { buffer.update(from: buffer + words * 8, count: rest) }
        total += words * 8
        used = rest
    }

    /// Makes room for `n` more bytes (`n` at most the buffer's capacity minus 8).
    @inline(__always)
    private mutating func room(_ n: Int) {
        if used + n > Self.capacity { compress() }
    }

    private mutating func finish() -> UInt64 {
        compress()
        let n = total + used
        var last = UInt64(n & 0xFF) << 56
        for i in 0..<used { last |= UInt64(buffer[i]) << (8 * UInt64(i)) }
        v3 ^= last
        round(); round()
        v0 ^= last
        v2 ^= 0xFF
        round(); round(); round(); round()
        return v0 ^ v1 ^ v2 ^ v3
    }

    @inline(__always)
    mutating func u8(_ v: UInt8) {
        room(1)
        buffer[used] = v
        used += 1
    }

    @inline(__always)
    mutating func varint(_ v: UInt64) {
        room(10)
        var v = v
        while v >= 0x80 {
            buffer[used] = UInt8(truncatingIfNeeded: v) | 0x80
            used += 1
            v >>= 7
        }
        buffer[used] = UInt8(v)
        used += 1
    }

    @inline(__always)
    mutating func zigzag(_ v: Int64) { varint(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }

    mutating func bytes(_ p: UnsafeRawBufferPointer) {
        var p = p
        while !p.isEmpty {
            room(min(p.count, 4096))
            let k = min(p.count, Self.capacity - used)
            UnsafeMutableRawPointer(buffer + used).copyMemory(from: p.baseAddress!, byteCount: k)
            used += k
            p = UnsafeRawBufferPointer(rebasing: p[k...])
        }
    }

    @inline(__always)
    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { u in
            varint(UInt64(u.count))
            bytes(UnsafeRawBufferPointer(u))
        }
    }

    @inline(__always)
    mutating func uuid(_ high: UInt64, _ low: UInt64) {
        room(17)
        buffer[used] = 1
        UnsafeMutableRawPointer(buffer + used + 1).storeBytes(of: high.bigEndian, as: UInt64.self)
        UnsafeMutableRawPointer(buffer + used + 9).storeBytes(of: low.bigEndian, as: UInt64.self)
        used += 17
    }

    /// An id's encoding (FORMAT.md §6).
    @inline(__always)
    mutating func id(_ id: CompactID) {
        if let (h, l) = id.uuidHalves { return uuid(h, l) }
        var w = ByteWriter(capacity: 70)
        id.encoded(into: &w)
        w.bytes.withUnsafeBytes { bytes($0) }
    }
}

@inline(__always)
private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { x << k | x >> (64 - k) }

import JournalCodec

/// SipHash-2-4 fed incrementally through a small buffer: the state digest (MERGE.md §8) is
/// hashed as its canonical bytes are produced, so the megabytes of a large list's encoding are
/// never held (nor written and read back) at once. Gives exactly `SipHash24.hash` of the
/// concatenated bytes.
struct ReducerDigest: ByteSink {
    private var state: SipHash24.State
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
        state = SipHash24.State(key: key)
        self.buffer = buffer
    }

    /// Hashes every whole 8-byte word buffered and keeps the rest.
    private mutating func compress() {
        let words = used / 8
        var i = 0
        while i < words {
            state.absorb(UnsafeRawPointer(buffer).loadUnaligned(fromByteOffset: i * 8, as: UInt64.self).littleEndian)
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
        return state.finish(tail: UnsafeRawBufferPointer(start: buffer, count: used), length: total + used)
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
    mutating func u64BigEndian(_ v: UInt64) {
        room(8)
        UnsafeMutableRawPointer(buffer + used).storeBytes(of: v.bigEndian, as: UInt64.self)
        used += 8
    }

    mutating func raw(_ p: UnsafeRawBufferPointer) {
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
    mutating func uuid(_ high: UInt64, _ low: UInt64) {
        room(17)
        buffer[used] = 1
        UnsafeMutableRawPointer(buffer + used + 1).storeBytes(of: high.bigEndian, as: UInt64.self)
        UnsafeMutableRawPointer(buffer + used + 9).storeBytes(of: low.bigEndian, as: UInt64.self)
        used += 17
    }
}

extension ByteSink {
    /// An id's encoding (FORMAT.md §6), in the canonical state encoding (MERGE.md §8).
    @inline(__always)
    mutating func id(_ id: CompactID) { id.encoded(into: &self) }
}

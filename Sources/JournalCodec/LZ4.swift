import CLZ4

/// LZ4 block compression. LZ4 detects no corruption by itself: callers checksum what they compress.
package enum LZ4 {
    package static func compress(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        guard input.count > 0 else { return [] }
        let bound = Int(LZ4_compressBound(Int32(input.count)))
        var out = [UInt8](repeating: 0, count: bound)
        let n = out.withUnsafeMutableBytes { o in
            LZ4_compress_default(input.baseAddress!.assumingMemoryBound(to: CChar.self),
                                 o.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(input.count), Int32(bound))
        }
        precondition(n > 0, "LZ4_compress_default failed within its own bound")
        out.removeSubrange(Int(n)...)
        return out
    }

    /// Decompresses exactly `rawLength` bytes, or returns nil. `rawLength` must already
    /// be checked against a limit: it is allocated up front.
    package static func decompress(_ input: UnsafeRawBufferPointer, rawLength: Int) -> [UInt8]? {
        guard rawLength > 0 else { return input.isEmpty ? [] : nil }
        guard input.count > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: rawLength)
        let n = out.withUnsafeMutableBytes { o in
            LZ4_decompress_safe(input.baseAddress!.assumingMemoryBound(to: CChar.self),
                                o.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(input.count), Int32(rawLength))
        }
        return n == Int32(rawLength) ? out : nil
    }
}

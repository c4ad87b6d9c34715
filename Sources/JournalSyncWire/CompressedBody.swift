import JournalCodec

/// A response body LZ4-compressed for the wire (Spec/SYNC.md §9.5): `"JLZ1" | rawLength u32 |
/// crc u32 | LZ4 block`, integers little-endian, `crc` the CRC32C of the decompressed bytes. A
/// client asks for it with `Accept: application/vnd.jlog.lz4`; a server sends it when that makes
/// the body smaller, and the plain body otherwise (its own content type says which).
package enum CompressedBody {
    /// The media type of a compressed body.
    package static let mediaType = "application/vnd.jlog.lz4"
    static let magic: [UInt8] = Array("JLZ1".utf8)
    /// The smallest body worth compressing.
    static let minimumBytes = 512

    /// `raw` compressed and framed, or nil when that would not make it smaller.
    package static func encode(_ raw: [UInt8]) -> [UInt8]? {
        guard raw.count >= minimumBytes, raw.count <= UInt32.max else { return nil }
        let block = raw.withUnsafeBytes { LZ4.compress($0) }
        guard block.count + 12 < raw.count else { return nil }
        var w = ByteWriter(capacity: block.count + 12)
        w.append(contentsOf: magic)
        w.u32(UInt32(raw.count))
        w.u32(CRC32C.checksum(raw))
        w.append(contentsOf: block)
        return w.bytes
    }

    /// Why a compressed body cannot be read.
    package enum Failure: Error, Equatable {
        case badFraming
        case tooLarge(Int)
        case corrupt
    }

    /// The decompressed body, at most `limit` bytes; every length checked before it is used.
    package static func decode(_ body: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        guard body.count >= 12, Array(body[0..<4]) == magic else { throw .badFraming }
        let raw = Int(UInt32(body[4]) | UInt32(body[5]) << 8 | UInt32(body[6]) << 16 | UInt32(body[7]) << 24)
        let crc = UInt32(body[8]) | UInt32(body[9]) << 8 | UInt32(body[10]) << 16 | UInt32(body[11]) << 24
        guard raw <= limit else { throw .tooLarge(raw) }
        // LZ4 expands at most 255-fold.
        guard raw <= (body.count - 12) * 255 + 16 else { throw .corrupt }
        let out: [UInt8]? = body.withUnsafeBytes { LZ4.decompress(UnsafeRawBufferPointer(rebasing: $0[12...]), rawLength: raw) }
        guard let out, CRC32C.checksum(out) == crc else { throw .corrupt }
        return out
    }
}

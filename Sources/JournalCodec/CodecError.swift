/// Why a byte string is not a valid encoding. `offset` is relative to the start of
/// the buffer handed to the decoder; storage adds segment, file offset and sequence.
public struct CodecError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, independent of where in the buffer it happened.
    public enum Kind: Equatable, Sendable {
        /// The buffer ended before the value being read was complete.
        case truncated
        /// A varint ran past the 10 bytes a 64-bit value can need.
        case varintOverflow
        /// A length prefix for `field` exceeds its limit or the bytes remaining.
        case lengthOutOfRange(field: String, length: Int, limit: Int)
        /// A string field's bytes are not valid UTF-8.
        case invalidUTF8(field: String)
        /// The entry was written with an encoding version this build cannot read.
        case unsupportedEncodingVersion(UInt8)
        /// The operation kind byte does not name a known operation.
        case unknownOperation(UInt8)
        /// A field decoded cleanly but holds a value outside its allowed set.
        case invalidValue(field: String)
        /// The value decoded completely but this many bytes were left over.
        case trailingBytes(Int)
        /// An LZ4 body did not decompress to its stated size.
        case decompressionFailed
    }
    /// What went wrong.
    public var kind: Kind
    /// Byte offset of the problem, relative to the start of the decoder's buffer.
    public var offset: Int

    /// Creates an error of `kind` found at byte `offset` of the decoder's buffer.
    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String {
        switch kind {
        case .truncated: return "truncated at byte \(offset)"
        case .varintOverflow: return "varint longer than 10 bytes at byte \(offset)"
        case .lengthOutOfRange(let f, let l, let lim):
            return "\(f) length \(l) outside 0...\(lim) at byte \(offset)"
        case .invalidUTF8(let f): return "\(f) is not valid UTF-8 at byte \(offset)"
        case .unsupportedEncodingVersion(let v): return "entry encoding version \(v) is not supported (at byte \(offset))"
        case .unknownOperation(let k): return "unknown operation kind 0x\(String(k, radix: 16)) at byte \(offset)"
        case .invalidValue(let f): return "invalid \(f) at byte \(offset)"
        case .trailingBytes(let n): return "\(n) unexpected trailing bytes at byte \(offset)"
        case .decompressionFailed: return "LZ4 body does not decompress to its stated size (at byte \(offset))"
        }
    }
}

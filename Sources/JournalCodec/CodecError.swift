/// Why a byte string is not a valid encoding. `offset` is relative to the start of
/// the buffer handed to the decoder; storage adds segment, file offset and sequence.
public struct CodecError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        case truncated
        case varintOverflow
        case lengthOutOfRange(field: String, length: Int, limit: Int)
        case invalidUTF8(field: String)
        case unsupportedEncodingVersion(UInt8)
        case unknownOperation(UInt8)
        case invalidValue(field: String)
        case trailingBytes(Int)
        case decompressionFailed
    }
    public var kind: Kind
    public var offset: Int

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

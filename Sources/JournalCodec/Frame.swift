/// Record types (Spec/FORMAT.md §4). A type with the high bit set that a reader does
/// not know is skipped; any other unknown type is corruption.
package enum RecordType: UInt8, Sendable, CaseIterable {
    /// One entry; consumes one sequence.
    case entry = 0x01
    /// An atomic batch of entries; consumes the sequences it lists.
    case batch = 0x02
    /// A zone is created (a new incarnation); consumes one sequence.
    case zoneCreate = 0x03
    /// A zone and all its entries are deleted; consumes one sequence.
    case zoneDelete = 0x04
    /// Ends a rewritten (compacted) segment and carries the chain value the next segment continues from.
    case seal = 0x05

    package static func isSkippable(_ raw: UInt8) -> Bool { raw & 0x80 != 0 }

    /// Whether records of this type take sequence numbers. Skippable records never do.
    package var consumesSequence: Bool { self != .seal }

    package var name: String {
        switch self {
        case .entry: "entry"
        case .batch: "batch"
        case .zoneCreate: "zoneCreate"
        case .zoneDelete: "zoneDelete"
        case .seal: "seal"
        }
    }
}

/// Frame layout: `length u32 | type u8 | sequence u64 | payload | crc u32`, little-endian.
/// `crc = crc32c_extend(previousCRC, length..payload)`: it covers the length and chains
/// every record to the one before it, so a stale or reordered record cannot validate.
package enum Frame {
    package static let headerSize = 13
    package static let trailerSize = 4
    package static let overhead = headerSize + trailerSize

    package struct Header: Equatable, Sendable {
        package var length: UInt32
        package var type: UInt8
        package var sequence: SequenceNumber
        package init(length: UInt32, type: UInt8, sequence: SequenceNumber) {
            self.length = length
            self.type = type
            self.sequence = sequence
        }
        /// All-zero header bytes: the end of written data in a pre-zeroed segment.
        package var isZero: Bool { length == 0 && type == 0 && sequence == 0 }
        package var frameSize: Int { Frame.overhead + Int(length) }
    }

    /// Appends one frame and returns its CRC, the chain value for the next frame.
    @discardableResult
    package static func append(type: UInt8, sequence: SequenceNumber, payload: UnsafeRawBufferPointer,
                              chain: UInt32, to out: inout [UInt8]) -> UInt32 {
        precondition(payload.count <= Limits.maxPayloadBytes, "payload exceeds Limits.maxPayloadBytes")
        let start = out.count
        var w = ByteWriter(capacity: 0)
        swap(&w.bytes, &out)
        w.u32(UInt32(payload.count))
        w.u8(type)
        w.u64(sequence)
        swap(&w.bytes, &out)
        out.append(contentsOf: payload)
        let crc = out.withUnsafeBytes { CRC32C.extend(chain, UnsafeRawBufferPointer(rebasing: $0[start...])) }
        for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i)))) }
        return crc
    }

    @discardableResult
    package static func append(type: UInt8, sequence: SequenceNumber, payload: [UInt8],
                              chain: UInt32, to out: inout [UInt8]) -> UInt32 {
        payload.withUnsafeBytes { append(type: type, sequence: sequence, payload: $0, chain: chain, to: &out) }
    }

    package static func parseHeader(_ b: UnsafeRawBufferPointer, at i: Int) -> Header {
        Header(length: b.u32(at: i), type: b[i + 4], sequence: b.u64(at: i + 5))
    }

    /// What the bytes at an offset hold.
    package enum Scan: Equatable, Sendable {
        /// A valid frame. `payload` is the range of its payload within the buffer.
        case frame(Header, payload: Range<Int>, crc: UInt32)
        /// Fewer bytes than a header, or than the header's length says, remain.
        case truncated(needed: Int)
        /// An all-zero header: no data was ever written here.
        case zero
        /// The length field exceeds `Limits.maxPayloadBytes`.
        case badLength(Header)
        /// The stored CRC is not the chained CRC of the bytes.
        case crcMismatch(Header, expected: UInt32, actual: UInt32)
    }

    /// Examines the frame that starts at `offset`, chained from `chain`. Never reads
    /// past `buffer.count` and never allocates.
    package static func scan(_ buffer: UnsafeRawBufferPointer, at offset: Int, chain: UInt32) -> Scan {
        let available = buffer.count - offset
        guard available >= headerSize else { return .truncated(needed: headerSize) }
        let h = parseHeader(buffer, at: offset)
        if h.isZero { return .zero }
        guard Int(h.length) <= Limits.maxPayloadBytes else { return .badLength(h) }
        let size = h.frameSize
        guard available >= size else { return .truncated(needed: size) }
        let crcAt = offset + headerSize + Int(h.length)
        let stored = buffer.u32(at: crcAt)
        let computed = CRC32C.extend(chain, UnsafeRawBufferPointer(rebasing: buffer[offset..<crcAt]))
        guard stored == computed else { return .crcMismatch(h, expected: stored, actual: computed) }
        return .frame(h, payload: offset + headerSize..<crcAt, crc: stored)
    }
}

/// The fixed 64-byte header at the start of every segment (Spec/FORMAT.md §3).
package struct SegmentHeader: Equatable, Sendable {
    package static let size = 64
    package static let magic: [UInt8] = [0x89, 0x4A, 0x4C, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]  // \x89 J L G \r \n \x1a \n
    package static let currentMajor: UInt16 = 1
    /// 3: a `lowWaterMark` record may carry `history` (FORMAT.md §1, §5.6), which a 1.2 reader
    /// rejects; the header tells it why.
    package static let currentMinor: UInt16 = 3

    package struct Flags: OptionSet, Sendable, Equatable {
        package let rawValue: UInt16
        package init(rawValue: UInt16) { self.rawValue = rawValue }
        /// Rewritten by the compactor; sequences in it may have gaps.
        package static let compacted = Flags(rawValue: 1)
    }

    package var major: UInt16
    package var minor: UInt16
    package var flags: Flags
    /// Identifies the store; every segment of a store carries the same value.
    package var storeID: (UInt64, UInt64)
    /// The first sequence this segment may hold; also its file name.
    package var baseSequence: SequenceNumber
    /// The chain value the first frame continues from: the previous segment's final CRC,
    /// or, for a store's first segment, `firstChain(storeID)`.
    package var previousChain: UInt32
    /// Milliseconds since the epoch when the segment was created (informational).
    package var createdAt: UInt64

    package init(storeID: (UInt64, UInt64), baseSequence: SequenceNumber, previousChain: UInt32,
                createdAt: UInt64, flags: Flags = [], major: UInt16 = currentMajor, minor: UInt16 = currentMinor) {
        self.major = major
        self.minor = minor
        self.flags = flags
        self.storeID = storeID
        self.baseSequence = baseSequence
        self.previousChain = previousChain
        self.createdAt = createdAt
    }

    package static func == (a: SegmentHeader, b: SegmentHeader) -> Bool {
        a.major == b.major && a.minor == b.minor && a.flags == b.flags && a.storeID == b.storeID
            && a.baseSequence == b.baseSequence && a.previousChain == b.previousChain && a.createdAt == b.createdAt
    }

    /// The chain seed of a store's first segment, so a segment from another store cannot validate.
    package static func firstChain(storeID: (UInt64, UInt64)) -> UInt32 {
        var w = ByteWriter(capacity: 16)
        w.u64(storeID.0)
        w.u64(storeID.1)
        return CRC32C.checksum(w.bytes)
    }

    package func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: SegmentHeader.size)
        w.append(contentsOf: SegmentHeader.magic)
        w.u16(major)
        w.u16(minor)
        w.u16(UInt16(SegmentHeader.size))
        w.u16(flags.rawValue)
        w.u64(storeID.0)
        w.u64(storeID.1)
        w.u64(baseSequence)
        w.u32(previousChain)
        w.u32(0)
        w.u64(createdAt)
        w.u32(0)
        assert(w.bytes.count == 60)
        w.u32(CRC32C.checksum(w.bytes))
        return w.bytes
    }

    package typealias DecodeError = SegmentHeaderError

    /// Parses and checks the header at the start of `b`. Minor versions above the
    /// current one are accepted: they only add what older readers may skip.
    package static func decode(_ b: UnsafeRawBufferPointer) throws(DecodeError) -> SegmentHeader {
        guard b.count >= size else { throw .truncated(b.count) }
        guard b.prefix(8).elementsEqual(magic) else { throw .badMagic }
        let stored = b.u32(at: 60)
        let computed = CRC32C.extend(0, UnsafeRawBufferPointer(rebasing: b[0..<60]))
        guard stored == computed else { throw .crcMismatch(expected: stored, actual: computed) }
        let major = b.u16(at: 8)
        guard major == currentMajor else { throw .unsupportedMajor(major) }
        let hsize = b.u16(at: 12)
        guard Int(hsize) == size else { throw .badHeaderSize(hsize) }
        guard b.u32(at: 44) == 0, b.u32(at: 56) == 0 else { throw .nonZeroReserved }
        return SegmentHeader(
            storeID: (b.u64(at: 16), b.u64(at: 24)), baseSequence: b.u64(at: 32), previousChain: b.u32(at: 40),
            createdAt: b.u64(at: 48), flags: Flags(rawValue: b.u16(at: 14)), major: major, minor: b.u16(at: 10))
    }
}

/// Why a segment's header was refused (FORMAT.md §3.1).
public enum SegmentHeaderError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file holds only this many bytes, fewer than a whole header.
    case truncated(Int)
    /// The file does not start with the segment magic, so it is not a JournalLog segment.
    case badMagic
    /// The segment was written with a format major version this reader does not support.
    case unsupportedMajor(UInt16)
    /// The header's stated size is not the size this version defines.
    case badHeaderSize(UInt16)
    /// The header's stored CRC does not match the one computed over its bytes.
    case crcMismatch(expected: UInt32, actual: UInt32)
    /// A reserved header field is not zero.
    case nonZeroReserved

    public var description: String {
        switch self {
        case .truncated(let n): "segment header cut off: \(n) of \(SegmentHeader.size) bytes"
        case .badMagic: "not a JournalLog segment (bad magic)"
        case .unsupportedMajor(let v): "format major version \(v) is not supported by this reader (it reads 1)"
        case .badHeaderSize(let n): "segment header size \(n) is invalid"
        case .crcMismatch(let e, let a): "segment header CRC mismatch: stored \(hex32(e)), computed \(hex32(a))"
        case .nonZeroReserved: "segment header reserved fields are not zero"
        }
    }
}

/// A text sealed for the members of a list (Spec/SEALING.md §2): an item's text, a list's name
/// or colour as AEAD ciphertext under the list's key of one epoch. Everything here is the format
/// only, with no cryptography: the service reads a sealed value's epoch and checks its form
/// without any key, and the sealing product (`JournalSeal`) makes and opens them.
public struct SealedValue: Sendable, Hashable {
    /// The form's version (the first byte).
    public static let version: UInt8 = 1
    /// The nonce's size: AES-GCM's 96 bits.
    public static let nonceBytes = 12
    /// The tag's size: AES-GCM's 128 bits.
    public static let tagBytes = 16
    /// The most bytes a sealed value takes: version, a 10-byte epoch, nonce, the largest padded
    /// plaintext (`SealPadding.maxPaddedBytes`) and the tag.
    public static let maxBytes = 1 + 10 + nonceBytes + SealPadding.maxPaddedBytes + tagBytes

    /// The list key's epoch it is sealed under (1, 2, …): in the clear, so that a service can
    /// refuse a fresh value under an old epoch without reading it.
    public var epoch: UInt64 {
        get { header.epoch }
        set { self = SealedValue(epoch: newValue, nonce: nonce, sealed: sealed) }
    }
    /// The AEAD's nonce: random, never derived (a derived nonce turns any re-seal into reuse).
    public var nonce: [UInt8] {
        get { Array(encoded[header.bytes..<(header.bytes + Self.nonceBytes)]) }
        set { self = SealedValue(epoch: epoch, nonce: newValue, sealed: sealed) }
    }
    /// The padded plaintext, encrypted, then the 16-byte tag.
    public var sealed: [UInt8] {
        get { Array(encoded[(header.bytes + Self.nonceBytes)...]) }
        set { self = SealedValue(epoch: epoch, nonce: nonce, sealed: newValue) }
    }

    /// `version u8 | epoch varint | nonce [12] | ciphertext | tag [16]`: the value's one buffer,
    /// kept as it was read or made (a list of thousands of sealed texts decodes without copying
    /// them apart).
    public private(set) var encoded: [UInt8]
    /// The epoch, and how many bytes the version and epoch take.
    private var header: (epoch: UInt64, bytes: Int)

    /// A value from its parts (a sealer makes them; `init(decoding:)` reads them).
    public init(epoch: UInt64, nonce: [UInt8], sealed: [UInt8]) {
        var w = ByteWriter()
        w.u8(Self.version)
        w.varint(epoch)
        let bytes = w.bytes.count
        w.append(contentsOf: nonce)
        w.append(contentsOf: sealed)
        encoded = w.bytes
        header = (epoch, bytes)
    }

    public static func == (a: SealedValue, b: SealedValue) -> Bool { a.encoded == b.encoded }

    public func hash(into hasher: inout Hasher) { hasher.combine(encoded) }

    /// A sealed value from its bytes, or why they are not one: a version this reader does not
    /// know, an epoch of 0 or not in its shortest varint (the bytes a value is read from are the
    /// bytes it writes), a ciphertext that is no padded size (SealPadding), too many bytes.
    public init(decoding bytes: [UInt8]) throws(CodecError) {
        guard bytes.count <= Self.maxBytes else {
            throw CodecError(.lengthOutOfRange(field: "sealed", length: bytes.count, limit: Self.maxBytes), at: 0)
        }
        let read: Result<(UInt64, Int), CodecError> = bytes.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            do throws(CodecError) {
                let version = try r.u8()
                guard version == Self.version else { throw CodecError(.unsupportedEncodingVersion(version), at: 0) }
                let epoch = try r.varint()
                guard epoch >= 1 else { throw CodecError(.invalidValue(field: "sealed epoch"), at: 1) }
                guard r.offset - 1 == Self.varintBytes(epoch) else {
                    throw CodecError(.invalidValue(field: "sealed epoch (not its shortest varint)"), at: 1)
                }
                let header = r.offset
                _ = try r.bytes(Self.nonceBytes)
                let rest = r.remaining
                guard rest >= Self.tagBytes, SealPadding.isPaddedSize(rest - Self.tagBytes) else {
                    throw CodecError(.invalidValue(field: "sealed ciphertext length"), at: r.offset)
                }
                return .success((epoch, header))
            } catch {
                return .failure(error)
            }
        }
        switch read {
        case .success(let (epoch, headerBytes)):
            encoded = bytes
            header = (epoch, headerBytes)
        case .failure(let error): throw error
        }
    }

    /// How many bytes `value` takes as a varint in its shortest form.
    static func varintBytes(_ value: UInt64) -> Int {
        var n = 1, v = value >> 7
        while v != 0 { n += 1; v >>= 7 }
        return n
    }
}

/// The plaintext a sealed value encrypts (Spec/SEALING.md §2.2): `length varint | UTF-8 text |
/// zero bytes` up to a bucket, so that the ciphertext tells a text's length only to its bucket:
/// 16, 32, 64, 128 or 256 bytes, then PADMÉ (Nikitin et al., PoPETs 2019), which wastes at most
/// 12% and leaks O(log log n) bits.
public enum SealPadding {
    /// The largest padded plaintext: PADMÉ of a 4,096-byte text with its 2-byte length.
    public static let maxPaddedBytes = paddedSize(2 + Limits.maxTextBytes)

    /// The bucket a plaintext of `length` bytes (length prefix included) is padded to.
    public static func paddedSize(_ length: Int) -> Int {
        precondition(length >= 1)
        for bucket in [16, 32, 64, 128, 256] where length <= bucket { return bucket }
        return padme(length)
    }

    /// PADMÉ: keep the top ⌊log2 E⌋ + 1 bits of the length, E = ⌊log2 L⌋; round up the rest.
    static func padme(_ length: Int) -> Int {
        let e = Int.bitWidth - 1 - length.leadingZeroBitCount
        let s = Int.bitWidth - e.leadingZeroBitCount
        let zeroed = e - s
        let mask = (1 << zeroed) - 1
        return (length + mask) & ~mask
    }

    /// Whether `n` is a size some plaintext pads to.
    public static func isPaddedSize(_ n: Int) -> Bool {
        guard n >= 16, n <= maxPaddedBytes else { return false }
        return paddedSize(n) == n
    }

    /// The padded plaintext of `text`, or nil when it is over the text limit (FORMAT.md §8).
    public static func pad(_ text: String) -> [UInt8]? {
        let count = text.utf8.count
        guard count <= Limits.maxTextBytes else { return nil }
        // One allocation: the padded size is known from the text's length.
        let size = paddedSize(varintLength(UInt64(count)) + count)
        var w = ByteWriter(capacity: size)
        w.varint(UInt64(count))
        w.append(contentsOf: text.utf8)
        w.append(contentsOf: repeatElement(0, count: size - w.bytes.count))
        return w.bytes
    }

    /// The text a padded plaintext holds, or nil when it is not one: a length past its end,
    /// bytes that are not UTF-8, padding that is not zeros, or a size no text pads to.
    public static func unpad(_ plaintext: [UInt8]) -> String? {
        guard isPaddedSize(plaintext.count) else { return nil }
        var length: UInt64 = 0, shift: UInt64 = 0, at = 0
        while at < plaintext.count, at < 3 {
            let b = plaintext[at]
            length |= UInt64(b & 0x7F) << shift
            at += 1
            if b & 0x80 == 0 { break }
            shift += 7
        }
        // The length's shortest varint only (1 or 2 bytes for at most 4,096).
        guard plaintext[at - 1] & 0x80 == 0, at == 1 || plaintext[at - 1] != 0, length <= UInt64(Limits.maxTextBytes),
              at + Int(length) <= plaintext.count,
              paddedSize(at + Int(length)) == plaintext.count,
              plaintext[(at + Int(length))...].allSatisfy({ $0 == 0 }) else { return nil }
        return String(validating: plaintext[at..<(at + Int(length))], as: UTF8.self)
    }
}

/// What a sealed value is bound to (Spec/SEALING.md §2.3), as the AEAD's associated data: the
/// zone, the entry's id, kind, item (an add's), author and clocks, and the epoch. A value moved
/// to another entry, item, author or list, or presented under another epoch, does not open.
/// Not the add's anchor: a compactor may legitimately place an item elsewhere (MERGE.md §3.4).
public struct SealBinding: Sendable, Hashable {
    /// The entry's zone.
    public var zone: String
    /// The entry's id.
    public var entry: CompactID
    /// The entry's operation kind (SEALING.md §5).
    public var kind: UInt8
    /// An add's item; nil for a list's name or colour.
    public var item: CompactID?
    /// The entry's author.
    public var author: String
    /// The entry's hybrid clock.
    public var clock: HybridTime
    /// The entry's wall-clock milliseconds.
    public var wallTime: Int64
    /// The epoch the value is sealed under.
    public var epoch: UInt64

    /// The binding of a value in the entry these describe.
    public init(zone: String, entry: CompactID, kind: UInt8, item: CompactID?, author: String,
                clock: HybridTime, wallTime: Int64, epoch: UInt64) {
        self.zone = zone
        self.entry = entry
        self.kind = kind
        self.item = item
        self.author = author
        self.clock = clock
        self.wallTime = wallTime
        self.epoch = epoch
    }

    /// `"JLS1" | zone string | entry id | kind u8 | hasItem u8 | [item id] | author string |
    /// hlc varint | wallDelta zigzag | epoch varint`, strings and ids as in an entry (FORMAT.md §6).
    public var associatedData: [UInt8] {
        var w = ByteWriter(capacity: 48 + zone.utf8.count + author.utf8.count + 2 * 17)
        w.append(contentsOf: Array("JLS1".utf8))
        w.string(zone)
        entry.encoded(into: &w)
        w.u8(kind)
        w.u8(item == nil ? 0 : 1)
        item?.encoded(into: &w)
        w.string(author)
        w.varint(clock.rawValue)
        w.zigzag(wallTime &- Int64(bitPattern: clock.physicalMillis))
        w.varint(epoch)
        return w.bytes
    }
}

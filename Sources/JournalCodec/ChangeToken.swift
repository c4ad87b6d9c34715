/// SipHash-2-4 (Aumasson & Bernstein): a keyed 64-bit MAC, so a client cannot forge or alter
/// a change token without the store's key.
package struct SipHash24 {
    /// The four-word state, for callers that feed words incrementally (the state digest).
    package struct State {
        package var v0, v1, v2, v3: UInt64

        @inlinable package init(key: (UInt64, UInt64)) {
            v0 = 0x736f_6d65_7073_6575 ^ key.0
            v1 = 0x646f_7261_6e64_6f6d ^ key.1
            v2 = 0x6c79_6765_6e65_7261 ^ key.0
            v3 = 0x7465_6462_7974_6573 ^ key.1
        }

        @inlinable @inline(__always) mutating func round() {
            v0 = v0 &+ v1; v1 = v1.rotl(13); v1 ^= v0; v0 = v0.rotl(32)
            v2 = v2 &+ v3; v3 = v3.rotl(16); v3 ^= v2
            v0 = v0 &+ v3; v3 = v3.rotl(21); v3 ^= v0
            v2 = v2 &+ v1; v1 = v1.rotl(17); v1 ^= v2; v2 = v2.rotl(32)
        }

        /// One 8-byte message word (little-endian), two compression rounds.
        @inlinable @inline(__always) package mutating func absorb(_ m: UInt64) {
            v3 ^= m
            round(); round()
            v0 ^= m
        }

        /// The last word: the remaining `tail` bytes (fewer than 8) and the total length `n`.
        @inlinable package mutating func finish(tail: UnsafeRawBufferPointer, length n: Int) -> UInt64 {
            var last = UInt64(n & 0xFF) << 56
            for (i, b) in tail.enumerated() { last |= UInt64(b) << (8 * UInt64(i)) }
            absorb(last)
            v2 ^= 0xFF
            round(); round(); round(); round()
            return v0 ^ v1 ^ v2 ^ v3
        }
    }

    package static func hash(key: (UInt64, UInt64), _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var state = State(key: key)
        let n = bytes.count
        var i = 0
        while i + 8 <= n {
            state.absorb(bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self).littleEndian)
            i += 8
        }
        return state.finish(tail: UnsafeRawBufferPointer(rebasing: bytes[i...]), length: n)
    }

    package static func hash(key: (UInt64, UInt64), _ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { hash(key: key, $0) }
    }
}

extension UInt64 {
    @inlinable @inline(__always) func rotl(_ k: UInt64) -> UInt64 { (self << k) | (self >> (64 - k)) }
}

/// An opaque position in a store's change feed, bound to the store and (for zone tokens) to one
/// incarnation of one zone. Versioned and MAC'd with the store's key (Spec/TOKENS.md).
///
/// Version 4 (what a store issues) carries the positions as varints and leaves the store's id
/// and the zone's hash out of its bytes: its MAC covers them, so the reader that checks a token
/// names the store and zone it expects. Version 3 (66 bytes, every field written out) is still
/// read, so tokens devices hold stay good across the upgrade.
package struct ChangeToken: Hashable, Sendable {
    package enum Kind: UInt8, Sendable {
        /// For `changedZones(since:)`.
        case database = 0x44
        /// For `changes(in:since:)`.
        case zone = 0x5A
    }

    /// The version a store issues. Version 2 added `floor`, version 3 `epoch`, version 4 the
    /// short form; 1 and 2 are refused (`unsupportedVersion`), 3 is read.
    package static let version: UInt8 = 4
    /// Version 3's size, every field fixed.
    static let v3Size = 1 + 1 + 16 + 8 + 8 + 8 + 8 + 8 + 8
    /// Version 4's largest size: three 10-byte varints.
    package static let v4MaxSize = 1 + 1 + 3 * 10 + 8 + 8
    /// Text form prefix: it makes a token recognisable in logs and bug reports.
    package static let prefix = "jlt4."
    /// The text form prefix of version 3, still read.
    static let v3Prefix = "jlt3."

    package var kind: Kind
    package var storeID: (UInt64, UInt64)
    /// The sequence of the zone's `zoneCreate` record (0 for database tokens).
    package var incarnation: SequenceNumber
    /// SipHash of the zone's name under the store key (0 for database tokens).
    package var zoneHash: UInt64
    /// The last sequence the holder has seen.
    package var position: SequenceNumber
    /// The zone's low-water mark when the token was issued (0 for database tokens). A token is
    /// expired only when the mark has since risen past its position: a reader paging through a
    /// compacted zone from the start holds positions below the mark, and stays valid.
    package var floor: SequenceNumber
    /// The store's epoch when the token was issued (Spec/TOKENS.md §7): a token is good only
    /// for positions the store still holds exactly as they were when it was issued.
    package var epoch: UInt64

    package init(kind: Kind, storeID: (UInt64, UInt64), incarnation: SequenceNumber, zoneHash: UInt64, position: SequenceNumber,
                floor: SequenceNumber = 0, epoch: UInt64 = 0) {
        self.kind = kind
        self.storeID = storeID
        self.incarnation = incarnation
        self.zoneHash = zoneHash
        self.position = position
        self.floor = floor
        self.epoch = epoch
    }

    package static func == (a: ChangeToken, b: ChangeToken) -> Bool {
        a.kind == b.kind && a.storeID == b.storeID && a.incarnation == b.incarnation && a.zoneHash == b.zoneHash && a.position == b.position
            && a.floor == b.floor && a.epoch == b.epoch
    }

    package func hash(into h: inout Hasher) {
        h.combine(kind.rawValue); h.combine(storeID.0); h.combine(storeID.1)
        h.combine(incarnation); h.combine(zoneHash); h.combine(position); h.combine(floor); h.combine(epoch)
    }

    package static func zoneHash(_ zone: String, key: (UInt64, UInt64)) -> UInt64 {
        SipHash24.hash(key: key, Array(zone.utf8))
    }

    package enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
        case malformed
        case unsupportedVersion(UInt8)
        case badMAC
        package var description: String {
            switch self {
            case .malformed: "not a change token (garbled or truncated)"
            case .unsupportedVersion(let v): "change token version \(v) is not supported"
            case .badMAC: "change token failed its integrity check (tampered, or issued by another store or for another zone)"
            }
        }
    }

    /// Version 4's bytes: version, kind, incarnation, position and floor as varints, epoch, and
    /// the MAC of those bytes followed by the store's id and the zone's hash (0 for a database).
    package func encoded(key: (UInt64, UInt64)) -> [UInt8] {
        var w = ByteWriter(capacity: ChangeToken.v4MaxSize)
        w.u8(ChangeToken.version)
        w.u8(kind.rawValue)
        w.varint(incarnation)
        w.varint(position)
        w.varint(floor)
        w.u64(epoch)
        let mac = w.bytes.withUnsafeBytes { Self.mac($0, storeID: storeID, zoneHash: kind == .zone ? zoneHash : 0, key: key) }
        w.u64(mac)
        return w.bytes
    }

    /// Version 3's 66 bytes (TOKENS.md §4, as version 3 wrote them): for tests and vectors.
    package func encodedV3(key: (UInt64, UInt64)) -> [UInt8] {
        var w = ByteWriter(capacity: ChangeToken.v3Size)
        w.u8(3)
        w.u8(kind.rawValue)
        w.u64(storeID.0)
        w.u64(storeID.1)
        w.u64(incarnation)
        w.u64(zoneHash)
        w.u64(position)
        w.u64(floor)
        w.u64(epoch)
        w.u64(SipHash24.hash(key: key, w.bytes))
        return w.bytes
    }

    /// A version 4 token's MAC: SipHash-2-4 of `body`, then the store's id and the zone's hash
    /// as three u64 little-endian.
    static func mac(_ body: UnsafeRawBufferPointer, storeID: (UInt64, UInt64), zoneHash: UInt64, key: (UInt64, UInt64)) -> UInt64 {
        var w = ByteWriter(capacity: body.count + 24)
        w.bytes.append(contentsOf: body)
        w.u64(storeID.0)
        w.u64(storeID.1)
        w.u64(zoneHash)
        return SipHash24.hash(key: key, w.bytes)
    }

    /// A token of version 3 or 4 from its bytes. A version 4 token is checked against the store
    /// and zone its reader expects (`zoneHash` is ignored for a database token) and answers
    /// them as its own; a version 3 token answers the ones it carries, for the reader to compare.
    package static func decode(_ b: UnsafeRawBufferPointer, key: (UInt64, UInt64), storeID: (UInt64, UInt64),
                               zoneHash: UInt64) throws(DecodeError) -> ChangeToken {
        // The version byte first: an older token has another length.
        guard b.count >= 1 else { throw .malformed }
        switch b[0] {
        case 3: return try decodeV3(b, key: key)
        case 4: return try decodeV4(b, key: key, storeID: storeID, zoneHash: zoneHash)
        case 1, 2: throw .unsupportedVersion(b[0])
        default: throw .malformed
        }
    }

    private static func decodeV3(_ b: UnsafeRawBufferPointer, key: (UInt64, UInt64)) throws(DecodeError) -> ChangeToken {
        guard b.count == v3Size else { throw .malformed }
        guard let kind = Kind(rawValue: b[1]) else { throw .malformed }
        let mac = b.u64(at: v3Size - 8)
        guard SipHash24.hash(key: key, UnsafeRawBufferPointer(rebasing: b[0..<v3Size - 8])) == mac else { throw .badMAC }
        return ChangeToken(kind: kind, storeID: (b.u64(at: 2), b.u64(at: 10)), incarnation: b.u64(at: 18),
                           zoneHash: b.u64(at: 26), position: b.u64(at: 34), floor: b.u64(at: 42), epoch: b.u64(at: 50))
    }

    private static func decodeV4(_ b: UnsafeRawBufferPointer, key: (UInt64, UInt64), storeID: (UInt64, UInt64),
                                 zoneHash: UInt64) throws(DecodeError) -> ChangeToken {
        guard b.count <= v4MaxSize, b.count >= 2, let kind = Kind(rawValue: b[1]) else { throw .malformed }
        var r = ByteReader(b, offset: 2)
        let fields: (SequenceNumber, SequenceNumber, SequenceNumber, UInt64)
        do throws(CodecError) {
            fields = (try r.varint(), try r.varint(), try r.varint(), try r.u64())
        } catch { throw .malformed }
        guard r.remaining == 8 else { throw .malformed }
        let bound = kind == .zone ? zoneHash : 0
        guard mac(UnsafeRawBufferPointer(rebasing: b[0..<b.count - 8]), storeID: storeID, zoneHash: bound, key: key) == b.u64(at: b.count - 8) else {
            throw .badMAC
        }
        return ChangeToken(kind: kind, storeID: storeID, incarnation: fields.0, zoneHash: bound, position: fields.1,
                           floor: fields.2, epoch: fields.3)
    }

    /// `jlt4.` + unpadded base64url of the encoded bytes.
    package func text(key: (UInt64, UInt64)) -> String { ChangeToken.prefix + Base64URL.encode(encoded(key: key)) }

    /// A token from its text (`jlt4.` or `jlt3.`), checked as `decode` does.
    package static func parse(_ text: String, key: (UInt64, UInt64), storeID: (UInt64, UInt64), zoneHash: UInt64) throws(DecodeError) -> ChangeToken {
        let bytes = try bytes(of: text)
        let r: Result<ChangeToken, DecodeError> = bytes.withUnsafeBytes { b in
            do throws(DecodeError) { return .success(try decode(b, key: key, storeID: storeID, zoneHash: zoneHash)) } catch { return .failure(error) }
        }
        return try r.get()
    }

    /// The position a token's text claims, unchecked (no MAC, no store): only for deciding
    /// whether a reader should look for newer records before it checks the token for real.
    package static func unverifiedPosition(_ text: String) -> SequenceNumber? {
        guard let bytes = try? bytes(of: text) else { return nil }
        return bytes.withUnsafeBytes { b -> SequenceNumber? in
            if b.count == v3Size, b[0] == 3 { return b.u64(at: 34) }
            guard b.count >= 2, b.count <= v4MaxSize, b[0] == 4 else { return nil }
            var r = ByteReader(b, offset: 2)
            guard (try? r.varint()) != nil, let position = try? r.varint() else { return nil }
            return position
        }
    }

    /// The bytes of a token's text: its prefix known, at most 128 bytes, base64url.
    private static func bytes(of text: String) throws(DecodeError) -> [UInt8] {
        for v in 1..<3 where text.hasPrefix("jlt\(v).") { throw .unsupportedVersion(UInt8(v)) }
        guard text.utf8.count <= 128 else { throw .malformed }
        let body: Substring
        if text.hasPrefix(prefix) { body = text.dropFirst(prefix.count) } else if text.hasPrefix(v3Prefix) { body = text.dropFirst(v3Prefix.count) } else { throw .malformed }
        guard let bytes = Base64URL.decode(String(body)) else { throw .malformed }
        // The prefix and the version byte agree.
        guard let first = bytes.first, (first == 4) == text.hasPrefix(prefix) else { throw .malformed }
        return bytes
    }
}

/// Unpadded base64url (RFC 4648 §5).
package enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    package static func encode(_ b: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((b.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= b.count {
            let v = UInt32(b[i]) << 16 | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2])
            for s in [18, 12, 6, 0] { out.append(alphabet[Int(v >> UInt32(s) & 63)]) }
            i += 3
        }
        let rest = b.count - i
        if rest == 1 {
            let v = UInt32(b[i]) << 16
            out.append(alphabet[Int(v >> 18 & 63)]); out.append(alphabet[Int(v >> 12 & 63)])
        } else if rest == 2 {
            let v = UInt32(b[i]) << 16 | UInt32(b[i + 1]) << 8
            out.append(alphabet[Int(v >> 18 & 63)]); out.append(alphabet[Int(v >> 12 & 63)]); out.append(alphabet[Int(v >> 6 & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Whether `s` is what `encode` makes of some `count` bytes: exactly `decode(s)?.count ==
    /// count`, without building the bytes (a server checks every request's credential).
    package static func isEncoding(_ s: Substring.UTF8View, ofBytes count: Int) -> Bool {
        guard s.count == (count * 4 + 2) / 3 else { return false }
        var last: UInt8 = 0
        for c in s {
            switch c {
            case 65...90: last = c - 65
            case 97...122: last = c - 71
            case 48...57: last = c + 4
            case 45: last = 62
            case 95: last = 63
            default: return false
            }
        }
        // The bits of the last character past the last byte are zero.
        let spare = (6 * s.count - 8 * count)
        return count == 0 || last & ((1 << UInt8(spare)) - 1) == 0
    }

    /// Nil for any character outside the alphabet, a length of 1 mod 4, or non-zero padding bits.
    package static func decode(_ s: String) -> [UInt8]? {
        let u = Array(s.utf8)
        guard u.count % 4 != 1 else { return nil }
        func v(_ c: UInt8) -> UInt32? {
            switch c {
            case 65...90: UInt32(c - 65)
            case 97...122: UInt32(c - 71)
            case 48...57: UInt32(c + 4)
            case 45: 62
            case 95: 63
            default: nil
            }
        }
        var out: [UInt8] = []
        var acc: UInt32 = 0
        var bits = 0
        for c in u {
            guard let x = v(c) else { return nil }
            acc = acc << 6 | x
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                acc &= (1 << UInt32(bits)) - 1
            }
        }
        guard acc == 0 else { return nil }
        return out
    }
}

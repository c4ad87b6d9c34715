/// What makes a zone sealed, and the fixed ids of the entries that govern its keys
/// (Spec/SEALING.md §5.1): pure rules, computable by any node and device from the zone's name and
/// an epoch alone, with no key and no state.
///
/// A zone is sealed by its name: `~` and 32 lowercase hex digits (128 random bits) after its
/// owner's `/`. So every node of a service, and every device, knows a zone is sealed before it
/// reads a byte of it, and a sealed list's name says nothing of what it holds.
///
/// A key record's entry id is fixed by its zone and epoch, and so is a rotation-due marker's:
/// two records for one epoch are two contents under one id, which every store already refuses
/// (a compare-and-set on the epoch with no new machinery), and whether an epoch has ended, or
/// owes a rotation, is one id lookup.
public enum SealedZone {
    /// The first character of a sealed zone's name.
    public static let namePrefix: Character = "~"
    /// Hex digits after the prefix.
    public static let nameDigits = 32
    /// The opaque kind of a rotation-due marker: the service's, appended with a departure that
    /// did not rotate the key (a leave, a removal without a record, sharing stopped).
    public static let rotationDueKind: UInt8 = 0x88

    /// Whether the zone named `storeName` (`owner/name`) is sealed: its name begins with `~`.
    public static func isSealed(storeName: String) -> Bool {
        guard let slash = storeName.utf8.firstIndex(of: UInt8(ascii: "/")) else { return false }
        return storeName.utf8[storeName.utf8.index(after: slash)...].first == UInt8(ascii: "~")
    }

    /// Why `name`, a zone's name (without its owner), is not a sealed zone's name when it begins
    /// with `~`, or nil (also for any name that does not begin with `~`).
    public static func nameRefusal(_ name: String) -> String? {
        guard name.first == namePrefix else { return nil }
        let digits = name.utf8.dropFirst()
        guard digits.count == nameDigits, digits.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            return "a sealed list's name is ~ and \(nameDigits) lowercase hex digits (random), not \(name.utf8.count) bytes"
        }
        return nil
    }

    /// A new sealed zone's name from 16 random bytes.
    public static func name(random bytes: [UInt8]) -> String {
        precondition(bytes.count == nameDigits / 2, "a sealed name takes 16 random bytes")
        let hex = Array("0123456789abcdef".utf8)
        var out = [UInt8(ascii: "~")]
        for b in bytes { out += [hex[Int(b >> 4)], hex[Int(b & 0xF)]] }
        return String(decoding: out, as: UTF8.self)
    }

    /// The entry id of the key record that begins `epoch` in `zone` (a store name).
    public static func keyRecordID(zone: String, epoch: UInt64) -> CompactID {
        fixedID(kind: EpochKeyRecord.kind, zone: zone, epoch: epoch)
    }

    /// The entry id of the marker that says epoch `epoch` of `zone` owes a rotation.
    public static func rotationDueID(zone: String, epoch: UInt64) -> CompactID {
        fixedID(kind: rotationDueKind, zone: zone, epoch: epoch)
    }

    /// A UUID (version 8): SipHash-2-4 of `"JLS1-id" | kind u8 | zone string | epoch varint`
    /// under two fixed keys, as FORMAT.md §7.5 derives an imported entry's id.
    static func fixedID(kind: UInt8, zone: String, epoch: UInt64) -> CompactID {
        var w = ByteWriter()
        w.append(contentsOf: Array("JLS1-id".utf8))
        w.u8(kind)
        w.string(zone)
        w.varint(epoch)
        let hi = SipHash24.hash(key: (0x4A4C_5331_0000_0001, 0x6669_7865_6469_6431), w.bytes)
        let lo = SipHash24.hash(key: (0x4A4C_5331_0000_0002, 0x6669_7865_6469_6432), w.bytes)
        return CompactID(uuidHigh: (hi & ~0xF000) | 0x8000, low: (lo & ~(0xC000 << 48)) | (0x8000 << 48))
    }

    /// A rotation-due marker's body: `version u8 (1) | epoch varint`.
    public static func rotationDueBody(epoch: UInt64) -> [UInt8] {
        var w = ByteWriter()
        w.u8(1)
        w.varint(epoch)
        return w.bytes
    }

    /// The epoch a rotation-due marker's body names; nil for one that does not read (another
    /// version, bytes after the epoch, an epoch of 0 or not in its shortest form).
    public static func rotationDueEpoch(_ body: [UInt8]) -> UInt64? {
        guard body.first == 1, body.count >= 2, body.count <= 11 else { return nil }
        var epoch: UInt64 = 0
        for (i, b) in body.dropFirst().enumerated() {
            guard i < 10 else { return nil }
            epoch |= UInt64(b & 0x7F) << (7 * UInt64(i))
        }
        guard epoch >= 1, rotationDueBody(epoch: epoch) == body else { return nil }
        return epoch
    }
}

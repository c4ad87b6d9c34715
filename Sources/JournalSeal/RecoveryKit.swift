import Foundation
import JournalCodec

/// A recovery code (Spec/SEALING.md §4.5): 32 random bytes a person keeps on paper, shown as
/// 52 characters of Crockford's base32 in thirteen groups of four. A high-entropy code, not a
/// password: whoever holds the service's kit cannot try every code.
public struct RecoveryCode: Sendable, Hashable, CustomStringConvertible {
    /// The code's 32 bytes.
    public let bytes: [UInt8]
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// A new random code.
    public static func random() -> RecoveryCode { RecoveryCode(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) })! }

    /// A code of 32 bytes; nil otherwise.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// The code a person typed: spaces and dashes ignored, any case, `I` and `L` read as `1`,
    /// `O` as `0`; nil unless it is 52 such characters whose last four bits are zero.
    public init?(_ text: String) {
        var value: [UInt8] = []
        for c in text.uppercased().utf8 where c != UInt8(ascii: " ") && c != UInt8(ascii: "-") {
            let read: UInt8 = c == UInt8(ascii: "I") || c == UInt8(ascii: "L") ? UInt8(ascii: "1") : c == UInt8(ascii: "O") ? UInt8(ascii: "0") : c
            guard let digit = Self.alphabet.firstIndex(of: read) else { return nil }
            value.append(UInt8(digit))
        }
        guard value.count == 52 else { return nil }
        let (bytes, rest, _) = Self.regroup(value, from: 5, to: 8)
        guard bytes.count == 32, rest == 0 else { return nil }
        self.bytes = bytes
    }

    /// `input`'s values of `inBits` bits each, read as one bit string and cut into values of
    /// `outBits` bits; the bits left over, and how many.
    static func regroup(_ input: [UInt8], from inBits: Int, to outBits: Int) -> (values: [UInt8], rest: Int, restBits: Int) {
        var out: [UInt8] = [], acc = 0, bits = 0
        for v in input {
            acc = acc << inBits | Int(v)
            bits += inBits
            while bits >= outBits {
                bits -= outBits
                out.append(UInt8(truncatingIfNeeded: acc >> bits))
                acc &= (1 << bits) - 1
            }
        }
        return (out, acc, bits)
    }

    /// Thirteen groups of four characters.
    public var description: String {
        let (values, rest, bits) = Self.regroup(bytes, from: 8, to: 5)
        let out = (values + [UInt8(rest << (5 - bits))]).map { Self.alphabet[Int($0)] }
        return stride(from: 0, to: out.count, by: 4).map { String(decoding: out[$0..<min($0 + 4, out.count)], as: UTF8.self) }
            .joined(separator: "-")
    }
}

/// An account's keys sealed under its recovery code, for the service to keep
/// (`SyncService.storeRecoveryKit`, Spec/SEALING.md §4.5): the service holds ciphertext only,
/// and hands it back to the account alone, a few times an hour.
///
/// `version u8 (1) | nonce [12] | AES-256-GCM(k, account keys [64], "JLR1" | account string) | tag
/// [16]`, 93 bytes, with `k = HKDF-SHA256(ikm: code, salt: "jlog-recovery v1", info: account)`.
public enum RecoveryKit {
    /// `keys` sealed under `code`.
    public static func seal(_ keys: AccountKeys, under code: RecoveryCode) throws(SealError) -> [UInt8] {
        do {
            let box = try AES.GCM.seal(keys.raw, using: key(code, keys.account), authenticating: associatedData(keys.account))
            return [1] + Array(box.combined!)
        } catch { throw .badKey("the recovery kit could not be sealed: \(error)") }
    }

    /// The account keys `kit` holds for `account`: `cannotOpen` under any other code or account.
    public static func open(_ kit: [UInt8], account: String, code: RecoveryCode) throws(SealError) -> AccountKeys {
        guard kit.count == 1 + 12 + 64 + 16, kit[0] == 1 else { throw .cannotOpen }
        do {
            let box = try AES.GCM.SealedBox(combined: kit.dropFirst())
            let raw = try AES.GCM.open(box, using: key(code, account), authenticating: associatedData(account))
            guard let keys = AccountKeys(account: account, raw: Array(raw)) else { throw SealError.cannotOpen }
            return keys
        } catch { throw .cannotOpen }
    }

    static func key(_ code: RecoveryCode, _ account: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: code.bytes), salt: Array("jlog-recovery v1".utf8),
                               info: Array(account.utf8), outputByteCount: 32)
    }

    static func associatedData(_ account: String) -> [UInt8] {
        var w = ByteWriter()
        w.append(contentsOf: Array("JLR1".utf8))
        w.string(account)
        return w.bytes
    }
}

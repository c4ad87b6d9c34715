import Crypto
import JournalLog
import JournalSync

/// Each account's public keys, as one of its devices published them (Spec/SYNC.md §5.6): what
/// the service checks sealed lists' key records against (who signed, to whose keys they wrap),
/// and hands to an owner wrapping a list's key for an invitee. Kept as records of the service's
/// own zone `_service/keys`, rebuilt at startup and read by every node as membership is. The
/// service holds public keys only: nothing here opens a sealed text.
struct AccountKeyDirectory: Sendable {
    static let zone = "_service/keys"
    /// The opaque kind of a directory record.
    static let kind: UInt8 = 0x89

    /// One account's keys, with the key id its wraps and records name.
    struct Keys: Sendable, Equatable {
        var identity: [UInt8]
        var wrap: [UInt8]
        /// The first 16 bytes of SHA-256 of `wrap` (SEALING.md §4.1).
        var keyID: [UInt8]
        /// The earlier identity key's signature over these keys, when they replaced vouched-for keys.
        var vouch: [UInt8]?
        /// Whether these keys replaced earlier ones without their vouch (a reset, SEALING.md
        /// §4.7): a key record may leave the account out until a member re-verifies them.
        var isReset: Bool
    }

    /// By account. Under the service's lock.
    private(set) var keys: [String: Keys] = [:]

    /// Why `published` is not an account's public keys, or nil: an Ed25519 key and an X25519
    /// key of 32 bytes each, the first a point the signature check takes.
    static func refusal(_ published: PublishedAccountKeys) -> String? {
        guard published.identity.count == 32, published.wrap.count == 32 else { return "an identity key and a wrap key are 32 bytes each" }
        guard (try? Curve25519.Signing.PublicKey(rawRepresentation: published.identity)) != nil else { return "the identity key is not an Ed25519 public key" }
        guard (try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: published.wrap)) != nil else { return "the wrap key is not an X25519 public key" }
        return nil
    }

    static func keyID(ofWrap wrap: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: wrap).prefix(EpochKeyRecord.keyIDBytes)) }

    /// A directory record's body: `version u8 (1) | account string | identity [32] | wrap [32]`,
    /// then, for keys that replace earlier ones, `hasVouch u8 (0 or 1) | [vouch [64]]`.
    static func encode(_ p: PublishedAccountKeys, replacing: Bool) -> [UInt8] {
        var w = ByteWriter()
        w.u8(1)
        w.string(p.account)
        w.append(contentsOf: p.identity)
        w.append(contentsOf: p.wrap)
        if replacing {
            w.u8(p.vouch == nil ? 0 : 1)
            w.append(contentsOf: p.vouch ?? [])
        }
        return w.bytes
    }

    /// A record's keys, and whether they replace the account's earlier ones.
    static func decode(_ body: [UInt8]) -> (keys: PublishedAccountKeys, replacing: Bool)? {
        guard body.first == 1, body.count >= 2 + 64 else { return nil }
        let length = Int(body[1])
        let end = 2 + length + 64
        guard length < 0x80, body.count >= end,
              let account = String(validating: body[2..<(2 + length)], as: UTF8.self) else { return nil }
        var keys = PublishedAccountKeys(account: account, identity: Array(body[(2 + length)..<(2 + length + 32)]),
                                        wrap: Array(body[(2 + length + 32)..<end]))
        switch body.count - end {
        case 0: return (keys, false)
        case 1 where body[end] == 0: return (keys, true)
        case 65 where body[end] == 1:
            keys.vouch = Array(body[(end + 1)...])
            return (keys, true)
        default: return nil
        }
    }

    /// Applies a record of `_service/keys`, in log order.
    mutating func observe(_ entry: JournalEntry) {
        guard case .opaque(Self.kind, let body) = entry.operation, let (p, replacing) = Self.decode(body) else { return }
        note(p, replacing: replacing)
    }

    /// Notes keys published: an account's first keys; later, keys that replace them (vouched
    /// for by the keys before, or a reset). A replacement that does not follow the account's
    /// current keys (its vouch is not theirs: another device's replacement came first) is no
    /// change.
    mutating func note(_ p: PublishedAccountKeys, replacing: Bool) {
        guard Self.refusal(p) == nil else { return }
        guard let current = keys[p.account] else {
            keys[p.account] = Keys(identity: p.identity, wrap: p.wrap, keyID: Self.keyID(ofWrap: p.wrap), vouch: nil, isReset: false)
            return
        }
        guard replacing, current.identity != p.identity || current.wrap != p.wrap else { return }
        if let vouch = p.vouch, !Self.vouches(current.identity, vouch, for: p) { return }
        keys[p.account] = Keys(identity: p.identity, wrap: p.wrap, keyID: Self.keyID(ofWrap: p.wrap), vouch: p.vouch, isReset: p.vouch == nil)
    }

    /// Whether `signature` is `identity`'s over `p`'s keys (SEALING.md §4.7).
    static func vouches(_ identity: [UInt8], _ signature: [UInt8], for p: PublishedAccountKeys) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: identity) else { return false }
        return key.isValidSignature(signature, for: p.vouchedBytes)
    }

    /// The published keys of `account`, if any.
    func published(_ account: String) -> PublishedAccountKeys? {
        keys[account].map { PublishedAccountKeys(account: account, identity: $0.identity, wrap: $0.wrap, vouch: $0.vouch) }
    }

    /// Whether `record`'s signature is its creator's, under the identity key the creator
    /// published, and the record names the creator's published key id.
    func isSigned(_ record: EpochKeyRecord, zone: String) -> Bool {
        guard let creator = keys[record.creator], creator.keyID == record.creatorKeyID,
              let key = try? Curve25519.Signing.PublicKey(rawRepresentation: creator.identity) else { return false }
        return key.isValidSignature(record.signature, for: record.signedBytes(zone: zone))
    }
}

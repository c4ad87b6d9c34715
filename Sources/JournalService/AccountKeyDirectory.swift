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

    /// A directory record's body: `version u8 (1) | account string | identity [32] | wrap [32]`.
    static func encode(_ p: PublishedAccountKeys) -> [UInt8] {
        var w = ByteWriter()
        w.u8(1)
        w.string(p.account)
        w.append(contentsOf: p.identity)
        w.append(contentsOf: p.wrap)
        return w.bytes
    }

    static func decode(_ body: [UInt8]) -> PublishedAccountKeys? {
        guard body.first == 1, body.count >= 2 + 64 else { return nil }
        let length = Int(body[1])
        guard length < 0x80, body.count == 2 + length + 64,
              let account = String(validating: body[2..<(2 + length)], as: UTF8.self) else { return nil }
        return PublishedAccountKeys(account: account, identity: Array(body[(2 + length)..<(2 + length + 32)]),
                                    wrap: Array(body[(2 + length + 32)...]))
    }

    /// Applies a record of `_service/keys`: the first keys an account published stay its keys.
    mutating func observe(_ entry: JournalEntry) {
        guard case .opaque(Self.kind, let body) = entry.operation, let p = Self.decode(body) else { return }
        note(p)
    }

    /// Notes keys published: the first an account published stay its keys.
    mutating func note(_ p: PublishedAccountKeys) {
        guard Self.refusal(p) == nil, keys[p.account] == nil else { return }
        keys[p.account] = Keys(identity: p.identity, wrap: p.wrap, keyID: Self.keyID(ofWrap: p.wrap))
    }

    /// The published keys of `account`, if any.
    func published(_ account: String) -> PublishedAccountKeys? {
        keys[account].map { PublishedAccountKeys(account: account, identity: $0.identity, wrap: $0.wrap) }
    }

    /// Whether `record`'s signature is its creator's, under the identity key the creator
    /// published, and the record names the creator's published key id.
    func isSigned(_ record: EpochKeyRecord, zone: String) -> Bool {
        guard let creator = keys[record.creator], creator.keyID == record.creatorKeyID,
              let key = try? Curve25519.Signing.PublicKey(rawRepresentation: creator.identity) else { return false }
        return key.isValidSignature(record.signature, for: record.signedBytes(zone: zone))
    }
}

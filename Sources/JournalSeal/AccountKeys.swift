import Foundation
import JournalCodec

/// An account's public keys, as a member's device learns them (Spec/SEALING.md §4.1): its
/// Ed25519 identity key, which signs the key records its devices write, and its X25519 wrap key,
/// to which list keys are wrapped. `keyID` names the wrap key in records.
public struct AccountPublicKeys: Sendable, Hashable {
    /// The account the keys are of.
    public let account: String
    /// The Ed25519 public key, 32 bytes.
    public let identity: [UInt8]
    /// The X25519 public key, 32 bytes.
    public let wrap: [UInt8]

    /// Nil unless both keys are 32 bytes and decode.
    public init?(account: String, identity: [UInt8], wrap: [UInt8]) {
        guard identity.count == 32, wrap.count == 32,
              (try? Curve25519.Signing.PublicKey(rawRepresentation: identity)) != nil,
              (try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: wrap)) != nil else { return nil }
        self.account = account
        self.identity = identity
        self.wrap = wrap
    }

    /// The first 16 bytes of SHA-256 of the wrap key.
    public var keyID: [UInt8] { Array(SHA256.hash(data: wrap).prefix(EpochKeyRecord.keyIDBytes)) }

    /// Whether `signature` is the identity key's over `bytes`.
    func signed(_ signature: [UInt8], _ bytes: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: identity) else { return false }
        return key.isValidSignature(signature, for: bytes)
    }
}

/// An account's private keys, which every device of the account holds (Spec/SEALING.md §4.1):
/// never sent to the service. Keep them in the Keychain (Apple platforms) or a file only the
/// user can read; `raw` and `init(account:raw:)` move them between the account's devices.
public struct AccountKeys: Sendable {
    /// The account the keys are of.
    public let account: String
    let identitySecret: [UInt8]
    let wrapSecret: [UInt8]

    /// New random keys for `account`.
    public init(account: String) {
        self.account = account
        identitySecret = Array(Curve25519.Signing.PrivateKey().rawRepresentation)
        wrapSecret = Array(Curve25519.KeyAgreement.PrivateKey().rawRepresentation)
    }

    /// Keys from their 64 bytes (identity, then wrap), as `raw` gives them; nil if they do not decode.
    public init?(account: String, raw: [UInt8]) {
        guard raw.count == 64, (try? Curve25519.Signing.PrivateKey(rawRepresentation: raw[0..<32])) != nil,
              (try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: raw[32..<64])) != nil else { return nil }
        self.account = account
        identitySecret = Array(raw[0..<32])
        wrapSecret = Array(raw[32..<64])
    }

    /// The 64 secret bytes: for another device of the account only.
    public var raw: [UInt8] { identitySecret + wrapSecret }

    var identityKey: Curve25519.Signing.PrivateKey { try! Curve25519.Signing.PrivateKey(rawRepresentation: identitySecret) }
    var wrapKey: Curve25519.KeyAgreement.PrivateKey { try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: wrapSecret) }

    /// The public halves, which others learn (and pin) to wrap list keys to this account.
    public var publicKeys: AccountPublicKeys {
        AccountPublicKeys(account: account, identity: Array(identityKey.publicKey.rawRepresentation),
                          wrap: Array(wrapKey.publicKey.rawRepresentation))!
    }
}

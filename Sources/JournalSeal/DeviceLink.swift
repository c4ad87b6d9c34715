import Foundation
import JournalCodec

/// What a person's new device shows, as a QR code, for one of their devices that holds the
/// account keys to scan (Spec/SEALING.md §4.6): a fresh X25519 public key and a 32-byte secret.
/// The camera is the channel the service never sees; the keys then travel through the service
/// sealed to that public key and authenticated by that secret, so the service can neither read
/// them nor hand the new device keys of its own choosing.
///
/// `"jdl1." | base64url(public key [32] | secret [32])`, 91 characters.
public struct DeviceLinkOffer: Sendable, Hashable, CustomStringConvertible {
    static let prefix = "jdl1."
    /// The new device's one-time X25519 public key.
    public let publicKey: [UInt8]
    /// The secret only the two devices see: HPKE's pre-shared key.
    public let secret: [UInt8]

    /// An offer of a 32-byte X25519 public key and a 32-byte secret; nil otherwise.
    public init?(publicKey: [UInt8], secret: [UInt8]) {
        guard publicKey.count == 32, secret.count == 32,
              (try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: publicKey)) != nil else { return nil }
        self.publicKey = publicKey
        self.secret = secret
    }

    /// The offer a scanned code spells; nil for anything else.
    public init?(_ text: String) {
        guard text.hasPrefix(Self.prefix), text.utf8.count == 91, let bytes = Base64URL.decode(String(text.dropFirst(Self.prefix.count))),
              bytes.count == 64, Base64URL.encode(bytes) == text.dropFirst(Self.prefix.count) else { return nil }
        self.init(publicKey: Array(bytes[..<32]), secret: Array(bytes[32...]))
    }

    /// The text the new device shows as a QR code.
    public var description: String { Self.prefix + Base64URL.encode(publicKey + secret) }

    /// The mailbox the sealed keys travel through (`SyncService.depositDeviceLink`): the first 16
    /// bytes of `SHA-256("jlog-link v1" | public key)`. Names the link; opens nothing.
    public var linkID: [UInt8] { Array(SHA256.hash(data: Array("jlog-link v1".utf8) + publicKey).prefix(16)) }
}

/// The new device's half of a link: the one-time private key and the secret behind its offer.
/// Kept in memory only, for the minutes a link lasts.
public struct DeviceLinkRequest: Sendable {
    /// The one-time X25519 private key, 32 bytes.
    let secretKey: [UInt8]
    /// What this device shows for the other to scan.
    public let offer: DeviceLinkOffer

    /// A fresh request: a new one-time key and a new secret.
    public init() {
        let key = Curve25519.KeyAgreement.PrivateKey()
        secretKey = Array(key.rawRepresentation)
        offer = DeviceLinkOffer(publicKey: Array(key.publicKey.rawRepresentation), secret: (0..<32).map { _ in UInt8.random(in: 0...255) })!
    }

    /// A request of a given private key and secret (the spec's vectors); nil unless 32 bytes each.
    package init?(privateKey: [UInt8], secret: [UInt8]) {
        guard let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: privateKey),
              let offer = DeviceLinkOffer(publicKey: Array(key.publicKey.rawRepresentation), secret: secret) else { return nil }
        secretKey = privateKey
        self.offer = offer
    }

    /// The account keys `sealed` carries for `account`: `cannotOpen` unless a device that
    /// scanned this request's offer sealed them for this account.
    public func open(_ sealed: [UInt8], account: String) throws(SealError) -> AccountKeys {
        guard sealed.count == DeviceLink.sealedBytes else { throw .cannotOpen }
        do {
            let key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: secretKey)
            var recipient = try HPKE.Recipient(privateKey: key, ciphersuite: DeviceLink.ciphersuite, info: DeviceLink.info(account),
                                               encapsulatedKey: Data(sealed[..<32]), presharedKey: SymmetricKey(data: offer.secret),
                                               presharedKeyIdentifier: DeviceLink.pskID)
            let raw = try recipient.open(sealed[32...], authenticating: Data())
            guard let keys = AccountKeys(account: account, raw: Array(raw)) else { throw SealError.cannotOpen }
            return keys
        } catch { throw .cannotOpen }
    }
}

/// Account keys sealed for a new device of the same account (Spec/SEALING.md §4.6): HPKE (RFC
/// 9180) in PSK mode, with the suite of key records' wraps (DHKEM(X25519, HKDF-SHA256),
/// HKDF-SHA256, ChaCha20-Poly1305), to the offer's public key, with the offer's secret as the
/// pre-shared key. `enc [32] | ciphertext [64 + 16]`, 112 bytes.
public enum DeviceLink {
    /// The size of sealed account keys.
    public static let sealedBytes = 32 + 64 + 16
    static var ciphersuite: HPKE.Ciphersuite { .Curve25519_SHA256_ChachaPoly }
    /// HPKE's pre-shared key id (made on use: a global `Data` reads as a leak to the fuzzers' LeakSanitizer).
    static var pskID: Data { Data("jlog-link v1 psk".utf8) }

    /// HPKE's info: `"jlog-link v1" | account string`.
    static func info(_ account: String) -> Data {
        var w = ByteWriter()
        w.append(contentsOf: Array("jlog-link v1".utf8))
        w.string(account)
        return Data(w.bytes)
    }

    /// `keys` sealed for the device that shows `offer`.
    public static func seal(_ keys: AccountKeys, for offer: DeviceLinkOffer) throws(SealError) -> [UInt8] {
        do {
            var sender = try HPKE.Sender(recipientKey: Curve25519.KeyAgreement.PublicKey(rawRepresentation: offer.publicKey),
                                         ciphersuite: ciphersuite, info: info(keys.account),
                                         presharedKey: SymmetricKey(data: offer.secret), presharedKeyIdentifier: pskID)
            return Array(sender.encapsulatedKey) + Array(try sender.seal(keys.raw, authenticating: Data()))
        } catch { throw .badKey("the account keys could not be sealed for the new device: \(error)") }
    }
}

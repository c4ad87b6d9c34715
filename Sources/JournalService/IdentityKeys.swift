import Crypto
import Foundation
import JournalCodec
import ListModel
import _CryptoExtras

/// The public keys an identity provider signs its tokens with, read from its JWKS document
/// (RFC 7517; Spec/SYNC.md §9.2, enrolment): RSA (RS256), P-256 (ES256) and Ed25519 (EdDSA) signing keys.
/// Keys of other types, and keys marked for encryption only (`"use": "enc"`), are passed over, as
/// a provider's document may hold them beside its signing keys.
package struct IdentityKeys: Sendable {
    /// The largest JWKS document read.
    package static let maxDocumentBytes = 256 << 10
    /// The most keys kept from one document.
    package static let maxKeys = 64

    /// One signing key and the algorithm it verifies, as the bytes its JWK gave (checked to
    /// decode when read: swift-crypto's key types are not `Sendable`, so each verification makes
    /// its key from them).
    package enum Key: Sendable, Equatable {
        case rsa(n: [UInt8], e: [UInt8])
        /// x and y, 32 bytes each.
        case p256([UInt8])
        case ed25519([UInt8])

        /// The JWS `alg` this key verifies (RFC 7518 §3.1, RFC 8037 §3.1).
        package var algorithm: String {
            switch self {
            case .rsa: "RS256"
            case .p256: "ES256"
            case .ed25519: "EdDSA"
            }
        }
    }

    /// The signing keys, with their `kid` (nil when the document gives none).
    package var keys: [(id: String?, key: Key)]

    package init(keys: [(id: String?, key: Key)]) { self.keys = keys }

    /// The keys of a JWKS document, or why it is not one: every key this server can verify with
    /// is kept; a document that holds none is refused, as a server configured with it could
    /// accept no token.
    package init(jwks bytes: [UInt8]) throws(IdentityTokenError) {
        guard bytes.count <= Self.maxDocumentBytes else { throw .badKeySet("the JWKS document is over \(Self.maxDocumentBytes) bytes") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
              let list = object["keys"] as? [Any] else { throw .badKeySet("a JWKS document is a JSON object with an array \"keys\"") }
        var keys: [(id: String?, key: Key)] = []
        for case let jwk as [String: Any] in list.prefix(Self.maxKeys) {
            if let use = jwk["use"] as? String, use != "sig" { continue }
            guard let key = try Self.key(jwk) else { continue }
            keys.append((jwk["kid"] as? String, key))
        }
        guard !keys.isEmpty else { throw .badKeySet("the JWKS document holds no RSA, P-256 or Ed25519 signing key") }
        self.keys = keys
    }

    /// The key a JWK describes, nil for a type or algorithm not verified here, or why it is
    /// broken (a key of a known type that does not decode).
    static func key(_ jwk: [String: Any]) throws(IdentityTokenError) -> Key? {
        let alg = jwk["alg"] as? String
        let kid = (jwk["kid"] as? String).map { " \(QuotedInput.quote($0))" } ?? ""
        func bytes(_ field: String) throws(IdentityTokenError) -> [UInt8] {
            guard let text = jwk[field] as? String, let b = Base64URL.decode(text) else {
                throw .badKeySet("key\(kid) has no base64url \"\(field)\"")
            }
            return b
        }
        switch jwk["kty"] as? String {
        case "RSA":
            guard alg == nil || alg == "RS256" else { return nil }
            let n = try bytes("n"), e = try bytes("e")
            // RFC 7518 §3.3: a key of 2048 bits or more; over 8192 bits verifies too slowly to be a
            // key worth taking from a document.
            let bits = (n.drop { $0 == 0 }).count * 8
            guard (2_048...8_192).contains(bits), (1...8).contains(e.count) else {
                throw .badKeySet("RSA key\(kid) is \(bits) bits: a signing key is 2048–8192 bits")
            }
            guard (try? _RSA.Signing.PublicKey(n: n, e: e)) != nil else { throw .badKeySet("RSA key\(kid) does not decode") }
            return .rsa(n: n, e: e)
        case "EC":
            guard jwk["crv"] as? String == "P-256", alg == nil || alg == "ES256" else { return nil }
            let x = try bytes("x"), y = try bytes("y")
            guard x.count == 32, y.count == 32, (try? P256.Signing.PublicKey(rawRepresentation: x + y)) != nil else {
                throw .badKeySet("P-256 key\(kid) is not a point on the curve")
            }
            return .p256(x + y)
        case "OKP":
            guard jwk["crv"] as? String == "Ed25519", alg == nil || alg == "EdDSA" else { return nil }
            let x = try bytes("x")
            guard x.count == 32, (try? Curve25519.Signing.PublicKey(rawRepresentation: x)) != nil else {
                throw .badKeySet("Ed25519 key\(kid) is not 32 bytes")
            }
            return .ed25519(x)
        default:
            return nil
        }
    }

    /// The key that verifies a token signed with `algorithm` under `kid`: the one with that id,
    /// or, for a token that names none, the only key for that algorithm.
    package func key(id kid: String?, algorithm: String) -> Key? {
        let candidates = keys.filter { $0.key.algorithm == algorithm && (kid == nil || $0.id == kid) }
        return candidates.count == 1 ? candidates[0].key : nil
    }
}

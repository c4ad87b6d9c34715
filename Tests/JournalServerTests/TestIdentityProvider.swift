import Crypto
import Foundation
import JournalCodec
import JournalService
import _CryptoExtras

/// An app's identity provider, for the enrolment tests: one key per algorithm the server
/// verifies, its JWKS document, and tokens signed as the provider (or, to be refused, otherwise).
struct TestIdentityProvider: @unchecked Sendable {
    static let issuer = "https://id.example.com"
    static let audience = "lists.example.com"
    let p256 = P256.Signing.PrivateKey()
    let ed25519 = Curve25519.Signing.PrivateKey()
    let rsa: _RSA.Signing.PrivateKey

    init() throws { rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048) }

    var policy: IdentityPolicy { IdentityPolicy(issuer: Self.issuer, audience: Self.audience) }

    /// The provider's JWKS document: the three public keys, ids `ec`, `ed` and `rsa`.
    func jwks() throws -> [UInt8] {
        let raw = p256.publicKey.rawRepresentation
        let rsaKey = try rsa.publicKey.getKeyPrimitives()
        let keys: [[String: String]] = [
            ["kty": "EC", "crv": "P-256", "kid": "ec", "use": "sig", "x": Base64URL.encode(Array(raw.prefix(32))), "y": Base64URL.encode(Array(raw.suffix(32)))],
            ["kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": Base64URL.encode(Array(ed25519.publicKey.rawRepresentation))],
            ["kty": "RSA", "kid": "rsa", "alg": "RS256", "n": Base64URL.encode(Array(rsaKey.modulus)), "e": Base64URL.encode(Array(rsaKey.publicExponent))],
        ]
        return Array(try JSONSerialization.data(withJSONObject: ["keys": keys]))
    }

    /// The document in a file of its own (a server's `--jwks`).
    func jwksFile() throws -> String {
        let path = NSTemporaryDirectory() + "jwks-\(UUID().uuidString).json"
        try Data(try jwks()).write(to: URL(fileURLWithPath: path))
        return path
    }

    func keys() throws -> IdentityKeys { try IdentityKeys(jwks: jwks()) }

    /// Claims valid for an hour from now, naming `account` as `sub`; `change` edits them.
    static func claims(_ account: String, change: (inout [String: Any]) -> Void = { _ in }) -> [String: Any] {
        let now = Int(Date().timeIntervalSince1970)
        var c: [String: Any] = ["iss": issuer, "aud": audience, "sub": account, "iat": now, "exp": now + 3_600]
        change(&c)
        return c
    }

    /// A token with `claims`, signed with `alg` (ES256, EdDSA or RS256) under `kid` (the key's own
    /// id unless given).
    func token(_ claims: [String: Any], alg: String = "ES256", kid: String? = nil) throws -> String {
        let header: [String: Any] = ["alg": alg, "typ": "JWT", "kid": kid ?? ["ES256": "ec", "EdDSA": "ed", "RS256": "rsa"][alg] ?? "x"]
        let signed = Self.part(header) + "." + Self.part(claims)
        let input = Data(signed.utf8)
        let signature: [UInt8] = switch alg {
        case "ES256": Array(try p256.signature(for: input).rawRepresentation)
        case "EdDSA": Array(try ed25519.signature(for: input))
        case "RS256": Array(try rsa.signature(for: input, padding: .insecurePKCS1v1_5).rawRepresentation)
        default: Array(repeating: 1, count: 32)
        }
        return signed + "." + Base64URL.encode(signature)
    }

    static func part(_ object: [String: Any]) -> String {
        Base64URL.encode(Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()))
    }
}

import Crypto
import Foundation
import JournalCodec
import JournalSync
import ListModel
import _CryptoExtras

/// Why an identity provider's token was not taken (Spec/SYNC.md §9.2, enrolment). Every case but
/// `keysUnavailable` is the token's fault: `401 notAuthenticated`, with the reason.
package enum IdentityTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a compact JWS of a JSON header and claims (RFC 7515 §7.1), or over the size limit.
    case malformed(String)
    /// Signed with an algorithm this server does not verify (only RS256, ES256 and EdDSA; never
    /// `none` or a shared-secret HMAC), or one its key is not for.
    case unsupportedAlgorithm(String)
    /// No key of the provider's set has this `kid` (or, for a token that names none, no single
    /// key for its algorithm).
    case unknownKey(String?)
    /// The signature does not verify under the key.
    case badSignature
    /// `exp` has passed (more than the allowed skew ago), or the token has no `exp`.
    case expired
    /// `nbf` is still ahead (more than the allowed skew).
    case notYetValid
    /// `iss` is not the provider this server trusts.
    case wrongIssuer(String?)
    /// `aud` does not name this server.
    case wrongAudience
    /// The claim naming the account is missing, or is not an account name (`SyncNames`).
    case notAnAccount(claim: String, why: String)
    /// The provider's key set is not a JWKS document with a key this server can use.
    case badKeySet(String)
    /// The provider's key set could not be read (its URL did not answer): nothing was judged,
    /// so the device is told to retry (`503 serviceBusy`), never that its token is bad.
    case keysUnavailable(String)

    package var description: String {
        switch self {
        case .malformed(let why): "the identity token is not a JWT: \(why)"
        case .unsupportedAlgorithm(let alg): "the identity token is signed with \(QuotedInput.quote(alg)): this server verifies RS256, ES256 and EdDSA"
        case .unknownKey(let kid): "no key of the identity provider's set verifies the token" + (kid.map { " (kid \(QuotedInput.quote($0)))" } ?? " (it names no kid)")
        case .badSignature: "the identity token's signature does not verify"
        case .expired: "the identity token has expired (or has no exp)"
        case .notYetValid: "the identity token is not valid yet (nbf)"
        case .wrongIssuer(let iss): "the identity token's issuer " + (iss.map { QuotedInput.quote($0) } ?? "(none)") + " is not the one this server trusts"
        case .wrongAudience: "the identity token is not for this server (aud)"
        case .notAnAccount(let claim, let why): "the identity token's \(QuotedInput.quote(claim)) claim names no account: \(why)"
        case .badKeySet(let why): "the identity provider's key set: \(why)"
        case .keysUnavailable(let why): "the identity provider's key set could not be read: \(why)"
        }
    }

    /// What a device is answered: the token refused, or (keys unavailable) try again.
    package var syncError: SyncError {
        if case .keysUnavailable = self { return .serviceBusy(retryAfter: .seconds(5)) }
        return .notAuthenticated
    }
}

/// Which tokens of an identity provider a server takes (Spec/SYNC.md §9.2, enrolment): its issuer, this
/// server's audience, the claim that names the account, and the clock skew allowed.
package struct IdentityPolicy: Sendable, Equatable {
    /// `iss`, compared exactly.
    package var issuer: String
    /// A value `aud` must be (or, as an array, hold).
    package var audience: String
    /// The claim whose value is the account name (`sub` unless the provider puts it elsewhere).
    package var accountClaim: String = "sub"
    /// How far `exp` and `nbf` may be off this server's clock.
    package var skewMillis: Int64 = 60_000

    package init(issuer: String, audience: String, accountClaim: String = "sub") {
        self.issuer = issuer
        self.audience = audience
        self.accountClaim = accountClaim
    }
}

/// A JWT an identity provider signed (RFC 7519), checked: its signature under the provider's
/// keys, then its claims against the policy. What it yields is the account it names.
package enum IdentityToken {
    /// The longest token read.
    package static let maxBytes = 8 << 10

    /// The account `token` names, or why it is not taken.
    package static func account(of token: String, keys: IdentityKeys, policy: IdentityPolicy, now: Int64) throws(IdentityTokenError) -> String {
        let parts = try split(token)
        let header = try object(parts.header, "header")
        guard header["crit"] == nil else { throw .malformed("it has critical header extensions (crit)") }
        guard let alg = header["alg"] as? String else { throw .malformed("its header has no alg") }
        guard ["RS256", "ES256", "EdDSA"].contains(alg) else { throw .unsupportedAlgorithm(alg) }
        let kid = header["kid"] as? String
        guard let key = keys.key(id: kid, algorithm: alg) else { throw .unknownKey(kid) }
        guard verify(Array(parts.signed.utf8), signature: parts.signature, key: key) else { throw .badSignature }
        let claims = try object(parts.claims, "claims")
        try check(claims, policy: policy, now: now)
        guard let account = claims[policy.accountClaim] as? String else {
            throw .notAnAccount(claim: policy.accountClaim, why: "the token has no such string claim")
        }
        if let why = SyncNames.accountRefusal(account) {
            throw .notAnAccount(claim: policy.accountClaim, why: "\(QuotedInput.quote(account)): \(why)")
        }
        return account
    }

    /// The three parts of a compact JWS: the signed text, and the header, claims and signature
    /// decoded.
    static func split(_ token: String) throws(IdentityTokenError) -> (signed: Substring, header: [UInt8], claims: [UInt8], signature: [UInt8]) {
        guard token.utf8.count <= maxBytes else { throw .malformed("it is over \(maxBytes) bytes") }
        let fields = token.split(separator: ".", omittingEmptySubsequences: false)
        guard fields.count == 3 else { throw .malformed("a JWT is three base64url parts separated by dots") }
        guard let header = Base64URL.decode(String(fields[0])), let claims = Base64URL.decode(String(fields[1])),
              let signature = Base64URL.decode(String(fields[2])), !signature.isEmpty else {
            throw .malformed("a part is not base64url")
        }
        let signed = token[token.startIndex..<fields[1].endIndex]
        return (signed, header, claims, signature)
    }

    package static func object(_ bytes: [UInt8], _ what: String) throws(IdentityTokenError) -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw .malformed("its \(what) is not a JSON object")
        }
        return object
    }

    static func verify(_ signed: [UInt8], signature: [UInt8], key: IdentityKeys.Key) -> Bool {
        switch key {
        case .rsa(let n, let e):
            guard let k = try? _RSA.Signing.PublicKey(n: n, e: e) else { return false }
            return k.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: signed, padding: .insecurePKCS1v1_5)
        case .p256(let raw):
            guard let k = try? P256.Signing.PublicKey(rawRepresentation: raw),
                  let s = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return k.isValidSignature(s, for: signed)
        case .ed25519(let raw):
            guard let k = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
            return k.isValidSignature(signature, for: signed)
        }
    }

    /// `exp` (required), `nbf`, `iss` and `aud` against the policy at `now` (milliseconds).
    package static func check(_ claims: [String: Any], policy: IdentityPolicy, now: Int64) throws(IdentityTokenError) {
        func seconds(_ name: String) -> Int64? {
            guard let n = claims[name] as? NSNumber, let d = Double(exactly: n.doubleValue), d.isFinite, abs(d) < 1e12 else { return nil }
            return Int64(d * 1_000)
        }
        guard let exp = seconds("exp"), now < exp + policy.skewMillis else { throw .expired }
        if claims["nbf"] != nil {
            guard let nbf = seconds("nbf"), now + policy.skewMillis >= nbf else { throw .notYetValid }
        }
        let iss = claims["iss"] as? String
        guard iss == policy.issuer else { throw .wrongIssuer(iss) }
        let audiences: [String] = if let one = claims["aud"] as? String { [one] } else { (claims["aud"] as? [Any])?.compactMap { $0 as? String } ?? [] }
        guard audiences.contains(policy.audience) else { throw .wrongAudience }
    }
}

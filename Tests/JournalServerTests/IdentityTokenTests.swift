import Foundation
import Testing
import JournalService

/// An identity provider's token checked (Spec/SYNC.md §9.2, enrolment): each algorithm the server verifies
/// is taken, and each way a token can be wrong is refused with its own reason.
@Suite struct IdentityTokenTests {
    static let provider = try! TestIdentityProvider()
    static let keys = try! provider.keys()
    let now = Int64(Date().timeIntervalSince1970 * 1000)

    func account(_ token: String) throws(IdentityTokenError) -> String {
        try IdentityToken.account(of: token, keys: Self.keys, policy: Self.provider.policy, now: now)
    }

    @Test(arguments: ["ES256", "EdDSA", "RS256"])
    func aTokenSignedByTheProvidersKeyNamesItsAccount(alg: String) throws {
        #expect(try account(Self.provider.token(TestIdentityProvider.claims("alice"), alg: alg)) == "alice")
    }

    @Test func anAudienceListThatHoldsThisServerIsTaken() throws {
        let token = try Self.provider.token(TestIdentityProvider.claims("alice") { $0["aud"] = ["other", TestIdentityProvider.audience] })
        #expect(try account(token) == "alice")
    }

    @Test func anExpiredTokenIsRefused() throws {
        let token = try Self.provider.token(TestIdentityProvider.claims("alice") { $0["exp"] = Int(Date().timeIntervalSince1970) - 3_600 })
        #expect(throws: IdentityTokenError.expired) { try account(token) }
    }

    @Test func aTokenWithoutExpiryIsRefused() throws {
        let token = try Self.provider.token(TestIdentityProvider.claims("alice") { $0["exp"] = nil })
        #expect(throws: IdentityTokenError.expired) { try account(token) }
    }

    @Test func aTokenNotValidYetIsRefused() throws {
        let token = try Self.provider.token(TestIdentityProvider.claims("alice") { $0["nbf"] = Int(Date().timeIntervalSince1970) + 3_600 })
        #expect(throws: IdentityTokenError.notYetValid) { try account(token) }
    }

    @Test func anotherIssuersTokenIsRefused() throws {
        let token = try Self.provider.token(TestIdentityProvider.claims("alice") { $0["iss"] = "https://evil.example.com" })
        #expect(throws: IdentityTokenError.wrongIssuer("https://evil.example.com")) { try account(token) }
    }

    @Test func aTokenForAnotherAudienceIsRefused() throws {
        let token = try Self.provider.token(TestIdentityProvider.claims("alice") { $0["aud"] = "other.example.com" })
        #expect(throws: IdentityTokenError.wrongAudience) { try account(token) }
    }

    @Test func aTokenSignedByAnotherKeyIsRefused() throws {
        let stranger = try TestIdentityProvider()
        #expect(throws: IdentityTokenError.badSignature) { try account(stranger.token(TestIdentityProvider.claims("alice"))) }
    }

    @Test func changedClaimsBreakTheSignature() throws {
        let token = try Self.provider.token(TestIdentityProvider.claims("alice"))
        let parts = token.split(separator: ".")
        let forged = parts[0] + "." + TestIdentityProvider.part(TestIdentityProvider.claims("mallory")) + "." + parts[2]
        #expect(throws: IdentityTokenError.badSignature) { try account(String(forged)) }
    }

    @Test(arguments: ["none", "HS256", "PS256"])
    func algorithmsThisServerDoesNotVerifyAreRefused(alg: String) throws {
        let token = try Self.provider.token(TestIdentityProvider.claims("alice"), alg: alg, kid: "ec")
        #expect(throws: IdentityTokenError.unsupportedAlgorithm(alg)) { try account(token) }
    }

    @Test func aKeyOfAnotherTypeUnderTheTokensKidIsRefused() throws {
        // ES256 under the RSA key's id: the key must be for the token's algorithm.
        let token = try Self.provider.token(TestIdentityProvider.claims("alice"), alg: "ES256", kid: "rsa")
        #expect(throws: IdentityTokenError.unknownKey("rsa")) { try account(token) }
    }

    @Test func aClaimThatIsNotAnAccountNameIsRefused() throws {
        let token = try Self.provider.token(TestIdentityProvider.claims("auth0|12345"))
        #expect(throws: (any Error).self) { try account(token) }
        do { _ = try account(token) } catch { #expect(error.description.contains("auth0|12345")) }
    }

    @Test(arguments: ["", "a.b", "a.b.c.d", "!!.!!.!!", String(repeating: "a", count: 9_000)])
    func textThatIsNotAJWTIsRefusedAsMalformed(text: String) {
        #expect { try account(text) } throws: { error in
            if case IdentityTokenError.malformed = error { return true }
            return false
        }
    }

    @Test func aKeySetWithNoUsableKeyIsRefused() {
        let json = #"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#
        #expect { try IdentityKeys(jwks: Array(json.utf8)) } throws: { error in
            if case IdentityTokenError.badKeySet = error { return true }
            return false
        }
    }

    @Test func aShortRSAKeyIsRefused() throws {
        let json = #"{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}"#
        #expect { try IdentityKeys(jwks: Array(json.utf8)) } throws: { error in
            if case IdentityTokenError.badKeySet(let why) = error { return why.contains("2048") }
            return false
        }
    }

    /// `Fuzz/FuzzIdentityToken`'s seeds and past crashes, through the fuzzer's own check.
    @Test func theFuzzersCorpusReplaysCleanly() throws {
        let fuzz = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz").standardized
        var replayed = 0
        for dir in ["corpus", "regressions"] {
            let d = fuzz.appendingPathComponent(dir).appendingPathComponent("FuzzIdentityToken")
            for f in (try? FileManager.default.contentsOfDirectory(at: d, includingPropertiesForKeys: nil)) ?? [] where !f.lastPathComponent.hasPrefix(".") {
                IdentityInputChecks.check(try [UInt8](Data(contentsOf: f)))
                replayed += 1
            }
        }
        #expect(replayed >= 3)
    }
}

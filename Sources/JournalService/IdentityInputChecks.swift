import JournalCodec

/// What `Fuzz/FuzzIdentityToken` checks on any bytes, and the corpus test replays: the readers of
/// an identity provider's input (a token at `POST /v1/enrol`, a JWKS document, a token's claims)
/// never crash, hang or allocate without bound, and what they take is within their limits.
package enum IdentityInputChecks {
    /// RFC 8032's first test vector's public key: the only key the fuzzer's tokens meet.
    static let keys = IdentityKeys(keys: [("rfc8032", .ed25519(Base64URL.decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")!))])
    static let policy = IdentityPolicy(issuer: "https://id.example.com", audience: "lists.example.com")

    /// The first byte picks the reader; the rest is its input.
    package static func check(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let input = Array(bytes.dropFirst())
        switch mode % 3 {
        case 0:
            // A token, whole: no forged signature gets past, so any account taken is a failure.
            if let account = try? IdentityToken.account(of: String(decoding: input, as: UTF8.self), keys: keys, policy: policy, now: 1_800_000_000_000) {
                fatalError("a token no key signed named the account \(account)")
            }
        case 1:
            guard let set = try? IdentityKeys(jwks: input) else { return }
            precondition(!set.keys.isEmpty && set.keys.count <= IdentityKeys.maxKeys, "a key set taken outside its limits")
        default:
            // Claims alone, as the checks after a good signature read them.
            guard let claims = try? IdentityToken.object(input, "claims") else { return }
            _ = try? IdentityToken.check(claims, policy: policy, now: 1_800_000_000_000)
        }
    }
}

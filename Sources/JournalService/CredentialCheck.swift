/// Where a server checks the credentials devices present (Spec/SYNC.md §9.2): the accounts file
/// of a single server (`AccountDirectory`), or the table every node over a shared database reads.
package protocol CredentialCheck: Sendable {
    /// The account `text` authenticates, or nil: unknown, malformed, tampered, expired or revoked
    /// credentials are all refused alike.
    func authenticate(_ text: String, now: Int64) async -> String?
    /// Whether an account has a credential that is valid now (only such accounts can be invited).
    func accountExists(_ account: String, now: Int64) -> Bool
}

import JournalSync

/// Where a server checks the credentials devices present (Spec/SYNC.md §9.2): the accounts file
/// of a single server (`AccountDirectory`), or the table every node over a shared database reads.
package protocol CredentialCheck: Sendable {
    /// What the credential `text` is judged to be: the account it authenticates, refused
    /// (unknown, malformed, tampered, expired or revoked, all alike), or not judged at all
    /// because the credentials could not be read (SYNC.md §9.2): only a refusal signs a device out.
    func authenticate(_ text: String, now: Int64) async -> Authentication
    /// Whether an account has a credential that is valid now (only such accounts can be invited).
    /// Throws `StorageError` when the credentials could not be read: never "no such account".
    func accountExists(_ account: String, now: Int64) throws(StorageError) -> Bool
}

/// A credential check's answer, one case per what the server does next.
package enum Authentication: Sendable, Equatable {
    /// The credential is valid: the request acts as this account.
    case accepted(account: String)
    /// The service judged it and refused it: `401 notAuthenticated`, and the device signs out.
    case refused
    /// The credentials could not be read (a database that does not answer, an accounts file that
    /// cannot be read): `503 serviceBusy` with `Retry-After`. Nothing was judged, so the device
    /// keeps its credential and tries again.
    case unavailable(StorageError)

    /// The account a request acts as, or the error it is answered with: `notAuthenticated` only
    /// for a credential the service judged, `serviceBusy` when it could not judge it.
    package func account() throws(SyncError) -> String {
        switch self {
        case .accepted(let account): return account
        case .refused: throw .notAuthenticated
        case .unavailable(let failure): throw failure.syncError
        }
    }
}

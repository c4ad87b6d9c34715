import JournalLog
import JournalSync
import JournalSyncWire

/// Where a server issues a device credential to a device that proved its account with an
/// identity provider's token (Spec/SYNC.md §9.2, enrolment): the accounts file of a single server, or the
/// credentials table every node over a shared database reads. The account is made on first
/// sight; each enrolment is a credential of its own, listed, expiring and revoked like one
/// `jlog accounts add` issued.
package protocol DeviceEnrolling: Sendable {
    /// A new credential for `account`, or `tooManyDevices` when it already has `limit` valid
    /// ones; `serviceBusy` when the credentials could not be read or written (nothing issued).
    func enrol(account: String, now: Int64, limit: Int) async throws(SyncError) -> DeviceCredential
}

/// The most valid credentials an account may have for another device to enrol.
package enum DeviceEnrolment {
    package static let maxDevicesPerAccount = 64
}

extension AccountDirectory: DeviceEnrolling {
    /// Counted and added under the file's lock: two enrolments at once never both pass the limit.
    package func enrol(account: String, now: Int64, limit: Int) throws(SyncError) -> DeviceCredential {
        var full = false
        let credential: DeviceCredential
        do throws(JournalError) {
            let (issued, record) = try Self.newCredential(account: account, now: now, expiresAt: nil)
            try modify { list in
                full = list.count { $0.account == account && $0.isValid(now: now) } >= limit
                if !full { list.append(record) }
            }
            credential = issued
        } catch {
            let failure: StorageError = if case .io = error { .unavailable(error.description) } else { .damaged(error.description) }
            StorageFailures.note(failure)
            throw failure.syncError
        }
        if full { throw .tooManyDevices(limit: limit) }
        return credential
    }
}

import JournalLog
import JournalSync

/// Why the storage behind the service could not answer (Spec/SYNC.md §11.6): one case per what
/// the caller must do about it. A failure is never read as an answer: a zone list that could not
/// be read is not an empty one, a credential that could not be looked up is not an unknown one.
package enum StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// It did not answer: a database restarting or unreachable, a pool whose circuit breaker
    /// tripped, a deadline passed. The same call may succeed later: a request is answered
    /// `serviceBusy` with `Retry-After`, never anything a device acts on.
    case unavailable(String)
    /// It answered with what cannot be right: a row that does not decode, a damaged file. An
    /// operator must act; a request is answered `serviceBusy` (the device keeps its list and
    /// tries again later), and the failure is counted and logged for the operator.
    case damaged(String)

    /// The two kinds by name, as the `jlog_storage_failures_total` series labels them.
    package var kind: String {
        switch self {
        case .unavailable: "unavailable"
        case .damaged: "damaged"
        }
    }

    package var description: String {
        switch self {
        case .unavailable(let why): "the storage did not answer: \(why)"
        case .damaged(let why): "the storage is damaged: \(why); an operator must repair it"
        }
    }

    /// What a device is told: busy, for a second when the storage may answer again soon, for a
    /// minute when an operator must act first.
    package var syncError: SyncError {
        switch self {
        case .unavailable: .serviceBusy(retryAfter: .seconds(1))
        case .damaged: .serviceBusy(retryAfter: .seconds(60))
        }
    }
}

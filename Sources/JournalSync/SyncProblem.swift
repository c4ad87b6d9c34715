/// One thing that stopped a sync, or part of one, with the list it concerns (`SyncReport.problems`):
/// what an app shows ("offline", "sign in again", "storage full") without parsing messages.
public struct SyncProblem: Sendable, Equatable, CustomStringConvertible {
    /// The kinds of problem, each with what an app tells its user.
    public enum Reason: Sendable, Equatable {
        /// No answer from the service (`networkUnavailable`): everything stays queued.
        case unreachable
        /// The service refused the device's credential (`notAuthenticated`): the lists stay;
        /// sign in again.
        case notAuthenticated
        /// The account's quota is full (`quotaExceeded`): the list's changes stay queued.
        case quotaExceeded
        /// Too many requests (`rateLimited`): the sync stopped; try after `retryAfter`.
        case rateLimited(retryAfter: Duration?)
        /// The service is busy (`serviceBusy`): the sync stopped; try after `retryAfter`.
        case serviceBusy(retryAfter: Duration?)
        /// The service refused a request for good (`invalidRequest` and the like): its words.
        case refused(SyncError)
        /// Something on this device (its store) failed.
        case local
        /// The list holds changes a newer version of the app made, of a kind this version does
        /// not read (Spec/FORMAT.md §6, 0x40–0x7F): they are kept and synced, not shown. The app
        /// says "update the app to see every change". The list is otherwise in sync.
        case newerVersion
        /// This version and the service do not speak a common protocol version, or an answer
        /// is in a form this version cannot read (`SyncError.incompatible`): update the app.
        case incompatible
    }

    /// What kind of problem it is.
    public var reason: Reason
    /// The list it concerns, or nil for the whole sync.
    public var zone: ZoneID?
    /// What went wrong, in words for a log or a diagnostic screen.
    public var message: String

    /// A problem of kind `reason`, about `zone` (nil: the whole sync).
    public init(reason: Reason, zone: ZoneID?, message: String) {
        self.reason = reason
        self.zone = zone
        self.message = message
    }

    /// The reason an error from the service gives.
    public static func reason(for error: SyncError) -> Reason {
        switch error {
        case .networkUnavailable: .unreachable
        case .notAuthenticated: .notAuthenticated
        case .quotaExceeded: .quotaExceeded
        case .rateLimited(let after): .rateLimited(retryAfter: after)
        case .serviceBusy(let after): .serviceBusy(retryAfter: after)
        case .incompatible: .incompatible
        default: .refused(error)
        }
    }

    public var description: String { zone.map { "\($0): \(message)" } ?? message }
}

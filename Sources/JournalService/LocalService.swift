import JournalLog
import JournalSync

/// The reference service in this process, as one account sees it: every call goes to the core
/// with this account as its caller. What a device's `SyncEngine` talks to in tests, in
/// `jlog simulate`, and in `jlog sync --service-store` (no network in between).
public struct LocalService: ForwardingSyncService {
    /// The service every call goes to, shared with the other accounts' sessions.
    public let core: ServiceCore
    /// The account every call acts as.
    public let account: String

    /// A session of `account` on `core`: in process, so nothing authenticates it.
    public init(core: ServiceCore, account: String) {
        self.core = core
        self.account = account
    }

    /// Runs `call` on the core as this account.
    public func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
        try core.perform(caller: account, call)
    }
}

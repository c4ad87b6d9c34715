import JournalLog

/// A service that is never reachable: what a device edits with when it has no connection to
/// make (the editing commands of `jlog`, an app before sign-in completes). Every call answers
/// `networkUnavailable`, so everything recorded stays queued for the next real sync.
package struct OfflineService: ForwardingSyncService {
    package let account: String

    package init(account: String) { self.account = account }

    /// Every call: `networkUnavailable`.
    package func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer { throw .networkUnavailable() }
}

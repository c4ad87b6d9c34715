import JournalLog

/// A service that is never reachable: what a device edits with when it has no connection to
/// make (the editing commands of `jlog`, an app before its sign-in completes). Every call
/// answers `networkUnavailable`, so everything recorded stays queued: lists made meanwhile are
/// this device's alone until `SyncEngine.signIn(_:)` gives the engine a real service of the same
/// account, and the next sync creates them there and uploads their changes.
///
/// ```swift
/// let engine = try await SyncEngine.open(store: lists.store, service: OfflineService(account: "alice"),
///                                        replica: "alice:phone")
/// let weekly = try await engine.createList(named: "Weekly")
/// try await weekly.add("Milk")
/// // Later, once signed in:
/// try await engine.signIn(HTTPSyncService(server: url, credential: credential))
/// await engine.sync()   // creates alice/Weekly on the service, uploads the Milk
/// ```
public struct OfflineService: ForwardingSyncService {
    /// The account the device will sign in as: its lists are made under it.
    public let account: String

    /// A service that is never reachable, for `account`.
    public init(account: String) { self.account = account }

    /// Every call: `networkUnavailable`.
    public func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer { throw .networkUnavailable() }
}

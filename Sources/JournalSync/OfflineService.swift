import JournalLog

/// A service that is never reachable: what a device edits with when it has no connection to
/// make (the editing commands of `jlog`, an app before sign-in completes). Every call answers
/// `networkUnavailable`, so everything recorded stays queued for the next real sync.
public struct OfflineService: SyncService {
    public let account: String

    public init(account: String) { self.account = account }

    public func upload(_ entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult { throw .networkUnavailable }
    public func fetchDatabaseChanges(_ scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage {
        throw .networkUnavailable
    }
    public func fetchZoneChanges(_ zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage {
        throw .networkUnavailable
    }
    public func fetchZoneHistory(_ zone: ZoneID) async throws(SyncError) -> [UInt8] { throw .networkUnavailable }
    public func createZone(_ zone: ZoneID) async throws(SyncError) { throw .networkUnavailable }
    public func deleteZone(_ zone: ZoneID) async throws(SyncError) { throw .networkUnavailable }
    public func shareZone(_ zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation { throw .networkUnavailable }
    public func acceptShare(_ invitation: ShareInvitation) async throws(SyncError) -> ZoneID { throw .networkUnavailable }
    public func removeParticipant(_ participant: String, from zone: ZoneID) async throws(SyncError) { throw .networkUnavailable }
    public func stopSharing(_ zone: ZoneID) async throws(SyncError) { throw .networkUnavailable }
}

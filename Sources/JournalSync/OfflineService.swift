import JournalLog

/// A service that is never reachable: what a device edits with when it has no connection to
/// make (the editing commands of `jlog`, an app before sign-in completes). Every call answers
/// `networkUnavailable`, so everything recorded stays queued for the next real sync.
package struct OfflineService: SyncService {
    package let account: String

    package init(account: String) { self.account = account }

    package func upload(_ entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult { throw .networkUnavailable() }
    package func fetchDatabaseChanges(_ scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage {
        throw .networkUnavailable()
    }
    package func fetchZoneChanges(_ zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage {
        throw .networkUnavailable()
    }
    package func fetchZoneHistory(_ zone: ZoneID) async throws(SyncError) -> [UInt8] { throw .networkUnavailable() }
    package func createZone(_ zone: ZoneID) async throws(SyncError) { throw .networkUnavailable() }
    package func deleteZone(_ zone: ZoneID) async throws(SyncError) { throw .networkUnavailable() }
    package func shareZone(_ zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation { throw .networkUnavailable() }
    package func acceptShare(_ invitation: ShareInvitation) async throws(SyncError) -> ZoneID { throw .networkUnavailable() }
    package func removeParticipant(_ participant: String, from zone: ZoneID) async throws(SyncError) { throw .networkUnavailable() }
    package func stopSharing(_ zone: ZoneID) async throws(SyncError) { throw .networkUnavailable() }
}

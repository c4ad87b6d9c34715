import JournalLog
import JournalSync

/// The reference service in this process, as one account sees it: every call goes to the core
/// with this account as its caller. What a device's `SyncEngine` talks to in tests, in
/// `jlog simulate`, and in `jlog sync --service-store` (no network in between).
public struct LocalService: SyncService {
    /// The service every call goes to, shared with the other accounts' sessions.
    public let core: ServiceCore
    public let account: String

    /// A session of `account` on `core`: in process, so nothing authenticates it.
    public init(core: ServiceCore, account: String) {
        self.core = core
        self.account = account
    }

    public func upload(_ entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult {
        try core.upload(caller: account, entries: entries, to: zone)
    }

    public func fetchDatabaseChanges(_ scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage {
        try core.fetchDatabaseChanges(caller: account, scope: scope, since: token, limit: limit)
    }

    public func fetchZoneChanges(_ zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage {
        try core.fetchZoneChanges(caller: account, zone: zone, since: token, limit: limit)
    }

    public func fetchZoneHistory(_ zone: ZoneID) async throws(SyncError) -> [UInt8] {
        try core.fetchZoneHistory(caller: account, zone: zone)
    }

    public func createZone(_ zone: ZoneID) async throws(SyncError) { try core.createZone(caller: account, zone: zone) }

    public func deleteZone(_ zone: ZoneID) async throws(SyncError) { try core.deleteZone(caller: account, zone: zone) }

    public func shareZone(_ zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation {
        try core.shareZone(caller: account, zone: zone, with: participant)
    }

    public func acceptShare(_ invitation: ShareInvitation) async throws(SyncError) -> ZoneID {
        try core.acceptShare(caller: account, invitation: invitation)
    }

    public func removeParticipant(_ participant: String, from zone: ZoneID) async throws(SyncError) {
        try core.removeParticipant(caller: account, participant: participant, from: zone)
    }

    public func stopSharing(_ zone: ZoneID) async throws(SyncError) { try core.stopSharing(caller: account, zone: zone) }
}

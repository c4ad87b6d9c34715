import JournalLog
import JournalSync

/// What a sync server stores and answers, per authenticated caller (Spec/SYNC.md §3): the
/// boundary between a transport (`jlog serve`'s HTTP, an in-process `LocalService`) and the
/// storage behind it. `ServiceCore` is the implementation over one `JournalStore`; a backend over
/// a shared database (PostgreSQL, for several stateless servers) implements the same calls with
/// the same invariants, and the transports above do not change.
public protocol ServiceBackend: Sendable {
    func upload(caller: String, entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult
    func fetchDatabaseChanges(caller: String, scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage
    func fetchZoneChanges(caller: String, zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage
    func fetchZoneHistory(caller: String, zone: ZoneID) async throws(SyncError) -> [UInt8]
    func createZone(caller: String, zone: ZoneID) async throws(SyncError)
    func deleteZone(caller: String, zone: ZoneID) async throws(SyncError)
    func shareZone(caller: String, zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation
    func acceptShare(caller: String, invitation: ShareInvitation) async throws(SyncError) -> ZoneID
    func removeParticipant(caller: String, participant: String, from zone: ZoneID) async throws(SyncError)
    func stopSharing(caller: String, zone: ZoneID) async throws(SyncError)
    /// The limits requests are held to (a transport refuses larger bodies before reading them).
    var limits: ServiceLimits { get }
    /// "Zone Z changed" for the accounts that see it: hints, never data.
    var hints: HintHub { get }
}

extension ServiceCore: ServiceBackend {}

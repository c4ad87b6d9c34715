import JournalLog
import JournalSync

/// What a sync server stores and answers, per authenticated caller (Spec/SYNC.md §3): the
/// boundary between a transport (`jlog serve`'s HTTP, an in-process `LocalService`) and the
/// storage behind it. `ServiceCore` is the implementation over one `JournalStore`; a backend over
/// a shared database (PostgreSQL, for several stateless servers) implements the same calls with
/// the same invariants, and the transports above do not change.
public protocol ServiceBackend: Sendable {
    /// The service's side of `SyncService.upload`: stores the caller's entries in a zone,
    /// idempotently by entry id.
    func upload(caller: String, entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult
    /// The service's side of `SyncService.fetchDatabaseChanges`: the zones of one of the
    /// caller's databases changed or gone since `token`.
    func fetchDatabaseChanges(caller: String, scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage
    /// The service's side of `SyncService.fetchZoneChanges`: a zone's entries after `token`, in pages.
    func fetchZoneChanges(caller: String, zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage
    /// The service's side of `SyncService.fetchZoneHistory`: the zone's encoded activity history,
    /// empty when it was never compacted.
    func fetchZoneHistory(caller: String, zone: ZoneID) async throws(SyncError) -> [UInt8]
    /// The service's side of `SyncService.createZone`: creates a zone the caller owns; idempotent.
    func createZone(caller: String, zone: ZoneID) async throws(SyncError)
    /// The service's side of `SyncService.deleteZone`: deletes a zone the caller owns, for every
    /// participant.
    func deleteZone(caller: String, zone: ZoneID) async throws(SyncError)
    /// The service's side of `SyncService.shareZone`: the owner invites `participant` to a zone.
    func shareZone(caller: String, zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation
    /// The service's side of `SyncService.acceptShare`: the caller joins the zone it was invited to.
    func acceptShare(caller: String, invitation: ShareInvitation) async throws(SyncError) -> ZoneID
    /// The service's side of `SyncService.removeParticipant`: the owner removes a participant,
    /// or a participant leaves.
    func removeParticipant(caller: String, participant: String, from zone: ZoneID) async throws(SyncError)
    /// The service's side of `SyncService.stopSharing`: the owner removes every participant.
    func stopSharing(caller: String, zone: ZoneID) async throws(SyncError)
    /// The limits requests are held to (a transport refuses larger bodies before reading them).
    var limits: ServiceLimits { get }
    /// "Zone Z changed" for the accounts that see it: hints, never data.
    var hints: HintHub { get }
}

extension ServiceCore: ServiceBackend {}

import JournalLog

/// One call of the sync protocol as a value (Spec/SYNC.md §3): what a forwarder (an in-process
/// session, a fault injector, a meter, a thread hop, a transport) passes on without knowing which
/// call it is. `SyncService`'s methods are the same calls, one method each.
public enum SyncCall: Sendable {
    /// `SyncService.upload` (`since`: the token the device holds, and `carrying`: how many
    /// others' entries after it the answer may bring, `upload(_:to:since:carrying:)`).
    case upload(entries: [JournalEntry], zone: ZoneID, since: ServiceToken?, carrying: Int = 0)
    /// `SyncService.fetchDatabaseChanges`.
    case fetchDatabaseChanges(scope: DatabaseScope, since: ServiceToken?, limit: Int)
    /// `SyncService.fetchDatabaseChanges(since:limit:)`: both databases at once.
    case fetchBothDatabases(since: DatabaseTokens, limit: Int)
    /// `SyncService.fetchZoneChanges`.
    case fetchZoneChanges(zone: ZoneID, since: ServiceToken?, limit: Int)
    /// `SyncService.fetchZoneHistory`.
    case fetchZoneHistory(zone: ZoneID)
    /// `SyncService.fetchZoneSnapshot`.
    case fetchZoneSnapshot(zone: ZoneID)
    /// `SyncService.fetchZoneHistoryPage`.
    case fetchZoneHistoryPage(zone: ZoneID, after: HistoryCursor?)
    /// `SyncService.createZone`.
    case createZone(ZoneID)
    /// `SyncService.deleteZone`.
    case deleteZone(ZoneID)
    /// `SyncService.shareZone`.
    case shareZone(ZoneID, participant: String)
    /// `SyncService.acceptShare`.
    case acceptShare(ShareInvitation)
    /// `SyncService.removeParticipant`.
    case removeParticipant(String, zone: ZoneID)
    /// `SyncService.stopSharing`.
    case stopSharing(ZoneID)
    /// `SyncService.fetchParticipants`.
    case fetchParticipants(ZoneID)
    /// Publishes the caller's account keys to the key directory (`SyncService.publishAccountKeys`).
    case publishAccountKeys(PublishedAccountKeys)
    /// An account's published keys (`SyncService.fetchAccountKeys`).
    case fetchAccountKeys(String)
    /// Stores the caller's recovery kit (`SyncService.storeRecoveryKit`).
    case storeRecoveryKit([UInt8])
    /// The caller's recovery kit (`SyncService.fetchRecoveryKit`).
    case fetchRecoveryKit
    /// Leaves account keys sealed for a new device of the caller's account (`SyncService.depositDeviceLink`).
    case depositDeviceLink(link: [UInt8], sealed: [UInt8])
    /// What a device of the caller's account left for a link (`SyncService.fetchDeviceLink`).
    case fetchDeviceLink([UInt8])

    /// The call's name, as SYNC.md §3 and the HTTP binding's routes name it.
    public var name: String {
        switch self {
        case .upload: "upload"
        case .fetchDatabaseChanges: "fetchDatabaseChanges"
        case .fetchBothDatabases: "fetchBothDatabases"
        case .fetchZoneChanges: "fetchZoneChanges"
        case .fetchZoneHistory: "fetchZoneHistory"
        case .fetchZoneSnapshot: "fetchZoneSnapshot"
        case .fetchZoneHistoryPage: "fetchZoneHistoryPage"
        case .createZone: "createZone"
        case .deleteZone: "deleteZone"
        case .shareZone: "shareZone"
        case .acceptShare: "acceptShare"
        case .removeParticipant: "removeParticipant"
        case .stopSharing: "stopSharing"
        case .fetchParticipants: "fetchParticipants"
        case .publishAccountKeys: "publishAccountKeys"
        case .fetchAccountKeys: "fetchAccountKeys"
        case .storeRecoveryKit: "storeRecoveryKit"
        case .fetchRecoveryKit: "fetchRecoveryKit"
        case .depositDeviceLink: "depositDeviceLink"
        case .fetchDeviceLink: "fetchDeviceLink"
        }
    }
}

/// What a `SyncCall` answers: one case per kind of answer.
public enum SyncAnswer: Sendable {
    /// An upload's result.
    case upload(UploadResult)
    /// A page of a database's changed zones.
    case databaseChanges(DatabaseChangesPage)
    /// The first pages of both databases.
    case bothDatabases(BothDatabasesPage)
    /// A page of a zone's entries.
    case zoneChanges(ZoneChangesPage)
    /// A zone's encoded activity history.
    case history([UInt8])
    /// A zone's snapshot and the token after it, or nil for none.
    case snapshot(ZoneSnapshot?)
    /// A page of a zone's history.
    case historyPage(HistoryPage)
    /// An invitation the owner hands to the participant.
    case invitation(ShareInvitation)
    /// The zone an accepted invitation joined.
    case zone(ZoneID)
    /// A zone's participants.
    case participants([ShareParticipant])
    /// An account's published keys, nil for none (`fetchAccountKeys`).
    case accountKeys(PublishedAccountKeys?)
    /// The caller's recovery kit, nil for none (`fetchRecoveryKit`).
    case recoveryKit([UInt8]?)
    /// The sealed keys left for a link, nil for none (`fetchDeviceLink`).
    case deviceLink([UInt8]?)
    /// Done, with nothing to say (zone and sharing changes).
    case done

    /// The answer `call` expects, or `invalidRequest` for another (a forwarder's bug).
    private func mismatch(_ call: String) -> SyncError {
        .invalidRequest("\(call) was answered with \(self)")
    }

    /// The upload result this answer carries.
    public func uploadResult() throws(SyncError) -> UploadResult {
        guard case .upload(let r) = self else { throw mismatch("upload") }
        return r
    }

    /// The database page this answer carries.
    public func databaseChangesPage() throws(SyncError) -> DatabaseChangesPage {
        guard case .databaseChanges(let p) = self else { throw mismatch("fetchDatabaseChanges") }
        return p
    }

    /// The pages of both databases this answer carries.
    public func bothDatabasesPage() throws(SyncError) -> BothDatabasesPage {
        guard case .bothDatabases(let p) = self else { throw mismatch("fetchBothDatabases") }
        return p
    }

    /// The zone page this answer carries.
    public func zoneChangesPage() throws(SyncError) -> ZoneChangesPage {
        guard case .zoneChanges(let p) = self else { throw mismatch("fetchZoneChanges") }
        return p
    }

    /// The encoded history this answer carries.
    public func historyBytes() throws(SyncError) -> [UInt8] {
        guard case .history(let b) = self else { throw mismatch("fetchZoneHistory") }
        return b
    }

    /// The zone snapshot this answer carries (nil: the service has none to give).
    public func zoneSnapshot() throws(SyncError) -> ZoneSnapshot? {
        guard case .snapshot(let s) = self else { throw mismatch("fetchZoneSnapshot") }
        return s
    }

    /// The history page this answer carries.
    public func zoneHistoryPage() throws(SyncError) -> HistoryPage {
        guard case .historyPage(let p) = self else { throw mismatch("fetchZoneHistoryPage") }
        return p
    }

    /// The invitation this answer carries.
    public func shareInvitation() throws(SyncError) -> ShareInvitation {
        guard case .invitation(let i) = self else { throw mismatch("shareZone") }
        return i
    }

    /// The zone this answer names.
    public func zoneID() throws(SyncError) -> ZoneID {
        guard case .zone(let z) = self else { throw mismatch("acceptShare") }
        return z
    }

    /// The participants this answer lists.
    public func participantList() throws(SyncError) -> [ShareParticipant] {
        guard case .participants(let p) = self else { throw mismatch("fetchParticipants") }
        return p
    }

    /// The keys `fetchAccountKeys` answered.
    public func publishedAccountKeys() throws(SyncError) -> PublishedAccountKeys? {
        guard case .accountKeys(let k) = self else { throw mismatch("fetchAccountKeys") }
        return k
    }

    /// The kit `fetchRecoveryKit` answered.
    public func storedRecoveryKit() throws(SyncError) -> [UInt8]? {
        guard case .recoveryKit(let k) = self else { throw mismatch("fetchRecoveryKit") }
        return k
    }

    /// The sealed keys `fetchDeviceLink` answered.
    public func linkedKeys() throws(SyncError) -> [UInt8]? {
        guard case .deviceLink(let k) = self else { throw mismatch("fetchDeviceLink") }
        return k
    }

    /// Checks that this answer is `done`.
    public func finished() throws(SyncError) {
        guard case .done = self else { throw mismatch("a zone or sharing change") }
    }
}

extension SyncService {
    /// Runs `call` through this service's method for it.
    public func perform(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
        switch call {
        case .upload(let entries, let zone, let since, let carrying):
            return .upload(try await upload(entries, to: zone, since: since, carrying: carrying))
        case .fetchDatabaseChanges(let scope, let token, let limit):
            return .databaseChanges(try await fetchDatabaseChanges(scope, since: token, limit: limit))
        case .fetchBothDatabases(let tokens, let limit): return .bothDatabases(try await fetchDatabaseChanges(since: tokens, limit: limit))
        case .fetchZoneChanges(let zone, let token, let limit): return .zoneChanges(try await fetchZoneChanges(zone, since: token, limit: limit))
        case .fetchZoneHistory(let zone): return .history(try await fetchZoneHistory(zone))
        case .fetchZoneSnapshot(let zone): return .snapshot(try await fetchZoneSnapshot(zone))
        case .fetchZoneHistoryPage(let zone, let cursor): return .historyPage(try await fetchZoneHistoryPage(zone, after: cursor))
        case .createZone(let zone): try await createZone(zone)
        case .deleteZone(let zone): try await deleteZone(zone)
        case .shareZone(let zone, let participant): return .invitation(try await shareZone(zone, with: participant))
        case .acceptShare(let invitation): return .zone(try await acceptShare(invitation))
        case .removeParticipant(let participant, let zone): try await removeParticipant(participant, from: zone)
        case .stopSharing(let zone): try await stopSharing(zone)
        case .fetchParticipants(let zone): return .participants(try await fetchParticipants(zone))
        case .publishAccountKeys(let keys): try await publishAccountKeys(keys)
        case .fetchAccountKeys(let account): return .accountKeys(try await fetchAccountKeys(account))
        case .storeRecoveryKit(let kit): try await storeRecoveryKit(kit)
        case .fetchRecoveryKit: return .recoveryKit(try await fetchRecoveryKit())
        case .depositDeviceLink(let link, let sealed): try await depositDeviceLink(link, sealed: sealed)
        case .fetchDeviceLink(let link): return .deviceLink(try await fetchDeviceLink(link))
        }
        return .done
    }
}

/// A service that handles every call in one place, `forward(_:)`: the protocol's methods all go
/// through it. What a forwarder (an in-process session, a fault injector, an offline stub, a
/// meter) implements instead of the ten methods.
public protocol ForwardingSyncService: SyncService {
    /// Answers `call`.
    func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer
}

extension ForwardingSyncService {
    public func upload(_ entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult {
        try await forward(.upload(entries: entries, zone: zone, since: nil)).uploadResult()
    }

    /// `SyncService.upload(_:to:since:)`, through `forward`.
    public func upload(_ entries: [JournalEntry], to zone: ZoneID, since token: ServiceToken?) async throws(SyncError) -> UploadResult {
        try await forward(.upload(entries: entries, zone: zone, since: token)).uploadResult()
    }

    /// `SyncService.upload(_:to:since:carrying:)`, through `forward`.
    public func upload(_ entries: [JournalEntry], to zone: ZoneID, since token: ServiceToken?, carrying limit: Int) async throws(SyncError) -> UploadResult {
        try await forward(.upload(entries: entries, zone: zone, since: token, carrying: limit)).uploadResult()
    }

    /// `SyncService.fetchDatabaseChanges(since:limit:)`, through `forward`.
    public func fetchDatabaseChanges(since tokens: DatabaseTokens, limit: Int) async throws(SyncError) -> BothDatabasesPage {
        try await forward(.fetchBothDatabases(since: tokens, limit: limit)).bothDatabasesPage()
    }

    public func fetchDatabaseChanges(_ scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage {
        try await forward(.fetchDatabaseChanges(scope: scope, since: token, limit: limit)).databaseChangesPage()
    }

    public func fetchZoneChanges(_ zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage {
        try await forward(.fetchZoneChanges(zone: zone, since: token, limit: limit)).zoneChangesPage()
    }

    public func fetchZoneHistory(_ zone: ZoneID) async throws(SyncError) -> [UInt8] {
        try await forward(.fetchZoneHistory(zone: zone)).historyBytes()
    }

    /// `SyncService.fetchZoneSnapshot`, through `forward`.
    public func fetchZoneSnapshot(_ zone: ZoneID) async throws(SyncError) -> ZoneSnapshot? {
        try await forward(.fetchZoneSnapshot(zone: zone)).zoneSnapshot()
    }

    /// `SyncService.fetchZoneHistoryPage`, through `forward`.
    public func fetchZoneHistoryPage(_ zone: ZoneID, after cursor: HistoryCursor?) async throws(SyncError) -> HistoryPage {
        try await forward(.fetchZoneHistoryPage(zone: zone, after: cursor)).zoneHistoryPage()
    }

    public func createZone(_ zone: ZoneID) async throws(SyncError) { try await forward(.createZone(zone)).finished() }

    public func deleteZone(_ zone: ZoneID) async throws(SyncError) { try await forward(.deleteZone(zone)).finished() }

    public func shareZone(_ zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation {
        try await forward(.shareZone(zone, participant: participant)).shareInvitation()
    }

    public func acceptShare(_ invitation: ShareInvitation) async throws(SyncError) -> ZoneID {
        try await forward(.acceptShare(invitation)).zoneID()
    }

    public func removeParticipant(_ participant: String, from zone: ZoneID) async throws(SyncError) {
        try await forward(.removeParticipant(participant, zone: zone)).finished()
    }

    public func stopSharing(_ zone: ZoneID) async throws(SyncError) { try await forward(.stopSharing(zone)).finished() }

    /// `SyncService.fetchParticipants`, through `forward`.
    public func fetchParticipants(_ zone: ZoneID) async throws(SyncError) -> [ShareParticipant] {
        try await forward(.fetchParticipants(zone)).participantList()
    }

    /// `SyncService.publishAccountKeys`, through `forward`.
    public func publishAccountKeys(_ keys: PublishedAccountKeys) async throws(SyncError) {
        try await forward(.publishAccountKeys(keys)).finished()
    }

    /// `SyncService.fetchAccountKeys`, through `forward`.
    public func fetchAccountKeys(_ account: String) async throws(SyncError) -> PublishedAccountKeys? {
        try await forward(.fetchAccountKeys(account)).publishedAccountKeys()
    }

    /// `SyncService.storeRecoveryKit`, through `forward`.
    public func storeRecoveryKit(_ kit: [UInt8]) async throws(SyncError) {
        try await forward(.storeRecoveryKit(kit)).finished()
    }

    /// `SyncService.fetchRecoveryKit`, through `forward`.
    public func fetchRecoveryKit() async throws(SyncError) -> [UInt8]? {
        try await forward(.fetchRecoveryKit).storedRecoveryKit()
    }

    /// `SyncService.depositDeviceLink`, through `forward`.
    public func depositDeviceLink(_ link: [UInt8], sealed: [UInt8]) async throws(SyncError) {
        try await forward(.depositDeviceLink(link: link, sealed: sealed)).finished()
    }

    /// `SyncService.fetchDeviceLink`, through `forward`.
    public func fetchDeviceLink(_ link: [UInt8]) async throws(SyncError) -> [UInt8]? {
        try await forward(.fetchDeviceLink(link)).linkedKeys()
    }
}

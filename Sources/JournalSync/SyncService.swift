import JournalCodec
import JournalLog

/// Which of an account's databases (CKDatabase.Scope): the zones it owns, or the zones others
/// shared with it.
public enum DatabaseScope: String, Sendable, CaseIterable {
    /// The zones this account owns (CKDatabase.Scope.private).
    case `private`
    /// The zones others shared with this account (CKDatabase.Scope.shared).
    case shared
}

/// An opaque position in the service's feeds (CKServerChangeToken): kept by the client with what
/// it covers, handed back, never interpreted.
public struct ServiceToken: Hashable, Sendable, CustomStringConvertible {
    /// The token as the service wrote it: kept and sent back as is.
    public let text: String
    /// A token from its text, as the service answered it or a state file kept it.
    public init(_ text: String) { self.text = text }
    public var description: String { text }
}

/// Why a zone left a database (CKSyncEngine's deletion reasons, and a participant's removal).
public enum ZoneGoneReason: String, Sendable, CaseIterable {
    /// Its owner deleted it.
    case deleted
    /// The service purged it (an operator, a quota).
    case purged
    /// The owner removed this participant.
    case removed
    /// The owner stopped sharing it.
    case sharingStopped
    /// This participant left it (deleted the list on one of its devices): unlike one the owner
    /// removed, it may come back with the invitation it already has (Spec/SYNC.md §5).
    case left
}

/// Why one entry of an upload was not taken (CKModifyRecordsOperation's per-record errors).
public enum EntryFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The zone holds this id with other content (CKError.serverRecordChanged): not a retry.
    case conflict(String)
    /// Not an entry this caller may write to this zone: never retried (CKError.invalidArguments).
    case invalid(String)
    /// Not taken this time (CKError.zoneBusy, .batchRequestFailed): retry it.
    case retryable(String)
    /// A sealed text under an epoch that is not the list's current one (Spec/SEALING.md §5.1):
    /// the list's key moved on (a member left) while the entry waited. Never retried as it is:
    /// the device makes the change again as a new entry sealed under `current`, and drops this one.
    case staleEpoch(current: UInt64)
    /// A sealed text under an epoch that owes a rotation (a member left, and no member's device
    /// has begun the next epoch yet): a member's device rotates (a key record of `epoch` + 1),
    /// then makes the change again under the new epoch.
    case rotationDue(epoch: UInt64)

    public var description: String {
        switch self {
        case .conflict(let why): "conflict: \(why)"
        case .invalid(let why): "invalid: \(why)"
        case .retryable(let why): "retry: \(why)"
        case .staleEpoch(let current): "staleEpoch: the list's key is at epoch \(current) now; make the change again under it"
        case .rotationDue(let epoch): "rotationDue: the list's epoch \(epoch) owes a rotation (a member left); rotate, then make the change again"
        }
    }
}

/// What an upload did, entry by entry: every id of the request is in `saved` or `failed`.
public struct UploadResult: Sendable, Equatable {
    /// Stored now, or stored before (an upload retried after its response was lost): either way
    /// the service holds it (Spec/SYNC.md §3, idempotency).
    public var saved: [CompactID]
    /// Not taken, each with why: a conflict or an invalid entry for good, or one to retry.
    public var failed: [CompactID: EntryFailure]

    /// The zone token after this upload, when it was asked with a token (`upload(_:to:since:)`)
    /// and the zone holds nothing after that token but this upload's entries: the device's own
    /// entries need not come back to it. Nil otherwise (a fetch from the old token serves them).
    public var token: ServiceToken?
    /// The zone's head with that token (`ZoneHead`), when `token` is given.
    public var head: ZoneHead?
    /// Others' entries the zone took after the token the device sent, in the zone's order, when
    /// the upload asked for them (`upload(_:to:since:carrying:)`) and `token` is given: `token`
    /// is after them too, so a device applies them before it takes `token`. Empty otherwise.
    public var entries: [JournalEntry]

    /// A result with these outcomes (empty by default), as a service answers an upload.
    public init(saved: [CompactID] = [], failed: [CompactID: EntryFailure] = [:], token: ServiceToken? = nil, head: ZoneHead? = nil,
                entries: [JournalEntry] = []) {
        self.saved = saved
        self.failed = failed
        self.token = token
        self.head = head
        self.entries = entries
    }
}

/// What a zone holds now, as an opaque tag (an ETag for the zone: Spec/SYNC.md §3.11): equal
/// heads mean nothing was added, deleted or compacted between them. A database page names each
/// changed zone's head; a device that holds that head already has every change of the zone and
/// skips its fetch.
public struct ZoneHead: Hashable, Sendable, CustomStringConvertible {
    /// The head as the service wrote it (1–64 bytes).
    public let text: String
    /// A head from its text, as the service answered it or a state file kept it.
    public init(_ text: String) { self.text = text }
    public var description: String { text }
}

/// A device's tokens for both of its databases (either may be nil: a first fetch).
public struct DatabaseTokens: Sendable, Equatable {
    /// The `private` database's token.
    public var `private`: ServiceToken?
    /// The `shared` database's token.
    public var shared: ServiceToken?
    /// Tokens for both databases.
    public init(private: ServiceToken?, shared: ServiceToken?) {
        self.private = `private`
        self.shared = shared
    }
    /// The token of `scope`.
    public subscript(scope: DatabaseScope) -> ServiceToken? { scope == .private ? `private` : shared }
}

/// The first page of both databases' changes, in one answer (`fetchDatabaseChanges(since:limit:)`).
public struct BothDatabasesPage: Sendable, Equatable {
    /// The `private` database's page.
    public var `private`: DatabaseChangesPage
    /// The `shared` database's page.
    public var shared: DatabaseChangesPage
    /// Both pages.
    public init(private: DatabaseChangesPage, shared: DatabaseChangesPage) {
        self.private = `private`
        self.shared = shared
    }
    /// The page of `scope`.
    public subscript(scope: DatabaseScope) -> DatabaseChangesPage { scope == .private ? `private` : shared }
}

/// One page of `fetchDatabaseChanges` (CKFetchDatabaseChangesOperation).
public struct DatabaseChangesPage: Sendable, Equatable {
    /// Zones with changes since the token, or new to this database: fetch their changes.
    public var changed: [ZoneID]
    /// Zones that left this database, and why: remove their local copies.
    public var deleted: [ZoneGone]
    /// The token covering this page: pass it to the next call (CKServerChangeToken).
    public var token: ServiceToken
    /// More pages follow: fetch again from `token` (CKFetchDatabaseChangesOperation.moreComing).
    public var moreComing: Bool
    /// The head of each changed zone, where the service gives one (`ZoneHead`).
    public var heads: [ZoneID: ZoneHead]

    /// A page as a service answers it.
    public init(changed: [ZoneID], deleted: [ZoneGone], token: ServiceToken, moreComing: Bool, heads: [ZoneID: ZoneHead] = [:]) {
        self.changed = changed
        self.deleted = deleted
        self.token = token
        self.moreComing = moreComing
        self.heads = heads
    }
}

/// A zone that left a database, and why (CKDatabaseChange.Deletion).
public struct ZoneGone: Sendable, Equatable {
    /// The zone that left.
    public var zone: ZoneID
    /// Why it left: deleted, purged, this participant removed, or sharing stopped.
    public var reason: ZoneGoneReason
    /// A zone gone for `reason`.
    public init(zone: ZoneID, reason: ZoneGoneReason) {
        self.zone = zone
        self.reason = reason
    }
}

/// One page of `fetchZoneChanges` (CKFetchRecordZoneChangesOperation): entries in the service's
/// order, and a token that covers exactly them.
public struct ZoneChangesPage: Sendable, Equatable {
    /// The zone these changes belong to.
    public var zone: ZoneID
    /// The zone's entries after the token asked from, in the service's order.
    public var entries: [JournalEntry]
    /// The token covering exactly these entries: keep it with them, and pass it to the next call.
    public var token: ServiceToken
    /// More pages follow: fetch again from `token` (CKFetchRecordZoneChangesOperation.moreComing).
    public var moreComing: Bool
    /// On the last page (`moreComing` false), the zone's head as of this page, when the service
    /// gives one: a later database page that names the same head has nothing new for it.
    public var head: ZoneHead?

    /// A page as a service answers it.
    public init(zone: ZoneID, entries: [JournalEntry], token: ServiceToken, moreComing: Bool, head: ZoneHead? = nil) {
        self.zone = zone
        self.entries = entries
        self.token = token
        self.moreComing = moreComing
        self.head = head
    }
}

/// Someone a zone is shared with, as its owner sees it (`SyncService.fetchParticipants`; a
/// CKShare.Participant and its acceptance status).
public struct ShareParticipant: Hashable, Sendable {
    /// Whether the participant belongs to the list, or was invited and has not accepted yet.
    public enum Status: String, Sendable {
        /// A member: the list is in its shared database.
        case member
        /// Invited, not yet accepted, the invitation neither withdrawn nor voided.
        case invited
    }
    /// The participant's account.
    public var account: String
    /// Member or invited.
    public var status: Status

    /// A participant of `account` with `status`.
    public init(account: String, status: Status) {
        self.account = account
        self.status = status
    }
}

/// An invitation to a shared zone (a CKShare's URL): issued to one participant by the owner,
/// accepted by that participant. Signed by the service, so it carries its own proof.
public struct ShareInvitation: Hashable, Sendable, CustomStringConvertible {
    /// The invitation as the service issued it: passed to the participant as is.
    public let text: String
    /// An invitation from its text, as the owner sent it to the participant.
    public init(_ text: String) { self.text = text }
    public var description: String { text }
}

/// Everything a service can answer instead (Spec/SYNC.md §4, with CloudKit's error codes).
public enum SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No answer (CKError.networkUnavailable, .networkFailure): the request may or may not have
    /// been applied; everything stays queued. `cause` is what the transport said (refused,
    /// timed out, a gateway's 502), for a log; nothing decides on it.
    case networkUnavailable(cause: String? = nil)
    /// The request is too large (CKError.limitExceeded): split it.
    case limitExceeded
    /// Too many requests (CKError.requestRateLimited): wait, then retry.
    case rateLimited(retryAfter: Duration?)
    /// The service is busy (CKError.serviceUnavailable, .zoneBusy): wait, then retry.
    case serviceBusy(retryAfter: Duration?)
    /// Some entries of an upload were not taken (CKError.partialFailure).
    case partialFailure(UploadResult)
    /// The token is older than what the service keeps (CKError.changeTokenExpired): re-fetch the
    /// zone from no token and replace the local copy.
    case tokenExpired
    /// No such zone, or one this account may not see (CKError.zoneNotFound): the two answer alike.
    case zoneNotFound
    /// The zone is gone for this account (CKError.userDeletedZone and the deletion reasons).
    case zoneDeleted(reason: ZoneGoneReason)
    /// The account is not signed in, or its credential was refused (CKError.notAuthenticated).
    case notAuthenticated
    /// The account's storage is full (CKError.quotaExceeded): changes stay queued.
    case quotaExceeded
    /// A request no retry will fix (CKError.invalidArguments): a bug, or a hostile client.
    case invalidRequest(String)
    /// A zone already has the most participants the service allows (a CKShare's 100): the
    /// invitation or acceptance is refused; remove someone first.
    case tooManyParticipants(limit: Int)
    /// The account already has the most device credentials the service enrols (Spec/SYNC.md
    /// §9.2, enrolment): an operator revokes one (`jlog accounts revoke`) before another device enrols.
    case tooManyDevices(limit: Int)
    /// The device and the service do not speak a common protocol version, or an answer is in a
    /// form this version cannot read (Spec/SYNC.md §3.13): one side must be updated. Not
    /// retried: the same request gets the same answer until then.
    case incompatible(String)

    public var description: String {
        switch self {
        case .networkUnavailable(let cause): "the service could not be reached" + (cause.map { " (\($0))" } ?? "")
        case .limitExceeded: "the request is larger than the service takes"
        case .rateLimited(let a): "rate limited" + (a.map { ", retry after \($0)" } ?? "")
        case .serviceBusy(let a): "the service is busy" + (a.map { ", retry after \($0)" } ?? "")
        case .partialFailure(let r): "\(r.failed.count) of \(r.failed.count + r.saved.count) entries were not taken"
        case .tokenExpired: "the change token expired: re-fetch the zone"
        case .zoneNotFound: "no such zone"
        case .zoneDeleted(let reason): "the zone is gone (\(reason.rawValue))"
        case .notAuthenticated: "not signed in"
        case .quotaExceeded: "the account's quota is exceeded"
        case .invalidRequest(let why): "invalid request: \(why)"
        case .tooManyParticipants(let limit): "the list already has the most participants the service allows (\(limit))"
        case .tooManyDevices(let limit): "the account already has the most devices the service enrols (\(limit)): revoke one first"
        case .incompatible(let why): "this app and the service do not understand each other (\(why)): update the app"
        }
    }

    /// Worth retrying the same request after a wait.
    public var isTransient: Bool {
        switch self {
        case .networkUnavailable, .rateLimited, .serviceBusy: true
        default: false
        }
    }
}

/// What a CloudKit-like sync service offers one signed-in account: one call per CloudKit
/// operation (Spec/SYNC.md §3 gives each mapping). Implementations: the reference service in
/// this process (`JournalService`), an HTTP client of `jlog serve` (`JournalSyncHTTP`), and on
/// Apple platforms a thin CloudKit adapter.
public protocol SyncService: Sendable {
    /// The account these calls act as (CKContainer.userRecordID).
    var account: String { get }

    /// What a diagnostic report calls this service: its kind and address (an HTTP client's
    /// server URL), never a credential. By default, its type's name.
    var diagnosticName: String { get }

    /// Uploads entries to a zone (CKModifyRecordsOperation, savePolicy `.ifServerRecordUnchanged`
    /// on immutable records): idempotent by entry id; the result says what became of each one.
    func upload(_ entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult

    /// The zones of one database changed or gone since `token` (CKFetchDatabaseChangesOperation).
    func fetchDatabaseChanges(_ scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage

    /// The first page of both databases' changes in one request (Spec/SYNC.md §3.11); `limit`
    /// zones per database. A database with more follows with the call above.
    func fetchDatabaseChanges(since tokens: DatabaseTokens, limit: Int) async throws(SyncError) -> BothDatabasesPage

    /// `upload(_:to:)` that also names the zone token the device holds (Spec/SYNC.md §3.11): when
    /// the zone holds nothing after it but this upload's entries, the answer carries the token
    /// after them (`UploadResult.token`), and the device need not fetch its own entries back.
    func upload(_ entries: [JournalEntry], to zone: ZoneID, since token: ServiceToken?) async throws(SyncError) -> UploadResult

    /// `upload(_:to:since:)` whose answer may also bring the others' entries the zone took after
    /// `since`, at most `limit` of them (Spec/SYNC.md §3.11): when the zone holds nothing else
    /// after `since`, the answer carries them (`UploadResult.entries`, a compaction record among
    /// them) and the token after all of it, and the device that applies them need not fetch the
    /// zone. A caller that takes `token` applies `entries` first. `limit` 0 is
    /// `upload(_:to:since:)`.
    func upload(_ entries: [JournalEntry], to zone: ZoneID, since token: ServiceToken?, carrying limit: Int) async throws(SyncError) -> UploadResult

    /// A zone's entries after `token`, in pages (CKFetchRecordZoneChangesOperation).
    func fetchZoneChanges(_ zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage

    /// The zone's activity history as the service holds it (SNAPSHOT.md §5 encoding; a
    /// CKAsset-valued record): what a device re-fetching the zone installs beside the entries,
    /// since purged events live nowhere else. Empty when the zone was never compacted.
    func fetchZoneHistory(_ zone: ZoneID) async throws(SyncError) -> [UInt8]

    /// One page of the zone's activity history (Spec/SYNC.md §3.12): its events as a history
    /// piece, and the cursor of the next page. A device reads from a nil cursor until the page
    /// whose `next` is nil; its memory holds one page, never the whole history. `tokenExpired`
    /// when the history moved since the first page (a compaction): start again from nil.
    func fetchZoneHistoryPage(_ zone: ZoneID, after cursor: HistoryCursor?) async throws(SyncError) -> HistoryPage

    /// The zone's current state as one snapshot (SNAPSHOT.md, LZ4) and the token after it, or nil
    /// when the service keeps none to give (never compacted, or too large for a base): what a
    /// device that has no token, or whose token expired, installs instead of the entries behind
    /// it (Spec/SYNC.md §3.10, §7.5). It then fetches the zone's changes from that token.
    func fetchZoneSnapshot(_ zone: ZoneID) async throws(SyncError) -> ZoneSnapshot?

    /// Creates a zone of this account (CKModifyRecordZonesOperation, save): idempotent.
    func createZone(_ zone: ZoneID) async throws(SyncError)

    /// Deletes a zone of this account, for every participant (CKModifyRecordZonesOperation, delete).
    func deleteZone(_ zone: ZoneID) async throws(SyncError)

    /// Invites `participant` to a zone this account owns (a CKShare and its URL).
    func shareZone(_ zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation

    /// Accepts an invitation addressed to this account (CKAcceptSharesOperation): the zone joins its
    /// shared database, and a `join` entry records it in the zone.
    func acceptShare(_ invitation: ShareInvitation) async throws(SyncError) -> ZoneID

    /// Removes a participant (the owner removing anyone, or a participant leaving), recorded as a
    /// `leave` entry (CKShare.removeParticipant); the owner naming one not yet a member withdraws
    /// the invitations it was given.
    func removeParticipant(_ participant: String, from zone: ZoneID) async throws(SyncError)

    /// Removes every participant (deleting the CKShare): the zone leaves their shared databases,
    /// and no invitation issued so far admits anyone.
    func stopSharing(_ zone: ZoneID) async throws(SyncError)

    /// The zone's participants as its owner sees them: members, and those invited who have not
    /// accepted (Spec/SYNC.md §5.2), by account. Owner only. The owner withdraws one invitation
    /// with `removeParticipant`.
    func fetchParticipants(_ zone: ZoneID) async throws(SyncError) -> [ShareParticipant]

    /// Publishes this account's public keys to the service's key directory (Spec/SYNC.md §5.6),
    /// which checks sealed lists' key records against them. Idempotent; an account's keys, once
    /// published, stay its keys (`invalidRequest` for others).
    func publishAccountKeys(_ keys: PublishedAccountKeys) async throws(SyncError)

    /// An account's published keys, nil when it has published none: what an owner wraps a
    /// sealed list's key to. A device pins the keys it first sees (Spec/SEALING.md §4.3).
    func fetchAccountKeys(_ account: String) async throws(SyncError) -> PublishedAccountKeys?

    /// Stores this account's recovery kit (Spec/SYNC.md §5.7, SEALING.md §4.5): its account keys
    /// sealed under a recovery code only the person holds (`RecoveryKit` in JournalSeal), at
    /// most `RecoveryKitLimits.maxBytes`; it replaces the one stored before.
    func storeRecoveryKit(_ kit: [UInt8]) async throws(SyncError)

    /// This account's recovery kit, nil when none is stored: rate-limited (`rateLimited`), since
    /// whoever holds it may try codes against it.
    func fetchRecoveryKit() async throws(SyncError) -> [UInt8]?

    /// Leaves `sealed`, this account's keys sealed for a new device of the same account
    /// (`DeviceLink` in JournalSeal, Spec/SYNC.md §5.8), under the 16-byte `link` the new device
    /// named: for `DeviceLinkLimits.lifetimeMillis`, for this account's devices alone.
    func depositDeviceLink(_ link: [UInt8], sealed: [UInt8]) async throws(SyncError)

    /// What a device of this account left under `link`, nil for nothing (yet, or any more).
    func fetchDeviceLink(_ link: [UInt8]) async throws(SyncError) -> [UInt8]?
}

/// The bounds of a device link (`SyncService.depositDeviceLink`).
public enum DeviceLinkLimits {
    /// A link's id: 16 bytes.
    public static let linkBytes = 16
    /// The most bytes a link carries.
    public static let maxBytes = 256
    /// How long the service keeps what a link carries: 15 minutes.
    public static let lifetimeMillis: Int64 = 15 * 60_000
}

/// The bounds of a recovery kit (`SyncService.storeRecoveryKit`).
public enum RecoveryKitLimits {
    /// The most bytes a recovery kit holds.
    public static let maxBytes = 256
}

/// A zone's state as its service holds it, with the token to fetch what follows it
/// (`SyncService.fetchZoneSnapshot`).
public struct ZoneSnapshot: Sendable, Equatable {
    /// A whole snapshot of the zone's current incarnation (Spec/SNAPSHOT.md), at most 3 MiB.
    public var bytes: [UInt8]
    /// A zone token at the snapshot's sequence: the entries after it complete the list.
    public var token: ServiceToken

    /// A snapshot and the token after it.
    public init(bytes: [UInt8], token: ServiceToken) {
        self.bytes = bytes
        self.token = token
    }
}

extension SyncService {
    /// Both databases' first pages, one request each (CloudKit: two CKFetchDatabaseChangesOperations).
    public func fetchDatabaseChanges(since tokens: DatabaseTokens, limit: Int) async throws(SyncError) -> BothDatabasesPage {
        BothDatabasesPage(private: try await fetchDatabaseChanges(.private, since: tokens.private, limit: limit),
                          shared: try await fetchDatabaseChanges(.shared, since: tokens.shared, limit: limit))
    }

    /// The service's type: what a diagnostic report names it by, when it says nothing better.
    public var diagnosticName: String { String(describing: type(of: self)) }

    /// A service that lists no participants (CloudKit's adapter reads the CKShare instead).
    public func fetchParticipants(_ zone: ZoneID) async throws(SyncError) -> [ShareParticipant] {
        throw .invalidRequest("this service does not list a zone's participants")
    }

    /// A service that keeps no key directory (CloudKit: sealed lists' keys are the clients' to check).
    public func publishAccountKeys(_ keys: PublishedAccountKeys) async throws(SyncError) {
        throw .invalidRequest("this service keeps no key directory")
    }

    /// A service that keeps no key directory.
    public func fetchAccountKeys(_ account: String) async throws(SyncError) -> PublishedAccountKeys? {
        throw .invalidRequest("this service keeps no key directory")
    }

    /// A service that keeps no recovery kits.
    public func storeRecoveryKit(_ kit: [UInt8]) async throws(SyncError) {
        throw .invalidRequest("this service keeps no recovery kits")
    }

    /// A service that keeps no recovery kits.
    public func fetchRecoveryKit() async throws(SyncError) -> [UInt8]? {
        throw .invalidRequest("this service keeps no recovery kits")
    }

    /// A service that carries no device links (the iCloud Keychain carries the keys instead).
    public func depositDeviceLink(_ link: [UInt8], sealed: [UInt8]) async throws(SyncError) {
        throw .invalidRequest("this service carries no device links")
    }

    /// A service that carries no device links.
    public func fetchDeviceLink(_ link: [UInt8]) async throws(SyncError) -> [UInt8]? {
        throw .invalidRequest("this service carries no device links")
    }

    /// An upload whose answer carries no others' entries: `upload(_:to:since:)`.
    public func upload(_ entries: [JournalEntry], to zone: ZoneID, since token: ServiceToken?, carrying limit: Int) async throws(SyncError) -> UploadResult {
        try await upload(entries, to: zone, since: token)
    }

    /// An upload whose answer carries no token (CloudKit: the device fetches its entries back).
    public func upload(_ entries: [JournalEntry], to zone: ZoneID, since token: ServiceToken?) async throws(SyncError) -> UploadResult {
        try await upload(entries, to: zone)
    }

    /// A service with no snapshots to give (CloudKit's adapter: SYNC.md §3.9): nil, so devices
    /// fetch a zone's entries.
    public func fetchZoneSnapshot(_ zone: ZoneID) async throws(SyncError) -> ZoneSnapshot? { nil }
}

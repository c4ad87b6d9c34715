import Foundation
import JournalLog
import JournalService
@testable import JournalSync
import JournalTesting

/// A service call, as a `Script` names it.
enum ServiceCall: String, Sendable, CaseIterable {
    case upload, fetchDatabaseChanges, fetchZoneChanges, fetchZoneHistory, createZone, deleteZone
    case shareZone, acceptShare, removeParticipant, stopSharing
}

/// What a test wants the service to do, call by call: unlike `FaultyService` (random faults from
/// a seed), each fault is placed exactly, and every call is logged with the virtual time it was
/// made at. Shared by every connection a device makes, so it outlives the device's restarts.
final class Script: @unchecked Sendable {
    enum Action: Sendable {
        /// Answer with this error; the service never sees the call.
        case fail(SyncError)
        /// The service applies the call; its answer is lost (`networkUnavailable`).
        case dropResponse
        /// An upload: the service takes the first `keep` entries; the rest fail as retryable.
        case takeFirst(Int)
        /// An upload: the service takes the entries; those whose ids are given fail with `failure`.
        case refuse(Set<CompactID>, EntryFailure)
    }

    struct Rule {
        var call: ServiceCall
        var action: Action
        var times: Int
    }

    struct Record: Sendable {
        var call: ServiceCall
        /// Virtual time when the call was made.
        var at: Int64
        /// An upload's entry ids.
        var ids: [CompactID]
        /// What the script did instead of a plain call, if anything.
        var fault: String?
    }

    private let lock = NSLock()
    private var rules: [Rule] = []
    private var records: [Record] = []
    private var offlineState = false
    private var signedOutState = false

    /// A partition: every call fails with `networkUnavailable` (not logged as reaching the service).
    var offline: Bool {
        get { lock.withLock { offlineState } }
        set { lock.withLock { offlineState = newValue } }
    }

    /// The credential is refused: every call fails with `notAuthenticated`.
    var signedOut: Bool {
        get { lock.withLock { signedOutState } }
        set { lock.withLock { signedOutState = newValue } }
    }

    /// The next `times` calls of `call` get `action` (after the rules queued before this one).
    func on(_ call: ServiceCall, _ action: Action, times: Int = 1) {
        lock.withLock { rules.append(Rule(call: call, action: action, times: times)) }
    }

    /// Forgets every rule not used yet.
    func clearRules() { lock.withLock { rules = [] } }

    /// Every call made so far (offline and signed-out calls included, with their fault).
    var log: [Record] { lock.withLock { records } }

    func calls(_ call: ServiceCall) -> [Record] { log.filter { $0.call == call } }

    /// Upload calls the service answered normally (not failed by the script).
    var deliveredUploads: [Record] { log.filter { $0.call == .upload && $0.fault == nil } }

    func forgetLog() { lock.withLock { records = [] } }

    fileprivate func next(_ call: ServiceCall, at: Int64, ids: [CompactID]) -> Action? {
        lock.withLock {
            var action: Action? = nil
            if offlineState {
                action = .fail(.networkUnavailable())
            } else if signedOutState {
                action = .fail(.notAuthenticated)
            } else if let i = rules.firstIndex(where: { $0.call == call }) {
                action = rules[i].action
                rules[i].times -= 1
                if rules[i].times <= 0 { rules.remove(at: i) }
            }
            records.append(Record(call: call, at: at, ids: ids, fault: action.map { "\($0)" }))
            return action
        }
    }
}

/// Puts a `Script` in front of a service.
struct ScriptedService: SyncService {
    let inner: any SyncService
    let script: Script
    let clock: VirtualClock

    init(_ inner: any SyncService, script: Script, clock: VirtualClock) {
        self.inner = inner
        self.script = script
        self.clock = clock
    }

    var account: String { inner.account }

    private func run<T>(_ call: ServiceCall, ids: [CompactID] = [], _ body: () async throws(SyncError) -> T) async throws(SyncError) -> T {
        switch script.next(call, at: clock.now(), ids: ids) {
        case nil: return try await body()
        case .fail(let error)?: throw error
        case .dropResponse?:
            _ = try await body()
            throw .networkUnavailable()
        case .takeFirst?, .refuse?:
            return try await body()   // upload-only actions, handled there
        }
    }

    func upload(_ entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult {
        let ids = entries.map(\.id)
        switch script.next(.upload, at: clock.now(), ids: ids) {
        case nil: return try await inner.upload(entries, to: zone)
        case .fail(let error)?: throw error
        case .dropResponse?:
            _ = try await inner.upload(entries, to: zone)
            throw .networkUnavailable()
        case .takeFirst(let keep)?:
            var result = try await uploadReportingFailures(Array(entries.prefix(keep)), to: zone)
            for e in entries.dropFirst(keep) { result.failed[e.id] = .retryable("scripted: the zone was busy") }
            if result.failed.isEmpty { return result }
            throw .partialFailure(result)
        case .refuse(let refused, let failure)?:
            var result = try await uploadReportingFailures(entries.filter { !refused.contains($0.id) }, to: zone)
            for e in entries where refused.contains(e.id) { result.failed[e.id] = failure }
            if result.failed.isEmpty { return result }
            throw .partialFailure(result)
        }
    }

    private func uploadReportingFailures(_ entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult {
        guard !entries.isEmpty else { return UploadResult() }
        do { return try await inner.upload(entries, to: zone) } catch {
            if case .partialFailure(let r) = error { return r }
            throw error
        }
    }

    func fetchDatabaseChanges(_ scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage {
        try await run(.fetchDatabaseChanges) { () async throws(SyncError) -> DatabaseChangesPage in
            try await inner.fetchDatabaseChanges(scope, since: token, limit: limit)
        }
    }

    func fetchZoneChanges(_ zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage {
        try await run(.fetchZoneChanges) { () async throws(SyncError) -> ZoneChangesPage in
            try await inner.fetchZoneChanges(zone, since: token, limit: limit)
        }
    }

    func fetchZoneHistory(_ zone: ZoneID) async throws(SyncError) -> [UInt8] {
        try await run(.fetchZoneHistory) { () async throws(SyncError) -> [UInt8] in try await inner.fetchZoneHistory(zone) }
    }

    func createZone(_ zone: ZoneID) async throws(SyncError) {
        try await run(.createZone) { () async throws(SyncError) in try await inner.createZone(zone) }
    }

    func deleteZone(_ zone: ZoneID) async throws(SyncError) {
        try await run(.deleteZone) { () async throws(SyncError) in try await inner.deleteZone(zone) }
    }

    func shareZone(_ zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation {
        try await run(.shareZone) { () async throws(SyncError) -> ShareInvitation in try await inner.shareZone(zone, with: participant) }
    }

    func acceptShare(_ invitation: ShareInvitation) async throws(SyncError) -> ZoneID {
        try await run(.acceptShare) { () async throws(SyncError) -> ZoneID in try await inner.acceptShare(invitation) }
    }

    func removeParticipant(_ participant: String, from zone: ZoneID) async throws(SyncError) {
        try await run(.removeParticipant) { () async throws(SyncError) in try await inner.removeParticipant(participant, from: zone) }
    }

    func stopSharing(_ zone: ZoneID) async throws(SyncError) {
        try await run(.stopSharing) { () async throws(SyncError) in try await inner.stopSharing(zone) }
    }

    /// The key directory, unscripted (a sealed list's rotation reads members' keys).
    func fetchAccountKeys(_ account: String) async throws(SyncError) -> PublishedAccountKeys? { try await inner.fetchAccountKeys(account) }
}

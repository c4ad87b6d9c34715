import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalServer
import JournalService
import JournalSync
import JournalSyncWire
import JournalSyncHTTP
import JournalTesting
import NIOHTTP1

/// The accounts file's check, made unavailable on demand: what a database that restarts does to
/// the credential lookups of every node over it (SYNC.md §9.2, §11.6).
final class SwitchableCredentials: CredentialCheck, @unchecked Sendable {
    let inner: AccountDirectory
    private let lock = NSLock()
    private var downNow = false
    var isDown: Bool {
        get { lock.withLock { downNow } }
        set { lock.withLock { downNow = newValue } }
    }

    init(_ inner: AccountDirectory) { self.inner = inner }

    func authenticate(_ text: String, now: Int64) async -> Authentication {
        isDown ? .unavailable(.unavailable("the database is restarting")) : inner.authenticate(text, now: now)
    }

    func accountExists(_ account: String, now: Int64) throws(StorageError) -> Bool {
        if isDown { throw .unavailable("the database is restarting") }
        return try inner.accountExists(account, now: now)
    }
}

/// A credential the service could not look up is never judged refused: the device is told the
/// service is busy, with `Retry-After`, keeps its credential and its lists, and goes on syncing
/// once the lookups answer again. Only a credential the service judged signs a device out.
@Suite struct UnavailableCredentialsTests {
    /// A server whose credential lookups can fail, alice's credential, and the switch.
    static func server() async throws -> (TestServer, DeviceCredential, SwitchableCredentials) {
        let box = Box<SwitchableCredentials>()
        let server = try await TestServer(credentials: { directory in box.set(SwitchableCredentials(directory)) })
        return (server, try server.credential("alice"), box.value!)
    }

    @Test func aLookupThatFailsIsBusyWithRetryAfterNotUnauthenticated() async throws {
        let (server, alice, credentials) = try await Self.server()
        credentials.isDown = true
        let r = try await server.send(.GET, "/v1/account", authorization: alice.bearer)
        #expect(r.status == 503 && r.error?.error == "serviceBusy", "\(r)")
        #expect(r.header("Retry-After") != nil)
        #expect(r.header("WWW-Authenticate") == nil)
        await server.stop()
    }

    @Test func aDeviceSyncingWhileLookupsFailIsNotSignedOutAndSyncsAfter() async throws {
        let (server, alice, credentials) = try await Self.server()
        let phone = try HTTPDevice(server, replica: "alice:phone", credential: alice)
        let list = try await phone.engine.createList("weekly")
        await phone.engine.sync()
        credentials.isDown = true
        try await phone.engine.record(.add(item: CompactID("milk")!, text: "Milk", after: nil), in: list)
        let during = await phone.engine.sync()
        #expect(!during.signedOut, "the first sync after a database restart signed the device out")
        credentials.isDown = false
        let after = await phone.engine.sync()
        #expect(!after.signedOut && after.isComplete, "\(after)")
        #expect(try server.core.storage.zoneChanges(list.storeName, since: nil, limit: 10).entries.count == 1)
        await server.stop()
    }

    @Test func aRefusedCredentialStillSignsTheDeviceOut() async throws {
        let (server, alice, _) = try await Self.server()
        _ = try server.accounts.revoke(alice.id, now: nowMillis())
        let r = try await server.send(.GET, "/v1/account", authorization: alice.bearer)
        #expect(r.status == 401 && r.header("WWW-Authenticate") != nil, "\(r)")
        await server.stop()
    }

    @Test func anInvitationWhoseAccountLookupFailsIsBusyNotNoSuchAccount() async throws {
        let (server, alice, credentials) = try await Self.server()
        _ = try server.credential("bob")
        let zone = ZoneID(owner: "alice", name: "weekly")!
        try await server.client(alice).createZone(zone)
        credentials.isDown = true
        await #expect(throws: SyncError.serviceBusy(retryAfter: .seconds(1))) { _ = try await server.core.perform(caller: "alice", .shareZone(zone, participant: "bob")) }
        await server.stop()
    }
}

/// A path with an empty segment names no resource (SYNC.md §9.3): it is refused before any
/// route reads it, so a client's bug never reaches another list.
@Suite struct EmptySegmentTests {
    @Test(arguments: [("DELETE", "/v1/zones/alice//participants"), ("PUT", "/v1/zones/alice//snapshot"), ("PUT", "/v1/zones//alice/x"),
                      ("GET", "/v1/zones/alice/participants/changes/"), ("GET", "/v1//account")])
    func aPathWithAnEmptySegmentIsRefused(_ method: String, _ path: String) async throws {
        let server = try await TestServer()
        let alice = try server.credential("alice")
        // The list an empty segment would have addressed, had the router merged it away.
        let victim = ZoneID(owner: "alice", name: "participants")!
        try await server.client(alice).createZone(victim)
        let r = try await server.send(HTTPMethod(rawValue: method), path, authorization: alice.bearer)
        #expect(r.status == 400 && r.error?.error == "invalidRequest", "\(method) \(path): \(r)")
        #expect(server.store.zone(victim.storeName)?.isDeleted == false, "\(method) \(path) deleted another list")
        #expect(server.store.zone("alice/snapshot") == nil && server.store.zone("alice/x") == nil)
        await server.stop()
    }
}

/// A backend whose readiness never answers: a database that is down, as a pool's lease waits.
struct HangingReadiness: ServiceBackend {
    let inner: any ServiceBackend
    var limits: ServiceLimits { inner.limits }
    var hints: HintHub { inner.hints }
    func perform(_ caller: ServiceCaller, _ call: SyncCall) async throws(SyncError) -> SyncAnswer { try await inner.perform(caller, call) }
    func unreadiness() async -> String? {
        try? await Task.sleep(for: .seconds(120))
        return nil
    }
}

@Suite struct ReadinessBoundTests {
    /// A load balancer's probe gets 503 in a bound while the storage does not answer, never a hang.
    @Test func readinessAnswersUnreadyWhileTheStorageHangs() async throws {
        let server = try await TestServer(backend: { HangingReadiness(inner: $0) })
        let r = try await withTimeout(10, "GET /v1/ready") { try await server.send(.GET, "/v1/ready", authorization: nil) }
        #expect(r.status == 503 && r.text.contains("did not answer"), "\(r)")
        await server.stop()
    }
}

/// A value set once from a closure the code under test calls.
final class Box<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T?
    var value: T? { lock.withLock { stored } }
    func set(_ v: T) -> T {
        lock.withLock { stored = v }
        return v
    }
}

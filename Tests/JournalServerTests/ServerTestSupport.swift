import Foundation
import JournalLog
import JournalServer
import JournalService
import JournalSync
import JournalSyncWire
import JournalSyncHTTP
import JournalSyncHTTPNIO
import Logging

/// A `jlog serve` in this process, on a loopback port of its own, over a store in a temporary
/// directory; stopped by `stop()`.
final class TestServer: @unchecked Sendable {
    let dir: String
    let store: JournalStore
    let core: ServiceCore
    let accounts: AccountDirectory
    let task: Task<Void, any Error>
    let port: Int
    var url: String { "http://127.0.0.1:\(port)" }

    /// With `identity`, devices enrol with that provider's tokens (`POST /v1/enrol`).
    /// With `credentials`, the server checks devices' credentials through it (over the accounts
    /// file): a test can make them unavailable.
    init(limits: ServiceLimits = ServiceLimits(), options: ServerOptions = ServerOptions(),
         credentials: ((AccountDirectory) -> any CredentialCheck)? = nil, backend: ((any ServiceBackend) -> any ServiceBackend)? = nil,
         identity: IdentityProvider? = nil, maxDevicesPerAccount: Int = DeviceEnrolment.maxDevicesPerAccount) async throws {
        dir = NSTemporaryDirectory() + "jlog-server-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        store = try JournalStore.open(dir + "/server.wal", options: StoreOptions(durability: .always, segmentSize: 1 << 20, preallocate: false))
        let accounts = try AccountDirectory(store: dir + "/server.wal")
        self.accounts = accounts
        let check = credentials?(accounts) ?? accounts
        core = try ServiceCore(store: store, limits: limits, now: { Int64(Date().timeIntervalSince1970 * 1000) },
                               checkingAccounts: { account throws(StorageError) in try check.accountExists(account, now: Int64(Date().timeIntervalSince1970 * 1000)) })
        var o = options
        o.host = "127.0.0.1"
        o.port = 0
        // A few threads: every TestServer starts a pool of its own that lives as long as the process.
        let blocking = BlockingBackend(core: core, threads: 4)
        let node = ServiceNode(backend: blocking)
        let inner: any ServiceBackend = MeteredBackend(blocking)
        var enrolment = identity.map { Enrolment(provider: $0, devices: accounts) }
        enrolment?.maxDevicesPerAccount = maxDevicesPerAccount
        let server = SyncServer(backend: backend?(inner) ?? inner, accounts: check, options: o, enrolment: enrolment)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        // Quiet: stopping a server by cancelling it logs every open connection as an error.
        var log = Logger(label: "test-server")
        log.logLevel = .critical
        task = Task { [log] in try await server.run(logger: log, node: node) { continuation.yield($0) } }
        var it = ports.makeAsyncIterator()
        port = await it.next() ?? 0
    }

    /// A new credential for `account`.
    func credential(_ account: String, expiresAt: Int64? = nil) throws -> DeviceCredential {
        try accounts.issue(account: account, now: Int64(Date().timeIntervalSince1970 * 1000), expiresAt: expiresAt)
    }

    func client(_ credential: DeviceCredential) -> HTTPSyncService {
        HTTPSyncService(server: url, credential: credential, transport: AsyncHTTPClientTransport())
    }

    /// A client over URLSession, as an app has it.
    func urlSessionClient(_ credential: DeviceCredential) -> HTTPSyncService {
        HTTPSyncService(server: url, credential: credential, transport: URLSessionTransport())
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
        try? store.close()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

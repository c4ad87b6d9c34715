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
         identity: IdentityProvider? = nil, maxDevicesPerAccount: Int = DeviceEnrolment.maxDevicesPerAccount,
         logger: Logger? = nil, clock: ServerClock = ServerClock()) async throws {
        dir = NSTemporaryDirectory() + "jlog-server-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        store = try JournalStore.open(dir + "/server.wal", options: StoreOptions(durability: .always, segmentSize: 1 << 20, preallocate: false))
        let accounts = try AccountDirectory(store: dir + "/server.wal")
        self.accounts = accounts
        let check = credentials?(accounts) ?? accounts
        core = try ServiceCore(store: store, limits: limits, now: { clock.now() },
                               checkingAccounts: { account throws(StorageError) in try check.accountExists(account, now: Int64(Date().timeIntervalSince1970 * 1000)) })
        var o = options
        o.host = "127.0.0.1"
        o.port = 0
        // A few threads: every TestServer starts a pool of its own that lives as long as the process.
        let blocking = BlockingBackend(core: core, threads: 4)
        let node = ServiceNode(backend: blocking, logger: logger ?? Logger(label: "jlog-serve"))
        let inner: any ServiceBackend = MeteredBackend(blocking)
        var enrolment = identity.map { Enrolment(provider: $0, devices: accounts) }
        enrolment?.maxDevicesPerAccount = maxDevicesPerAccount
        let server = SyncServer(backend: backend?(inner) ?? inner, accounts: check, options: o, enrolment: enrolment)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        // Quiet: stopping a server by cancelling it logs every open connection as an error.
        var log = logger ?? Logger(label: "test-server")
        if logger == nil { log.logLevel = .critical }
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

/// Every line a server logs, at every level, kept for a test to read (the plaintext scan).
final class CapturedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    var text: String { lock.withLock { lines.joined(separator: "\n") } }

    /// A logger that writes here, at trace level.
    func logger(_ label: String) -> Logger {
        var log = Logger(label: label) { [self] label in Handler(log: self, label: label) }
        log.logLevel = .trace
        return log
    }

    fileprivate func append(_ line: String) { lock.withLock { lines.append(line) } }

    private struct Handler: LogHandler {
        let log: CapturedLog
        let label: String
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(level: Logger.Level, message: Logger.Message, metadata extra: Logger.Metadata?, source: String,
                 file: String, function: String, line: UInt) {
            let all = metadata.merging(extra ?? [:]) { $1 }
            log.append("\(level) \(label) \(message) \(all)")
        }
    }
}

/// The service's clock in a test server: the real time, moved on by `advance(by:)` (a test that
/// needs a compaction to find its entries old).
final class ServerClock: @unchecked Sendable {
    private let lock = NSLock()
    private var ahead: Int64 = 0

    init() {}

    func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) + lock.withLock { ahead } }

    func advance(by millis: Int64) { lock.withLock { ahead += millis } }
}

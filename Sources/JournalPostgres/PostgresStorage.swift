import JournalLog
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// The sync service's storage in one PostgreSQL database that any number of nodes share
/// (Spec/SYNC.md §11): zones and their incarnations, and records at positions that commit in
/// order. Opening applies the schema's migrations; `close` ends the connection pool.
public final class PostgresStorage: Sendable {
    let client: PostgresClient
    let logger: Logger
    /// The `LISTEN/NOTIFY` channel of this database's (or schema's) writes.
    let changesChannel: String
    private let running: Task<Void, Never>
    /// The tasks listening for other nodes' changes (`changeSignals`), ended by `close`.
    let listeners = Mutex<[Task<Void, Never>]>([])
    /// Group commit of appends (nil: each append commits alone). Set once by `open`, before the
    /// storage is returned to anyone: never written while shared.
    private(set) nonisolated(unsafe) var batcher: AppendBatcher? = nil
    /// The migrations this opening applied (empty when the schema was current).
    public let migrated: [Int]
    /// The records table's first statistics (`FirstStatistics`).
    let firstStatistics = FirstStatistics()
    /// This opening's name in its change signals (16 hex digits, random): the signals of its own
    /// writes are not delivered back to it (`changeSignals`).
    let signalTag = String(UInt64.random(in: 1...UInt64.max), radix: 16)

    private init(client: PostgresClient, logger: Logger, changesChannel: String, running: Task<Void, Never>, migrated: [Int]) {
        self.client = client
        self.changesChannel = changesChannel
        self.logger = logger
        self.running = running
        self.migrated = migrated
    }

    /// Connects (a pool of at most `connections`), and brings the schema to the newest version.
    /// `schema`, when given, is the PostgreSQL schema the tables live in (tests give each its own);
    /// it names the nodes' change channel too, so schemas of one database do not hear each other.
    /// `batchesAppends`: appends that arrive while another commits share its successor's
    /// transaction (group commit; off, each commits alone).
    public static func open(_ location: PostgresLocation, connections: Int = 20, schema: String? = nil, batchesAppends: Bool = true,
                            logger: Logger = Logger(label: "jlog.postgres")) async throws(PostgresStorageError) -> PostgresStorage {
        let schema = schema ?? location.schema
        var configuration = location.clientConfiguration
        configuration.options.maximumConnections = connections
        // Named, so an operator tells the nodes' connections apart in pg_stat_activity.
        configuration.options.additionalStartupParameters = [("application_name", "jlog" + (schema.map { "-" + $0 } ?? ""))]
        if let schema { configuration.options.additionalStartupParameters.append(("search_path", schema)) }
        // One connection first: a database that is missing, refuses the user or does not answer
        // is reported at once with the server's reason (the pool would retry for a minute).
        try await mapped {
            var probe = try location.connectionConfiguration()
            probe.options.connectTimeout = .seconds(10)
            let connection = try await PostgresConnection.connect(configuration: probe, id: 0, logger: logger)
            // The location's schema is made by the first node that opens it.
            if let schema { try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(schema)"), logger: logger) }
            try await connection.close()
        }
        let client = PostgresClient(configuration: configuration, eventLoopGroup: eventLoops, backgroundLogger: logger)
        // On the bridge (the connections' event loop): a synchronous caller blocked on the cooperative pool never holds up the pool's connections.
        let running = Task(executorPreference: BridgeExecutor.shared) { await client.run() }
        // Let the pool start before the first lease (it runs on the bridge, not this thread).
        try? await Task.sleep(for: .milliseconds(20))
        do {
            let migrated = try await mapped { try await SchemaMigrations.apply(client, logger: logger) }
            let storage = PostgresStorage(client: client, logger: logger, changesChannel: "jlog_changes" + (schema.map { "_" + $0 } ?? ""),
                                          running: running, migrated: migrated)
            if batchesAppends { storage.batcher = AppendBatcher { [weak storage] in await storage?.commit($0) ?? $0.map { _ in .failure(.database("closed")) } } }
            return storage
        } catch {
            running.cancel()
            throw error
        }
    }

    /// The event loop the database's connections run on, apart from the process's other loops:
    /// a synchronous caller that blocks one of those (`jlog simulate`'s devices, a test) never
    /// holds up the answer it waits for (`BridgeExecutor` runs the async side).
    static let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// Ends the connection pool; calls after it fail.
    public func close() async {
        for task in listeners.withLock({ $0 }) {
            task.cancel()
            _ = await task.value
        }
        running.cancel()
        _ = await running.value
    }

    /// The schema version the database is at.
    public func schemaVersion() async throws(PostgresStorageError) -> Int {
        try await Self.mapped {
            var v = 0
            for try await n in try await client.query("SELECT coalesce(max(version), 0) FROM jlog_migrations", logger: logger).decode(Int.self) { v = n }
            return v
        }
    }

    /// Runs one SQL statement as given (tests and repairs; never with a caller's input).
    package func execute(_ sql: String) async throws(PostgresStorageError) {
        try await Self.mapped { try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger) }
    }

    /// Runs `body` on the bridge (`BridgeExecutor`), its failures as `PostgresStorageError` (the
    /// server's own words kept: PostgresNIO's `description` hides them). Every statement goes
    /// through here, so none waits for Swift's cooperative pool: an async caller on that pool
    /// that holds a database lock (the migrations' advisory lock, the positions row) must not
    /// need a thread of it to go on while synchronous callers block its threads waiting for
    /// that lock (`BridgeExecutor.wait`): with two cores, two such waits took the whole pool and
    /// the holder never ran again.
    @discardableResult
    static func mapped<T>(_ body: () async throws -> T) async throws(PostgresStorageError) -> T {
        do {
            return try await withTaskExecutorPreference(BridgeExecutor.shared) { try await body() }
        } catch let e as PostgresStorageError { throw e } catch let e as PostgresTransactionError {
            // A refusal thrown inside a transaction comes back wrapped, after the rollback.
            if let inner = e.closureError as? PostgresStorageError { throw inner }
            throw .database(String(reflecting: e))
        } catch {
            throw .database(String(reflecting: error))
        }
    }
}

/// What an append did: the positions of the entries it saved, and the ids it did not store again.
public struct PostgresAppend: Sendable, Equatable {
    /// Each saved entry's position, in the batch's order.
    public var saved: [(id: CompactID, position: SequenceNumber)]
    /// Ids the zone held already with the same content.
    public var alreadyHeld: [CompactID]

    public static func == (a: Self, b: Self) -> Bool {
        a.alreadyHeld == b.alreadyHeld && a.saved.map(\.id) == b.saved.map(\.id) && a.saved.map(\.position) == b.saved.map(\.position)
    }
}

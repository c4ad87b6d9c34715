import ArgumentParser
import Foundation
import JournalLog
import JournalPostgres
import JournalServer
import JournalService
import JournalSync
import Logging

/// Where `jlog serve` keeps what it serves: one store directory (the default: nothing to
/// install), or a PostgreSQL database that any number of nodes share (SYNC.md §11), each node
/// stateless, learning of the others' writes from the database's notifications.
struct ServePlace: Sendable {
    /// What the startup line names: the store's path, or the database's URL without password.
    let name: String
    let core: ServiceCore
    let accounts: any CredentialCheck & DeviceEnrolling
    private let store: JournalStore?
    private let database: PostgresStorage?

    /// The service over the store at `path` (created if missing), its accounts file beside it.
    static func store(_ path: String, limits: ServiceLimits) throws -> ServePlace {
        let s: JournalStore
        do { s = try JournalStore.open(path, options: StoreOptions()) } catch { throw fail(error, path: path) }
        if let p = s.recovery.problem { printError("recovered: \(p.description)") }
        do {
            let accounts = try AccountDirectory(store: path)
            let core = try ServiceCore(store: s, limits: limits, now: { nowMillis() },
                                       checkingAccounts: { [accounts] account throws(StorageError) in try accounts.accountExists(account, now: nowMillis()) })
            return ServePlace(name: path, core: core, accounts: accounts, store: s, database: nil)
        } catch {
            try? s.close()
            throw fail(error, path: path)
        }
    }

    /// The service over the database at `url` (its schema migrated first), its credentials in it.
    static func database(_ url: String, schema: String?, connections: Int, limits: ServiceLimits, logger: Logger) async throws -> ServePlace {
        let location: PostgresLocation
        do { location = try PostgresLocation(url) } catch {
            printError("\(error)")
            throw ExitCode(Status.badInput)
        }
        var dbLogger = logger
        dbLogger[metadataKey: "database"] = "\(location)"
        let db: PostgresStorage
        do { db = try await PostgresStorage.open(location, connections: connections, schema: schema, logger: dbLogger) } catch {
            printError("\(location): \(error)")
            throw ExitCode(Status.failure)
        }
        do {
            let storage = try await PostgresServiceStorage(db)
            let accounts = PostgresCredentials(db)
            // Its calls wait for the database: on a thread of its own, never on an event loop
            // (this process's tasks run on them, and the database's connections too).
            let core = try await onThread {
                try ServiceCore(storage: storage, limits: limits, now: { nowMillis() },
                                accountExists: { [accounts] account throws(StorageError) in try accounts.accountExists(account, now: nowMillis()) })
            }
            return ServePlace(name: "\(location)", core: core, accounts: accounts, store: nil, database: db)
        } catch {
            await db.close()
            printError("\(location): \(error)")
            throw ExitCode(Status.failure)
        }
    }

    /// Over a database: the signals of other nodes' writes (SYNC.md §11.4), which the node turns
    /// into its devices' hints (`ServiceNode.follow`); nil over a store of its own.
    var signals: AsyncStream<NodeSignal>? { database?.changeSignals() }

    /// `body` on a new thread, awaited: for what blocks before the server's pool exists.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            Thread { c.resume(with: Result { try body() }) }.start()
        }
    }

    /// Closes the store or the database.
    func close() async {
        try? store?.close()
        await database?.close()
    }
}

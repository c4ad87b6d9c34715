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
    let accounts: any CredentialCheck
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
                                       accountExists: { [accounts] in accounts.accountExists($0, now: nowMillis()) })
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
                                accountExists: { [accounts] in accounts.accountExists($0, now: nowMillis()) })
            }
            return ServePlace(name: "\(location)", core: core, accounts: accounts, store: nil, database: db)
        } catch {
            await db.close()
            printError("\(location): \(error)")
            throw ExitCode(Status.failure)
        }
    }

    /// Over a database: turns other nodes' writes into this node's hints (SYNC.md §11.4). A
    /// write to a list hints its owner and members; one to the service's own records (membership,
    /// announcements) is read at once; a listener that begins again after a lost connection
    /// tells every device here to fetch, since changes may have gone unheard meanwhile.
    func startSignals(_ backend: BlockingBackend) -> Task<Void, Never>? {
        guard let database else { return nil }
        let core = backend.core
        return Task.detached {
            var first = true
            for await signal in database.changeSignals() {
                switch signal {
                case .listening:
                    if !first { core.hints.remindAll() }
                    first = false
                case .zone(let zone) where zone.hasPrefix("_"):
                    // The service's own records (membership, announcements): read at once.
                    _ = try? await backend.run { () throws(SyncError) in try core.catchUp() }
                case .zone(let zone):
                    // A list: its audience from memory, no round trip (membership changes were
                    // signalled, and read, before the writes that follow them).
                    let audience = core.audience(of: zone)
                    if !audience.isEmpty { core.hints.changed(zone, for: audience) }
                }
            }
        }
    }

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

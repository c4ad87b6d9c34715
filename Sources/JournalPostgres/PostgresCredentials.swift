import Foundation
import JournalService
import JournalSync
import JournalSyncWire
import Synchronization

/// The device credentials of every node over one database (`jlog_credentials`, SYNC.md §11.1):
/// what `AccountDirectory` is for a single server. Each credential's row is read at most once a
/// second per node (`maxAge`), so a revocation reaches every node within a second, and a device
/// syncing steadily costs the database one lookup a second, not one a request.
package final class PostgresCredentials: CredentialCheck {
    /// How long a row read stays good.
    static let maxAge: Duration = .seconds(1)
    private let database: PostgresStorage
    private let cache = Mutex<[String: (row: AccountCredential?, read: ContinuousClock.Instant)]>([:])
    private let accounts = Mutex<[String: (exists: Bool, read: ContinuousClock.Instant)]>([:])

    package init(_ database: PostgresStorage) { self.database = database }

    /// A lookup that fails (the database restarting, its pool's circuit breaker tripped) is
    /// `unavailable`: the device is told to retry, never signed out.
    package func authenticate(_ text: String, now: Int64) async -> Authentication {
        guard let presented = DeviceCredential(text) else { return .refused }
        let at = ContinuousClock.now
        var record: AccountCredential?
        if let hit = cache.withLock({ $0[presented.id] }), at - hit.read < Self.maxAge {
            record = hit.row
        } else {
            let row: AccountCredential?
            do { row = try await database.credential(id: presented.id) } catch {
                return .unavailable(PostgresServiceStorage.storageError(error))
            }
            record = row
            cache.withLock {
                if $0.count > 100_000 { $0.removeAll() }
                $0[presented.id] = (row, at)
            }
        }
        guard let record, record.account == presented.account, record.isValid(now: now),
              AccountDirectory.secret(presented.secret, hashesTo: record.secretHash) else { return .refused }
        return .accepted(account: record.account)
    }

    /// A lookup that fails throws: never "no such account".
    package func accountExists(_ account: String, now: Int64) throws(StorageError) -> Bool {
        let at = ContinuousClock.now
        if let hit = accounts.withLock({ $0[account] }), at - hit.read < Self.maxAge { return hit.exists }
        let exists: Bool
        do {
            exists = try BridgeExecutor.shared.wait { [database] () async throws(PostgresStorageError) -> Bool in
                try await database.credentials(of: account).contains { $0.isValid(now: now) }
            }
        } catch { throw PostgresServiceStorage.storageError(error) }
        accounts.withLock {
            if $0.count > 100_000 { $0.removeAll() }
            $0[account] = (exists, at)
        }
        return exists
    }
}

extension PostgresCredentials: DeviceEnrolling {
    /// Counted and added in one transaction under a lock on the account's name, so two nodes
    /// enrolling its devices at once never both pass the limit.
    package func enrol(account: String, now: Int64, limit: Int) async throws(SyncError) -> DeviceCredential {
        let issued: (DeviceCredential, AccountCredential)
        do { issued = try AccountDirectory.newCredential(account: account, now: now, expiresAt: nil) } catch {
            throw .invalidRequest(error.description)
        }
        let added: Bool
        do { added = try await database.addCredential(issued.1, ifFewerThan: limit, now: now) } catch {
            throw PostgresServiceStorage.storageError(error).syncError
        }
        guard added else { throw .tooManyDevices(limit: limit) }
        accounts.withLock { _ = $0.removeValue(forKey: account) }
        return issued.0
    }
}

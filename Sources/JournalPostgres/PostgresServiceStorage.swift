import Foundation
import JournalLog
import Logging
import JournalQuery
import JournalService
import ListModel

/// The sync service's storage over PostgreSQL (SYNC.md §11): `ServiceCore`'s parts call it as
/// they call the engine's store, synchronously, from a server's blocking pool; each call waits
/// for its statements, which run on `BridgeExecutor` (the connections' event loop). Every node
/// over one database is the same: nothing here is kept between calls but the database's
/// identity and keys.
package final class PostgresServiceStorage: ServiceStorage {
    package let database: PostgresStorage
    private let tokens: PostgresTokens
    private let invitation: (UInt64, UInt64)
    /// The service's clock (milliseconds): when entries arrive.
    private let now: @Sendable () -> Int64

    /// The storage over an open database: its identity and keys read (made by the first node).
    /// `now` is the service's clock, stamped on what arrives.
    package init(_ database: PostgresStorage, now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) })
        async throws(PostgresStorageError) {
        self.database = database
        self.now = now
        tokens = PostgresTokens(databaseID: try await database.key("database-id"), key: try await database.key("token-key"))
        invitation = try await database.key("invitation-key")
    }

    private func wait<T: Sendable>(_ body: @escaping @Sendable () async throws(PostgresStorageError) -> T) throws(PostgresStorageError) -> T {
        try BridgeExecutor.shared.wait(body)
    }

    /// A database failure as the seam's error, counted by kind (`StorageFailures`): a database
    /// that did not answer is `unavailable` (retry), a row that does not decode or a schema this
    /// program does not know is `damaged` (an operator must act).
    static func storageError(_ e: PostgresStorageError) -> StorageError {
        let failure: StorageError = switch e {
        case .damaged, .schemaTooNew: .damaged(e.description)
        default: .unavailable(e.description)
        }
        StorageFailures.note(failure)
        return failure
    }

    /// A database failure as the store's error: its refusals as the store's, a failure as
    /// `writerFailed` (the service answers `serviceBusy`).
    private static func journal(_ e: PostgresStorageError) -> JournalError {
        switch e {
        case .zoneNotFound(let z): .zoneNotFound(z)
        case .idConflict(let zone, let id): .idConflict(zone: zone, id: CompactID(id) ?? CompactID("-")!, storedAt: nil)
        case .markMoved: .compactionRunning
        case .keysMoved(let z): .keysMoved(zone: z)
        default: .writerFailed(storageError(e).description)
        }
    }

    /// A read's answer, or its failure as the seam's error.
    private func read<T: Sendable>(_ body: @escaping @Sendable () async throws(PostgresStorageError) -> T) throws(StorageError) -> T {
        do throws(PostgresStorageError) { return try wait(body) } catch { throw Self.storageError(error) }
    }

    package var isDurable: Bool { true }
    package var isShared: Bool { true }

    package func lastChange(ofAny zones: [String]) throws(StorageError) -> SequenceNumber {
        try read { [database] () async throws(PostgresStorageError) in try await database.lastChange(ofAny: zones) }
    }

    package func allZones() throws(StorageError) -> [ZoneInfo] {
        try read { [database] () async throws(PostgresStorageError) in try await database.zoneInfos(nil) }
    }

    package func zones(ownedBy owner: String) throws(StorageError) -> [ZoneInfo] {
        try read { [database] () async throws(PostgresStorageError) in try await database.zoneInfos(owner) }
    }

    package func zoneInfo(_ name: String) throws(StorageError) -> ZoneInfo? {
        try read { [database] () async throws(PostgresStorageError) in try await database.zoneInfo(name) }
    }

    package func readHorizon() throws(StorageError) -> SequenceNumber {
        try read { [database] () async throws(PostgresStorageError) in try await database.horizon() }
    }

    /// Appends all or nothing. One zone's entries go through group commit; a batch that spans
    /// zones (a membership record beside its `join`) commits alone. A service zone (`_service/…`)
    /// is made by its first append, as in the engine's store.
    package func appendBatch(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?) throws(JournalError) -> ClosedRange<SequenceNumber> {
        let positions = try appendPositions(batch, expectingMark: mark)
        if let low = positions.min(), let high = positions.max() { return low...high }
        // Every id was held already: the range of none, at the horizon.
        let h: SequenceNumber
        do throws(StorageError) { h = try readHorizon() } catch { throw .writerFailed(error.description) }
        return h...h
    }

    /// From what the database saved: no read of the zone's count.
    package func appendCounting(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?) throws(JournalError) -> Int {
        try appendPositions(batch, expectingMark: mark).count
    }

    /// `appendCounting(_:expectingMark:)`, refused with `keysMoved` when the zone holds any of
    /// `absent`: checked in the append's own transaction, under the positions lock.
    package func appendCounting(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?, absent: [CompactID]) throws(JournalError) -> Int {
        try appendPositions(batch, expectingMark: mark, absent: absent).count
    }

    /// The positions of the entries the append saved (none for ids held already).
    private func appendPositions(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?, absent: [CompactID] = []) throws(JournalError) -> [SequenceNumber] {
        guard let first = batch.first else { throw .invalidEntry("an empty batch") }
        for attempt in 0..<2 {
            do throws(PostgresStorageError) {
                let positions: [SequenceNumber]
                if batch.allSatisfy({ $0.zone == first.zone }) {
                    let r = try wait { [database, now] () async throws(PostgresStorageError) in
                        try await database.append(batch, to: first.zone, expectingMark: mark, absent: absent, arrivedAt: now())
                    }
                    positions = r.saved.map(\.position)
                } else {
                    precondition(absent.isEmpty, "ids to be absent are checked in one zone's append")
                    let rs = try wait { [database, now] () async throws(PostgresStorageError) in try await database.appendAll(batch, arrivedAt: now()) }
                    positions = rs.flatMap { $0.saved.map(\.position) }
                }
                return positions
            } catch .zoneNotFound(let z) where attempt == 0 {
                let info: ZoneInfo?
                do throws(StorageError) { info = try zoneInfo(z) } catch { throw .writerFailed(error.description) }
                if let info, let at = info.deletedAt { throw .zoneDeleted(zone: z, at: at) }
                do throws(PostgresStorageError) {
                    _ = try wait { [database] () async throws(PostgresStorageError) in try await database.makeZone(z) }
                } catch { throw Self.journal(error) }
            } catch { throw Self.journal(error) }
        }
        throw .writerFailed("the zone of the batch was deleted while it was made")
    }

    package func makeZone(_ name: String) throws(JournalError) {
        do throws(PostgresStorageError) {
            _ = try wait { [database] () async throws(PostgresStorageError) in try await database.makeZone(name) }
        } catch { throw Self.journal(error) }
    }

    package func removeZone(_ name: String) throws(JournalError) {
        do throws(PostgresStorageError) {
            _ = try wait { [database] () async throws(PostgresStorageError) in try await database.removeZone(name) }
        } catch { throw Self.journal(error) }
    }

    package func raiseMark(_ zone: String, to mark: SequenceNumber) throws(JournalError) {
        do throws(PostgresStorageError) {
            try wait { [database] () async throws(PostgresStorageError) in try await database.raiseMark(zone, to: mark) }
        } catch { throw Self.journal(error) }
    }

    /// A feed answer, or the feed's refusal; a database failure as `storage`.
    private func feed<T: Sendable>(_ body: @escaping @Sendable () async throws(PostgresStorageError) -> Result<T, FeedError>) throws(FeedError) -> T {
        let outcome: Result<T, FeedError>
        do { outcome = try wait(body) } catch { throw .storage(Self.journal(error)) }
        return try outcome.get()
    }

    package func zoneChanges(_ zone: String, since token: FeedToken?, limit: Int) throws(FeedError) -> ZoneChanges {
        try zonePage(zone, since: token, limit: limit, expiry: .issuedUnderAnOlderMark).changes
    }

    /// One statement reads the page and the zone's row (one snapshot, one round trip).
    package func zonePage(_ zone: String, since token: FeedToken?, limit: Int, expiry: TokenExpiry) throws(FeedError) -> (changes: ZoneChanges, zone: ZoneInfo?) {
        let (changes, info) = try feed { [database, tokens] () async throws(PostgresStorageError) in
            try await database.zoneChanges(zone, since: token, limit: limit, expiry: expiry, tokens: tokens)
        }
        return (changes, info)
    }

    package func zoneToken(_ zone: String, position: SequenceNumber?) throws(FeedError) -> FeedToken {
        try feed { [database, tokens] () async throws(PostgresStorageError) in try await database.zoneToken(zone, position: position, tokens: tokens) }
    }

    package func databaseChanges(since token: FeedToken?) throws(FeedError) -> DatabaseChanges {
        try feed { [database, tokens] () async throws(PostgresStorageError) in try await database.databaseChanges(since: token, tokens: tokens) }
    }

    package func databaseHead() throws(FeedError) -> FeedToken {
        let h: SequenceNumber
        do { h = try wait { [database] () async throws(PostgresStorageError) in try await database.horizon() } } catch {
            throw .storage(Self.journal(error))
        }
        return tokens.issue(.database, zone: nil, incarnation: 0, position: h)
    }

    package func checkDatabaseToken(_ token: FeedToken) throws(FeedError) {
        // A horizon that could not be read is busy, never a token ahead of the database (a
        // device told its token expired would re-fetch every list).
        let h: SequenceNumber
        do throws(StorageError) { h = try readHorizon() } catch { throw .storage(.writerFailed(error.description)) }
        _ = try tokens.parse(token, kind: .database, horizon: h).get()
    }

    package func databasePosition(_ token: FeedToken) -> SequenceNumber? {
        guard let t = try? ChangeToken.parse(token.text, key: tokens.key, storeID: tokens.databaseID, zoneHash: 0),
              t.storeID == tokens.databaseID, t.kind == .database else { return nil }
        return t.position
    }

    /// A history answer, or why the history cannot be read whole.
    private func history<T: Sendable>(_ zone: String, _ body: @escaping @Sendable () async throws(PostgresStorageError) -> Result<T, HistoryProblem>) throws(QueryError) -> T {
        let outcome: Result<T, HistoryProblem>
        do { outcome = try wait(body) } catch { throw .storage(Self.journal(error)) }
        switch outcome {
        case .success(let value): return value
        case .failure(.zoneGone): throw .feed(.zoneNotFound(zone))
        case .failure(.incomplete(let why)): throw .historyIncomplete(zone: zone, reason: why)
        }
    }

    package func history(of zone: String) throws(QueryError) -> ActivityLog {
        try history(zone) { [database] () async throws(PostgresStorageError) in try await database.history(of: zone) }
    }

    package func historyChainHead(of zone: String) throws(QueryError) -> (sequence: SequenceNumber, crc: UInt32)? {
        try history(zone) { [database] () async throws(PostgresStorageError) in try await database.historyChainHead(zone) }
    }

    package func purgedIDs(of zone: String) throws(QueryError) -> Set<CompactID> {
        try history(zone) { [database] () async throws(PostgresStorageError) in try await database.purgedIDs(of: zone) }
    }

    package func historyPieceLength(of zone: ZoneInfo, at sequence: SequenceNumber) throws(QueryError) -> Int {
        do { return try wait { [database] () async throws(PostgresStorageError) in try await database.historyPieceLength(zone, at: sequence) } } catch {
            throw .storage(Self.journal(error))
        }
    }

    package func historyPiece(of zone: ZoneInfo, at sequence: SequenceNumber, range: Range<Int>) throws(QueryError) -> [UInt8] {
        do { return try wait { [database] () async throws(PostgresStorageError) in try await database.historyPiece(zone, at: sequence, range: range) } } catch {
            throw .storage(Self.journal(error))
        }
    }

    package func newestSnapshot(of zone: ZoneInfo) throws(QueryError) -> (bytes: [UInt8], sequence: SequenceNumber)? {
        do { return try wait { [database] () async throws(PostgresStorageError) in try await database.newestSnapshot(zone) } } catch {
            throw .storage(Self.journal(error))
        }
    }

    package func newestHistory(of zone: ZoneInfo) throws(StorageError) -> SequenceNumber {
        try read { [database] () async throws(PostgresStorageError) in try await database.newestHistory(zone) }
    }

    /// Each zone the plan names compacted in a transaction of its own (`compactZone`), and
    /// reported to the service as its own group, so its mark is announced at once.
    package func compact(_ plan: ServiceCompactionPlan) throws(QueryError) -> ListCompactionReport {
        var report = ListCompactionReport()
        let cutoff = plan.now - plan.retentionMillis
        // A zone list that could not be read fails the run: never an empty run reported done.
        let zones: [ZoneInfo]
        do throws(StorageError) { zones = try allZones() } catch { throw .storage(.writerFailed(error.description)) }
        for z in zones where !z.isDeleted && plan.zoneFilter(z) {
            let outcome: PostgresZoneCompaction
            do {
                outcome = try wait { [database] () async throws(PostgresStorageError) in
                    try await database.compactZone(z.name, incarnation: z.incarnation, cutoff: cutoff, arrivedThrough: plan.arrivedThrough,
                                                   purgeWillBegin: { plan.purgeWillBegin(z.name) })
                }
            } catch { throw .storage(Self.journal(error)) }
            switch outcome {
            case .compacted(let zone, let purged, let rewritten):
                report.zones.append(zone)
                report.chosen += purged
                report.rewritten += rewritten
                report.storage.entriesPurged += purged.count
                report.storage.entriesReplaced += rewritten.count
                plan.groupDidFinish([zone])
            case .skipped(let why): report.skipped.append((z.name, why))
            case .passed: continue
            }
        }
        return report
    }

    package func invitationKey() throws(JournalError) -> (UInt64, UInt64) { invitation }

    package func arrivedThrough(by time: Int64) throws(StorageError) -> SequenceNumber? {
        try read { [database] () async throws(PostgresStorageError) in try await database.arrivedThrough(by: time) }
    }

    package func deviceRows() throws(StorageError) -> [DeviceFetches.Row]? {
        try read { [database] () async throws(PostgresStorageError) in try await database.deviceRows() }
    }

    package func saveDeviceRows(_ rows: [DeviceFetches.Row]) throws(JournalError) {
        do throws(PostgresStorageError) {
            try wait { [database] () async throws(PostgresStorageError) in try await database.saveDeviceRows(rows) }
        } catch { throw Self.journal(error) }
    }

    /// A read of the horizon, given up after `deadline`: while the database is down the pool
    /// waits up to a minute for a connection, and a load balancer's probe must not.
    package func unreadiness(deadline: Duration) -> String? {
        let outcome = BridgeExecutor.shared.wait(deadline: deadline) { [database] () async throws(PostgresStorageError) in
            try await database.horizon()
        }
        switch outcome {
        case .some(.success): return nil
        case .some(.failure(let error)): return Self.storageError(error).description
        case .none: return Self.storageError(.database("no answer within \(deadline)")).description
        }
    }
}

extension PostgresServiceStorage {
    /// Opens the database at `url` and the storage over it, waiting on the caller's thread (a
    /// test, a tool); never call it on an event loop.
    package static func openWaiting(_ url: String, connections: Int = 4,
                                    now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) throws(PostgresStorageError) -> PostgresServiceStorage {
        let location = try PostgresLocation(url)
        return try BridgeExecutor.shared.wait { () async throws(PostgresStorageError) -> PostgresServiceStorage in
            var logger = Logger(label: "jlog.postgres")
            logger.logLevel = .warning
            let db = try await PostgresStorage.open(location, connections: connections, logger: logger)
            do throws(PostgresStorageError) { return try await PostgresServiceStorage(db, now: now) } catch {
                await db.close()
                throw error
            }
        }
    }

    /// Closes the database without waiting for its connections to end (a test's world going away).
    package func closeInBackground() {
        Task(executorPreference: BridgeExecutor.shared) { [database] in await database.close() }
    }
}

extension PostgresServiceStorage {
    /// Runs one SQL statement as given, waiting (tests that damage the database on purpose).
    package func executeWaiting(_ sql: String) throws(PostgresStorageError) {
        try BridgeExecutor.shared.wait { [database] () async throws(PostgresStorageError) in try await database.execute(sql) }
    }
}

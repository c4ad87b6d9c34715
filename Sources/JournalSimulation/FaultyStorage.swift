import Foundation
import JournalLog
import JournalQuery
import JournalService
import JournalSync
import JournalTesting
import ListModel

/// What a `FaultyStorage` does wrong, and how often (each a probability per call, 0 … 1).
package struct StorageFaults: Sendable, Equatable {
    /// The call fails as the database not answering, before it reaches the storage.
    package var unavailable = 0.0
    /// A write reaches the storage and commits, then its answer is lost (a connection that
    /// dropped after `COMMIT`): the caller sees a failure for what was done.
    package var lostAnswer = 0.0
    /// A read fails as damage (a row that does not decode).
    package var damaged = 0.0
    /// The call answers late: up to `maxDelay`.
    package var slow = 0.0
    package var maxDelay: Duration = .microseconds(500)

    package init() {}

    /// Every kind, at rates a simulation still converges through and that leave most compaction
    /// runs (dozens of calls each) whole, so purges still happen between the failures.
    package static var all: StorageFaults {
        var f = StorageFaults()
        f.unavailable = 0.01
        f.lostAnswer = 0.005
        f.damaged = 0.002
        f.slow = 0.01
        return f
    }
}

/// A service storage that fails on purpose, deterministically from a seed: what a database that
/// restarts, fails over or trips its pool's circuit breaker does to the service above it, at
/// every call of the seam (`ServiceStorage`). `isDown` is an outage: every call fails as
/// unavailable while it holds. Nothing here changes what a call that succeeds answers.
package final class FaultyStorage: ServiceStorage, @unchecked Sendable {
    package let inner: any ServiceStorage
    private let lock = NSLock()
    private var rng: SplitMix64
    private var faultsNow = StorageFaults()
    private var down = false
    private var raisesToFail = 0
    private var appendsToFail = 0
    private var answersToLose = 0
    private var injectedNow: [String: Int] = [:]

    package init(_ inner: any ServiceStorage, seed: UInt64, faults: StorageFaults = StorageFaults()) {
        self.inner = inner
        rng = SplitMix64(seed: seed)
        faultsNow = faults
    }

    package var faults: StorageFaults {
        get { lock.withLock { faultsNow } }
        set { lock.withLock { faultsNow = newValue } }
    }

    /// Failures injected so far, by kind.
    package var injected: [String: Int] { lock.withLock { injectedNow } }

    /// The next `failingRaises` raises of a zone's mark fail as the database not answering,
    /// before they reach the storage: a failure at one chosen step of a compaction.
    package var failingRaises: Int {
        get { lock.withLock { raisesToFail } }
        set { lock.withLock { raisesToFail = newValue } }
    }

    /// The next `failingRecordAppends` appends of a compaction record (SYNC.md §6.7) fail as the
    /// database not answering, before they reach the storage.
    package var failingRecordAppends: Int {
        get { lock.withLock { appendsToFail } }
        set { lock.withLock { appendsToFail = newValue } }
    }

    /// The next `losingAnswers` writes reach the storage and commit, then fail as a connection
    /// that dropped after `COMMIT`: the caller sees a failure for what was done.
    package var losingAnswers: Int {
        get { lock.withLock { answersToLose } }
        set { lock.withLock { answersToLose = newValue } }
    }

    /// Fails (as the database not answering) and counts down when the chosen failures left at
    /// `counter` are not used up.
    private func failIfChosen(_ counter: ReferenceWritableKeyPath<FaultyStorage, Int>) throws(JournalError) {
        let fails: Bool = lock.withLock {
            guard self[keyPath: counter] > 0 else { return false }
            self[keyPath: counter] -= 1
            return true
        }
        if fails { throw .writerFailed("injected: the database did not answer") }
    }

    package var isDown: Bool {
        get { lock.withLock { down } }
        set { lock.withLock { down = newValue } }
    }

    /// What this call suffers.
    private enum Fault: String { case none, unavailable, damaged, lostAnswer }

    private func roll(write: Bool) -> Fault {
        let (fault, delay): (Fault, Duration?) = lock.withLock {
            if down { return (.unavailable, nil) }
            if write && answersToLose > 0 {
                answersToLose -= 1
                return (.lostAnswer, nil)
            }
            func chance(_ p: Double) -> Bool { p > 0 && Double(rng.next() >> 11) / Double(1 << 53) < p }
            let delay: Duration? = chance(faultsNow.slow) ? faultsNow.maxDelay * (Double(rng.next() % 1_000) / 1_000) : nil
            if chance(faultsNow.unavailable) { return (.unavailable, delay) }
            if write && chance(faultsNow.lostAnswer) { return (.lostAnswer, delay) }
            if !write && chance(faultsNow.damaged) { return (.damaged, delay) }
            return (.none, delay)
        }
        if let delay { Thread.sleep(forTimeInterval: Double(delay.components.attoseconds) / 1e18 + Double(delay.components.seconds)) }
        if fault != .none { lock.withLock { injectedNow[fault.rawValue, default: 0] += 1 } }
        return fault
    }

    /// A read's fault, thrown before the read reaches the storage.
    private func readFault() throws(StorageError) {
        switch roll(write: false) {
        case .unavailable: throw .unavailable("injected: the database did not answer")
        case .damaged: throw .damaged("injected: a row did not decode")
        case .none, .lostAnswer: return
        }
    }

    /// A read: fails before it reaches the storage, or answers.
    private func read<T>(_ body: () throws(StorageError) -> T) throws(StorageError) -> T {
        try readFault()
        return try body()
    }

    /// A write: fails before it reaches the storage, or after it committed (its answer lost).
    private func write<T>(_ body: () throws(JournalError) -> T) throws(JournalError) -> T {
        switch roll(write: true) {
        case .unavailable, .damaged: throw .writerFailed("injected: the database did not answer")
        case .lostAnswer:
            _ = try body()
            throw .writerFailed("injected: the connection dropped after the commit")
        case .none: return try body()
        }
    }

    /// A history or compaction read: fails as the storage's failure, or answers.
    private func query<T>(_ body: () throws(QueryError) -> T) throws(QueryError) -> T {
        do throws(StorageError) { try readFault() } catch { throw .storage(.writerFailed(error.description)) }
        return try body()
    }

    package var isDurable: Bool { inner.isDurable }
    package var isShared: Bool { inner.isShared }

    package func zoneInfo(_ name: String) throws(StorageError) -> ZoneInfo? { try read { () throws(StorageError) in try inner.zoneInfo(name) } }
    package func allZones() throws(StorageError) -> [ZoneInfo] { try read { () throws(StorageError) in try inner.allZones() } }
    package func zones(ownedBy owner: String) throws(StorageError) -> [ZoneInfo] { try read { () throws(StorageError) in try inner.zones(ownedBy: owner) } }
    package func lastChange(ofAny zones: [String]) throws(StorageError) -> SequenceNumber {
        try read { () throws(StorageError) in try inner.lastChange(ofAny: zones) }
    }
    package func readHorizon() throws(StorageError) -> SequenceNumber { try read { () throws(StorageError) in try inner.readHorizon() } }
    package func newestHistory(of zone: ZoneInfo) throws(StorageError) -> SequenceNumber {
        try read { () throws(StorageError) in try inner.newestHistory(of: zone) }
    }
    package func arrivedThrough(by time: Int64) throws(StorageError) -> SequenceNumber? {
        try read { () throws(StorageError) in try inner.arrivedThrough(by: time) }
    }
    package func deviceRows() throws(StorageError) -> [DeviceFetches.Row]? { try read { () throws(StorageError) in try inner.deviceRows() } }
    package func unreadiness(deadline: Duration) -> String? {
        isDown ? "injected: the database did not answer" : inner.unreadiness(deadline: deadline)
    }

    package func appendBatch(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?) throws(JournalError) -> ClosedRange<SequenceNumber> {
        if batch.contains(where: CompactionRecord.isRecord) { try failIfChosen(\.appendsToFail) }
        return try write { () throws(JournalError) in try inner.appendBatch(batch, expectingMark: mark) }
    }
    package func appendCounting(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?) throws(JournalError) -> Int {
        try write { () throws(JournalError) in try inner.appendCounting(batch, expectingMark: mark) }
    }
    package func appendCounting(_ batch: [JournalEntry], expectingMark mark: SequenceNumber?, absent: [CompactID]) throws(JournalError) -> Int {
        try write { () throws(JournalError) in try inner.appendCounting(batch, expectingMark: mark, absent: absent) }
    }
    package func makeZone(_ name: String) throws(JournalError) { try write { () throws(JournalError) in try inner.makeZone(name) } }
    package func removeZone(_ name: String) throws(JournalError) { try write { () throws(JournalError) in try inner.removeZone(name) } }
    package func raiseMark(_ zone: String, to mark: SequenceNumber) throws(JournalError) {
        try failIfChosen(\.raisesToFail)
        try write { () throws(JournalError) in try inner.raiseMark(zone, to: mark) }
    }
    package func saveDeviceRows(_ rows: [DeviceFetches.Row]) throws(JournalError) {
        try write { () throws(JournalError) in try inner.saveDeviceRows(rows) }
    }
    package func invitationKey() throws(JournalError) -> (UInt64, UInt64) { try inner.invitationKey() }

    package func zoneChanges(_ zone: String, since token: FeedToken?, limit: Int) throws(FeedError) -> ZoneChanges {
        try feedRead { () throws(FeedError) in try inner.zoneChanges(zone, since: token, limit: limit) }
    }
    package func zonePage(_ zone: String, since token: FeedToken?, limit: Int, expiry: TokenExpiry) throws(FeedError) -> (changes: ZoneChanges, zone: ZoneInfo?) {
        try feedRead { () throws(FeedError) in try inner.zonePage(zone, since: token, limit: limit, expiry: expiry) }
    }
    package func zoneToken(_ zone: String, position: SequenceNumber?) throws(FeedError) -> FeedToken {
        try feedRead { () throws(FeedError) in try inner.zoneToken(zone, position: position) }
    }
    package func databaseChanges(since token: FeedToken?) throws(FeedError) -> DatabaseChanges {
        try feedRead { () throws(FeedError) in try inner.databaseChanges(since: token) }
    }
    package func databasePosition(_ token: FeedToken) -> SequenceNumber? { inner.databasePosition(token) }
    package func databaseHead() throws(FeedError) -> FeedToken { try feedRead { () throws(FeedError) in try inner.databaseHead() } }
    package func checkDatabaseToken(_ token: FeedToken) throws(FeedError) {
        try feedRead { () throws(FeedError) in try inner.checkDatabaseToken(token) }
    }

    package func history(of zone: String) throws(QueryError) -> ActivityLog { try query { () throws(QueryError) in try inner.history(of: zone) } }
    package func historyChainHead(of zone: String) throws(QueryError) -> (sequence: SequenceNumber, crc: UInt32)? {
        try query { () throws(QueryError) in try inner.historyChainHead(of: zone) }
    }
    package func historyPieceLength(of zone: ZoneInfo, at sequence: SequenceNumber) throws(QueryError) -> Int {
        try query { () throws(QueryError) in try inner.historyPieceLength(of: zone, at: sequence) }
    }
    package func historyPiece(of zone: ZoneInfo, at sequence: SequenceNumber, range: Range<Int>) throws(QueryError) -> [UInt8] {
        try query { () throws(QueryError) in try inner.historyPiece(of: zone, at: sequence, range: range) }
    }
    package func purgedIDs(of zone: String) throws(QueryError) -> Set<CompactID> { try query { () throws(QueryError) in try inner.purgedIDs(of: zone) } }
    package func newestSnapshot(of zone: ZoneInfo) throws(QueryError) -> (bytes: [UInt8], sequence: SequenceNumber)? {
        try query { () throws(QueryError) in try inner.newestSnapshot(of: zone) }
    }
    package func compact(_ plan: ServiceCompactionPlan) throws(QueryError) -> ListCompactionReport {
        try query { () throws(QueryError) in try inner.compact(plan) }
    }

    /// A feed read: fails as the storage's failure before it reaches the storage, or answers.
    private func feedRead<T>(_ body: () throws(FeedError) -> T) throws(FeedError) -> T {
        do throws(StorageError) { try readFault() } catch { throw .storage(.writerFailed(error.description)) }
        return try body()
    }
}

import Foundation
import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// A replay that a compaction overtakes (it commits between two of the replay's pages) reads the
/// list again: never an add read before the rewrite without the mark-off the rewrite purged.
@Suite struct OvertakenReplayTests {
    /// The writer, seen through a feed that runs `beside` once, just before it serves page
    /// `beforePage` (the pages of one replay, counted from 1).
    final class OvertakingStore: StoreReading, @unchecked Sendable {
        let base: JournalStore
        let beforePage: Int
        let beside: @Sendable () throws -> Void
        private let lock = NSLock()
        private var pages = 0

        init(_ base: JournalStore, beforePage: Int, beside: @escaping @Sendable () throws -> Void) {
            self.base = base
            self.beforePage = beforePage
            self.beside = beside
        }

        var path: String { base.path }
        var fileSystem: any FileSystem { base.fileSystem }
        var horizon: SequenceNumber { base.horizon }
        var rewrites: UInt64 { base.rewrites }
        func zones() -> [ZoneInfo] { base.zones() }
        func zone(_ name: String) -> ZoneInfo? { base.zone(name) }
        func changedZones(since token: FeedToken?) throws(FeedError) -> DatabaseChanges { try base.changedZones(since: token) }
        func zoneToken(_ zone: String, position: SequenceNumber?) throws(FeedError) -> FeedToken { try base.zoneToken(zone, position: position) }
        func changes(in zone: String, since token: FeedToken?, limit: Int) throws(FeedError) -> ZoneChanges {
            lock.lock()
            pages += 1
            let now = pages == beforePage
            lock.unlock()
            if now { try! beside() }
            return try base.changes(in: zone, since: token, limit: limit)
        }
    }

    static let zone = ListQueryTests.zone
    static let milk = CompactID("milk")!

    /// Milk added first and bought after 100 other items, then 300 more: Milk's add and mark-off
    /// lie in sealed segments, pages apart. Returns the store and their sequences.
    static func store() throws -> (JournalStore, MemoryFileSystem, [SequenceNumber]) {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        func entry(_ i: Int, _ op: JournalCodec.EntryOperation) -> JournalEntry {
            JournalEntry(id: CompactID("e\(i)")!, zone: zone, author: "alice", wallTime: Int64(ListQueryTests.t0) + Int64(i),
                         clock: HybridTime(physicalMillis: ListQueryTests.t0 + UInt64(i), counter: 0), operation: op)
        }
        let add = try s.append(entry(0, .add(item: milk, text: "Milk", after: nil)))
        for i in 1...100 { try s.append(entry(i, .add(item: CompactID("item\(i)")!, text: "Item \(i)", after: nil))) }
        let bought = try s.append(entry(101, .markOff(item: milk)))
        for i in 102...400 { try s.append(entry(i, .add(item: CompactID("item\(i)")!, text: "Item \(i)", after: nil))) }
        #expect(s.sealedThrough > bought)
        return (s, fs, [add, bought])
    }

    static func query(_ s: JournalStore, _ fs: MemoryFileSystem, readAhead: Bool,
                      beside: @escaping @Sendable () throws -> Void) -> ListQuery {
        var q = ListQuery(reader: OvertakingStore(s, beforePage: 2, beside: beside), fs: fs)
        q.pageSize = 16
        q.helperThreads = readAhead
        return q
    }

    @Test(arguments: [false, true])
    func aRewriteBetweenTwoPagesUnderARaisedMarkIsReadAgain(readAhead: Bool) throws {
        let (s, fs, milk) = try Self.store()
        // Tokens the replay is given carry this mark as their floor: the rewrite does not expire them.
        try s.setLowWaterMark(Self.zone, to: s.sealedThrough)
        let m = try Self.query(s, fs, readAhead: readAhead) { _ = try s.compact(purging: milk) }.materialise(Self.zone)
        #expect(!m.state.items.contains { $0.id == Self.milk })
        #expect(m.state == (try ListQuery(store: s, fs: fs).materialise(Self.zone)).state)
    }

    @Test(arguments: [false, true])
    func aMarkRaisedAndARewriteBetweenTwoPagesAreReadAgain(readAhead: Bool) throws {
        let (s, fs, milk) = try Self.store()
        let m = try Self.query(s, fs, readAhead: readAhead) {
            try s.setLowWaterMark(Self.zone, to: s.sealedThrough)
            _ = try s.compact(purging: milk)
        }.materialise(Self.zone)
        #expect(!m.state.items.contains { $0.id == Self.milk })
        #expect(m.state.items.count == 399)
    }
}

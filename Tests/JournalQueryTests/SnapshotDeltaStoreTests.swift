import Foundation
import JournalCodec
import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// A compaction run after the first writes its snapshot as a delta against the zone's last whole
/// one (SNAPSHOT.md §6, COMPACTION.md §1 steps 4 and 7): bytes in proportion to what changed.
@Suite struct SnapshotDeltaStoreTests {
    typealias C = CompactorTests

    /// The seven-entry store and 60 items that stay, compacted once: a whole snapshot.
    static func compactedOnce() throws -> (JournalStore, MemoryFileSystem) {
        let (s, fs) = try C.sevenEntryStore()
        var previous = C.eggs
        for k in 0..<60 {
            let item = CompactID("keep\(k)")!
            try s.append(C.e("k\(k)", .add(item: item, text: "Keep \(k)", after: previous), 100 + UInt64(k)))
            previous = item
        }
        try C.seal(s, from: 20_000)
        _ = try ListCompactor(store: s, fs: fs).run(now: C.later)
        return (s, fs)
    }

    /// `name` bought (added and marked off) at `i`, sealed, and compacted `days` later.
    static func buyAndCompact(_ s: JournalStore, _ fs: MemoryFileSystem, _ name: String, at i: UInt64, days: Int64) throws {
        let item = CompactID(name)!
        try s.append(C.e(name + "-add", .add(item: item, text: name, after: C.tea), i))
        try s.append(C.e(name + "-off", .markOff(item: item), i + 1))
        try C.seal(s, from: Int(i) * 100)
        _ = try ListCompactor(store: s, fs: fs).run(now: C.later + days * C.day)
    }

    static func files(_ s: JournalStore, _ fs: MemoryFileSystem) -> [SnapshotFile] {
        SnapshotDirectory.list(store: s.path, zone: C.zone, incarnation: s.zone(C.zone)!.incarnation, kinds: [.state, .delta, .base], fs: fs)
    }

    static func replayed(_ q: ListQuery) throws -> ListState {
        ListReducer.replay(zone: C.zone, try q.entries(C.zone).entries.map(\.1)).state()
    }

    @Test func theFirstRunWritesAWholeSnapshot() throws {
        let (s, fs) = try Self.compactedOnce()
        #expect(Self.files(s, fs).map(\.kind) == [.state])
    }

    @Test func aSecondRunWritesADeltaAgainstTheFirstRunsSnapshot() throws {
        let (s, fs) = try Self.compactedOnce()
        let first = try #require(Self.files(s, fs).first)
        try Self.buyAndCompact(s, fs, "butter", at: 300, days: 1)
        let files = Self.files(s, fs)
        #expect(files.map(\.kind) == [.delta, .base])
        #expect(files[1].sequence == first.sequence)
        let q = ListQuery(store: s, fs: fs)
        let m = try q.materialise(C.zone)
        #expect(m.snapshot?.kind == .delta && m.warnings.isEmpty)
        #expect(m.state == (try Self.replayed(q)))
        #expect(!m.state.items.contains { $0.text == "butter" })
        // What changed since the base, not the list again.
        #expect(try #require(fs.contents(files[0].path)).count * 4 < (try #require(fs.contents(files[1].path))).count)
        let check = StoreFileCheck.run(s, fs: fs)
        #expect(check.problems.isEmpty && check.notes.isEmpty)
    }

    @Test func aThirdRunReplacesTheDeltaAndKeepsTheBase() throws {
        let (s, fs) = try Self.compactedOnce()
        try Self.buyAndCompact(s, fs, "butter", at: 300, days: 1)
        let base = Self.files(s, fs)[1]
        try Self.buyAndCompact(s, fs, "cheese", at: 400, days: 2)
        let files = Self.files(s, fs)
        #expect(files.map(\.kind) == [.delta, .base])
        #expect(files[1] == base)
        let q = ListQuery(store: s, fs: fs)
        #expect(try q.materialise(C.zone).state == (try Self.replayed(q)))
    }

    @Test func aDeltaWhoseBaseIsGoneFallsBackToAReplay() throws {
        let (s, fs) = try Self.compactedOnce()
        try Self.buyAndCompact(s, fs, "butter", at: 300, days: 1)
        try fs.remove(Self.files(s, fs)[1].path)
        let q = ListQuery(store: s, fs: fs)
        let m = try q.materialise(C.zone)
        #expect(m.snapshot == nil && m.warnings.count == 1)
        #expect(m.state == (try Self.replayed(q)))
        // The next run has no base: it writes a whole snapshot, and the stray delta goes.
        try Self.buyAndCompact(s, fs, "cheese", at: 400, days: 2)
        #expect(Self.files(s, fs).map(\.kind) == [.state])
    }

    /// A crash (three kinds of power loss) at every I/O call of the run that renames the whole
    /// snapshot to a base and writes the delta: the list is always its log's, and a second run
    /// finishes the job.
    @Test func aCrashAtEveryIOCallOfADeltaRunLeavesTheListWhole() throws {
        func setUp() throws -> (JournalStore, MemoryFileSystem) {
            let (s, fs) = try Self.compactedOnce()
            let item = CompactID("butter")!
            try s.append(C.e("butter-add", .add(item: item, text: "butter", after: C.tea), 300))
            try s.append(C.e("butter-off", .markOff(item: item), 301))
            try C.seal(s, from: 30_000)
            return (s, fs)
        }
        let now = C.later + C.day
        var calls = 0
        do {
            let (s, fs) = try setUp()
            fs.setFaults(MemoryFileSystem.FaultPlan())
            _ = try ListCompactor(store: s, fs: fs).run(now: now)
            calls = fs.mutatingCalls
            #expect(Self.files(s, fs).map(\.kind) == [.delta, .base])
        }
        #expect(calls > 10)
        for call in 1...calls {
            for mode in [MemoryFileSystem.CrashMode.dropUnsynced, .tearLastWrite(seed: 3), .garbleLastWrite(seed: 5)] {
                let (s, fs) = try setUp()
                fs.setFaults(MemoryFileSystem.FaultPlan(failOnCall: call))
                _ = try? ListCompactor(store: s, fs: fs).run(now: now)
                fs.crash(mode)
                fs.setFaults(MemoryFileSystem.FaultPlan())
                let reopened = try JournalStore.open(s.path, options: s.options)
                let q = ListQuery(store: reopened, fs: fs)
                #expect(try q.materialise(C.zone).state == (try Self.replayed(q)), "call \(call), \(mode)")
                _ = try ListCompactor(store: reopened, fs: fs).run(now: now)
                let m = try q.materialise(C.zone)
                #expect(m.state == (try Self.replayed(q)), "call \(call), \(mode), after a second run")
                #expect(m.snapshot != nil && m.warnings.isEmpty, "call \(call), \(mode): the second run leaves a snapshot; \(m.warnings)")
                #expect(StoreFileCheck.run(reopened, fs: fs).problems.isEmpty, "call \(call), \(mode)")
                try reopened.close()
            }
        }
    }
}

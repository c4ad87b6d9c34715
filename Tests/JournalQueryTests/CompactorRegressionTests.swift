import Foundation
import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// Regressions found by an independent review of the compactor (at 0b4a57c).
@Suite struct CompactorRegressionTests {
    typealias C = CompactorTests

    /// R4 end to end: a list whose zone was started by its first add (the usual case). That add
    /// is the zone's identity (its incarnation); Milk, bought long ago, still goes (issue 17.9):
    /// a zoneCreate is written at the add's sequence. After a crash the index is rebuilt from the
    /// log: the incarnation, the low-water mark, old tokens (expired, not invalid) and the history
    /// are all as they were, and a second run keeps the history.
    @Test func compactingTheFirstAddOfAListKeepsItsIdentityAndHistoryAcrossACrash() throws {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        try s.append(C.e("e1", .add(item: C.milk, text: "Milk", after: nil), 1))
        try s.append(C.e("e2", .markOff(item: C.milk), 2))
        try s.append(C.e("e3", .add(item: C.eggs, text: "Eggs", after: nil), 1_000))   // another run
        try s.append(C.e("e4", .add(item: C.coffee, text: "Coffee", after: nil), 2_000, author: "bob"))
        try s.append(C.e("e5", .markOff(item: C.coffee), 2_001))
        try C.seal(s)
        let incarnation = try #require(s.zone(C.zone)).incarnation
        let token = try s.changes(in: C.zone, since: nil, limit: 1).token
        let q = ListQuery(store: s, fs: fs)
        let report = try ListCompactor(query: q).run(now: C.later)
        #expect(report.storage.entriesPurged == 4)  // coffee and milk, whose add becomes the zone's create
        #expect(try q.materialise(C.zone).state.items.map(\.text) == ["Eggs"])
        fs.crash(.dropUnsynced)
        let reopened = try JournalStore.open(s.path, options: s.options)
        let info = try #require(reopened.zone(C.zone))
        #expect(info.incarnation == incarnation, "incarnation moved from \(incarnation) to \(info.incarnation)")
        #expect(info.lowWaterMark > 0, "the low-water mark was lost")
        var answer: FeedError?
        do { _ = try reopened.changes(in: C.zone, since: token) } catch { answer = error }
        guard case .tokenExpired? = answer else {
            Issue.record("an old token should expire, got \(String(describing: answer))")
            return
        }
        let q2 = ListQuery(store: reopened, fs: fs)
        _ = try ListCompactor(query: q2).run(now: C.later)
        #expect(try q2.history(C.zone).log.lastMarkOff(ofItemsMatching: "coffee")?.author == "alice")
        #expect(try q2.history(C.zone).log.lastMarkOff(ofItemsMatching: "milk") != nil)
    }
}

@Suite struct LateOperationTests {
    typealias C = CompactorTests

    /// R6, the documented limit (COMPACTION.md §2, "Late operations"): an unmark of an item purged
    /// as bought dangles on a compacted replica, so the item stays gone there, deterministically,
    /// while a replica that has not compacted shows it again. The retention is the bound on how
    /// late such an operation may arrive for compaction to be invisible.
    @Test func aLateUnmarkOfAPurgedItemDanglesOnACompactedReplica() throws {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        let history = [C.e("e0", .add(item: C.eggs, text: "Eggs", after: nil), 1), C.e("e1", .add(item: C.milk, text: "Milk", after: nil), 1_000),
                       C.e("e2", .markOff(item: C.milk), 1_001)]
        for x in history { try s.append(x) }
        try C.seal(s)
        let q = ListQuery(store: s, fs: fs)
        let report = try ListCompactor(query: q).run(now: C.later)
        #expect(report.storage.entriesPurged == 2)
        let unmark = JournalEntry(id: CompactID("e3")!, zone: C.zone, author: "bob", wallTime: C.later,
                                  clock: HybridTime(physicalMillis: UInt64(C.later), counter: 0), operation: .unmark(item: C.milk))
        try s.append(unmark)
        #expect(try q.materialise(C.zone).state.items.map(\.text) == ["Eggs"])
        var other = ListReducer(zone: C.zone)
        for x in history + [unmark] { _ = other.apply(x) }
        #expect(other.state().items.map(\.text) == ["Milk", "Eggs"])
    }

    /// The compactor itself never purges an item that an entry appended after its read names: an
    /// unmark written while it runs keeps Milk (here, before the run, in the tail it re-reads).
    @Test func anItemNamedByAnEntryAfterTheReadIsKept() throws {
        let (s, fs) = try Self.eggsAndBoughtMilk()
        try s.append(C.e("e3", .unmark(item: C.milk), 1_002))
        let report = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: C.later)
        #expect(report.storage.entriesPurged == 0)
        #expect(try ListQuery(store: s, fs: fs).materialise(C.zone).state.items.map(\.text) == ["Milk", "Eggs"])
    }

    /// Eggs, and Milk added and marked off, all old and in sealed segments.
    static func eggsAndBoughtMilk() throws -> (JournalStore, MemoryFileSystem) {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        for x in [C.e("e0", .add(item: C.eggs, text: "Eggs", after: nil), 1), C.e("e1", .add(item: C.milk, text: "Milk", after: nil), 1_000),
                  C.e("e2", .markOff(item: C.milk), 1_001)] { try s.append(x) }
        try C.seal(s)
        return (s, fs)
    }

    /// The window after the compactor's last re-read: an unmark appended while the store writes
    /// the rewrite makes it refuse the commit; the compactor reads again and keeps Milk.
    @Test func anUnmarkAppendedDuringTheRewriteKeepsTheItem() throws {
        let (s, fs) = try Self.eggsAndBoughtMilk()
        let calls = Counter()
        fs.openHook = { path in
            guard path.hasSuffix(".seg.cleaned"), calls.next() == 1 else { return }
            _ = try? s.append(C.e("e3", .unmark(item: C.milk), 1_002))
        }
        let report = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: C.later)
        fs.openHook = nil
        #expect(!report.chosen.contains(2) && !report.chosen.contains(3), "Milk's add and mark-off stay")
        let state = try ListQuery(store: s, fs: fs).materialise(C.zone).state
        #expect(state.items.map(\.text) == ["Milk", "Eggs"])
        #expect(state.items.first?.state == .active)
    }

    /// A zone that changes under every attempt is left out of the run, with the reason, nothing
    /// of it purged, and a snapshot of its log for the clients whose tokens the raised mark expired.
    @Test func aZoneThatKeepsChangingIsLeftOutWithASnapshotOfItsLog() throws {
        let (s, fs) = try Self.eggsAndBoughtMilk()
        let q = ListQuery(store: s, fs: fs)
        _ = try q.writeSnapshot(C.zone)
        let calls = Counter()
        fs.openHook = { path in
            guard path.hasSuffix(".seg.cleaned") else { return }
            let n = calls.next()
            _ = try? s.append(C.e("late-\(n)", .add(item: CompactID("bread-\(n)")!, text: "Bread", after: nil), 1_002))
        }
        let report = try ListCompactor(query: q).run(now: C.later)
        fs.openHook = nil
        #expect(calls.value == ListCompactor.maxAttempts)
        #expect(report.skipped.first { $0.zone == C.zone }?.reason == .keptChanging)
        #expect(report.zones.isEmpty && report.storage.entriesPurged == 0)
        let info = try #require(s.zone(C.zone))
        #expect(!SnapshotDirectory.list(store: s.path, zone: C.zone, incarnation: info.incarnation, kind: .state, fs: fs).isEmpty)
        let m = try q.materialise(C.zone)
        #expect(m.snapshot != nil && m.warnings.isEmpty)
        #expect(m.state.items.map(\.text).contains("Milk"))
    }

    /// A repeated create of a live zone adds no entry: it is not a change that refuses the rewrite.
    @Test func aZoneRecordDuringTheRewriteIsNotAChange() throws {
        let (s, fs) = try Self.eggsAndBoughtMilk()
        let calls = Counter()
        fs.openHook = { path in
            guard path.hasSuffix(".seg.cleaned"), calls.next() == 1 else { return }
            _ = try? s.createZone(C.zone)
        }
        let report = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: C.later)
        fs.openHook = nil
        #expect(report.storage.entriesPurged == 2)
    }

    /// A zone deleted while its rewrite is written is compacted or dropped, never a failed run.
    @Test func aZoneDeletedDuringTheRewriteDoesNotFailTheRun() throws {
        let (s, fs) = try Self.eggsAndBoughtMilk()
        let calls = Counter()
        fs.openHook = { path in
            guard path.hasSuffix(".seg.cleaned"), calls.next() == 1 else { return }
            _ = try? s.deleteZone(C.zone)
        }
        _ = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: C.later)
        fs.openHook = nil
        #expect(s.zone(C.zone)?.isDeleted == true)
    }

    /// The case the store's in-flight marks exist for: a frame the group-commit leader has taken
    /// off the queue but not yet placed in the index (here, while it rolls to a new segment) is a
    /// change, though the index does not show it yet.
    @Test func anEntryInFlightAtTheCommitPointRefusesTheRewrite() throws {
        let (s, fs) = try Self.eggsAndBoughtMilk()
        try s.setLowWaterMark(C.zone, to: 3)
        final class Box: @unchecked Sendable { var result: Result<CompactionReport, JournalError>?; var fired = false }
        let box = Box()
        fs.openHook = { path in
            guard path.hasSuffix(".seg.tmp"), !box.fired else { return }
            box.fired = true
            let readThrough = s.zone(C.zone)!.lastChange
            box.result = Result { () throws(JournalError) in try s.compact(purging: [2, 3], unchangedAfter: [C.zone: readThrough]) }
        }
        var k = 0
        while !box.fired && k < 10_000 {
            try s.append(C.e("more-\(k)", .add(item: CompactID("more-\(k)")!, text: "More", after: nil), 2_000))
            k += 1
        }
        fs.openHook = nil
        guard let result = box.result, case .failure(let error) = result, case .compactionConflict = error else {
            Issue.record("expected a conflict, got \(String(describing: box.result)) fired \(box.fired)")
            return
        }
    }
}

/// A thread-safe counter for hooks.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
    /// Counts one more and returns the new count.
    func next() -> Int { lock.lock(); defer { lock.unlock() }; n += 1; return n }
}

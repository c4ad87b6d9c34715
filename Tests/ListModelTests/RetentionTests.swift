import JournalCodec
import PropertyBased
import Testing
@testable import ListModel

/// The compactor's list rules (Spec/COMPACTION.md §2).
@Suite struct RetentionTests {
    /// Everything is old: cutoff after every entry, mark above every sequence.
    static let all = ListRetention(cutoff: Int64(t0) + 1 << 40, mark: 1 << 40)

    static func numbered(_ entries: [JournalEntry]) -> [(SequenceNumber, JournalEntry)] {
        entries.enumerated().map { (SequenceNumber($0.offset + 1), $0.element) }
    }

    static func purged(_ entries: [JournalEntry], _ r: ListRetention = all) -> Set<String> {
        let seqs = Set(r.plan(numbered(entries)).purge)
        return Set(numbered(entries).filter { seqs.contains($0.0) }.map { $0.1.id.description })
    }

    /// Entry id → the operation written over it.
    static func rewritten(_ entries: [JournalEntry], _ r: ListRetention = all) -> [String: JournalCodec.EntryOperation] {
        var out: [String: JournalCodec.EntryOperation] = [:]
        for w in r.plan(numbered(entries)).rewrite { out[w.entry.id.description] = w.entry.operation }
        return out
    }

    /// The journal after the plan: purged entries gone, rewritten ones replaced, sequences kept.
    static func compacted(_ entries: [(SequenceNumber, JournalEntry)], _ r: ListRetention = all) -> [(SequenceNumber, JournalEntry)] {
        let plan = r.plan(entries)
        let gone = Set(plan.purge)
        var replaced: [SequenceNumber: JournalEntry] = [:]
        for w in plan.rewrite {
            #expect(!gone.contains(w.sequence), "a sequence is either purged or rewritten")
            replaced[w.sequence] = w.entry
        }
        return entries.filter { !gone.contains($0.0) }.map { s, e in
            guard let w = replaced[s] else { return (s, e) }
            #expect(w.id == e.id && w.zone == e.zone && w.author == e.author && w.clock == e.clock && w.wallTime == e.wallTime,
                    "a rewrite keeps everything but the operation")
            return (s, w)
        }
    }

    @Test func anAddThenAMarkOffIsPurged() {
        #expect(Self.purged([add("a", "milk", "Milk", at: 0), change("b", .markOff(item: id("milk")), at: 1)]) == ["a", "b"])
    }

    @Test func anAddThenADeleteIsPurged() {
        #expect(Self.purged([add("a", "milk", "Milk", at: 0), change("b", .delete(item: id("milk")), at: 1)]) == ["a", "b"])
    }

    @Test func anItemWhoseWinningMarkIsAnUnmarkStays() {
        let e = [add("a", "milk", "Milk", at: 0), change("b", .markOff(item: id("milk")), at: 1), change("c", .unmark(item: id("milk")), at: 2)]
        #expect(Self.purged(e).isEmpty)
    }

    @Test func anActiveItemStays() {
        #expect(Self.purged([add("a", "milk", "Milk", at: 0)]).isEmpty)
    }

    @Test func aLifecycleWithAnyEntryNewerThanTheCutoffStays() {
        let e = [add("a", "milk", "Milk", at: 0), change("b", .markOff(item: id("milk")), at: 10_000)]
        #expect(Self.purged(e, ListRetention(cutoff: Int64(t0) + 5_000, mark: 100)).isEmpty)
    }

    @Test func aLifecycleWithAnyEntryAboveTheMarkStays() {
        let e = [add("a", "milk", "Milk", at: 0), change("b", .markOff(item: id("milk")), at: 1)]
        #expect(Self.purged(e, ListRetention(cutoff: Int64(t0) + 1 << 40, mark: 1)).isEmpty)
    }

    @Test func aFinishedItemThatAnchorsOneItemFoldsIntoIt() {
        // Milk leaves; eggs takes milk's place: milk's add becomes eggs' placement.
        let e = [add("a", "milk", "Milk", at: 0), add("b", "eggs", "Eggs", after: "milk", at: 1), change("c", .delete(item: id("milk")), at: 2)]
        #expect(Self.purged(e) == ["c"])
        #expect(Self.rewritten(e) == ["a": .place(item: id("eggs"), after: nil)])
        #expect(replay(Self.compacted(Self.numbered(e)).map(\.1)).state().items.map(\.text) == ["Eggs"])
    }

    @Test func aChainOfFinishedAnchorsFoldsIntoTheItemThatStays() {
        // tea, then milk, bread, jam each after the previous; all but jam bought.
        var e = [add("t", "tea", "Tea", at: 0), add("a", "milk", "Milk", after: "tea", at: 1), add("b", "bread", "Bread", after: "milk", at: 2),
                 add("c", "jam", "Jam", after: "bread", at: 3)]
        e += [change("d", .markOff(item: id("tea")), at: 4), change("f", .markOff(item: id("milk")), at: 5),
              change("g", .delete(item: id("bread")), at: 6)]
        #expect(Self.purged(e) == ["a", "b", "d", "f", "g"])
        #expect(Self.rewritten(e) == ["t": .place(item: id("jam"), after: nil)])
        let kept = Self.compacted(Self.numbered(e)).map(\.1)
        #expect(replay(kept).state().items.map(\.text) == ["Jam"])
        #expect(replay(kept).recordCount == 1)
    }

    @Test func aFinishedItemThatAnchorsTwoItemsStaysAsAPlacement() {
        let e = [add("a", "milk", "Milk", at: 0), add("b", "eggs", "Eggs", after: "milk", at: 1), add("c", "jam", "Jam", after: "milk", at: 600_000),
                 change("d", .markOff(item: id("milk")), at: 600_001)]
        #expect(Self.purged(e) == ["d"])
        #expect(Self.rewritten(e) == ["a": .place(item: id("milk"), after: nil)])
        #expect(replay(Self.compacted(Self.numbered(e)).map(\.1)).state().items.map(\.text) == ["Jam", "Eggs"])
    }

    @Test func aFinishedItemInARunWithAnActiveItemLeavesItsPlacement() {
        // alice adds both at the head a minute apart: one run; milk's placement keeps the run's key.
        let e = [add("a", "tea", "Tea", at: 0), add("b", "milk", "Milk", at: 60_000), change("c", .markOff(item: id("milk")), at: 70_000)]
        #expect(Self.purged(e) == ["c"])
        #expect(Self.rewritten(e) == ["b": .place(item: id("milk"), after: nil)])
        // Ten minutes apart they are two runs: milk goes alone.
        let apart = [add("a", "tea", "Tea", at: 0), add("b", "milk", "Milk", at: 600_000), change("c", .markOff(item: id("milk")), at: 610_000)]
        #expect(Self.purged(apart) == ["b", "c"])
        #expect(Self.rewritten(apart).isEmpty)
    }

    @Test func aPlacementGoesWithTheLastItemAfterIt() {
        let e = [add("a", "milk", "Milk", at: 0), add("b", "eggs", "Eggs", after: "milk", at: 1), change("c", .delete(item: id("milk")), at: 2)]
        // The first run folds milk into eggs; once eggs is bought too, its placement goes with it.
        var log = Self.compacted(Self.numbered(e))
        log.append((4, change("d", .markOff(item: id("eggs")), at: 3)))
        #expect(Self.all.plan(log) == RetentionPlan(purge: [1, 2, 4]))
    }

    /// COMPACTION.md §2's worked example: the chain Milk → Bread folds into Eggs.
    @Test func theWorkedExampleOfTheSpec() {
        let e = sevenEntryExample + [
            add("e8", "tea", "Tea", at: 7_000), change("e9", .rename(name: "Weekend Shopping"), by: "bob", at: 8_000),
            add("e10", "coffee", "Coffee", after: "tea", at: 9_000), change("e11", .markOff(item: id("coffee")), at: 10_000),
            add("e12", "jam", "Jam", by: "bob", at: 11_000), change("e13", .delete(item: id("jam")), by: "bob", at: 12_000),
        ]
        #expect(Self.purged(e) == ["e2", "e3", "e6", "e7", "e10", "e11", "e12", "e13"])
        #expect(Self.rewritten(e) == ["e1": .place(item: id("eggs"), after: nil)])
        let state = replay(Self.compacted(Self.numbered(e)).map(\.1)).state()
        #expect(state.items.map(\.text) == ["Tea", "Eggs"])
        #expect(state.name == "Weekend Shopping" && state.colour == "yellow")
    }

    @Test func aSecondRunFindsNothingMore() {
        let e = [add("t", "tea", "Tea", at: 0), add("a", "milk", "Milk", after: "tea", at: 1), add("b", "eggs", "Eggs", after: "milk", at: 2),
                 add("c", "jam", "Jam", after: "milk", at: 3), change("d", .markOff(item: id("tea")), at: 4), change("f", .markOff(item: id("milk")), at: 5)]
        #expect(!Self.all.plan(Self.numbered(e)).isEmpty)
        #expect(Self.all.plan(Self.compacted(Self.numbered(e))).isEmpty)
    }

    @Test func aFinishedSubtreeGoesWhole() {
        let e = [add("a", "milk", "Milk", at: 0), add("b", "eggs", "Eggs", after: "milk", at: 1),
                 change("c", .delete(item: id("milk")), at: 2), change("d", .markOff(item: id("eggs")), at: 3)]
        #expect(Self.purged(e) == ["a", "b", "c", "d"])
    }

    @Test func danglingOperationsStay() {
        #expect(Self.purged([change("a", .markOff(item: id("ghost")), at: 0), change("b", .delete(item: id("ghost")), at: 1)]).isEmpty)
    }

    @Test func onlyTheWinningRenameAndRecolourStay() {
        let e = [change("a", .rename(name: "One"), at: 0), change("b", .rename(name: "Two"), by: "bob", at: 5),
                 change("c", .rename(name: "Late"), at: 3), change("d", .recolour(colour: "red"), at: 1), change("e", .recolour(colour: "blue"), at: 2)]
        #expect(Self.purged(e) == ["a", "c", "d"])
        var r = ListReducer(zone: zone)
        for x in e where !["a", "c", "d"].contains(x.id.description) { _ = r.apply(x) }
        #expect(r.state().name == "Two" && r.state().colour == "blue")
    }

    /// A compaction record (opaque `0x84` by `_service`, CompactionRecord) dated `at` ms after t0.
    static func record(to: SequenceNumber, at ms: UInt64) -> JournalEntry {
        CompactionRecord(from: 0, to: to, followFrom: 0, followPosition: 0, digest: 0, purged: [id("gone")], placed: []).entry(zone: zone, wallTime: Int64(t0 + ms))
    }

    /// A compaction record is purged once old, like a superseded rename: it names no item, so the
    /// items around it are decided as without it (COMPACTION.md §2).
    @Test func anOldCompactionRecordIsPurged() {
        // Milk stays (on the list); eggs, bought, goes whole (bob's: in no run with milk).
        let e = [add("a", "milk", "Milk", at: 0), Self.record(to: 1, at: 1), change("b", .markOff(item: id("eggs")), by: "bob", at: 2),
                 add("c", "eggs", "Eggs", by: "bob", at: 3), Self.record(to: 4, at: 4)]
        #expect(Self.purged(e) == ["compaction.1", "compaction.4", "b", "c"])
        let d = RetentionPlannerTests.decide(Self.numbered(e))
        #expect(d.verdict(2, e[1]) == .purge && d.verdict(5, e[4]) == .purge && d.verdict(1, e[0]) == .keep)
        #expect(d.purgeCount == 4 && d.rewriteCount == 0 && !d.needsAnotherPass)
        #expect(d.ranges.contains { $0.contains(2) } && d.ranges.contains { $0.contains(5) })
        #expect(Self.purged([Self.record(to: 9, at: 0)]) == ["compaction.9"])
    }

    /// A record whose time (the later of its wall time and its clock) is not before the cutoff stays.
    @Test func aCompactionRecordNewerThanTheCutoffStays() {
        let r = ListRetention(cutoff: Int64(t0) + 5_000, mark: 100)
        #expect(Self.purged([Self.record(to: 1, at: 4_999), Self.record(to: 2, at: 5_000), Self.record(to: 3, at: 10_000)], r) == ["compaction.1"])
        // An old wall time with a clock after the cutoff: not old.
        var late = Self.record(to: 4, at: 1_000)
        late.clock = HybridTime(physicalMillis: t0 + 6_000, counter: 0)
        #expect(Self.purged([late], r).isEmpty)
        var lateWall = Self.record(to: 5, at: 1_000)
        lateWall.wallTime = Int64(t0 + 6_000)
        #expect(Self.purged([lateWall], r).isEmpty)
    }

    @Test func aCompactionRecordAboveTheMarkStays() {
        let e = [Self.record(to: 1, at: 0), Self.record(to: 2, at: 1), Self.record(to: 3, at: 2)]
        #expect(Self.purged(e, ListRetention(cutoff: Int64(t0) + 1 << 40, mark: 2)) == ["compaction.1", "compaction.2"])
        // Nor does the pinned entry go (the zone's incarnation).
        #expect(Self.purged(e, ListRetention(cutoff: Int64(t0) + 1 << 40, mark: 3, pinned: 1)) == ["compaction.2", "compaction.3"])
    }

    /// Every other opaque kind stays, the service's included.
    @Test func otherOpaqueKindsStay() {
        let e = [UInt8(0x80), 0x81, 0x82, 0x83, 0x85, 0xFF].enumerated().map { k, kind in
            change("o\(k)", .opaque(kind: kind, body: [1, 2, 3]), by: "_service", at: UInt64(k))
        }
        #expect(Self.purged(e).isEmpty)
        let d = RetentionPlannerTests.decide(Self.numbered(e))
        #expect(d.isEmpty)
    }

    /// Kind `0x84` by any author but `_service` is an ordinary opaque entry: it stays.
    @Test func aRecordByAnotherAuthorStays() {
        let body = CompactionRecord(from: 0, to: 1, followFrom: 0, followPosition: 0, digest: 0, purged: [], placed: []).encoded()
        let e = ["alice", "_Service", "service"].enumerated().map { k, by in
            change("compaction.\(k + 1)", .opaque(kind: CompactionRecord.kind, body: body), by: by, at: UInt64(k))
        }
        #expect(e.allSatisfy { !CompactionRecord.isRecord($0) })
        #expect(Self.purged(e).isEmpty)
    }

    @Test func joinsAndLeavesStay() {
        #expect(Self.purged([change("a", .join(participant: "bob"), at: 0), change("b", .leave(participant: "bob"), at: 1)]).isEmpty)
    }

    @Test func anAnchorCycleStays() {
        let e = [add("a", "x", "X", after: "y", at: 0), add("b", "y", "Y", after: "x", at: 1),
                 change("c", .delete(item: id("x")), at: 2), change("d", .delete(item: id("y")), at: 3)]
        #expect(Self.purged(e).isEmpty)
    }

    /// Compaction removes only finished items; every item that stays keeps its state and its
    /// order, and a second run finds nothing more.
    @Test func compactingKeepsTheOrderAndStateOfEveryItemThatStays() async {
        await propertyCheck(count: 120, input: Gen.int(in: 0...Int.max), Gen.int(in: 1...120)) { seed, n in
            let entries = Self.numbered(randomEntries(seed: UInt64(seed), count: n, moves: seed % 2 == 0))
            let before = replay(entries.map(\.1)).state()
            let log = Self.compacted(entries)
            let after = replay(log.map(\.1)).state()
            let removed = Set(before.items.map(\.id)).subtracting(after.items.map(\.id))
            #expect(after.items == before.items.filter { !removed.contains($0.id) })
            #expect(before.items.filter { removed.contains($0.id) }.allSatisfy { $0.state == .markedOff })
            #expect(after.name == before.name && after.colour == before.colour && after.participants == before.participants)
            #expect(Self.all.plan(log).isEmpty, "seed \(seed), \(n) entries: a second run changes nothing")
        }
    }

    /// The bottom of a folded chain takes the top's place under the top's parent: when it was a
    /// child of that parent already (by a losing add), the parent is left with one child and
    /// folds too, in another pass of the same run (COMPACTION.md §2.1).
    @Test func aFoldIntoAnItemReAddedAfterTheChainsParentAsksForAnotherPass() {
        // Milk (at the head) and bread (after milk) are deleted; eggs is added after bread, then
        // again after milk. Bread folds into eggs, which then sits under milk alone.
        let e = [add("a", "milk", "Milk", at: 0), add("b", "bread", "Bread", after: "milk", at: 1),
                 add("c", "eggs", "Eggs", after: "bread", at: 2), add("d", "eggs", "Eggs", after: "milk", by: "bob", at: 3),
                 change("f", .delete(item: id("milk")), at: 4), change("g", .delete(item: id("bread")), at: 5)]
        #expect(Self.purged(e) == ["b", "f", "g"])
        #expect(Self.rewritten(e) == ["a": .place(item: id("eggs"), after: nil)])
        let log = Self.compacted(Self.numbered(e))
        #expect(replay(log.map(\.1)).state().items.map(\.text) == ["Eggs"])
        #expect(Self.all.plan(log).isEmpty)
    }

    /// The seed that found it (a run of the property above).
    @Test func aSecondRunFindsNothingMoreForSeed790() {
        let entries = Self.numbered(randomEntries(seed: 790, count: 20))
        let log = Self.compacted(entries)
        #expect(replay(log.map(\.1)).state().items == replay(entries.map(\.1)).state().items)
        #expect(Self.all.plan(log).isEmpty)
    }

    /// However long the history, what a compacted list keeps follows the items that stay: the
    /// finished items they were added after fold away.
    @Test func compactedRecordsFollowTheItemsThatStay() {
        // A family list: every item is added after the previous one and bought, one stays open.
        var e: [JournalEntry] = []
        var previous: String? = nil
        for k in 0..<500 {
            e.append(add("a\(k)", "i\(k)", "Item \(k)", after: previous, at: UInt64(k) * 1_000))
            if k < 499 { e.append(change("m\(k)", .markOff(item: id("i\(k)")), at: UInt64(k) * 1_000 + 500)) }
            previous = "i\(k)"
        }
        let kept = Self.compacted(Self.numbered(e)).map(\.1)
        #expect(kept.count == 2)
        #expect(replay(kept).state().items.map(\.text) == ["Item 499"])
    }
}

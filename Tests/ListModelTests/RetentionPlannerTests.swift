import JournalCodec
import PropertyBased
import Testing
@testable import ListModel

/// The planner behind the rules (COMPACTION.md §2, §2.1): one read of the entries, a decision,
/// and another pass only when the decision says one may find more.
@Suite struct RetentionPlannerTests {
    typealias R = RetentionTests
    static let cutoff = Int64(t0) + 1 << 40, mark: SequenceNumber = 1 << 40

    static func decide(_ entries: [(SequenceNumber, JournalEntry)], cutoff: Int64 = cutoff, mark: SequenceNumber = mark) -> RetentionDecision {
        var p = RetentionPlanner()
        for (s, e) in entries { p.add(s, e) }
        return p.decide(cutoff: cutoff, mark: mark)
    }

    /// The entries after the decision, as the store would leave them.
    static func applied(_ d: RetentionDecision, _ entries: [(SequenceNumber, JournalEntry)]) -> (left: [(SequenceNumber, JournalEntry)], purged: Int, rewritten: Int) {
        var left: [(SequenceNumber, JournalEntry)] = [], purged = 0, rewritten = 0
        for (s, e) in entries {
            switch d.verdict(s, e) {
            case .keep: left.append((s, e))
            case .purge: purged += 1
            case .replace(let op):
                rewritten += 1
                var x = e
                x.operation = op
                left.append((s, x))
            }
        }
        return (left, purged, rewritten)
    }

    /// A decision that does not ask for another pass is a fixpoint: the rules on its result find
    /// nothing (COMPACTION.md §2.1). Its counts are what its verdicts do, and its ranges hold
    /// every entry it changes.
    @Test func aDecisionThatAsksForNoOtherPassLeavesNothingForASecond() async {
        await propertyCheck(count: 300, input: Gen.int(in: 0...Int.max), Gen.int(in: 1...200), Gen.int(in: 0...2)) { seed, n, k in
            let entries = R.numbered(randomEntries(seed: UInt64(seed), count: n))
            let (cutoff, mark) = [(Self.cutoff, Self.mark), (Int64(t0) + 1_000_000, SequenceNumber(n / 2)), (Int64(t0) + 500_000, SequenceNumber(n))][k]
            let d = Self.decide(entries, cutoff: cutoff, mark: mark)
            let (left, purged, rewritten) = Self.applied(d, entries)
            #expect(purged == d.purgeCount && rewritten == d.rewriteCount, "seed \(seed): counts")
            for (s, e) in entries where d.verdict(s, e) != .keep {
                #expect(d.ranges.contains { $0.contains(s) }, "seed \(seed): \(s) outside the ranges")
            }
            if !d.needsAnotherPass { #expect(Self.decide(left, cutoff: cutoff, mark: mark).isEmpty, "seed \(seed), \(n) entries: a second pass found more") }
        }
    }

    /// Compaction records among random entries: each goes exactly when old, the decision's counts
    /// and ranges hold them, a walk agrees, items are decided as without them, and a decision
    /// that asks for no other pass leaves nothing for a second.
    @Test func compactionRecordsGoWhenOldWhateverIsAroundThem() async {
        await propertyCheck(count: 150, input: Gen.int(in: 0...Int.max), Gen.int(in: 1...150), Gen.int(in: 0...2)) { seed, n, k in
            var rng = SplitMix64(seed: UInt64(seed) ^ 0x84)
            let plain = randomEntries(seed: UInt64(seed), count: n)
            var mixed: [JournalEntry] = []
            for (j, e) in plain.enumerated() {
                mixed.append(e)
                if rng.next() % 5 == 0 {
                    mixed.append(RetentionTests.record(to: SequenceNumber(j + 1), at: rng.next() % 2_000_000))
                }
            }
            let entries = R.numbered(mixed)
            let (cutoff, mark) = [(Self.cutoff, Self.mark), (Int64(t0) + 1_000_000, SequenceNumber(entries.count / 2)),
                                  (Int64(t0) + 500_000, SequenceNumber(entries.count))][k]
            let d = Self.decide(entries, cutoff: cutoff, mark: mark)
            let (left, purged, rewritten) = Self.applied(d, entries)
            #expect(purged == d.purgeCount && rewritten == d.rewriteCount, "seed \(seed): counts")
            var walk = d.walk()
            var records = 0
            for (s, e) in entries {
                #expect(walk.verdict(s, e) == d.verdict(s, e), "seed \(seed): walk at \(s)")
                if d.verdict(s, e) != .keep { #expect(d.ranges.contains { $0.contains(s) }, "seed \(seed): \(s) outside the ranges") }
                guard CompactionRecord.isRecord(e) else { continue }
                let old = s <= mark && RetentionPlanner.time(e) < cutoff
                if old { records += 1 }
                #expect(d.verdict(s, e) == (old ? .purge : .keep), "seed \(seed): record at \(s)")
            }
            // Without the records, the same items are decided the same way.
            let without = entries.filter { !CompactionRecord.isRecord($0.1) }
            let w = Self.decide(without, cutoff: cutoff, mark: mark)
            #expect(w.purgeCount + records == d.purgeCount && w.rewriteCount == d.rewriteCount && w.needsAnotherPass == d.needsAnotherPass,
                    "seed \(seed): the records changed an item's decision")
            for (s, e) in without { #expect(w.verdict(s, e) == d.verdict(s, e), "seed \(seed): at \(s)") }
            if !d.needsAnotherPass { #expect(Self.decide(left, cutoff: cutoff, mark: mark).isEmpty, "seed \(seed): a second pass found more") }
        }
    }

    /// A walk answers as `verdict` does, whether asked in order (its items from the planner's
    /// record), out of order, or about entries the planner never recorded (read out of order).
    @Test func aWalkAnswersAsTheDecisionDoes() async {
        await propertyCheck(count: 200, input: Gen.int(in: 0...Int.max), Gen.int(in: 1...200), Gen.int(in: 0...2)) { seed, n, k in
            var entries = R.numbered(randomEntries(seed: UInt64(seed), count: n))
            if k == 2 { entries.swapAt(0, entries.count - 1) }  // the planner stops recording
            let d = Self.decide(entries, mark: k == 1 ? SequenceNumber(n / 2) : Self.mark)
            var inOrder = d.walk()
            for (s, e) in entries.sorted(by: { $0.0 < $1.0 }) {
                #expect(inOrder.verdict(s, e) == d.verdict(s, e), "seed \(seed): in order, at \(s)")
            }
            var rng = SplitMix64(seed: UInt64(seed))
            var shuffled = d.walk()
            for (s, e) in entries.shuffled(using: &rng) {
                #expect(shuffled.verdict(s, e) == d.verdict(s, e), "seed \(seed): shuffled, at \(s)")
            }
        }
    }

    /// Entries added a page at a time (their ids loaded ahead) decide as they do one by one.
    @Test func pagesAddedAtOnceDecideAsTheirEntriesOneByOne() async {
        struct Numbered { var sequence: SequenceNumber; var entry: JournalEntry }
        await propertyCheck(count: 100, input: Gen.int(in: 0...Int.max), Gen.int(in: 1...300), Gen.int(in: 1...70)) { seed, n, page in
            let entries = R.numbered(randomEntries(seed: UInt64(seed), count: n))
            let mark = SequenceNumber(n / 2)
            var paged = RetentionPlanner()
            let all = entries.map { Numbered(sequence: $0.0, entry: $0.1) }
            for start in stride(from: 0, to: all.count, by: page) {
                paged.add(contentsOf: Array(all[start..<min(start + page, all.count)]), sequence: \.sequence, entry: \.entry)
            }
            let a = paged.decide(cutoff: Self.cutoff, mark: mark), b = Self.decide(entries, mark: mark)
            #expect(a.purgeCount == b.purgeCount && a.rewriteCount == b.rewriteCount && a.ranges == b.ranges, "seed \(seed)")
            for (s, e) in entries { #expect(a.verdict(s, e) == b.verdict(s, e), "seed \(seed): at \(s)") }
            #expect(paged.oldestTime == entries.map { RetentionPlanner.time($0.1) }.min())
        }
    }

    /// An item re-added after another anchor, given a place, no longer anchors by its other add:
    /// that anchor may fold in a second pass, and the decision says so.
    @Test func aPlaceThatDropsAnotherAddsAnchorAsksForAnotherPass() {
        // i9 is finished and anchors i17 by i17's losing add; i17 is finished and folds into i24
        // (placed after it), which takes i17's key, anchored to ghost0: i9 loses its only child.
        let entries = R.numbered([
            add("e9", "i9", "Nine", after: "i1", by: "carol", at: 1_354_253),
            change("m9", .markOff(item: id("i9")), by: "bob", at: 1_570_571),
            add("e17", "i17", "Seventeen", after: "i9", by: "bob", at: 647_411),
            change("m17", .markOff(item: id("i17")), by: "carol", at: 1_219_689),
            add("e21", "i17", "Seventeen", after: "ghost0", by: "carol", at: 207_368),
            add("e24", "i24", "Twenty-four", by: "carol", at: 1_087_053),
            change("p24", .place(item: id("i24"), after: id("i17")), by: "alice", at: 1_809_912),
        ])
        let d = Self.decide(entries)
        #expect(d.needsAnotherPass)
        let second = Self.decide(Self.applied(d, entries).left)
        #expect(!second.isEmpty)
        #expect(R.all.plan(R.compacted(entries)).isEmpty)
    }

    /// An item that does not leave the list (here one still on it) asks for no second pass when
    /// it loses a child: it leaves in no later pass either (COMPACTION.md §2.1).
    @Test func anItemThatStaysOnTheListLosingAChildAsksForNoOtherPass() {
        // Cheese folds away (its only child, tea, sits under it), and with it butter above it;
        // bread, on the list, loses cheese, a child by cheese's other add.
        let entries = R.numbered([
            add("b1", "bread", "Bread", at: 0),
            add("u1", "butter", "Butter", at: 10), change("u2", .markOff(item: id("butter")), at: 11),
            add("c1", "cheese", "Cheese", after: "butter", at: 20),
            add("c2", "cheese", "Cheese", after: "bread", by: "bob", at: 21), change("c3", .markOff(item: id("cheese")), at: 22),
            add("t1", "tea", "Tea", after: "cheese", at: 30),
        ])
        let d = Self.decide(entries)
        #expect(d.purgeCount > 0 && d.rewriteCount > 0)
        #expect(!d.needsAnotherPass)
        #expect(Self.decide(Self.applied(d, entries).left).isEmpty)
    }

    /// An item added twice after the same anchor is one child of it: the anchor folds into it in
    /// the first pass.
    @Test func anItemAddedTwiceAfterTheSameAnchorIsOneChild() {
        let entries = R.numbered([
            add("a1", "milk", "Milk", at: 0), change("m1", .markOff(item: id("milk")), at: 1),
            add("b1", "eggs", "Eggs", after: "milk", at: 2), add("b2", "eggs", "Eggs", after: "milk", by: "bob", at: 3),
        ])
        let d = Self.decide(entries)
        #expect(!d.needsAnotherPass)
        // Milk folds into eggs: eggs' place is written over milk's add, and milk's mark-off goes.
        #expect(R.rewritten(entries.map(\.1)) == ["a1": .place(item: id("eggs"), after: nil)])
        #expect(R.purged(entries.map(\.1)) == ["m1"])
    }
}

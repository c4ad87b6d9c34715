import JournalCodec
import Testing
@testable import ListModel

/// COMPACTION.md §2.1 on lists compacted day after day: applying decisions pass after pass, as the
/// compactor does, whenever a decision asks for no other pass the next finds nothing. (A review
/// ran these generators over millions of journals; the tests keep a few hundred of each.)
@Suite struct RetentionFixpointTests {
    typealias P = RetentionPlannerTests

    /// A journal of the structures the rules turn on, each with its own random weight per seed:
    /// new items, re-adds after other anchors, chains of finished items each after the last,
    /// places, items with a place and no add (as a compaction leaves them), marks, unmarks,
    /// deletes, sibling runs (one author, one anchor, close clocks), ghost and self anchors.
    static func structured(seed: UInt64, count: Int) -> [JournalEntry] {
        var g = SplitMix64(seed: seed)
        func r(_ n: UInt64) -> UInt64 { n == 0 ? 0 : g.next() % n }
        func chance(_ pct: UInt64) -> Bool { r(100) < pct }
        let authors = ["alice", "bob", "carol"].prefix(Int(1 + r(3)))
        let pool = Int(2 + r(UInt64(max(2, count / (1 + Int(r(6)))))))  // item pool size
        let w: [UInt64] = (0..<9).map { _ in r(10) }  // weights: add new, re-add, chain, place, mark, unmark, delete, run, place-only
        let total = max(1, w.reduce(0, +))
        let spread = [60_000, 600_000, 3_000_000][Int(r(3))]
        var items: [String] = []
        var last: String? = nil
        var out: [JournalEntry] = []
        var ms = r(UInt64(spread))
        func someItem() -> String {
            if items.isEmpty || chance(5) { return "ghost\(r(2))" }
            return items[Int(r(UInt64(items.count)))]
        }
        func anchor(for item: String) -> String? {
            let k = r(10)
            if k == 0 { return nil }
            if k == 1 && chance(30) { return item }  // self
            if k <= 4, let l = last { return l }
            return someItem()
        }
        func newItem() -> String {
            let it = "x\(items.count < pool ? items.count : Int(r(UInt64(pool))))"
            if !items.contains(it) { items.append(it) }
            return it
        }
        var n = 0
        func emit(_ op: JournalCodec.EntryOperation, by: String? = nil, dt: UInt64? = nil) {
            ms = chance(20) ? r(UInt64(spread)) : ms + (dt ?? r(UInt64(spread / 20 + 1)))
            let eid = id("e\(n)")
            n += 1
            out.append(JournalEntry(id: eid, zone: zone, author: by ?? authors[Int(r(UInt64(authors.count)))], wallTime: Int64(t0 + ms),
                                    clock: HybridTime(physicalMillis: t0 + ms, counter: UInt16(r(2))), operation: op))
        }
        while out.count < count {
            var k = r(total), c = 0
            while k >= w[c] { k -= w[c]; c += 1 }
            switch c {
            case 0:
                let it = newItem()
                emit(.add(item: id(it), text: it, after: anchor(for: it).map(id)))
                last = it
            case 1:
                let it = someItem()
                emit(.add(item: id(it), text: it, after: anchor(for: it).map(id)))
            case 2:  // a chain of finished items, each after the last
                for _ in 0..<(1 + r(5)) {
                    let it = newItem()
                    emit(.add(item: id(it), text: it, after: last.map(id)))
                    if chance(80) { emit(.markOff(item: id(it))) }
                    last = it
                }
            case 3: let it = someItem(); emit(.place(item: id(it), after: anchor(for: it).map(id)))
            case 4: emit(.markOff(item: id(someItem())))
            case 5: emit(.unmark(item: id(someItem())))
            case 6: emit(.delete(item: id(someItem())))
            case 7:  // a sibling run: one author, one anchor, close clocks
                let by = authors[Int(r(UInt64(authors.count)))]
                let a = chance(20) ? nil : someItem()
                for _ in 0..<(1 + r(4)) {
                    let it = chance(70) ? newItem() : someItem()
                    emit(.add(item: id(it), text: it, after: a.map(id)), by: by, dt: r(400_000))
                    if chance(60) { emit(.markOff(item: id(it))) }
                }
            default:  // an item with a place and no add (as a compaction leaves it)
                let it = "x\(items.count)"
                items.append(it)
                emit(.place(item: id(it), after: anchor(for: it).map(id)))
                last = it
            }
        }
        return Array(out.prefix(count))
    }

    /// Several rounds: compacted, extended, compacted again (as a list compacted day after day).
    static func rounds(seed: UInt64, count: Int) -> [(SequenceNumber, JournalEntry)] {
        var g = SplitMix64(seed: seed ^ 0x5EED)
        let all = RetentionTests.numbered(structured(seed: seed, count: count))
        let k = 1 + Int(g.next() % 4)
        let cuts = (0..<k).map { _ in Int(g.next() % UInt64(all.count + 1)) }.sorted()

        var current: [(SequenceNumber, JournalEntry)] = []
        var at = 0
        for c in cuts {
            current += all[at..<c]
            at = c
            let maxSeq = current.last?.0 ?? 0
            let mark = g.next() % 3 == 0 ? maxSeq : g.next() % (maxSeq + 1)
            let cutoff = Int64(t0 + g.next() % 3_000_000)
            current = RetentionTests.compacted(current, ListRetention(cutoff: cutoff, mark: mark))
        }
        return current + all[at...]
    }

    /// Decides pass after pass (at most `ListRetention.maxPasses`); returns a description of the
    /// first decision that asked for no other pass although the next found more, or nil.
    static func fixpointBroken(_ entries: [(SequenceNumber, JournalEntry)], cutoff: Int64, mark: SequenceNumber,
                               pinned: SequenceNumber?) -> String? {
        func decide(_ e: [(SequenceNumber, JournalEntry)]) -> RetentionDecision {
            var p = RetentionPlanner(pinned: pinned)
            for (s, x) in e { p.add(s, x) }
            return p.decide(cutoff: cutoff, mark: mark)
        }
        var current = entries
        for pass in 0..<ListRetention.maxPasses {
            let d = decide(current)
            if d.isEmpty { return nil }
            current = P.applied(d, current).left
            if !d.needsAnotherPass {
                let next = decide(current)
                return next.isEmpty ? nil : "pass \(pass + 1) asked for no other, and the next purges \(next.purgeCount), rewrites \(next.rewriteCount)"
            }
        }
        return nil
    }

    /// The cutoff, mark and pinned entry of one case: everything old, or some entries too new or
    /// above the mark, with or without a pinned entry.
    static func parameters(_ g: inout SplitMix64, count n: Int) -> (Int64, SequenceNumber, SequenceNumber?) {
        switch g.next() % 4 {
        case 0: return (P.cutoff, P.mark, nil)
        case 1: return (Int64(t0 + g.next() % 3_000_001), SequenceNumber(g.next() % UInt64(n + 2)), nil)
        case 2: return (P.cutoff, SequenceNumber(g.next() % UInt64(n + 2)), g.next() % 2 == 0 ? SequenceNumber(1 + g.next() % UInt64(n)) : nil)
        default: return (Int64(t0 + g.next() % 3_000_001), P.mark, SequenceNumber(1 + g.next() % UInt64(n)))
        }
    }

    @Test(arguments: ["structured", "rounds"])
    func aDecisionThatAsksForNoOtherPassIsAFixpointAtEveryPass(generator: String) {
        for seed in 0..<UInt64(400) {
            var g = SplitMix64(seed: seed &* 31 &+ 7)
            let n = 1 + Int(g.next() % 200)
            let entries = generator == "rounds" ? Self.rounds(seed: seed, count: n) : RetentionTests.numbered(Self.structured(seed: seed, count: n))
            guard !entries.isEmpty else { continue }
            let (cutoff, mark, pinned) = Self.parameters(&g, count: entries.count)
            if let broken = Self.fixpointBroken(entries, cutoff: cutoff, mark: mark, pinned: pinned) {
                Issue.record("\(generator) seed \(seed), \(entries.count) entries, cutoff \(cutoff), mark \(mark), pinned \(String(describing: pinned)): \(broken)")
                return
            }
        }
    }
}

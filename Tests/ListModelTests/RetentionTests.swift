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
        let seqs = Set(r.purgeable(numbered(entries)))
        return Set(numbered(entries).filter { seqs.contains($0.0) }.map { $0.1.id.description })
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

    @Test func aFinishedItemThatAnchorsAnActiveItemStays() {
        let e = [add("a", "milk", "Milk", at: 0), add("b", "eggs", "Eggs", after: "milk", at: 1), change("c", .delete(item: id("milk")), at: 2)]
        #expect(Self.purged(e).isEmpty)
    }

    @Test func aFinishedItemInARunWithAnActiveItemStays() {
        // alice adds both at the head a minute apart: one run, which keeps milk's place above tea.
        let e = [add("a", "tea", "Tea", at: 0), add("b", "milk", "Milk", at: 60_000), change("c", .markOff(item: id("milk")), at: 70_000)]
        #expect(Self.purged(e).isEmpty)
        // Ten minutes apart they are two runs: milk goes alone.
        let apart = [add("a", "tea", "Tea", at: 0), add("b", "milk", "Milk", at: 600_000), change("c", .markOff(item: id("milk")), at: 610_000)]
        #expect(Self.purged(apart) == ["b", "c"])
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

    @Test func joinsAndLeavesStay() {
        #expect(Self.purged([change("a", .join(participant: "bob"), at: 0), change("b", .leave(participant: "bob"), at: 1)]).isEmpty)
    }

    @Test func anAnchorCycleStays() {
        let e = [add("a", "x", "X", after: "y", at: 0), add("b", "y", "Y", after: "x", at: 1),
                 change("c", .delete(item: id("x")), at: 2), change("d", .delete(item: id("y")), at: 3)]
        #expect(Self.purged(e).isEmpty)
    }

    /// Purging removes only finished items; every item that stays keeps its state and its order.
    @Test func purgingKeepsTheOrderAndStateOfEveryItemThatStays() async {
        await propertyCheck(count: 80, input: Gen.int(in: 0...Int.max), Gen.int(in: 1...120)) { seed, n in
            let entries = randomEntries(seed: UInt64(seed), count: n)
            let before = replay(entries).state()
            let gone = Set(Self.all.purgeable(Self.numbered(entries)))
            let kept = Self.numbered(entries).filter { !gone.contains($0.0) }.map(\.1)
            let after = replay(kept).state()
            let removed = Set(before.items.map(\.id)).subtracting(after.items.map(\.id))
            #expect(after.items == before.items.filter { !removed.contains($0.id) })
            #expect(before.items.filter { removed.contains($0.id) }.allSatisfy { $0.state == .markedOff })
            #expect(after.name == before.name && after.colour == before.colour && after.participants == before.participants)
        }
    }
}

import JournalCodec
import JournalQuery
import PropertyBased
import Testing
@testable import ListModel

@Suite struct ReducerTests {
    @Test func sevenEntryExampleFromMergeSpec() {
        let s = replay(sevenEntryExample).state()
        #expect(s.name == "Weekly Shopping")
        #expect(s.colour == "yellow")
        #expect(s.items.map(\.id) == [id("milk"), id("eggs")])
        #expect(s.items.map(\.state) == [.markedOff, .active])
        #expect(s.items[0].markedOffBy == "alice")
        #expect(s.items[0].markedOffAt == Int64(t0 + 6_000))
        #expect(s.items[1].markedOffBy == nil)
        #expect(s.items[1].addedAt == Int64(t0 + 4_000))
    }

    @Test func anyPermutationWithDuplicatesGivesTheSameStateAndDigest() async {
        await propertyCheck(count: 60, input: Gen.int(in: 0...Int.max), Gen.int(in: 1...80)) { seed, n in
            let entries = randomEntries(seed: UInt64(seed), count: n, moves: seed % 2 == 0)
            let reference = replay(entries)
            let expected = reference.state()
            for k in 0..<3 {
                let other = replay(shuffledWithDuplicates(entries, seed: UInt64(seed) &+ UInt64(k)))
                #expect(other.state() == expected)
                #expect(other.state().digest == expected.digest)
                #expect(other == reference)
            }
        }
    }

    /// Duplicates are found without a set of every id (MERGE.md §9): `apply` reports each
    /// distinct entry as new exactly once, whatever the order, and `contains` knows all of them.
    @Test func everyDistinctEntryIsNewExactlyOnce() async {
        await propertyCheck(count: 60, input: Gen.int(in: 0...Int.max), Gen.int(in: 1...80)) { seed, n in
            let entries = randomEntries(seed: UInt64(seed), count: n, moves: seed % 2 == 0)
            var r = ListReducer(zone: zone)
            var new: [CompactID: Int] = [:]
            for e in shuffledWithDuplicates(entries, seed: UInt64(seed)) + entries.reversed() where r.apply(e) {
                new[e.id, default: 0] += 1
            }
            #expect(new.count == entries.count)
            #expect(new.values.allSatisfy { $0 == 1 })
            #expect(r.entryCount == entries.count)
            #expect(entries.allSatisfy { r.contains(entry: $0.id) })
            #expect(!r.contains(entry: id("never-applied")))
        }
    }

    /// `apply(contentsOf:)` on an array reads the entries in place and loads index slots a chunk
    /// ahead: it must count and fold exactly as `apply` one entry at a time, across chunk
    /// boundaries, with UUID and text ids mixed and duplicates.
    @Test func applyingAnArrayEqualsApplyingItsEntriesOneByOne() async {
        await propertyCheck(count: 40, input: Gen.int(in: 0...Int.max), Gen.int(in: 1...300)) { seed, n in
            let entries = shuffledWithDuplicates(withSomeUUIDs(randomEntries(seed: UInt64(seed), count: n)), seed: UInt64(seed))
            var one = ListReducer(zone: zone)
            var newOneByOne = 0
            for e in entries where one.apply(e) { newOneByOne += 1 }
            var all = ListReducer(zone: zone)
            #expect(all.apply(contentsOf: entries) == newOneByOne)
            #expect(all == one)
            #expect(all.state() == one.state())
        }
    }

    /// With room reserved for a large replay and the query layer's helpers, `apply(contentsOf:)`
    /// has that room backed on another thread (`PageWarmer`) while it fills it: the result is the same.
    @Test func aReplayIntoReservedRoomEqualsOneEntryAtATime() {
        let entries = shuffledWithDuplicates(withSomeUUIDs(randomEntries(seed: 5, count: 3_000)), seed: 5)
        var one = ListReducer(zone: zone)
        for e in entries { one.apply(e) }
        var all = ListReducer(zone: zone)
        all.helpers = HelperThreads()
        all.reserveCapacity(400_000)
        #expect(all.apply(contentsOf: entries) == one.entryCount)
        #expect(all == one)
        #expect(all.state() == one.state())
    }

    /// A copy shares its storage until written: a bulk replay into the copy (with the room
    /// warmed) leaves the original as it was.
    @Test func aReplayIntoACopyLeavesTheOriginalAsItWas() {
        let entries = withSomeUUIDs(randomEntries(seed: 11, count: 3_000))
        var original = ListReducer(zone: zone)
        original.helpers = HelperThreads()
        original.reserveCapacity(400_000)
        original.apply(contentsOf: Array(entries[..<1_000]))
        let before = original.state()
        var copy = original
        copy.apply(contentsOf: Array(entries[1_000...]))
        #expect(original.state() == before)
        #expect(original.entryCount == replay(Array(entries[..<1_000])).entryCount)
        #expect(copy == replay(entries))
    }

    /// A replay that outgrows the room reserved for it: the warmer is finished before the records
    /// move, and the result is the same as one entry at a time.
    @Test func aReplayThatOutgrowsItsReservedRoomEqualsOneEntryAtATime() {
        var g = SplitMix64(seed: 9)
        let entries = (0..<100_000).map { k in
            JournalEntry(id: CompactID.random(using: &g), zone: zone, author: "alice", wallTime: Int64(t0) + Int64(k),
                         clock: HybridTime(physicalMillis: t0 + UInt64(k), counter: 0),
                         operation: .add(item: CompactID.random(using: &g), text: "Milk", after: nil))
        }
        var one = ListReducer(zone: zone)
        for e in entries { one.apply(e) }
        var all = ListReducer(zone: zone)
        all.helpers = HelperThreads()
        all.reserveCapacity(170_000)  // room for 85,000 records: over PageWarmer.minimumBytes, under 100,000
        #expect(all.apply(contentsOf: entries) == entries.count)
        #expect(all == one)
    }

    /// Hostile input (other zones, one entry id reused for different entries, self-anchors and
    /// anchor or placement cycles, opaque kinds, long and non-ASCII authors, duplicates): an array
    /// applied at once, whole or in two parts, counts and folds exactly as one entry at a time.
    @Test func applyingAnArrayEqualsOneByOneOnHostileInput() {
        for seed in 0..<100 as Range<UInt64> {
            let entries = hostileEntries(seed: seed, count: Int(seed % 7 == 0 ? 700 : seed % 200 + 1))
            var one = ListReducer(zone: zone)
            var newOneByOne = 0
            for e in entries where one.apply(e) { newOneByOne += 1 }
            var all = ListReducer(zone: zone)
            #expect(all.apply(contentsOf: entries) == newOneByOne, "seed \(seed)")
            #expect(all.entryCount == one.entryCount)
            #expect(all == one, "seed \(seed)")
            #expect(all.state() == one.state())
            // Again (not always 0 here: one id reused for different entries can win later).
            var again = 0
            for e in entries where one.apply(e) { again += 1 }
            #expect(all.apply(contentsOf: entries) == again)
            var split = ListReducer(zone: zone)
            let cut = entries.count / 2
            #expect(split.apply(contentsOf: Array(entries[..<cut])) + split.apply(contentsOf: Array(entries[cut...])) == newOneByOne)
            var once = ListReducer(zone: zone)
            once.apply(contentsOf: entries)
            #expect(split == once)
        }
    }

    /// What a change-feed page holds: an entry with its sequence before it.
    struct Held {
        var sequence: UInt64
        var entry: JournalEntry
        var copied: JournalEntry { entry }
    }

    /// Entries held inside other values (read in place at their offset, or through a computed
    /// property one at a time) count and fold exactly as the entries themselves.
    @Test func entriesHeldInOtherValuesApplyAsTheEntriesThemselves() {
        for seed in 0..<40 as Range<UInt64> {
            let entries = hostileEntries(seed: seed, count: Int(seed % 5 == 0 ? 500 : seed % 90 + 1))
            let held = entries.enumerated().map { Held(sequence: UInt64($0.offset), entry: $0.element) }
            var one = ListReducer(zone: zone)
            var newOneByOne = 0
            for e in entries where one.apply(e) { newOneByOne += 1 }
            var inPlace = ListReducer(zone: zone)
            #expect(inPlace.apply(contentsOf: held, entry: \.entry) == newOneByOne, "seed \(seed)")
            #expect(inPlace == one, "seed \(seed)")
            #expect(inPlace.state() == one.state())
            var computed = ListReducer(zone: zone)
            #expect(computed.apply(contentsOf: held, entry: \.copied) == newOneByOne)
            #expect(computed == one)
        }
        var empty = ListReducer(zone: zone)
        #expect(empty.apply(contentsOf: [Held](), entry: \.entry) == 0)
    }

    @Test func duplicateEntryIsANoOp() {
        var r = ListReducer(zone: zone)
        let first = r.apply(add("e1", "milk", "Milk", at: 0))
        let second = r.apply(add("e1", "milk", "Milk", at: 0))
        #expect(first)
        #expect(!second)
        #expect(r.entryCount == 1)
    }

    @Test func entriesOfAnotherZoneAreIgnored() {
        var r = ListReducer(zone: zone)
        let applied = r.apply(change("e1", .rename(name: "x"), at: 0, zone: "Other"))
        #expect(!applied)
        #expect(r.state() == ListState())
    }

    @Test func twoOfflineRenamesLaterWinsOnBothReplicas() {
        let a = change("ra", .rename(name: "Alice's name"), by: "alice", at: 10_000)
        let b = change("rb", .rename(name: "Bob's name"), by: "bob", at: 20_000)
        let c1 = change("ca", .recolour(colour: "red"), by: "bob", at: 5_000)
        let c2 = change("cb", .recolour(colour: "blue"), by: "alice", at: 5_000)
        #expect(replay([a, b, c1, c2]).state().name == "Bob's name")
        #expect(replay([b, a, c2, c1]).state().name == "Bob's name")
        // Same clock: the author breaks the tie ("bob" > "alice").
        #expect(replay([c1, c2]).state().colour == "red")
        #expect(replay([c2, c1]).state().colour == "red")
    }

    @Test func concurrentAddsAfterTheSameItemOrderTheSameOnBothReplicas() {
        let base = add("e0", "milk", "Milk", at: 0)
        let a = add("ea", "tea", "Tea", after: "milk", by: "alice", at: 5_000)
        let b = add("eb", "jam", "Jam", after: "milk", by: "bob", at: 6_000)
        let one = replay([base, a, b]).state(), two = replay([b, base, a]).state()
        #expect(one == two)
        // Newest sibling right after the anchor.
        #expect(texts(one) == ["Milk", "Jam", "Tea"])
    }

    @Test func danglingMarkOffBeforeAddIsAppliedWhenTheAddArrives() {
        var r = ListReducer(zone: zone)
        r.apply(change("m", .markOff(item: id("milk")), by: "bob", at: 9_000))
        #expect(r.state().items.isEmpty)
        r.apply(add("e1", "milk", "Milk", at: 0))
        #expect(r.state().items.first?.state == .markedOff)
        #expect(r.state().items.first?.markedOffBy == "bob")
    }

    @Test func danglingDeleteBeforeAddHidesTheItem() {
        let s = replay([change("d", .delete(item: id("milk")), by: "bob", at: 9_000), add("e1", "milk", "Milk", at: 0)]).state()
        #expect(s.items.isEmpty)
    }

    @Test func itemAfterADeletedAnchorKeepsItsPlace() {
        let entries = [add("e1", "a", "A", at: 0), add("e2", "b", "B", after: "a", at: 1_000),
                       add("e3", "c", "C", after: "b", at: 2_000), add("e4", "d", "D", after: "a", at: 500)]
        #expect(texts(replay(entries).state()) == ["A", "B", "C", "D"])
        let deleted = replay(entries + [change("x", .delete(item: id("b")), at: 3_000)]).state()
        #expect(texts(deleted) == ["A", "C", "D"])
    }

    @Test func itemWithMissingAnchorGoesToTheEndThenMovesUnderItsAnchor() {
        var r = ListReducer(zone: zone)
        r.apply(add("e1", "a", "A", at: 0))
        r.apply(add("e2", "z", "Z", at: 9_000))
        r.apply(add("e3", "late", "Late child", after: "anchor", at: 3_000))
        r.apply(add("e4", "late2", "Late child 2", after: "anchor", at: 2_000))
        // Orphans after the tree, oldest first.
        #expect(texts(r.state()) == ["Z", "A", "Late child 2", "Late child"])
        r.apply(add("e5", "anchor", "Anchor", after: "a", at: 1_000))
        #expect(texts(r.state()) == ["Z", "A", "Anchor", "Late child", "Late child 2"])
    }

    @Test func backwardRunsOfTwoUsersStayContiguous() {
        // Alice and Bob each add three items at the top, concurrently, with interleaved clocks.
        let entries = [
            add("a1", "a1", "A1", by: "alice", at: 1_000), add("b1", "b1", "B1", by: "bob", at: 1_500),
            add("a2", "a2", "A2", by: "alice", at: 2_000), add("b2", "b2", "B2", by: "bob", at: 2_500),
            add("a3", "a3", "A3", by: "alice", at: 3_000), add("b3", "b3", "B3", by: "bob", at: 3_500),
        ]
        let s = replay(entries).state()
        #expect(texts(s) == ["B3", "B2", "B1", "A3", "A2", "A1"])
        #expect(replay(entries.reversed()).state() == s)
    }

    @Test func sameAuthorSiblingsFarApartInTimeAreSeparateRuns() {
        let hour: UInt64 = 3_600_000
        let entries = [add("a1", "a1", "A1", by: "alice", at: 0), add("b1", "b1", "B1", by: "bob", at: hour),
                       add("a2", "a2", "A2", by: "alice", at: 2 * hour)]
        #expect(texts(replay(entries).state()) == ["A2", "B1", "A1"])
    }

    @Test func largeSiblingGroupOrdersByRunsWhateverTheArrivalOrder() throws {
        // 300 items at the top by four authors with clock ties and gaps on both sides of the
        // five-minute window: the reducer buckets a group this large by author before sorting.
        var g = SplitMix64(seed: 7)
        let authors = ["alice", "bob", "carol", "dörte"]
        var entries: [JournalEntry] = []
        var ms: UInt64 = 0
        for n in 0..<300 {
            ms += [0, 1_000, 60_000, 299_000, 301_000, 3_600_000][Int(g.next() % 6)]
            entries.append(add("e\(n)", "i\(n)", "T\(n)", by: authors[Int(g.next() % 4)], at: ms, counter: UInt16(g.next() % 2)))
        }
        let expected = siblingOrderSpelledOut(entries, authors: authors)
        #expect(texts(replay(entries).state()) == expected)
        #expect(texts(replay(entries.reversed()).state()) == expected)
        #expect(texts(replay(shuffledWithDuplicates(entries, seed: 3)).state()) == expected)
        // Decoded from a snapshot, records come in list order; a tail then adds to the group.
        let bytes = SnapshotCodec.encode(reducer: replay(Array(entries[..<250])), incarnation: 1, sequence: 250)
        var (_, restored) = try SnapshotCodec.decode(bytes)
        restored.apply(contentsOf: entries[250...])
        #expect(texts(restored.state()) == expected)
    }

    /// Small sibling groups (up to `ReducerOrder.smallGroup`) take their own sort: the same
    /// order as MERGE.md §3.2 spelled out, and as the general path, with clock ties and gaps on
    /// both sides of the run window.
    @Test func smallSiblingGroupsOrderAsTheGeneralPathDoes() {
        let authors = ["alice", "bob", "carol"]
        for size in 2...ReducerOrder.smallGroup {
            for seed in 0..<12 as Range<UInt64> {
                var g = SplitMix64(seed: seed &* 31 &+ UInt64(size))
                var entries: [JournalEntry] = []
                var ms: UInt64 = 0
                for n in 0..<size {
                    ms += [0, 1_000, 299_000, 301_000][Int(g.next() % 4)]
                    entries.append(add("e\(n)", "i\(n)", "T\(n)", by: authors[Int(g.next() % 3)], at: ms, counter: UInt16(g.next() % 2)))
                }
                let expected = siblingOrderSpelledOut(entries, authors: authors)
                let r = replay(shuffledWithDuplicates(entries, seed: seed))
                #expect(texts(r.state()) == expected, "size \(size), seed \(seed)")
                #expect(r.countedLinearOrder().order == r.countedLinearOrder(smallGroup: 0).order, "size \(size), seed \(seed)")
            }
        }
    }

    /// On hostile input (cycles, self-anchors, placements, reused entry ids, text ids) too.
    @Test func smallSiblingGroupsOrderAsTheGeneralPathDoesOnHostileInput() {
        for seed in 0..<100 as Range<UInt64> {
            let r = replay(hostileEntries(seed: seed, count: Int(seed % 5 == 0 ? 600 : seed % 120 + 1)))
            #expect(r.countedLinearOrder().order == r.countedLinearOrder(smallGroup: 0).order, "seed \(seed)")
        }
    }

    @Test func forwardRunStaysTogetherAgainstAConcurrentSibling() {
        let entries = [add("e0", "x", "X", at: 0),
                       add("a1", "a1", "A1", after: "x", by: "alice", at: 1_000),
                       add("a2", "a2", "A2", after: "a1", by: "alice", at: 2_000),
                       add("b1", "b1", "B1", after: "x", by: "bob", at: 1_500)]
        #expect(texts(replay(entries).state()) == ["X", "B1", "A1", "A2"])
    }

    @Test func reAddingAnExistingItemIDKeepsTheFirstAdd() {
        let first = add("e1", "milk", "Milk", at: 0)
        let again = add("e2", "milk", "Oat milk", after: "bread", by: "bob", at: 5_000)
        let s = replay([again, add("e3", "bread", "Bread", at: 100), first]).state()
        #expect(s.items.first { $0.id == id("milk") }?.text == "Milk")
        #expect(s.items.first { $0.id == id("milk") }?.addedBy == "alice")
    }

    @Test func markOffAndUnmarkLastOneWins() {
        let base = add("e1", "milk", "Milk", at: 0)
        let off = change("m", .markOff(item: id("milk")), at: 2_000), on = change("u", .unmark(item: id("milk")), by: "bob", at: 3_000)
        #expect(replay([base, on, off]).state().items[0].state == .active)
        #expect(replay([base, off]).state().items[0].state == .markedOff)
    }

    @Test func deleteIsFinalWhateverComesLater() {
        let s = replay([add("e1", "milk", "Milk", at: 0), change("d", .delete(item: id("milk")), at: 1_000),
                        change("m", .unmark(item: id("milk")), at: 9_000)]).state()
        #expect(s.items.isEmpty)
    }

    @Test func anchorCycleIsPlacedDeterministically() {
        let entries = [add("e1", "a", "A", after: "b", at: 0), add("e2", "b", "B", after: "a", at: 1_000), add("e3", "c", "C", at: 2_000)]
        let s = replay(entries).state()
        #expect(texts(s) == ["C", "A", "B"])
        #expect(replay(entries.reversed()).state() == s)
    }

    @Test func participantsFollowTheLastJoinOrLeave() {
        let s = replay([change("j1", .join(participant: "dörte"), at: 0), change("j2", .join(participant: "bob"), at: 100),
                        change("l1", .leave(participant: "bob"), by: "bob", at: 200)]).state()
        #expect(s.participants == ["dörte"])
    }

    @Test func digestChangesWithVisibleState() {
        let a = replay(sevenEntryExample).state()
        let b = replay(Array(sevenEntryExample.dropLast())).state()
        #expect(a.digest != b.digest)
        #expect(ListState().digest == ListState().digest)
    }
}

/// MERGE.md §3.2 spelled out for adds that all follow the same item: per author by change key,
/// split into runs, runs newest first by their newest member, members newest first. The texts.
func siblingOrderSpelledOut(_ entries: [JournalEntry], authors: [String]) -> [String] {
    var runs: [[JournalEntry]] = []
    for a in authors {
        var run: [JournalEntry] = []
        for e in entries.filter({ $0.author == a }).sorted(by: { ChangeKey($0) < ChangeKey($1) }) {
            if let last = run.last, e.clock.physicalMillis - last.clock.physicalMillis > ListReducer.runWindowMillis {
                runs.append(run)
                run = []
            }
            run.append(e)
        }
        if !run.isEmpty { runs.append(run) }
    }
    runs.sort { ChangeKey($0.last!) > ChangeKey($1.last!) }
    return runs.flatMap { $0.reversed() }.map { e -> String in
        guard case .add(_, let text, _) = e.operation else { return "" }
        return text
    }
}

/// The query layer's helpers with no threshold: every list here is built on two threads.
struct AlwaysTwoThreads: ReducerHelpers {
    var minimumWarmBytes: Int { 0 }
    var minimumParallelWork: Int { 0 }
    func warm(_ ranges: [UnsafeMutableRawBufferPointer]) -> (any PageWarming)? { HelperThreads().warm(ranges) }
    func run(_ other: () -> Void, _ here: () -> Void) { HelperThreads().run(other, here) }
}

@Suite struct TwoThreadsTests {
    /// Items built on two threads (every list here is large enough) are the items built on one,
    /// in the same order, on hostile input too.
    @Test func aStateBuiltOnTwoThreadsIsTheStateBuiltOnOne() {
        for seed in 0..<60 as Range<UInt64> {
            let r = replay(hostileEntries(seed: seed, count: Int(seed % 4 == 0 ? 600 : seed % 150 + 1)))
            #expect(r.state(helpers: AlwaysTwoThreads()) == r.state(helpers: nil), "seed \(seed)")
        }
    }
}

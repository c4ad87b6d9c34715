import JournalCodec
import Testing
@testable import ListModel

/// Moves (Spec/MERGE.md §3.5, COMPACTION.md §2.2, SNAPSHOT.md §3).
@Suite struct MoveTests {
    /// Milk, bread and eggs, each added after the one before.
    static let three = [add("a1", "milk", "Milk", at: 0), add("a2", "bread", "Bread", after: "milk", at: 1_000),
                        add("a3", "eggs", "Eggs", after: "bread", at: 2_000)]

    static func move(_ entryID: String, _ item: String, after: String?, by author: String = "alice", at ms: UInt64) -> JournalEntry {
        change(entryID, .move(item: id(item), after: after.map(id)), by: author, at: ms)
    }

    @Test func aMovedItemShowsAfterItsNewAnchorAndNothingElseMoves() {
        #expect(texts(replay(Self.three + [Self.move("m1", "eggs", after: nil, at: 3_000)]).state()) == ["Eggs", "Milk", "Bread"])
        #expect(texts(replay(Self.three + [Self.move("m1", "milk", after: "eggs", at: 3_000)]).state()) == ["Bread", "Eggs", "Milk"])
    }

    @Test func itemsAddedAfterAMovedItemFollowWhereItStoodAtTheirKey() {
        // Bread was added after milk before milk moved: it stays. Jam, added after milk once it
        // had moved, follows it.
        let e = Self.three + [Self.move("m1", "milk", after: "eggs", at: 3_000), add("a4", "jam", "Jam", after: "milk", at: 4_000)]
        #expect(texts(replay(e).state()) == ["Bread", "Eggs", "Milk", "Jam"])
    }

    @Test func theLatestMoveWinsInAnyArrivalOrder() {
        let e = Self.three + [Self.move("m1", "milk", after: "eggs", by: "alice", at: 3_000),
                              Self.move("m2", "milk", after: "bread", by: "bob", at: 3_500)]
        #expect(texts(replay(e).state()) == ["Bread", "Milk", "Eggs"])
        #expect(replay(e.reversed()) == replay(e))
    }

    @Test func successiveMovesToTheTopStackNewestFirst() {
        let e = Self.three + [Self.move("m1", "bread", after: nil, at: 3_000), Self.move("m2", "eggs", after: nil, at: 3_100)]
        #expect(texts(replay(e).state()) == ["Eggs", "Bread", "Milk"])
    }

    @Test func aMoveBeforeItsAddIsKeptAndAppliesWhenTheAddArrives() {
        let mv = Self.move("m1", "milk", after: "eggs", at: 3_000)
        var r = replay([mv])
        #expect(r.state().items.isEmpty)
        r.apply(contentsOf: Self.three)
        #expect(texts(r.state()) == ["Bread", "Eggs", "Milk"])
        #expect(r.contains(entry: id("m1")))
    }

    @Test func aDuplicateMoveIsNotNew() {
        var r = replay(Self.three)
        let first = r.apply(Self.move("m1", "eggs", after: nil, at: 3_000))
        let again = r.apply(Self.move("m1", "eggs", after: nil, at: 3_000))
        #expect(first && !again)
        #expect(r.entryCount == 4)
    }

    @Test func aSnapshotHoldsEveryMoveAndSaysSoInItsHeader() throws {
        let e = Self.three + [Self.move("m1", "milk", after: "eggs", at: 3_000), add("a4", "jam", "Jam", after: "milk", at: 4_000),
                              Self.move("m2", "milk", after: nil, by: "bob", at: 5_000), Self.move("m3", "ghost", after: "jam", at: 6_000)]
        let bytes = SnapshotCodec.encode(reducer: replay(e), incarnation: 1, sequence: 7)
        let (header, decoded) = try SnapshotCodec.decode(bytes)
        #expect(header.flags & SnapshotCodec.flagMoves != 0)
        #expect(decoded == replay(e))
        #expect(texts(decoded.state()) == ["Milk", "Bread", "Eggs", "Jam"])
        let plain = SnapshotCodec.encode(reducer: replay(Self.three), incarnation: 1, sequence: 3)
        #expect(try SnapshotCodec.decode(plain).header.flags & SnapshotCodec.flagMoves == 0)
    }

    @Test func theHistoryRecordsAMove() {
        let log = HistoryTests.log(Self.three + [Self.move("m1", "milk", after: "eggs", by: "bob", at: 3_000)])
        let events = log.events(forItem: id("milk"))
        #expect(events.map(\.kind) == [.added, .moved])
        #expect(events.last?.author == "bob" && events.last?.text == "Milk")
    }

    @Test func aLocalMoveIsCheckedAgainstTheList() {
        let list = replay(Self.three).state()
        #expect(ListEdit.refusal(of: .move(item: id("milk"), after: id("eggs")), on: list) == nil)
        #expect(ListEdit.refusal(of: .move(item: id("milk"), after: nil), on: list) == nil)
        #expect(ListEdit.refusal(of: .move(item: id("tea"), after: nil), on: list) == .unknownItem(id("tea")))
        #expect(ListEdit.refusal(of: .move(item: id("milk"), after: id("tea")), on: list) == .anchorNotOnList(id("tea")))
        #expect(ListEdit.refusal(of: .move(item: id("milk"), after: id("milk")), on: list) == .anchoredToItself(id("milk")))
    }

    // MARK: Compaction (COMPACTION.md §2.2)

    @Test func aFinishedMovedItemGoesWholeWithItsMoves() {
        let e = Self.three + [Self.move("m1", "eggs", after: nil, at: 3_000), Self.move("m2", "eggs", after: "milk", at: 3_500),
                              change("d1", .markOff(item: id("eggs")), at: 4_000)]
        #expect(RetentionTests.purged(e) == ["a3", "m1", "m2", "d1"])
        #expect(texts(replay(RetentionTests.compacted(RetentionTests.numbered(e)).map(\.1)).state()) == ["Milk", "Bread"])
    }

    @Test func aFinishedMovedItemThatAnItemAddedBeforeTheMoveFollowsStaysWhole() {
        // Bread was added after milk where milk first stood; milk moved, then was marked off.
        let e = Self.three + [Self.move("m1", "milk", after: "eggs", at: 3_000), change("d1", .markOff(item: id("milk")), at: 4_000)]
        #expect(RetentionTests.purged(e).isEmpty)
        #expect(RetentionTests.rewritten(e).isEmpty)
    }

    @Test func aFinishedMovedItemThatAnItemStillFollowsStaysWhole() {
        // Jam follows milk's moved place; milk is marked off, jam is not.
        let e = Self.three + [Self.move("m1", "milk", after: "eggs", at: 3_000), add("a4", "jam", "Jam", after: "milk", at: 4_000),
                              change("d1", .markOff(item: id("milk")), at: 5_000)]
        #expect(RetentionTests.purged(e).isEmpty)
        #expect(RetentionTests.rewritten(e).isEmpty)
    }

    @Test func aFinishedAnchorOfAMoveThatStaysKeepsItsPlace() {
        // Eggs moved after milk; milk is deleted: milk stays as a placement, so eggs keeps its place.
        let e = Self.three + [Self.move("m1", "eggs", after: "milk", at: 3_000), change("d1", .delete(item: id("milk")), at: 4_000)]
        let log = RetentionTests.compacted(RetentionTests.numbered(e))
        #expect(texts(replay(log.map(\.1)).state()) == ["Eggs", "Bread"])
        #expect(RetentionTests.rewritten(e)["a1"] == .place(item: id("milk"), after: nil))
        #expect(RetentionTests.all.plan(log).isEmpty)
    }

    /// Over random journals with moves (clock ties, ghosts, self anchors, moves before adds):
    /// compaction with everything old keeps the order and state of every item that stays, and a
    /// second run finds nothing.
    @Test func compactionKeepsEveryPlaceInListsWithMoves() {
        for seed in 0..<UInt64(400) {
            let n = Int(1 + (seed &* 7919) % 150)
            let entries = RetentionTests.numbered(randomEntries(seed: seed &* 0x9E37_79B9_7F4A_7C15, count: n, moves: true))
            let before = replay(entries.map(\.1)).state()
            let log = RetentionTests.compacted(entries)
            let after = replay(log.map(\.1)).state()
            let removed = Set(before.items.map(\.id)).subtracting(after.items.map(\.id))
            #expect(after.items == before.items.filter { !removed.contains($0.id) }, "seed \(seed)")
            #expect(RetentionTests.all.plan(log).isEmpty, "seed \(seed): a second run finds nothing")
        }
    }
}

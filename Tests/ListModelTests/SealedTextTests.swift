import JournalCodec
import Testing
@testable import ListModel

/// Sealed texts in the list model (Spec/MERGE.md §11): a sealed add, rename or recolour follows
/// its plain kind's rule, its text carried as bytes the model never reads. No key is needed
/// here: the values are made of fixed bytes.
@Suite struct SealedTextTests {
    /// A sealed value of epoch 1 whose bytes all equal `fill` (32 bytes: 16 padded, a 16-byte tag).
    static func value(_ fill: UInt8) -> SealedValue {
        SealedValue(epoch: 1, nonce: [UInt8](repeating: fill, count: 12), sealed: [UInt8](repeating: fill, count: 32))
    }

    static func sealedAdd(_ entryID: String, _ item: String, _ fill: UInt8, after: String? = nil, by author: String = "alice",
                          at ms: UInt64) -> JournalEntry {
        change(entryID, SealedChange.add(item: id(item), after: after.map(id), text: value(fill)).operation, by: author, at: ms)
    }

    static func sealedRename(_ entryID: String, _ fill: UInt8, at ms: UInt64) -> JournalEntry {
        change(entryID, SealedChange.rename(value(fill)).operation, by: "bob", at: ms)
    }

    /// Milk, bread and eggs sealed (eggs after bread after milk), a sealed name, bread deleted
    /// and milk marked off, as MERGE.md §1's example.
    static let example: [JournalEntry] = [
        sealedAdd("e1", "milk", 1, at: 0), sealedAdd("e2", "bread", 2, after: "milk", at: 1_000),
        sealedRename("e3", 3, at: 2_000), sealedAdd("e5", "eggs", 5, after: "bread", at: 4_000),
        change("e6", .delete(item: id("bread")), by: "bob", at: 5_000), change("e7", .markOff(item: id("milk")), at: 6_000),
    ]

    @Test func sealedAddsOrderAndShowLikeAddsWithTheirTextSealed() throws {
        let state = replay(Self.example).state()
        #expect(state.items.map(\.id) == [id("milk"), id("eggs")])
        #expect(state.items.allSatisfy { $0.text.isEmpty })
        let milk = try #require(state.items.first?.sealedText)
        #expect(milk.value == Self.value(1))
        #expect(milk.binding == SealBinding(zone: zone, entry: id("e1"), kind: SealedChange.addKind, item: id("milk"), author: "alice",
                                            clock: Self.example[0].clock, wallTime: Self.example[0].wallTime, epoch: 1))
        #expect(state.sealedName?.value == Self.value(3) && state.name.isEmpty)
        #expect(state.items.first?.state == .markedOff)
    }

    @Test func theStateAndDigestDoNotDependOnArrivalOrder() {
        let reference = replay(Self.example)
        for seed in 0..<UInt64(8) {
            let other = replay(shuffledWithDuplicates(Self.example, seed: seed))
            #expect(other == reference)
            #expect(other.stateDigest() == reference.state().digest)
        }
    }

    /// A sealed text changes the digest (its version 2 form) and a plain list's stays version 1.
    @Test func aSealedTextTakesTheSecondDigestForm() {
        let sealed = replay(Self.example).state()
        #expect(sealed.canonicalBytes().first == 2)
        #expect(replay(sevenEntryExample).state().canonicalBytes().first == 1)
        var other = Self.example
        other[0] = Self.sealedAdd("e1", "milk", 9, at: 0)
        #expect(replay(other).state().digest != sealed.digest)
    }

    @Test func aSnapshotCarriesSealedTextsAndBindingsAndSaysSo() throws {
        let r = replay(Self.example)
        let (header, decoded) = try SnapshotCodec.decode(SnapshotCodec.encode(reducer: r, incarnation: 1, sequence: 6))
        #expect(header.flags & SnapshotCodec.flagSealed != 0)
        #expect(decoded == r)
        #expect(decoded.state() == r.state())
        #expect(try SnapshotCodec.decode(SnapshotCodec.encode(reducer: replay(sevenEntryExample), incarnation: 1, sequence: 7))
            .header.flags & SnapshotCodec.flagSealed == 0)
    }

    @Test func aDeltaCarriesASealedRecord() throws {
        let items = (0..<40).map { Self.sealedAdd("a\($0)", "i\($0)", UInt8($0 + 1), after: $0 == 0 ? nil : "i\($0 - 1)", at: UInt64($0)) }
        let base = SnapshotCodec.encode(reducer: replay(items), incarnation: 1, sequence: 40, compress: false)
        let whole = replay(items + [change("m", .markOff(item: id("i3")), at: 50), Self.sealedAdd("a40", "i40", 99, after: "i39", at: 60)])
        let delta = try #require(SnapshotDelta.encode(reducer: whole, incarnation: 1, sequence: 42, base: base))
        #expect(try SnapshotDelta.decode(delta, base: base).reducer == whole)
    }

    @Test func theHistoryKeepsSealedTextsThroughPiecesAndTheWholeHistoryCodec() throws {
        var log = ActivityLog(zone: zone)
        log.record(contentsOf: Self.example)
        let milk = log.events(forItem: id("milk"))
        #expect(milk.map(\.kind) == [.added, .markedOff])
        #expect(milk.first?.sealedText?.value == Self.value(1) && milk.first?.text == nil)
        #expect(log.allEvents().first { $0.kind == .renamed }?.sealedText?.value == Self.value(3))
        #expect(try HistoryPieceCodec.decode(HistoryPieceTests.piece(Self.example)).log == log)
        #expect(try ActivityLogCodec.decode(ActivityLogCodec.encode(log)) == log)
        // A member's device matches sealed texts through its opener; with none, nothing matches.
        let names: [SealedValue: String] = [Self.value(1): "Milk", Self.value(2): "Bread", Self.value(5): "Eggs"]
        #expect(log.deletions(ofItemsMatching: "bread").isEmpty)
        #expect(log.deletions(ofItemsMatching: "bread", opening: { names[$0.value] }).map(\.author) == ["bob"])
    }

    @Test func compactionPurgesFinishedSealedItemsAndPlacesOverTheirAdds() {
        let entries = RetentionTests.numbered(Self.example)
        let log = RetentionTests.compacted(entries)
        let before = replay(entries.map(\.1)).state(), after = replay(log.map(\.1)).state()
        #expect(after.items.map(\.id) == [id("eggs")])
        #expect(after.items == before.items.filter { $0.id == id("eggs") })
        #expect(after.sealedName == before.sealedName)
        // Milk's add became the place eggs takes (bread folded into it): no text left in it.
        #expect(RetentionTests.rewritten(Self.example)["e1"] == .place(item: id("eggs"), after: nil))
        #expect(RetentionTests.all.plan(log).isEmpty)
    }

    @Test func othersSealedAddsWaitWhileShoppingAndTheirRenamesApply() {
        let pending = [Self.sealedAdd("n1", "tea", 7, by: "bob", at: 9_000), Self.sealedRename("n2", 8, at: 9_100)]
        let (now, held) = ShoppingHold.split(pending, shown: [], holdingARecord: false)
        #expect(now.map(\.id) == [id("n2")] && held.map(\.id) == [id("n1")])
        let notes = ShoppingSession(applied: replay(Self.example), pending: held).notifications
        #expect(notes.map(\.item) == [id("tea")] && notes.first?.sealedText?.value == Self.value(7))
    }

    /// A key record and a rotation-due marker apply at once while shopping, even behind a held
    /// barrier: a device needs the newest key to write (SEALING.md §5.2, SYNC.md §7.8).
    @Test func keyRecordsAndRotationMarkersApplyAtOnceWhileShopping() {
        let barrier = change("b1", .opaque(kind: 0x90, body: [1]), by: "bob", at: 9_000)
        let record = change("k2", .opaque(kind: EpochKeyRecord.kind, body: [1, 2]), by: "bob", at: 9_100)
        let due = change("d2", .opaque(kind: SealedZone.rotationDueKind, body: SealedZone.rotationDueBody(epoch: 2)), by: "_service", at: 9_200)
        let add = Self.sealedAdd("n1", "tea", 7, by: "bob", at: 9_300)
        let (now, held) = ShoppingHold.split([barrier, record, due, add], shown: [], holdingARecord: false)
        #expect(now.map(\.id) == [id("k2"), id("d2")] && held.map(\.id) == [id("b1"), id("n1")])
    }

    @Test func aLocalSealedAddAfterAnItemNotOnTheListIsRefused() {
        let list = replay(Self.example).state()
        let op = SealedChange.add(item: id("tea"), after: id("bread"), text: Self.value(7)).operation
        #expect(ListEdit.refusal(of: op, on: list) == .anchorNotOnList(id("bread")))
        #expect(ListEdit.refusal(of: SealedChange.add(item: id("tea"), after: id("eggs"), text: Self.value(7)).operation, on: list) == nil)
    }
}

import JournalCodec
import Testing
@testable import ListModel

/// A base after a compaction its device follows (MERGE.md §10.1, `ListBase.following`).
@Suite struct BaseFollowingTests {
    /// One compaction of a whole journal, decided as the compactor decides it (passes while a
    /// decision asks for another, COMPACTION.md §2.1): the record a service sends, and the journal
    /// it leaves (purged entries gone, written-over ones replaced, sequences kept).
    struct Compaction {
        var record: CompactionRecord
        var compacted: [(SequenceNumber, JournalEntry)]
    }

    static func compaction(_ entries: [(SequenceNumber, JournalEntry)], cutoff: Int64, mark: SequenceNumber) -> Compaction {
        var planner = RetentionPlanner()
        for (s, e) in entries { planner.add(s, e) }
        var decisions = [planner.decide(cutoff: cutoff, mark: mark)]
        RetentionPasses.more(&decisions, cutoff: cutoff, mark: mark) { each in
            for (s, e) in entries { each(s, e) }
        }
        var walks = decisions.map { $0.walk() }
        var purged: [CompactID] = [], placed: [CompactionRecord.Placement] = []
        var compacted: [(SequenceNumber, JournalEntry)] = []
        for (s, e) in entries {
            switch RetentionPasses.verdict(&walks, s, e) {
            case .keep: compacted.append((s, e))
            case .purge: purged.append(e.id)
            case .replace(let op):
                guard case .place(let item, let after) = op else {
                    Issue.record("a compaction writes only places over entries, not \(op)")
                    continue
                }
                placed.append(.init(entry: e.id, item: item, anchor: after))
                var x = e
                x.operation = op
                compacted.append((s, x))
            }
        }
        let last = entries.last?.0 ?? 0
        let record = CompactionRecord(from: 0, to: last + 1, followFrom: 0, followPosition: 0, digest: replay(compacted.map(\.1)).stateDigest(),
                                      purged: purged, placed: placed)
        return Compaction(record: record, compacted: compacted)
    }

    static func base(_ r: ListReducer, sequence: SequenceNumber, compress: Bool = false) -> [UInt8] {
        SnapshotCodec.encode(reducer: r, incarnation: 1, sequence: sequence, compress: compress)
    }

    /// A device's reducer: the base adopted (MERGE.md §10), then the tail.
    static func device(base: [UInt8], tail: [JournalEntry]) throws -> ListReducer {
        let header = try SnapshotCodec.decode(base).header
        var r = ListReducer(zone: zone)
        r.apply(ListBase.entry(snapshot: base, header: header, zone: zone, wallTime: Int64(t0)))
        #expect(r.baseProblem == nil)
        r.apply(contentsOf: tail)
        return r
    }

    /// Whether two reducers hold the same state, internal state included, their entry counts aside.
    static func sameButCount(_ a: ListReducer, _ b: ListReducer) -> Bool {
        var x = a
        x.folded += b.entryCount - a.entryCount
        return x == b
    }

    /// `r` without the deleted bit of records that have no add: what a base cannot follow (a
    /// tombstone keeps no delete key, so a dangling delete purged with its item stays in it).
    static func withoutDanglingDeletes(_ r: ListReducer) -> ListReducer {
        var x = r
        for i in x.records.indices where x.records[i].flags & ItemFlag.added == 0 { x.records[i].flags &= ~(ItemFlag.deleted | ItemFlag.deleteKnown) }
        return x
    }

    /// What differs between two reducers' records and registers, for a failure's message.
    static func differences(_ a: ListReducer, _ b: ListReducer) -> [String] {
        func describe(_ r: ListReducer, _ i: Int?) -> String {
            guard let i, r.records[i].flags & ItemFlag.stored != 0 else { return "none" }
            let x = r.records[i]
            let anchor = x.anchor < 0 ? "head" : r.textIDs.compact(r.records[Int(x.anchor)].id).description
            return "flags \(x.flags & ItemFlag.stored) add \(r.addKey(i).map(\.description) ?? "-") place \(r.placeKey(i).map(\.description) ?? "-")"
                + " mark \(r.markKey(i).map(\.description) ?? "-") anchor \(anchor) text \(r.texts[i])"
        }
        var ids = Set<CompactID>()
        for r in [a, b] { for x in r.records where x.flags != 0 { ids.insert(r.textIDs.compact(x.id)) } }
        var out: [String] = []
        for id in ids.sorted() {
            let da = describe(a, a.find(id)), db = describe(b, b.find(id))
            if da != db { out.append("\(id): \(da) | \(db)") }
        }
        if a.name != b.name || a.colour != b.colour || a.participants != b.participants { out.append("registers") }
        return out
    }

    /// Journals per generator.
    static let journals = 500

    /// The property that matters: a device that holds a base of a list (a snapshot of its first
    /// k entries) and the rest as entries, and follows a compaction of the whole list (its base by
    /// `following`, its entries by id), shows exactly the compacted list. Over random journals of
    /// three generators, bases at random points, and compactions with everything old or with a
    /// random cutoff and mark.
    @Test(arguments: ["random", "structured", "rounds"])
    func aDeviceThatFollowsACompactionShowsTheCompactedList(generator: String) throws {
        var danglingDeletes = 0, exactCounts = 0, followed = 0, untouched = 0
        for seed in 0..<UInt64(Self.journals) {
            var g = SplitMix64(seed: seed &* 0x9E37 &+ 11)
            let n = 10 + Int(g.next() % 51)
            let entries: [(SequenceNumber, JournalEntry)] = switch generator {
            case "random": RetentionTests.numbered(randomEntries(seed: seed, count: n, moves: seed % 2 == 1))
            case "structured": RetentionTests.numbered(RetentionFixpointTests.structured(seed: seed, count: n))
            default: RetentionFixpointTests.rounds(seed: seed, count: n)
            }
            guard !entries.isEmpty else { continue }
            let last = entries.last!.0
            // Everything old, as a service compacts a list it holds whole; or a random cutoff and mark.
            let (cutoff, mark): (Int64, SequenceNumber) = g.next() % 3 == 0
                ? (Int64(t0 + g.next() % 3_000_001), g.next() % (last + 1))
                : (Int64(t0) + 1 << 40, last)
            let c = Self.compaction(entries, cutoff: cutoff, mark: mark)
            let k = Int(g.next() % UInt64(entries.count + 1))
            let baseSequence = k == 0 ? 0 : entries[k - 1].0
            let base = Self.base(replay(entries[..<k].map(\.1)), sequence: baseSequence, compress: g.next() % 2 == 0)
            let tail = c.compacted.filter { $0.0 > baseSequence }.map(\.1)
            let expected = replay(c.compacted.map(\.1))

            let after = try ListBase.following(base, record: try CompactionRecord.decode(c.record.encoded()))
            if after == nil { untouched += 1 } else { followed += 1 }
            let device = try Self.device(base: after ?? base, tail: tail)
            let what = "\(generator) seed \(seed), \(entries.count) entries, base after \(k), cutoff \(cutoff), mark \(mark)"
            #expect(device.stateDigest() == expected.stateDigest(), "\(what): digest")
            #expect(device.state() == expected.state(), "\(what): state")
            #expect(device.stateDigest() == c.record.digest, "\(what): the record's digest")
            // The internal state too (MERGE.md §9: what later entries meet), but for the entry
            // count, which may only be higher, and dangling deletes purged with their item.
            #expect(device.entryCount >= expected.entryCount, "\(what): entry count")
            if device.entryCount == expected.entryCount { exactCounts += 1 }
            if !Self.sameButCount(device, expected) {
                danglingDeletes += 1
                let same = Self.sameButCount(Self.withoutDanglingDeletes(device), Self.withoutDanglingDeletes(expected))
                #expect(same, "\(what): internal state: \(Self.differences(device, expected))")
            }

            // Applied again, or to a base that already reflects the compaction: nothing changes.
            if let after { #expect(try ListBase.following(after, record: c.record) == nil, "\(what): applied twice") }
            for (name, r, s) in [("a compacted base", replay(c.compacted.filter { $0.0 <= baseSequence }.map(\.1)), baseSequence),
                                 ("the compacted list", expected, last)] {
                if let again = try ListBase.following(Self.base(r, sequence: s), record: c.record) {
                    Issue.record("\(what): \(name) changed: \(Self.differences(r, try SnapshotCodec.decode(again).reducer)); record \(c.record.purged) \(c.record.placed)")
                }
            }
        }
        print("BaseFollowing \(generator): \(Self.journals) journals, \(followed) bases followed, \(untouched) untouched;"
              + " \(exactCounts) with the service's entry count; \(danglingDeletes) keep a dangling delete the compaction purged")
    }

    /// COMPACTION.md §2's worked example, with a base of MERGE.md §1's seven entries: the chain
    /// Milk → Bread folds into Eggs, whose place takes `e1`'s key.
    @Test func theWorkedExampleOfTheSpec() throws {
        let later = [
            add("e8", "tea", "Tea", at: 7_000), change("e9", .rename(name: "Weekend Shopping"), by: "bob", at: 8_000),
            add("e10", "coffee", "Coffee", after: "tea", at: 9_000), change("e11", .markOff(item: id("coffee")), at: 10_000),
            add("e12", "jam", "Jam", by: "bob", at: 11_000), change("e13", .delete(item: id("jam")), by: "bob", at: 12_000),
        ]
        let entries = RetentionTests.numbered(sevenEntryExample + later)
        let c = Self.compaction(entries, cutoff: Int64(t0) + 1 << 40, mark: 13)
        #expect(c.record.purged.map(\.description) == ["e2", "e3", "e6", "e7", "e10", "e11", "e12", "e13"])
        #expect(c.record.placed == [.init(entry: id("e1"), item: id("eggs"), anchor: nil)])

        let base = Self.base(replay(sevenEntryExample), sequence: 7)
        let after = try #require(try ListBase.following(base, record: c.record))
        let (header, r) = try SnapshotCodec.decode(after)
        #expect(header.zone == zone && header.incarnation == 1 && header.sequence == 7)
        // Milk (its add now eggs' place) and Bread (its add purged) are gone; Eggs sits at Milk's
        // place with e1's key. The name's winner e3 was purged, but e9 in the tail supersedes it.
        #expect(r.state().items.map(\.text) == ["Eggs"])
        #expect(r.state().name == "Weekly Shopping")
        #expect(r.find(id("milk")).map { r.records[$0].flags } ?? 0 == 0)
        #expect(r.find(id("bread")).map { r.records[$0].flags } ?? 0 == 0)
        #expect(r.placeKey(try #require(r.find(id("eggs")))) == ChangeKey(sevenEntryExample[0]))
        // Seven entries less the purged winners it held (e2, Bread's add; e7, Milk's mark-off).
        #expect(r.entryCount == 5)

        let device = try Self.device(base: after, tail: c.compacted.filter { $0.0 > 7 }.map(\.1))
        #expect(device.state().items.map(\.text) == ["Tea", "Eggs"])
        #expect(device.state().name == "Weekend Shopping" && device.state().colour == "yellow")
        #expect(device.stateDigest() == replay(c.compacted.map(\.1)).stateDigest())
        #expect(try ListBase.following(after, record: c.record) == nil, "applied twice")
    }

    /// Milk added before the base, marked off after it: the service purges both. The base still
    /// holds Milk's add; following the record, it no longer does, and Milk does not come back.
    @Test func anItemAddedBeforeTheBaseAndBoughtAfterItGoes() throws {
        let entries = RetentionTests.numbered([add("a", "milk", "Milk", at: 0), add("b", "tea", "Tea", at: 600_000),
                                               change("c", .markOff(item: id("milk")), at: 600_001)])
        let c = Self.compaction(entries, cutoff: Int64(t0) + 1 << 40, mark: 3)
        #expect(Set(c.record.purged.map(\.description)) == ["a", "c"])
        let base = Self.base(replay(entries[..<2].map(\.1)), sequence: 2, compress: true)
        let tail = c.compacted.filter { $0.0 > 2 }.map(\.1)
        #expect(try Self.device(base: base, tail: tail).state().items.map(\.text) == ["Tea", "Milk"], "the base alone brings Milk back")
        let after = try #require(try ListBase.following(base, record: c.record))
        #expect(try Self.device(base: after, tail: tail).state().items.map(\.text) == ["Tea"])
    }

    /// The bottom of a fold keeps its marks: only its places go (COMPACTION.md §2). Eggs, placed
    /// under Milk and marked off, is in the base without an add; Milk's add, which the compactor
    /// writes over with Eggs' place, comes after the base, as do Milk's mark-off and Eggs' add (too
    /// new to go). Eggs loses its place in the base, and is placed again by the tail, marked off.
    /// (Found by the property: a rule that removed every record left with no add and no place
    /// showed Eggs active on the device.)
    @Test func theBottomOfAFoldWhoseTopLiesAfterTheBaseKeepsItsMark() throws {
        let entries = RetentionTests.numbered([
            change("p", .place(item: id("eggs"), after: id("milk")), at: 2), change("m", .markOff(item: id("eggs")), at: 3),
            add("a", "milk", "Milk", at: 0), change("b", .markOff(item: id("milk")), at: 1),
            add("c", "eggs", "Eggs", after: "milk", at: 600_000),
        ])
        let c = Self.compaction(entries, cutoff: Int64(t0) + 1_000, mark: 5)
        #expect(Set(c.record.purged.map(\.description)) == ["p", "b"])
        #expect(c.record.placed == [.init(entry: id("a"), item: id("eggs"), anchor: nil)])
        let expected = replay(c.compacted.map(\.1)).state()
        #expect(expected.items.map(\.text) == ["Eggs"] && expected.items.first?.state == .markedOff)

        let base = Self.base(replay(entries[..<2].map(\.1)), sequence: 2)
        let after = try #require(try ListBase.following(base, record: c.record))
        let device = try Self.device(base: after, tail: c.compacted.filter { $0.0 > 2 }.map(\.1))
        #expect(device.state() == expected)
        #expect(Self.sameButCount(device, replay(c.compacted.map(\.1))))
    }

    @Test func aBaseTheRecordDoesNotTouchIsNil() throws {
        let base = Self.base(replay(sevenEntryExample), sequence: 7)
        func record(purged: [String], placed: [CompactionRecord.Placement] = []) -> CompactionRecord {
            CompactionRecord(from: 1, to: 20, followFrom: 1, followPosition: 0, digest: 0, purged: purged.map(id), placed: placed)
        }
        #expect(try ListBase.following(base, record: record(purged: [])) == nil)
        #expect(try ListBase.following(base, record: record(purged: ["e10", "e11"], placed: [.init(entry: id("e12"), item: id("jam"), anchor: nil)])) == nil)
        // e3 is the name's winner, but a purged register winner is superseded in the tail.
        #expect(try ListBase.following(base, record: record(purged: ["e3"])) == nil)
        // e6 (Bread's delete) is no winner the base holds: a tombstone keeps no delete.
        #expect(try ListBase.following(base, record: record(purged: ["e6"])) == nil)
        #expect(try ListBase.following(base, record: record(purged: ["e2"])) != nil)
    }

    @Test func aCorruptSnapshotThrowsATypedError() {
        let record = CompactionRecord(from: 1, to: 20, followFrom: 1, followPosition: 0, digest: 0, purged: [id("e2")], placed: [])
        var base = Self.base(replay(sevenEntryExample), sequence: 7)
        base[base.count - 3] ^= 0x40
        #expect(throws: SnapshotError.bodyChecksumMismatch) { try ListBase.following(base, record: record) }
        #expect(throws: SnapshotError.truncated) { try ListBase.following(Array(base.prefix(40)), record: record) }
        #expect(throws: SnapshotError.badMagic) { try ListBase.following([UInt8](repeating: 0, count: 80), record: record) }
    }
}

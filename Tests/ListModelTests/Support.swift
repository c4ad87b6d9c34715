import Foundation
import JournalCodec
@testable import ListModel

let zone = "List-db6a6e29"
/// 2026-11-22T09:00:00Z.
let t0: UInt64 = 1_795_338_000_000

func id(_ s: String) -> CompactID { CompactID(s)! }

/// An entry at `t0 + ms` (wall time equal to the clock's physical part).
func change(_ entryID: String, _ op: JournalCodec.EntryOperation, by author: String = "alice", at ms: UInt64, counter: UInt16 = 0,
           zone z: String = zone) -> JournalEntry {
    let clock = HybridTime(physicalMillis: t0 + ms, counter: counter)
    return JournalEntry(id: id(entryID), zone: z, author: author, wallTime: Int64(t0 + ms), clock: clock, operation: op)
}

func add(_ entryID: String, _ item: String, _ text: String, after: String? = nil, by author: String = "alice",
         at ms: UInt64, counter: UInt16 = 0) -> JournalEntry {
    change(entryID, .add(item: id(item), text: text, after: after.map(id)), by: author, at: ms, counter: counter)
}

func replay(_ entries: [JournalEntry]) -> ListReducer {
    var r = ListReducer(zone: zone)
    r.apply(contentsOf: entries)
    return r
}

func texts(_ s: ListState) -> [String] { s.items.map(\.text) }

/// The seven-entry example of Spec/MERGE.md §1.
let sevenEntryExample: [JournalEntry] = [
    add("e1", "milk", "Milk", at: 0),
    add("e2", "bread", "Bread", after: "milk", at: 1_000),
    change("e3", .rename(name: "Weekly Shopping"), by: "bob", at: 2_000),
    change("e4", .recolour(colour: "yellow"), by: "bob", at: 3_000),
    add("e5", "eggs", "Eggs", after: "bread", at: 4_000),
    change("e6", .delete(item: id("bread")), by: "bob", at: 5_000),
    change("e7", .markOff(item: id("milk")), at: 6_000),
]

/// The seven-entry example with moves (MERGE.md §3.5): carol moves milk after eggs, then alice
/// adds jam after milk (where milk now stands): eggs, milk (marked off), jam.
let moveExample: [JournalEntry] = sevenEntryExample + [
    change("e8", .move(item: id("milk"), after: id("eggs")), by: "carol", at: 7_000),
    add("e9", "jam", "Jam", after: "milk", at: 8_000),
]

/// A random set of distinct entries of one zone that exercises every rule: clock ties, re-adds,
/// dangling operations, missing and deleted anchors, runs, renames, participants, opaque kinds;
/// with `moves`, about one entry in five more is a move (MERGE.md §3.5) of an item or a ghost,
/// after an item, a ghost, the head or itself (the entries without them are the same).
func randomEntries(seed: UInt64, count: Int, moves: Bool) -> [JournalEntry] {
    let plain = randomEntries(seed: seed, count: count)
    guard moves else { return plain }
    var g = SplitMix64(seed: seed ^ 0x6D6F_7665)
    let items = Array(Set(plain.compactMap(\.operation.item))).sorted { $0.description < $1.description }
    let authors = ["alice", "bob", "carol", "dörte"]
    var out = plain
    for n in 0..<(count / 5 + 1) {
        func someItem() -> CompactID {
            if items.isEmpty || g.next() % 8 == 0 { return id("ghost\(g.next() % 4)") }
            return items[Int(g.next() % UInt64(items.count))]
        }
        let item = someItem()
        let after: CompactID? = switch g.next() % 6 { case 0: nil; case 1: item; default: someItem() }
        let ms = g.next() % 2_000_000
        let eid = g.next() % 2 == 0 ? CompactID.random(using: &g) : id("m\(n)")
        out.insert(JournalEntry(id: eid, zone: zone, author: authors[Int(g.next() % 4)], wallTime: Int64(t0 + ms),
                                clock: HybridTime(physicalMillis: t0 + ms, counter: UInt16(g.next() % 3)),
                                operation: .move(item: item, after: after)),
                   at: Int(g.next() % UInt64(out.count + 1)))
    }
    return out
}

func randomEntries(seed: UInt64, count: Int) -> [JournalEntry] {
    var g = SplitMix64(seed: seed)
    let authors = ["alice", "bob", "carol", "dörte"]
    var items: [String] = []
    var out: [JournalEntry] = []
    for n in 0..<count {
        let ms = g.next() % 2_000_000
        let counter = UInt16(g.next() % 3)
        let by = authors[Int(g.next() % 4)]
        func someItem() -> CompactID {
            if items.isEmpty || g.next() % 8 == 0 { return id("ghost\(g.next() % 4)") }
            return id(items[Int(g.next() % UInt64(items.count))])
        }
        let op: JournalCodec.EntryOperation
        switch g.next() % 12 {
        case 0, 1, 2, 3:
            let item = g.next() % 10 == 0 && !items.isEmpty ? items[Int(g.next() % UInt64(items.count))] : "i\(n)"
            if !items.contains(item) { items.append(item) }
            let after: CompactID? = g.next() % 3 == 0 ? nil : someItem()
            op = .add(item: id(item), text: "item \(item) \(g.next() % 3)", after: after)
        case 4, 5: op = .markOff(item: someItem())
        case 6: op = .unmark(item: someItem())
        case 7: op = .delete(item: someItem())
        case 8: op = .rename(name: "name \(g.next() % 5)")
        case 9: op = .recolour(colour: ["yellow", "red", "grün"][Int(g.next() % 3)])
        case 10: op = g.next() % 2 == 0 ? .join(participant: authors[Int(g.next() % 4)]) : .leave(participant: authors[Int(g.next() % 4)])
        default:
            // Only the compactor writes places, but the merge rules hold for any set of entries.
            op = g.next() % 2 == 0 ? .opaque(kind: 0x81, body: [UInt8(truncatingIfNeeded: n)])
                : .place(item: someItem(), after: g.next() % 3 == 0 ? nil : someItem())
        }
        let eid = g.next() % 2 == 0 ? CompactID.random(using: &g) : id("e\(n)")
        out.append(JournalEntry(id: eid, zone: zone, author: by, wallTime: Int64(t0 + ms), clock: HybridTime(physicalMillis: t0 + ms, counter: counter),
                                operation: op))
    }
    return out
}

/// The same entries with every other text id (entry, item and anchor alike) replaced by a UUID
/// derived from it, so that both kinds of id meet in one reducer.
func withSomeUUIDs(_ entries: [JournalEntry]) -> [JournalEntry] {
    func swap(_ i: CompactID) -> CompactID {
        let text = i.description
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in text.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
        return h & 1 == 0 ? CompactID(uuidHigh: h, low: ~h) : i
    }
    return entries.map { e in
        var e = e
        e.id = swap(e.id)
        switch e.operation {
        case .add(let item, let text, let after): e.operation = .add(item: swap(item), text: text, after: after.map(swap))
        case .markOff(let item): e.operation = .markOff(item: swap(item))
        case .unmark(let item): e.operation = .unmark(item: swap(item))
        case .delete(let item): e.operation = .delete(item: swap(item))
        case .place(let item, let after): e.operation = .place(item: swap(item), after: after.map(swap))
        default: break
        }
        return e
    }
}

/// `entries` shuffled, with some repeated.
func shuffledWithDuplicates(_ entries: [JournalEntry], seed: UInt64) -> [JournalEntry] {
    var g = SplitMix64(seed: seed)
    var out = entries
    for _ in 0..<(entries.count / 3 + 1) where !entries.isEmpty { out.append(entries[Int(g.next() % UInt64(entries.count))]) }
    out.shuffle(using: &g)
    return out
}

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

/// Feeds every file of Fuzz/corpus/TARGET and Fuzz/regressions/TARGET to `check`; returns how many.
func replayFuzzCorpus(_ target: String, _ check: (UnsafeRawBufferPointer) -> Void) throws -> Int {
    var count = 0
    for dir in ["Fuzz/corpus/", "Fuzz/regressions/"] {
        let url = packageRoot.appendingPathComponent(dir + target)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: url.path) else { continue }
        for name in names.sorted() where !name.hasPrefix(".") {
            let data = try [UInt8](Data(contentsOf: url.appendingPathComponent(name)))
            data.withUnsafeBytes { check($0) }
            count += 1
        }
    }
    return count
}

/// Hostile entries: other zones (one differing only by a combining accent), a small pool of entry
/// ids reused for different entries, self-anchors, anchor and placement cycles, opaque kinds, long
/// and non-ASCII authors, UUID and text ids, and exact duplicates.
func hostileEntries(seed: UInt64, count: Int) -> [JournalEntry] {
    var g = SplitMix64(seed: seed)
    let zones = [zone, zone, zone, zone, zone, "other", zone + "\u{301}"]
    let authors = ["a", "bob", "a-very-long-author-name-over-15-bytes", "dörte", "ζζζζζζζζζζζζ", "x",
                   String(repeating: "q", count: 15), String(repeating: "q", count: 16)]
    func item() -> CompactID {
        let k = g.next() % 12
        return k % 2 == 0 ? CompactID(uuidHigh: 0x1000 + k, low: k &* 0x9E37) : id("it\(k)")
    }
    var out: [JournalEntry] = []
    for n in 0..<count {
        let ms = g.next() % 1_000
        let op: JournalCodec.EntryOperation
        switch g.next() % 11 {
        case 0, 1, 2:
            let it = item()
            let r = g.next() % 4
            op = .add(item: it, text: "t\(g.next() % 4)", after: r == 0 ? nil : r == 1 ? it : item())
        case 3: op = .markOff(item: item())
        case 4: op = .unmark(item: item())
        case 5: op = .delete(item: item())
        case 6: op = g.next() % 2 == 0 ? .rename(name: "n\(g.next() % 3)") : .recolour(colour: "c\(g.next() % 3)")
        case 7: op = g.next() % 2 == 0 ? .join(participant: authors[Int(g.next() % 8)]) : .leave(participant: authors[Int(g.next() % 8)])
        case 8: op = .opaque(kind: 0x80 | UInt8(g.next() % 4), body: [UInt8(truncatingIfNeeded: n)])
        default:
            let it = item()
            let r = g.next() % 4
            op = .place(item: it, after: r == 0 ? nil : r == 1 ? it : item())
        }
        let e = g.next() % 64
        let entryID = g.next() % 3 == 0 ? CompactID(uuidHigh: 7, low: e) : id("e\(e % 40)")
        out.append(JournalEntry(id: entryID, zone: zones[Int(g.next() % UInt64(zones.count))], author: authors[Int(g.next() % 8)],
                                wallTime: Int64(t0 + ms), clock: HybridTime(physicalMillis: t0 + ms, counter: UInt16(g.next() % 2)),
                                operation: op))
    }
    return shuffledWithDuplicates(out, seed: seed &+ 1)
}

/// The `name: value` lines of a vector file (Spec/vectors), comments left out.
func vectorFields(_ url: URL) throws -> [String: String] {
    let text = try String(contentsOf: url, encoding: .utf8)
    var fields: [String: String] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        guard let colon = line.firstIndex(of: ":") else { continue }
        fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return fields
}

/// The bytes a vector's lowercase hex field spells (two digits a byte).
func hexBytes(_ hex: String) -> [UInt8] {
    var raw: [UInt8] = []
    var chars = Array(hex)
    while chars.count >= 2 {
        raw.append(UInt8(String(chars[0..<2]), radix: 16)!)
        chars.removeFirst(2)
    }
    return raw
}

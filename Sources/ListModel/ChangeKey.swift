import JournalCodec

/// The total order every merge rule uses (Spec/MERGE.md §2): hybrid time, then author (UTF-8
/// bytes), then entry id. Distinct entries never compare equal, so "the last one" is well defined.
package struct ChangeKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    package var clock: HybridTime
    package var author: String
    package var entry: CompactID

    package init(clock: HybridTime, author: String, entry: CompactID) {
        self.clock = clock
        self.author = author
        self.entry = entry
    }

    package init(_ e: JournalEntry) {
        self.init(clock: e.clock, author: e.author, entry: e.id)
    }

    @inline(__always)
    package static func < (a: ChangeKey, b: ChangeKey) -> Bool {
        if a.clock != b.clock { return a.clock < b.clock }
        if let c = compareUTF8(a.author, b.author), c != 0 { return c < 0 }
        return a.entry < b.entry
    }

    package static func == (a: ChangeKey, b: ChangeKey) -> Bool {
        a.clock == b.clock && a.entry == b.entry && a.author.utf8.elementsEqual(b.author.utf8)
    }

    package func hash(into h: inout Hasher) {
        h.combine(clock)
        h.combine(entry)
    }

    package var description: String { "(\(clock), \(author), \(entry))" }
}

/// Byte-wise comparison of two strings (-1, 0, 1): the same on every platform, unlike `String.<`,
/// which follows Unicode canonical equivalence.
@inline(__always)
func compareUTF8(_ a: String, _ b: String) -> Int? {
    if a.utf8.elementsEqual(b.utf8) { return 0 }
    return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
}

@inline(__always)
func utf8Less(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

/// The change-key order (MERGE.md §2) on the list model's tables, where an author is a number
/// into `authors` and an entry id a number in `ids`: the clocks first, the authors' UTF-8 bytes
/// only on a clock tie between two authors, then the entry ids. `ChangeKey.<` is the same order
/// on whole keys; the reducer and the retention planner use this one.
@inline(__always)
func changeKeyLess(_ ca: UInt64, _ aa: Int32, _ ea: RID, _ cb: UInt64, _ ab: Int32, _ eb: RID,
                   authors: [String], ids: ReducerTextIDs) -> Bool {
    if ca != cb { return ca < cb }
    if aa != ab { return utf8Less(authors[Int(aa)], authors[Int(ab)]) }
    return ids.less(ea, eb)
}

/// Each interned author's rank in UTF-8 byte order: sorting by (clock, rank, entry id) sorts by
/// change key, with integers compared instead of strings.
func byteOrderRanks(_ authors: [String]) -> [Int32] {
    var rank = [Int32](repeating: 0, count: authors.count)
    for (r, a) in authors.indices.sorted(by: { utf8Less(authors[$0], authors[$1]) }).enumerated() { rank[a] = Int32(r) }
    return rank
}

/// A string compared and hashed by its UTF-8 bytes. Swift's `String` equality follows Unicode
/// canonical equivalence, so "é" and "e\u{301}" would collapse into one dictionary key and the
/// surviving bytes would depend on arrival order; authors and participants must not.
struct ExactString: Hashable, Sendable {
    let value: String

    init(_ value: String) { self.value = value }

    static func == (a: ExactString, b: ExactString) -> Bool { a.value.utf8.elementsEqual(b.value.utf8) }

    func hash(into h: inout Hasher) {
        var s = value
        s.withUTF8 { h.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

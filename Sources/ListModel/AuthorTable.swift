import JournalCodec

/// Authors interned by their exact UTF-8 bytes (never by canonical equivalence), numbered in the
/// order first seen: the one author table of the reducer, the retention planner and the activity
/// log. A list has a handful of authors, so most lookups end in the first eight, compared by
/// representation before bytes; the rest go through a dictionary.
struct AuthorTable: Sendable {
    private(set) var strings: [String] = []
    private var index: [ExactString: Int32] = [:]

    init() {}

    /// A table from strings already unique and in byte order (a decoded author table).
    init(sortedUnique: [String]) {
        strings = sortedUnique
        index.reserveCapacity(sortedUnique.count)
        for (i, s) in sortedUnique.enumerated() { index[ExactString(s)] = Int32(i) }
    }

    var count: Int { strings.count }

    /// The author numbered `i`.
    subscript(i: Int) -> String { strings[i] }

    /// The author's number, interning it when new.
    @inline(__always)
    mutating func intern(_ a: String) -> Int32 { recent(a) ?? internNew(a) }

    /// The author's number if it is among the first eight interned. Equal short names (up to 15
    /// bytes, stored inline) have equal representations, so a first pass compares those alone and
    /// finds most authors without reading any bytes. It writes nothing, so a caller may look up a
    /// string where it lies.
    @inline(__always)
    func recent(_ a: String) -> Int32? {
        let n = min(strings.count, 8)
        for k in 0..<n where sameRepresentation(strings[k], a) { return Int32(k) }
        for k in 0..<n where sameUTF8(strings[k], a) { return Int32(k) }
        return nil
    }

    /// The author's number from the dictionary, or a new one.
    mutating func internNew(_ a: String) -> Int32 {
        if let k = index[ExactString(a)] { return k }
        let k = Int32(strings.count)
        strings.append(a)
        index[ExactString(a)] = k
        return k
    }

    /// Every author number, in the authors' UTF-8 byte order.
    func byteOrder() -> [Int32] {
        var order = Array(0..<Int32(strings.count))
        order.sort { utf8Less(strings[Int($0)], strings[Int($1)]) }
        return order
    }
}

import JournalCodec

/// A last-writer-wins value (name, colour, a participant's membership).
struct Register<Value: Sendable & Equatable>: Sendable, Equatable {
    var key: ChangeKey
    var value: Value

    /// Takes `value` when `key` is later than the current one.
    @inline(__always)
    mutating func offer(_ key: ChangeKey, _ value: Value) {
        if self.key < key {
            self.key = key
            self.value = value
        }
    }
}

/// Item record flags.
enum ItemFlag {
    /// The winning (first) add has arrived.
    static let added: UInt8 = 1
    /// A delete has arrived: final. A tombstone keeps only what ordering needs (its add key and
    /// anchor), never its text, added time or mark.
    static let deleted: UInt8 = 2
    /// A markOff or unmark has arrived (never set on a tombstone).
    static let marked: UInt8 = 4
    /// That winner is a markOff (needs `marked`).
    static let markedOff: UInt8 = 8
}

/// Folds the entries of one zone, in any order and with duplicates, into a `ListState` that
/// depends only on the set of distinct entries (Spec/MERGE.md). Pure: no I/O, no Foundation.
///
/// Items live in parallel arrays indexed by a dense record number (struct of arrays), ids are
/// interned once through `IDTable`, authors through a small table: applying an entry does two or
/// three open-addressing probes and no allocation beyond amortised array growth.
/// Every operation is idempotent and order-independent (a join-semilattice), so duplicate
/// detection only keeps `apply`'s return value and `entryCount` exact (MERGE.md §9). It costs no
/// lookup for most entries: an entry that wins (a first add, a later mark or register value, a
/// first delete) cannot have been applied before, since winners only move one way; the id of
/// every applied entry is either held by the state as a winner or kept in `seen`, where it goes
/// when it loses or is superseded. Entry ids are never part of snapshots.
public struct ListReducer: Sendable {
    /// Entries of other zones are ignored.
    public let zone: String
    /// Entries folded in before this value was decoded from a snapshot (their ids are not kept).
    var folded = 0
    /// Entries applied since this value was created or decoded.
    var applied = 0
    /// Ids of applied entries that the state does not hold as winners (in memory only).
    var seen = IDTable()
    /// Item id → record number.
    var index = IDTable()

    /// Interned authors, in first-seen order (their UTF-8 order is computed when needed).
    var authors: [String] = []
    var authorIndex: [ExactString: Int32] = [:]

    // Item records, struct of arrays. A record exists for every item id an operation or an add's
    // anchor names; records with flags 0 (anchors only) are not part of the state.
    var ids: [CompactID] = []
    var flags: [UInt8] = []
    var addClock: [UInt64] = []
    var addAuthor: [Int32] = []
    var addEntry: [CompactID] = []
    var addedAt: [Int64] = []
    var texts: [String] = []
    /// Record number of the anchor, or -1 for the head.
    var anchor: [Int32] = []
    var markClock: [UInt64] = []
    var markAuthor: [Int32] = []
    var markEntry: [CompactID] = []
    var markedAt: [Int64] = []
    /// The delete that made each tombstone (in memory only, for duplicate detection; nil when
    /// unknown, e.g. folded into a snapshot).
    var deleteEntry: [CompactID?] = []

    var name: Register<String>?
    var colour: Register<String>?
    /// Participant → whether the latest join/leave was a join.
    var participants: [ExactString: Register<Bool>] = [:]

    static let noID = CompactID(uuidHigh: 0, low: 0)

    public init(zone: String) { self.zone = zone }

    /// Reserves room for about `entries` more entries, to avoid rehashing during a bulk replay.
    public mutating func reserveCapacity(_ entries: Int) {
        seen.reserveCapacity(seen.count + entries / 4)
        reserveItems(ids.count + entries / 2)
    }

    /// Reserves room for `items` item records in total.
    mutating func reserveItems(_ items: Int) {
        index.reserveCapacity(items)
        ids.reserveCapacity(items)
        flags.reserveCapacity(items)
        addClock.reserveCapacity(items)
        addAuthor.reserveCapacity(items)
        addEntry.reserveCapacity(items)
        addedAt.reserveCapacity(items)
        texts.reserveCapacity(items)
        anchor.reserveCapacity(items)
        markClock.reserveCapacity(items)
        markAuthor.reserveCapacity(items)
        markEntry.reserveCapacity(items)
        markedAt.reserveCapacity(items)
        deleteEntry.reserveCapacity(items)
    }

    /// How many distinct entries have been folded in (the store never holds two with one id).
    public var entryCount: Int { folded + applied }

    /// Whether the entry with this id has been applied since this reducer was created or decoded,
    /// or is a winner folded into a snapshot (a snapshot keeps only the count of its entries).
    /// O(items) when the id is not in `seen`: meant for single entries (shopping mode).
    public func contains(entry id: CompactID) -> Bool {
        if seen.find(id) != nil { return true }
        if name?.key.entry == id || colour?.key.entry == id { return true }
        if participants.values.contains(where: { $0.key.entry == id }) { return true }
        for i in ids.indices {
            let f = flags[i]
            if f & ItemFlag.added != 0, addEntry[i] == id { return true }
            if f & ItemFlag.marked != 0, markEntry[i] == id { return true }
            if f & ItemFlag.deleted != 0, deleteEntry[i] == id { return true }
        }
        return false
    }

    /// Applies one entry. Returns false (and changes nothing) for a duplicate or another zone's entry.
    @discardableResult
    public mutating func apply(_ e: JournalEntry) -> Bool {
        guard sameUTF8(e.zone, zone) else { return false }
        let new: Bool
        switch e.operation {
        case .add(let item, let text, let after):
            new = add(slot(item), e, text, after)
        case .markOff(let item):
            new = mark(slot(item), e, markedOff: true)
        case .unmark(let item):
            new = mark(slot(item), e, markedOff: false)
        case .delete(let item):
            new = delete(slot(item), e)
        case .rename(let newName):
            new = Self.offer(&name, &seen, ChangeKey(e), newName)
        case .recolour(let newColour):
            new = Self.offer(&colour, &seen, ChangeKey(e), newColour)
        case .join(let p):
            new = Self.offer(&participants[ExactString(p)], &seen, ChangeKey(e), true)
        case .leave(let p):
            new = Self.offer(&participants[ExactString(p)], &seen, ChangeKey(e), false)
        case .opaque:
            new = seen.insert(e.id)
        }
        if new { applied += 1 }
        return new
    }

    /// Applies entries in order; returns how many were new.
    @discardableResult @inlinable
    public mutating func apply<S: Sequence>(contentsOf entries: S) -> Int where S.Element == JournalEntry {
        var n = 0
        for e in entries where apply(e) { n += 1 }
        return n
    }

    /// The first add wins (MERGE.md §5). Returns whether the entry is new.
    @inline(__always)
    private mutating func add(_ i: Int, _ e: JournalEntry, _ text: String, _ after: CompactID?) -> Bool {
        let a = intern(e.author)
        let f = flags[i]
        if f & ItemFlag.added != 0 {
            if addEntry[i] == e.id { return false }
            // A losing add: new unless seen before. (A winning one was never applied: the winner
            // only ever gets earlier.)
            guard keyLess(e.clock.rawValue, a, e.id, addClock[i], addAuthor[i], addEntry[i]) else { return seen.insert(e.id) }
            _ = seen.insert(addEntry[i])
        }
        let anchorRecord = after.map { Int32(slot($0)) } ?? -1
        flags[i] = f | ItemFlag.added
        addClock[i] = e.clock.rawValue
        addAuthor[i] = a
        addEntry[i] = e.id
        anchor[i] = anchorRecord
        if f & ItemFlag.deleted == 0 {
            texts[i] = text
            addedAt[i] = e.wallTime
        }
        return true
    }

    /// The last markOff or unmark wins; a tombstone keeps no mark (delete is final).
    @inline(__always)
    private mutating func mark(_ i: Int, _ e: JournalEntry, markedOff: Bool) -> Bool {
        let f = flags[i]
        guard f & ItemFlag.deleted == 0 else { return seen.insert(e.id) }
        let a = intern(e.author)
        if f & ItemFlag.marked != 0 {
            if markEntry[i] == e.id { return false }
            // The winner only ever gets later (a delete, which clears it, is final).
            guard keyLess(markClock[i], markAuthor[i], markEntry[i], e.clock.rawValue, a, e.id) else { return seen.insert(e.id) }
            _ = seen.insert(markEntry[i])
        }
        flags[i] = (f | ItemFlag.marked) & ~ItemFlag.markedOff | (markedOff ? ItemFlag.markedOff : 0)
        markClock[i] = e.clock.rawValue
        markAuthor[i] = a
        markEntry[i] = e.id
        markedAt[i] = e.wallTime
        return true
    }

    /// Delete is final: the record becomes a tombstone.
    @inline(__always)
    private mutating func delete(_ i: Int, _ e: JournalEntry) -> Bool {
        let f = flags[i]
        if f & ItemFlag.deleted != 0 {
            if deleteEntry[i] == e.id { return false }
            return seen.insert(e.id)
        }
        if f & ItemFlag.marked != 0 { _ = seen.insert(markEntry[i]) }
        flags[i] = (f | ItemFlag.deleted) & ~(ItemFlag.marked | ItemFlag.markedOff)
        deleteEntry[i] = e.id
        clearTombstone(i)
        return true
    }

    /// Drops what a tombstone no longer needs, so its fields depend only on the entry set.
    @inline(__always)
    mutating func clearTombstone(_ i: Int) {
        texts[i] = ""
        addedAt[i] = 0
        markClock[i] = 0
        markAuthor[i] = 0
        markEntry[i] = Self.noID
        markedAt[i] = 0
    }

    /// Last writer wins. Returns whether the entry is new.
    @inline(__always)
    private static func offer<V>(_ r: inout Register<V>?, _ seen: inout IDTable, _ key: ChangeKey, _ value: V) -> Bool {
        guard let current = r else {
            r = Register(key: key, value: value)
            return true
        }
        if current.key.entry == key.entry { return false }
        guard current.key < key else { return seen.insert(key.entry) }
        _ = seen.insert(current.key.entry)
        r = Register(key: key, value: value)
        return true
    }

    /// The record number for `id`, creating an empty record (flags 0) on first sight.
    @inline(__always)
    mutating func slot(_ id: CompactID) -> Int {
        let n = ids.count
        let i = Int(index.findOrInsert(id, Int32(n)))
        if i == n {
            precondition(n < Int(Int32.max), "too many items for one reducer")
            ids.append(id)
            flags.append(0)
            addClock.append(0)
            addAuthor.append(0)
            addEntry.append(Self.noID)
            addedAt.append(0)
            texts.append("")
            anchor.append(-1)
            markClock.append(0)
            markAuthor.append(0)
            markEntry.append(Self.noID)
            markedAt.append(0)
            deleteEntry.append(nil)
        }
        return i
    }

    /// The author's interned number: a linear scan of the few recent authors, then a dictionary.
    @inline(__always)
    mutating func intern(_ author: String) -> Int32 {
        for k in 0..<min(authors.count, 8) where sameUTF8(authors[k], author) { return Int32(k) }
        if let k = authorIndex[ExactString(author)] { return k }
        let k = Int32(authors.count)
        authors.append(author)
        authorIndex[ExactString(author)] = k
        return k
    }

    /// The change-key order (MERGE.md §2) on interned authors: bytes only compared on a clock tie.
    @inline(__always)
    func keyLess(_ ca: UInt64, _ aa: Int32, _ ea: CompactID, _ cb: UInt64, _ ab: Int32, _ eb: CompactID) -> Bool {
        if ca != cb { return ca < cb }
        if aa != ab { return utf8Less(authors[Int(aa)], authors[Int(ab)]) }
        return ea < eb
    }

    func addKey(_ i: Int) -> ChangeKey? {
        guard flags[i] & ItemFlag.added != 0 else { return nil }
        return ChangeKey(clock: HybridTime(rawValue: addClock[i]), author: authors[Int(addAuthor[i])], entry: addEntry[i])
    }

    func markKey(_ i: Int) -> ChangeKey? {
        guard flags[i] & ItemFlag.marked != 0 else { return nil }
        return ChangeKey(clock: HybridTime(rawValue: markClock[i]), author: authors[Int(markAuthor[i])], entry: markEntry[i])
    }

    // MARK: Materialising

    /// The list as it stands: a pure function of the set of entries applied.
    public func state() -> ListState {
        let order = linearOrder()
        var out: [ListItem] = []
        out.reserveCapacity(order.count)
        for x in order {
            let i = Int(x)
            let f = flags[i]
            guard f & ItemFlag.deleted == 0 else { continue }
            let marked = f & ItemFlag.markedOff != 0
            out.append(ListItem(id: ids[i], text: texts[i], state: marked ? .markedOff : .active, addedBy: authors[Int(addAuthor[i])],
                                addedAt: addedAt[i], markedOffBy: marked ? authors[Int(markAuthor[i])] : nil,
                                markedOffAt: marked ? markedAt[i] : nil))
        }
        var people: [String] = []
        for (p, r) in participants where r.value { people.append(p.value) }
        people.sort(by: utf8Less)
        return ListState(name: name?.value ?? "", colour: colour?.value ?? "", items: out, participants: people)
    }

    /// `state().digest` (MERGE.md §8) straight from the records, without building the state:
    /// snapshot encoding and decoding need only the digest, and open builds the state anyway.
    public func stateDigest() -> UInt64 {
        let order = linearOrder()
        var visible = 0
        for x in order where flags[Int(x)] & ItemFlag.deleted == 0 { visible += 1 }
        var w = ByteWriter(capacity: 64 + visible * 48)
        w.u8(1)
        w.string(name?.value ?? "")
        w.string(colour?.value ?? "")
        w.varint(UInt64(visible))
        for x in order {
            let i = Int(x)
            let f = flags[i]
            guard f & ItemFlag.deleted == 0 else { continue }
            ids[i].encoded(into: &w)
            w.string(texts[i])
            let marked = f & ItemFlag.markedOff != 0
            w.u8(marked ? ListItem.State.markedOff.rawValue : ListItem.State.active.rawValue)
            w.string(authors[Int(addAuthor[i])])
            w.zigzag(addedAt[i])
            if marked {
                w.string(authors[Int(markAuthor[i])])
                w.zigzag(markedAt[i])
            }
        }
        var people: [String] = []
        for (p, r) in participants where r.value { people.append(p.value) }
        people.sort(by: utf8Less)
        w.varint(UInt64(people.count))
        for p in people { w.string(p) }
        return SipHash24.hash(key: ListState.digestKey, w.bytes)
    }

    /// Two replicas' consecutive same-author siblings at most this far apart (physical ms) form
    /// one run, kept together (MERGE.md §3.2).
    public static let runWindowMillis: UInt64 = 300_000

    /// Record numbers of every added record (tombstones included) in list order (MERGE.md §3).
    /// Works on local copies of the arrays: closures that captured `self` copied the whole
    /// reducer on every sort comparison.
    func linearOrder() -> [Int32] {
        let n = ids.count
        let head = n, orphans = n + 1
        // Integer sort keys: hlc and the author's rank in UTF-8 order; the entry id breaks ties.
        var rank = [Int32](repeating: 0, count: authors.count)
        let authors = self.authors
        for (r, a) in authors.indices.sorted(by: { utf8Less(authors[$0], authors[$1]) }).enumerated() { rank[a] = Int32(r) }
        let flags = self.flags, anchor = self.anchor, addAuthor = self.addAuthor
        var authorRank = [Int32](repeating: 0, count: n)
        // Parent of each added record: its anchor when that was added, else the head or the orphan root.
        var parent = [Int32](repeating: -1, count: n)
        var childStart = [Int32](repeating: 0, count: n + 3)
        var added = 0
        for i in 0..<n where flags[i] & ItemFlag.added != 0 {
            added += 1
            authorRank[i] = rank[Int(addAuthor[i])]
            var p = head
            let a = Int(anchor[i])
            if a >= 0 { p = flags[a] & ItemFlag.added != 0 ? a : orphans }
            parent[i] = Int32(p)
            childStart[p + 1] += 1
        }
        // Children in one flat array (compressed sparse rows).
        for k in 1..<(n + 3) { childStart[k] += childStart[k - 1] }
        var children = [Int32](repeating: 0, count: added)
        var fill = childStart
        for i in 0..<n where parent[i] >= 0 {
            let p = Int(parent[i])
            children[Int(fill[p])] = Int32(i)
            fill[p] += 1
        }
        let entry = addEntry
        let author = authorRank
        return addClock.withUnsafeBufferPointer { clock in
            author.withUnsafeBufferPointer { author in
                entry.withUnsafeBufferPointer { entry in
                    children.withUnsafeMutableBufferPointer { c in
                        Self.order(n: n, added: added, clock: clock, author: author, entry: entry, parent: parent,
                                   childStart: childStart, children: c)
                    }
                }
            }
        }
    }

    /// Sorts each sibling group (MERGE.md §3.2) and walks the tree in pre-order (§3.1, §3.3).
    private static func order(n: Int, added: Int, clock: UnsafeBufferPointer<UInt64>, author: UnsafeBufferPointer<Int32>,
                              entry: UnsafeBufferPointer<CompactID>, parent: [Int32], childStart: [Int32],
                              children c: UnsafeMutableBufferPointer<Int32>) -> [Int32] {
        let head = n, orphans = n + 1
        /// The change-key order of two added records (MERGE.md §2).
        @inline(__always) func less(_ a: Int32, _ b: Int32) -> Bool {
            let x = Int(a), y = Int(b)
            if clock[x] != clock[y] { return clock[x] < clock[y] }
            if author[x] != author[y] { return author[x] < author[y] }
            return entry[x] < entry[y]
        }
        var runs: [(top: Int32, member: Int32)] = []
        for p in 0...orphans {
            let lo = Int(childStart[p]), hi = Int(childStart[p + 1])
            guard hi - lo > 1 else { continue }
            var group = UnsafeMutableBufferPointer(rebasing: c[lo..<hi])
            if p == orphans {
                group.sort(by: less)
                continue
            }
            // Siblings: each author's siblings split into runs (consecutive in change order, at
            // most `runWindowMillis` apart); runs newest first by their newest member; within a
            // run, newest first.
            group.sort { a, b in author[Int(a)] != author[Int(b)] ? author[Int(a)] < author[Int(b)] : less(a, b) }
            runs.removeAll(keepingCapacity: true)
            var start = 0
            for k in 0..<group.count {
                let ends = k == group.count - 1
                    || author[Int(group[k])] != author[Int(group[k + 1])]
                    || (clock[Int(group[k + 1])] >> 16) - (clock[Int(group[k])] >> 16) > runWindowMillis
                if ends {
                    for m in start...k { runs.append((group[k], group[m])) }
                    start = k + 1
                }
            }
            runs.sort { x, y in x.top != y.top ? less(y.top, x.top) : less(y.member, x.member) }
            for k in 0..<group.count { group[k] = runs[k].member }
        }
        // Depth-first pre-order from the head, then the orphans, then anything left (anchor cycles).
        var order: [Int32] = []
        order.reserveCapacity(added)
        var visited = [Bool](repeating: false, count: n)
        var stack: [Int32] = []
        func walk(_ root: Int, _ order: inout [Int32], _ visited: inout [Bool], _ stack: inout [Int32]) {
            if root < n {
                guard !visited[root] else { return }
                stack.append(Int32(root))
            } else {
                for k in stride(from: Int(childStart[root + 1]) - 1, through: Int(childStart[root]), by: -1) {
                    stack.append(c[k])
                }
            }
            while let x = stack.popLast() {
                let xi = Int(x)
                if visited[xi] { continue }
                visited[xi] = true
                order.append(x)
                for k in stride(from: Int(childStart[xi + 1]) - 1, through: Int(childStart[xi]), by: -1) where !visited[Int(c[k])] {
                    stack.append(c[k])
                }
            }
        }
        walk(head, &order, &visited, &stack)
        walk(orphans, &order, &visited, &stack)
        if order.count < added {
            var rest = (0..<n).filter { parent[$0] >= 0 && !visited[$0] }.map { Int32($0) }
            rest.sort(by: less)
            for i in rest { walk(Int(i), &order, &visited, &stack) }
        }
        assert(order.count == added, "every added record is placed exactly once")
        return order
    }
}

extension ListReducer: Equatable {
    /// Same set of entries folded in, hence the same internal state (record numbering, author
    /// interning and the in-memory seen-set aside).
    public static func == (a: ListReducer, b: ListReducer) -> Bool {
        guard sameUTF8(a.zone, b.zone), a.entryCount == b.entryCount, a.name == b.name, a.colour == b.colour,
              a.participants == b.participants else { return false }
        func records(_ r: ListReducer) -> Int { r.flags.reduce(0) { $0 + ($1 != 0 ? 1 : 0) } }
        guard records(a) == records(b) else { return false }
        for i in a.ids.indices where a.flags[i] != 0 {
            guard let jj = b.index.find(a.ids[i]) else { return false }
            let j = Int(jj)
            guard a.flags[i] == b.flags[j], a.addKey(i) == b.addKey(j), a.markKey(i) == b.markKey(j),
                  sameUTF8(a.texts[i], b.texts[j]), a.addedAt[i] == b.addedAt[j], a.markedAt[i] == b.markedAt[j] else { return false }
            let x = a.anchor[i], y = b.anchor[j]
            guard (x < 0) == (y < 0), x < 0 || a.ids[Int(x)] == b.ids[Int(y)] else { return false }
        }
        return true
    }
}

/// Byte-wise string equality (not Unicode canonical equivalence), with the length checked first.
@inline(__always)
func sameUTF8(_ a: String, _ b: String) -> Bool {
    // Identical representations (the same small string, or the same storage) hold the same bytes.
    let identical = MemoryLayout<String>.size == 16 && withUnsafeBytes(of: a) { p in
        withUnsafeBytes(of: b) { q in
            p.loadUnaligned(as: UInt64.self) == q.loadUnaligned(as: UInt64.self)
                && p.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == q.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        }
    }
    if identical { return true }
    let x = a.utf8, y = b.utf8
    guard x.count == y.count else { return false }
    if let r = x.withContiguousStorageIfAvailable({ p in y.withContiguousStorageIfAvailable { q in p.elementsEqual(q) } }), let r {
        return r
    }
    return x.elementsEqual(y)
}

/// `records` sorted by their ids' order (MERGE.md §2): UUIDs by their integer halves without
/// going through `CompactID.<`, text ids by `<`, then the two runs merged.
func sortedByID(_ records: [Int], _ ids: [CompactID]) -> [Int] {
    var uuids: [(high: UInt64, low: UInt64, record: Int)] = []
    uuids.reserveCapacity(records.count)
    var texts: [Int] = []
    for i in records {
        if let (h, l) = ids[i].uuidHalves { uuids.append((h, l, i)) } else { texts.append(i) }
    }
    uuids.sort { $0.high != $1.high ? $0.high < $1.high : $0.low < $1.low }
    if texts.isEmpty { return uuids.map(\.record) }
    texts.sort { ids[$0] < ids[$1] }
    var out: [Int] = []
    out.reserveCapacity(records.count)
    var u = 0, t = 0
    while u < uuids.count || t < texts.count {
        if t == texts.count || (u < uuids.count && ids[uuids[u].record] < ids[texts[t]]) {
            out.append(uuids[u].record)
            u += 1
        } else {
            out.append(texts[t])
            t += 1
        }
    }
    return out
}

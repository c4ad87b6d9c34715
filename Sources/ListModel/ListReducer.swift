import JournalCodec

/// Everything the reducer knows about one item id, whether or not its add has arrived yet.
/// Deleted items stay here as tombstones: they still anchor the items added after them.
struct ItemRecord: Sendable, Equatable {
    var id: CompactID
    /// The winning add (lowest key, MERGE.md §5); nil while only later operations have arrived.
    var addKey: ChangeKey?
    var text: String = ""
    var anchor: CompactID?
    var addedAt: Int64 = 0
    /// The winning markOff or unmark (highest key).
    var markKey: ChangeKey?
    var markedOff = false
    var markedAt: Int64 = 0
    /// Delete is final, whatever its clock.
    var deleted = false

    init(id: CompactID) { self.id = id }
}

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

/// Folds the entries of one zone, in any order and with duplicates, into a `ListState` that
/// depends only on the set of distinct entries (Spec/MERGE.md). Pure: no I/O, no Foundation.
public struct ListReducer: Sendable {
    /// Entries of other zones are ignored.
    public let zone: String
    /// Ids of every entry applied, so a duplicate is a no-op.
    var seen: Set<CompactID> = []
    var index: [CompactID: Int] = [:]
    var items: [ItemRecord] = []
    var name: Register<String>?
    var colour: Register<String>?
    /// Participant → whether the latest join/leave was a join.
    var participants: [ExactString: Register<Bool>] = [:]

    public init(zone: String) { self.zone = zone }

    /// Reserves room for about `entries` more entries, to avoid rehashing during a bulk replay.
    public mutating func reserveCapacity(_ entries: Int) {
        seen.reserveCapacity(seen.count + entries)
        index.reserveCapacity(index.count + entries / 2)
        items.reserveCapacity(items.count + entries / 2)
    }

    /// How many distinct entries have been applied.
    public var entryCount: Int { seen.count }

    /// Whether the entry with this id has been applied.
    public func contains(entry id: CompactID) -> Bool { seen.contains(id) }

    /// Applies one entry. Returns false (and changes nothing) for a duplicate or another zone's entry.
    @discardableResult
    public mutating func apply(_ e: JournalEntry) -> Bool {
        guard e.zone.utf8.elementsEqual(zone.utf8), seen.insert(e.id).inserted else { return false }
        switch e.operation {
        case .add(let item, let text, let after):
            Self.add(&items[slot(item)], e, text, after)
        case .markOff(let item):
            Self.mark(&items[slot(item)], e, markedOff: true)
        case .unmark(let item):
            Self.mark(&items[slot(item)], e, markedOff: false)
        case .delete(let item):
            items[slot(item)].deleted = true
        case .rename(let newName):
            offer(&name, ChangeKey(e), newName)
        case .recolour(let newColour):
            offer(&colour, ChangeKey(e), newColour)
        case .join(let p):
            offer(&participants[ExactString(p)], ChangeKey(e), true)
        case .leave(let p):
            offer(&participants[ExactString(p)], ChangeKey(e), false)
        case .opaque:
            break
        }
        return true
    }

    /// Applies entries in order; returns how many were new.
    @discardableResult @inlinable
    public mutating func apply<S: Sequence>(contentsOf entries: S) -> Int where S.Element == JournalEntry {
        var n = 0
        for e in entries where apply(e) { n += 1 }
        return n
    }

    /// The first add wins (MERGE.md §5).
    @inline(__always)
    private static func add(_ r: inout ItemRecord, _ e: JournalEntry, _ text: String, _ after: CompactID?) {
        let key = ChangeKey(e)
        if r.addKey != nil, r.addKey! < key { return }
        r.addKey = key
        r.text = text
        r.anchor = after
        r.addedAt = e.wallTime
    }

    /// The last markOff or unmark wins.
    @inline(__always)
    private static func mark(_ r: inout ItemRecord, _ e: JournalEntry, markedOff: Bool) {
        let key = ChangeKey(e)
        if r.markKey != nil, key < r.markKey! { return }
        r.markKey = key
        r.markedOff = markedOff
        r.markedAt = e.wallTime
    }

    @inline(__always)
    private func offer<V>(_ r: inout Register<V>?, _ key: ChangeKey, _ value: V) {
        if r == nil { r = Register(key: key, value: value) } else { r!.offer(key, value) }
    }

    /// The record index for `id`, creating an empty record with one hash lookup.
    @inline(__always)
    private mutating func slot(_ id: CompactID) -> Int {
        let n = items.count
        let i = Self.touch(&index[id, default: n])
        if i == n { items.append(ItemRecord(id: id)) }
        return i
    }

    @inline(__always)
    private static func touch(_ v: inout Int) -> Int { v }

    // MARK: Materialising

    /// The list as it stands: a pure function of the set of entries applied.
    public func state() -> ListState {
        var out: [ListItem] = []
        out.reserveCapacity(items.count)
        for i in linearOrder() {
            let r = items[Int(i)]
            guard let add = r.addKey, !r.deleted else { continue }
            let marked = r.markKey != nil && r.markedOff
            out.append(ListItem(id: r.id, text: r.text, state: marked ? .markedOff : .active, addedBy: add.author,
                                addedAt: r.addedAt, markedOffBy: marked ? r.markKey!.author : nil,
                                markedOffAt: marked ? r.markedAt : nil))
        }
        var people: [String] = []
        for (p, r) in participants where r.value { people.append(p.value) }
        people.sort(by: utf8Less)
        return ListState(name: name?.value ?? "", colour: colour?.value ?? "", items: out, participants: people)
    }

    /// Two replicas' consecutive same-author siblings at most this far apart (physical ms) form
    /// one run, kept together (MERGE.md §3.2).
    public static let runWindowMillis: UInt64 = 300_000

    /// Indices of every added record (tombstones included) in list order (MERGE.md §3).
    func linearOrder() -> [Int32] {
        let n = items.count
        let head = n, orphans = n + 1
        // Integer sort keys: hlc and the author's rank in UTF-8 order; the entry id breaks ties.
        var authorRank: [ExactString: Int32] = [:]
        for r in items { if let k = r.addKey { authorRank[ExactString(k.author)] = 0 } }
        for (rank, a) in authorRank.keys.map(\.value).sorted(by: utf8Less).enumerated() { authorRank[ExactString(a)] = Int32(rank) }
        var clock = [UInt64](repeating: 0, count: n)
        var author = [Int32](repeating: 0, count: n)
        // Parent of each added record: its anchor when that was added, else the head or the orphan root.
        var parent = [Int32](repeating: -1, count: n)
        var childCount = [Int32](repeating: 0, count: n + 3)
        var added = 0
        for i in 0..<n {
            guard let k = items[i].addKey else { continue }
            added += 1
            clock[i] = k.clock.rawValue
            author[i] = authorRank[ExactString(k.author)]!
            var p = head
            if let a = items[i].anchor {
                if let j = index[a], items[j].addKey != nil { p = j } else { p = orphans }
            }
            parent[i] = Int32(p)
            childCount[p + 1] += 1
        }
        /// The change-key order of two added records (MERGE.md §2).
        func less(_ a: Int32, _ b: Int32) -> Bool {
            let x = Int(a), y = Int(b)
            if clock[x] != clock[y] { return clock[x] < clock[y] }
            if author[x] != author[y] { return author[x] < author[y] }
            return items[x].addKey!.entry < items[y].addKey!.entry
        }
        // Children in one flat array (compressed sparse rows).
        for k in 1..<(n + 3) { childCount[k] += childCount[k - 1] }
        var children = [Int32](repeating: 0, count: added)
        var fill = childCount
        for i in 0..<n where parent[i] >= 0 {
            let p = Int(parent[i])
            children[Int(fill[p])] = Int32(i)
            fill[p] += 1
        }
        var runs: [(top: Int32, member: Int32)] = []
        children.withUnsafeMutableBufferPointer { c in
            for p in 0...orphans {
                let lo = Int(childCount[p]), hi = Int(childCount[p + 1])
                guard hi - lo > 1 else { continue }
                var group = UnsafeMutableBufferPointer(rebasing: c[lo..<hi])
                if p == orphans {
                    group.sort(by: less)
                    continue
                }
                // Siblings (MERGE.md §3.2): each author's siblings split into runs (consecutive in
                // change order, at most `runWindowMillis` apart); runs newest first by their newest
                // member; within a run, newest first.
                group.sort { a, b in author[Int(a)] != author[Int(b)] ? author[Int(a)] < author[Int(b)] : less(a, b) }
                runs.removeAll(keepingCapacity: true)
                var start = 0
                for k in 0..<group.count {
                    let ends = k == group.count - 1
                        || author[Int(group[k])] != author[Int(group[k + 1])]
                        || (clock[Int(group[k + 1])] >> 16) - (clock[Int(group[k])] >> 16) > Self.runWindowMillis
                    if ends {
                        for m in start...k { runs.append((group[k], group[m])) }
                        start = k + 1
                    }
                }
                runs.sort { x, y in x.top != y.top ? less(y.top, x.top) : less(y.member, x.member) }
                for k in 0..<group.count { group[k] = runs[k].member }
            }
        }
        // Depth-first pre-order from the head, then the orphans, then anything left (anchor cycles).
        var order: [Int32] = []
        order.reserveCapacity(added)
        var visited = [Bool](repeating: false, count: n)
        var stack: [Int32] = []
        func walk(_ root: Int) {
            if root < n {
                guard !visited[root] else { return }
                stack.append(Int32(root))
            } else {
                for k in stride(from: Int(childCount[root + 1]) - 1, through: Int(childCount[root]), by: -1) {
                    stack.append(children[k])
                }
            }
            while let x = stack.popLast() {
                let xi = Int(x)
                if visited[xi] { continue }
                visited[xi] = true
                order.append(x)
                for k in stride(from: Int(childCount[xi + 1]) - 1, through: Int(childCount[xi]), by: -1) {
                    if !visited[Int(children[k])] { stack.append(children[k]) }
                }
            }
        }
        walk(head)
        walk(orphans)
        if order.count < added {
            var rest = (0..<n).filter { parent[$0] >= 0 && !visited[$0] }.map { Int32($0) }
            rest.sort(by: less)
            for i in rest { walk(Int(i)) }
        }
        assert(order.count == added, "every added record is placed exactly once")
        return order
    }
}

extension ListReducer: Equatable {
    /// Same set of entries applied, hence the same internal state (record order aside).
    public static func == (a: ListReducer, b: ListReducer) -> Bool {
        guard a.zone.utf8.elementsEqual(b.zone.utf8), a.seen == b.seen, a.name == b.name, a.colour == b.colour,
              a.participants == b.participants, a.items.count == b.items.count else { return false }
        for r in a.items {
            guard let j = b.index[r.id], b.items[j] == r else { return false }
        }
        return true
    }
}

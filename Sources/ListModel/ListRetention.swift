import JournalCodec

/// Which entries of a list's journal the compactor may purge (Spec/COMPACTION.md §2). Pure: the
/// query layer reads the entries, this decides, and the store removes them.
///
/// An entry is *old* when its time (the later of its wall time and its hybrid clock) is before the
/// cutoff and its sequence is at or below the mark. Purged are:
/// - **finished lifecycles**: every entry about an item (its adds, mark-offs, unmarks, deletes),
///   when the item has an add and is deleted or marked off (by the winning mark, MERGE.md §5),
///   all of those entries are old, no item that stays anchors after it, and every item of its
///   sibling run (MERGE.md §3.2) goes too. Only whole subtrees and whole runs leave the tree, so
///   every item that stays keeps its place, on every replica, compacted or not;
/// - **superseded renames and recolours**: every old one except the winner (MERGE.md §4).
///
/// Joins, leaves, opaque kinds, places (MERGE.md §3.4) and dangling operations (no add) are
/// always kept.
public struct ListRetention: Sendable {
    /// Fourteen days: lifecycles finished for longer than this are purged.
    public static let defaultRetentionMillis: Int64 = 14 * 24 * 60 * 60 * 1000

    /// Entries at or after this time (milliseconds since the epoch) stay.
    public var cutoff: Int64
    /// Entries above this sequence stay (the zone's low-water mark, capped at the sealed log).
    public var mark: SequenceNumber
    /// An entry that stays whatever it is, with its item: the zone's incarnation, since the entry
    /// that started an implicitly created zone is the zone's identity (TOKENS.md §1).
    public var pinned: SequenceNumber?

    public init(cutoff: Int64, mark: SequenceNumber, pinned: SequenceNumber? = nil) {
        self.cutoff = cutoff
        self.mark = mark
        self.pinned = pinned
    }

    public init(now: Int64, retentionMillis: Int64 = defaultRetentionMillis, mark: SequenceNumber, pinned: SequenceNumber? = nil) {
        self.init(cutoff: now - retentionMillis, mark: mark, pinned: pinned)
    }

    @inline(__always)
    func isOld(_ seq: SequenceNumber, _ e: JournalEntry) -> Bool {
        seq <= mark && seq != pinned && max(e.wallTime, Int64(clamping: e.clock.physicalMillis)) < cutoff
    }

    /// The sequences to purge, ascending. `entries` are one zone incarnation's, each once.
    public func purgeable<S: Sequence>(_ entries: S) -> [SequenceNumber] where S.Element == (SequenceNumber, JournalEntry) {
        var t = ItemTable()
        var rename: (key: ChangeKey, seq: SequenceNumber)?
        var recolour: (key: ChangeKey, seq: SequenceNumber)?
        var oldRenames: [SequenceNumber] = []
        var oldRecolours: [SequenceNumber] = []
        for (seq, e) in entries {
            switch e.operation {
            case .add(let item, _, let after):
                let i = t.index(item)
                t.record(i, seq, old: isOld(seq, e))
                t.hasAdd[i] = true
                let key = ChangeKey(e)
                if t.firstKey[i].map({ key < $0 }) ?? true {
                    t.firstKey[i] = key
                    t.firstAfter[i] = after
                }
                if let after, after != item { t.anchors.append((Int32(i), after)) }
            case .markOff(let item), .unmark(let item):
                let i = t.index(item)
                t.record(i, seq, old: isOld(seq, e))
                let key = ChangeKey(e)
                if t.markKey[i].map({ $0 < key }) ?? true {
                    t.markKey[i] = key
                    if case .markOff = e.operation { t.markedOff[i] = true } else { t.markedOff[i] = false }
                }
            case .delete(let item):
                let i = t.index(item)
                t.record(i, seq, old: isOld(seq, e))
                t.deleted[i] = true
            case .rename:
                let key = ChangeKey(e)
                if rename.map({ $0.key < key }) ?? true { rename = (key, seq) }
                if isOld(seq, e) { oldRenames.append(seq) }
            case .recolour:
                let key = ChangeKey(e)
                if recolour.map({ $0.key < key }) ?? true { recolour = (key, seq) }
                if isOld(seq, e) { oldRecolours.append(seq) }
            case .join, .leave, .opaque, .place:
                continue
            }
        }
        var result = t.purgeable()
        result += oldRenames.filter { $0 != rename?.seq }
        result += oldRecolours.filter { $0 != recolour?.seq }
        return result.sorted()
    }
}

/// The items of one zone in flat arrays indexed by first appearance: one id lookup per entry, no
/// per-item allocation (the compactor reads a million entries at a time).
private struct ItemTable {
    var index = IDMap<Int32>()
    var hasAdd: [Bool] = []
    var deleted: [Bool] = []
    var allOld: [Bool] = []
    var markedOff: [Bool] = []
    var markKey: [ChangeKey?] = []
    /// The winning (first) add: it fixes the anchor and the run (MERGE.md §5, §3.2).
    var firstKey: [ChangeKey?] = []
    var firstAfter: [CompactID?] = []
    /// Each item's entries as a linked list through `entrySeq`/`entryNext`.
    var firstEntry: [Int32] = []
    var entrySeq: [SequenceNumber] = []
    var entryNext: [Int32] = []
    /// (child, anchor) for every add with an anchor: a child whose any add names an anchor keeps it.
    var anchors: [(Int32, CompactID)] = []

    var count: Int { hasAdd.count }

    mutating func index(_ id: CompactID) -> Int {
        let n = Int32(count)
        let i = index.findOrInsert(id, n)
        if i == n {
            hasAdd.append(false)
            deleted.append(false)
            allOld.append(true)
            markedOff.append(false)
            markKey.append(nil)
            firstKey.append(nil)
            firstAfter.append(nil)
            firstEntry.append(-1)
        }
        return Int(i)
    }

    mutating func record(_ i: Int, _ seq: SequenceNumber, old: Bool) {
        entrySeq.append(seq)
        entryNext.append(firstEntry[i])
        firstEntry[i] = Int32(entrySeq.count - 1)
        if !old { allOld[i] = false }
    }

    /// The entries of every item that goes with its whole subtree and its whole run.
    func purgeable() -> [SequenceNumber] {
        let n = count
        // Children and parents (CSR) from every add's anchor that is an item here.
        var childCount = [Int32](repeating: 0, count: n + 1)
        var parentCount = [Int32](repeating: 0, count: n + 1)
        var edges: [(child: Int32, parent: Int32)] = []
        edges.reserveCapacity(anchors.count)
        for (c, a) in anchors {
            guard let p = index[a] else { continue }
            edges.append((c, p))
            childCount[Int(p) + 1] += 1
            parentCount[Int(c) + 1] += 1
        }
        for k in 0..<n { childCount[k + 1] += childCount[k]; parentCount[k + 1] += parentCount[k] }
        var children = [Int32](repeating: 0, count: edges.count)
        var parents = [Int32](repeating: 0, count: edges.count)
        var cFill = childCount, pFill = parentCount
        for (c, p) in edges {
            children[Int(cFill[Int(p)])] = c; cFill[Int(p)] += 1
            parents[Int(pFill[Int(c)])] = p; pFill[Int(c)] += 1
        }

        // Decide children first (iteratively: runs of adds make deep trees); an anchor cycle
        // keeps every item on it.
        var goes = [Bool](repeating: false, count: n)
        var state = [UInt8](repeating: 0, count: n)  // 0 new, 1 on the path, 2 decided
        var stack: [(Int32, Int32)] = []
        for root in 0..<n where state[root] == 0 {
            stack.append((Int32(root), childCount[root]))
            state[root] = 1
            while let (v, next) = stack.last {
                let vi = Int(v)
                if next < childCount[vi + 1] {
                    stack[stack.count - 1].1 += 1
                    let c = Int(children[Int(next)])
                    if state[c] == 0 {
                        state[c] = 1
                        stack.append((Int32(c), childCount[c]))
                    }
                    continue
                }
                stack.removeLast()
                state[vi] = 2
                var ok = hasAdd[vi] && (deleted[vi] || markedOff[vi]) && allOld[vi]
                if ok {
                    for k in Int(childCount[vi])..<Int(childCount[vi + 1]) {
                        let c = Int(children[k])
                        // A child still on the path closes a cycle: keep.
                        if state[c] != 2 || !goes[c] { ok = false; break }
                    }
                }
                goes[vi] = ok
            }
        }

        // Sibling runs (MERGE.md §3.2) as the reducer forms them: per anchor and author, in
        // change order, split where consecutive adds are more than the run window apart. An
        // orphan (its anchor never added) is placed by its own key, in no run.
        var authors: [ExactString: Int32] = [:]
        var members: [(anchor: Int32, author: Int32, key: ChangeKey, item: Int32)] = []
        for i in 0..<n {
            guard let key = firstKey[i] else { continue }
            var anchor: Int32 = -1
            if let after = firstAfter[i] {
                guard let a = index[after], hasAdd[Int(a)] else { continue }
                anchor = a
            }
            let author = authors[ExactString(key.author), default: Int32(authors.count)]
            authors[ExactString(key.author)] = author
            members.append((anchor, author, key, Int32(i)))
        }
        members.sort { x, y in x.anchor != y.anchor ? x.anchor < y.anchor : x.author != y.author ? x.author < y.author : x.key < y.key }
        var runOf = [Int32](repeating: -1, count: n)
        var runStart: [Int32] = [0]
        for (k, m) in members.enumerated() {
            if k > 0 {
                let p = members[k - 1]
                if p.anchor != m.anchor || p.author != m.author
                    || m.key.clock.physicalMillis - p.key.clock.physicalMillis > ListReducer.runWindowMillis {
                    runStart.append(Int32(k))
                }
            }
            runOf[Int(m.item)] = Int32(runStart.count - 1)
        }
        runStart.append(Int32(members.count))

        // An item goes only with its whole run: a run with a member that stays keeps every
        // member, and an item that stays keeps its anchors (ancestors). Propagate to a fixpoint.
        var work: [Int32] = []
        for r in 0..<(runStart.count - 1) {
            let range = Int(runStart[r])..<Int(runStart[r + 1])
            if range.contains(where: { !goes[Int(members[$0].item)] }) && range.contains(where: { goes[Int(members[$0].item)] }) {
                work.append(Int32(r))
            }
        }
        var up: [Int32] = []
        while let r = work.popLast() {
            for k in Int(runStart[Int(r)])..<Int(runStart[Int(r) + 1]) {
                let m = Int(members[k].item)
                guard goes[m] else { continue }
                goes[m] = false
                up.append(Int32(m))
                while let v = up.popLast() {
                    for q in Int(parentCount[Int(v)])..<Int(parentCount[Int(v) + 1]) {
                        let p = Int(parents[q])
                        guard goes[p] else { continue }
                        goes[p] = false
                        up.append(Int32(p))
                        if runOf[p] >= 0 { work.append(runOf[p]) }
                    }
                }
            }
        }

        var result: [SequenceNumber] = []
        for i in 0..<n where goes[i] {
            var e = firstEntry[i]
            while e >= 0 {
                result.append(entrySeq[Int(e)])
                e = entryNext[Int(e)]
            }
        }
        return result
    }
}

import JournalCodec

/// What the compactor does to one zone's journal (Spec/COMPACTION.md §2): entries to remove, and
/// entries to write in place of others (a `place`, keeping the replaced entry's id, author, clocks
/// and sequence).
public struct RetentionPlan: Sendable, Equatable {
    public struct Rewrite: Sendable, Equatable {
        public var sequence: SequenceNumber
        public var entry: JournalEntry

        public init(sequence: SequenceNumber, entry: JournalEntry) {
            self.sequence = sequence
            self.entry = entry
        }
    }

    /// Ascending.
    public var purge: [SequenceNumber] = []
    /// Ascending by sequence; none is also in `purge`.
    public var rewrite: [Rewrite] = []

    public var isEmpty: Bool { purge.isEmpty && rewrite.isEmpty }

    public init(purge: [SequenceNumber] = [], rewrite: [Rewrite] = []) {
        self.purge = purge
        self.rewrite = rewrite
    }
}

/// Which entries of a list's journal the compactor may purge or replace (Spec/COMPACTION.md §2).
/// Pure: the query layer reads the entries, this decides, and the store rewrites them.
///
/// An entry is *old* when its time (the later of its wall time and its hybrid clock) is before the
/// cutoff and its sequence is at or below the mark. An item is *finished* when it has an add and
/// is deleted or marked off (by the winning mark, MERGE.md §5), or when it is only a placement
/// (a `place` and no add, left by an earlier run). Every finished item whose entries are all old
/// leaves the list:
/// - **whole**, with every entry about it, when every item added after it and every item of its
///   sibling run (MERGE.md §3.2) goes whole too;
/// - otherwise as a **placement**: one `place` entry (written over its winning add, or its
///   existing place) keeps its anchor and key, so the items after it and its run keep their exact
///   place (MERGE.md §3.4), and its other entries go. A placement with exactly one item after it
///   folds into that item: the item gets the placement's anchor and key, so a chain of finished
///   anchors costs nothing, and what stays is bounded by the items that stay visible.
///
/// Superseded renames and recolours go too (every old one except the winner, MERGE.md §4). Joins,
/// leaves, opaque kinds, dangling operations (no add and no place), anchor cycles and anything
/// not old always stay.
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

    /// The plan for one zone incarnation's entries, each once. Deciding can reveal more to do (an
    /// item that gets a place no longer anchors by its adds, so an anchor may now fold or go), so
    /// the rules are applied again to their own result until nothing changes: running the
    /// compactor again on the compacted journal finds nothing more.
    public func plan(_ entries: [(SequenceNumber, JournalEntry)]) -> RetentionPlan {
        var current = entries
        var purged = Set<SequenceNumber>()
        var written: [SequenceNumber: JournalEntry] = [:]
        for _ in 0..<Self.maxPasses {
            let step = planOnce(current)
            if step.isEmpty { break }
            let gone = Set(step.purge)
            purged.formUnion(gone)
            var replaced: [SequenceNumber: JournalEntry] = [:]
            for w in step.rewrite { replaced[w.sequence] = w.entry }
            written.merge(replaced) { $1 }
            current = current.compactMap { s, e in gone.contains(s) ? nil : (s, replaced[s] ?? e) }
        }
        var out = RetentionPlan(purge: purged.sorted())
        for (s, e) in entries where !purged.contains(s) {
            if let w = written[s], w != e { out.rewrite.append(.init(sequence: s, entry: w)) }
        }
        return out
    }

    /// Passes of the rules at most: each settles what the last one's places revealed, which is
    /// rare and shallow (one more level per pass, only where an item was re-added after another
    /// anchor); the bound keeps a hostile journal from taking long, and the next run goes on.
    static let maxPasses = 64

    func planOnce(_ entries: [(SequenceNumber, JournalEntry)]) -> RetentionPlan {
        var t = ItemTable()
        var rename: (key: ChangeKey, seq: SequenceNumber)?
        var recolour: (key: ChangeKey, seq: SequenceNumber)?
        var oldRenames: [SequenceNumber] = []
        var oldRecolours: [SequenceNumber] = []
        for (k, (seq, e)) in entries.enumerated() {
            switch e.operation {
            case .add(let item, _, let after):
                let i = t.index(item)
                t.record(i, k, old: isOld(seq, e))
                t.hasAdd[i] = true
                let key = ChangeKey(e)
                if t.firstKey[i].map({ key < $0 }) ?? true {
                    t.firstKey[i] = key
                    t.firstAfter[i] = after
                    t.firstEntry[i] = Int32(k)
                }
                if let after, after != item { t.addAnchors.append((Int32(i), after)) }
            case .place(let item, let after):
                let i = t.index(item)
                t.record(i, k, old: isOld(seq, e))
                let key = ChangeKey(e)
                if t.placeKey[i].map({ key < $0 }) ?? true {
                    t.placeKey[i] = key
                    t.placeAfter[i] = after
                    t.placeEntry[i] = Int32(k)
                }
            case .markOff(let item), .unmark(let item):
                let i = t.index(item)
                t.record(i, k, old: isOld(seq, e))
                let key = ChangeKey(e)
                if t.markKey[i].map({ $0 < key }) ?? true {
                    t.markKey[i] = key
                    if case .markOff = e.operation { t.markedOff[i] = true } else { t.markedOff[i] = false }
                }
            case .delete(let item):
                let i = t.index(item)
                t.record(i, k, old: isOld(seq, e))
                t.deleted[i] = true
            case .rename:
                let key = ChangeKey(e)
                if rename.map({ $0.key < key }) ?? true { rename = (key, seq) }
                if isOld(seq, e) { oldRenames.append(seq) }
            case .recolour:
                let key = ChangeKey(e)
                if recolour.map({ $0.key < key }) ?? true { recolour = (key, seq) }
                if isOld(seq, e) { oldRecolours.append(seq) }
            case .join, .leave, .opaque:
                continue
            }
        }
        var result = t.plan(entries)
        result.purge += oldRenames.filter { $0 != rename?.seq }
        result.purge += oldRecolours.filter { $0 != recolour?.seq }
        result.purge.sort()
        return result
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
    /// The winning (first) add: it fixes the anchor and the run unless a place does (MERGE.md §5, §3.2).
    var firstKey: [ChangeKey?] = []
    var firstAfter: [CompactID?] = []
    /// Index (into the entries planned) of the winning add, or -1.
    var firstEntry: [Int32] = []
    /// The winning (least) place, which fixes the anchor and the key in the tree (MERGE.md §3.4).
    var placeKey: [ChangeKey?] = []
    var placeAfter: [CompactID?] = []
    var placeEntry: [Int32] = []
    /// Each item's entries (indices into the entries planned) as a linked list through
    /// `entryIndex`/`entryNext`.
    var entryHead: [Int32] = []
    var entryIndex: [Int32] = []
    var entryNext: [Int32] = []
    var entryOld: [Bool] = []
    var ids: [CompactID] = []
    /// (child, anchor) for every add with an anchor: a child whose any add names an anchor keeps
    /// it, unless a place fixes the child's anchor.
    var addAnchors: [(Int32, CompactID)] = []

    var count: Int { hasAdd.count }

    mutating func index(_ id: CompactID) -> Int {
        let n = Int32(count)
        let i = index.findOrInsert(id, n)
        if i == n {
            ids.append(id)
            hasAdd.append(false)
            deleted.append(false)
            allOld.append(true)
            markedOff.append(false)
            markKey.append(nil)
            firstKey.append(nil)
            firstAfter.append(nil)
            firstEntry.append(-1)
            placeKey.append(nil)
            placeAfter.append(nil)
            placeEntry.append(-1)
            entryHead.append(-1)
        }
        return Int(i)
    }

    mutating func record(_ i: Int, _ k: Int, old: Bool) {
        entryIndex.append(Int32(k))
        entryNext.append(entryHead[i])
        entryOld.append(old)
        entryHead[i] = Int32(entryIndex.count - 1)
        if !old { allOld[i] = false }
    }

    /// Item `i`'s entries, as indices into the entries planned, with whether each is old.
    func entryList(of i: Int) -> [(index: Int, old: Bool)] {
        var out: [(index: Int, old: Bool)] = []
        var e = entryHead[i]
        while e >= 0 {
            out.append((Int(entryIndex[Int(e)]), entryOld[Int(e)]))
            e = entryNext[Int(e)]
        }
        return out
    }

    func inTree(_ i: Int) -> Bool { hasAdd[i] || placeKey[i] != nil }
    /// The item's anchor and key in the tree: its winning place's, else its winning add's.
    func treeAfter(_ i: Int) -> CompactID? { placeKey[i] != nil ? placeAfter[i] : firstAfter[i] }
    func treeKey(_ i: Int) -> ChangeKey? { placeKey[i] ?? firstKey[i] }
    /// The entry that holds the item's key in the tree: where its placement is written.
    func treeEntry(_ i: Int) -> Int { Int(placeKey[i] != nil ? placeEntry[i] : firstEntry[i]) }
    /// The item's parent in the tree (record number), or -1 for the head or an orphan.
    func treeParent(_ i: Int) -> Int {
        guard let after = treeAfter(i), let a = index[after], inTree(Int(a)) else { return -1 }
        return Int(a)
    }

    func plan(_ entries: [(SequenceNumber, JournalEntry)]) -> RetentionPlan {
        let n = count
        // Children and parents (CSR): a placed item's place anchor, every other item's every add's
        // anchor, when that anchor is an item here.
        var childCount = [Int32](repeating: 0, count: n + 1)
        var parentCount = [Int32](repeating: 0, count: n + 1)
        var edges: [(child: Int32, parent: Int32)] = []
        edges.reserveCapacity(addAnchors.count)
        for (c, a) in addAnchors where placeKey[Int(c)] == nil {
            guard let p = index[a] else { continue }
            edges.append((c, p))
        }
        for c in 0..<n where placeKey[c] != nil {
            guard let after = placeAfter[c], let p = index[after], Int(p) != c else { continue }
            edges.append((Int32(c), p))
        }
        for (c, p) in edges {
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

        // Items whose tree parents lead to the head or the orphans (not into an anchor cycle,
        // MERGE.md §3.3): only those may leave.
        var rooted = [UInt8](repeating: 0, count: n)  // 0 unknown, 1 on the walk, 2 rooted, 3 not
        var walk: [Int] = []
        for i in 0..<n where rooted[i] == 0 && inTree(i) {
            var v = i
            var verdict: UInt8 = 2
            while true {
                if rooted[v] >= 2 { verdict = rooted[v]; break }
                if rooted[v] == 1 { verdict = 3; break }
                rooted[v] = 1
                walk.append(v)
                let p = treeParent(v)
                if p < 0 { verdict = 2; break }
                v = p
            }
            for w in walk { rooted[w] = verdict }
            walk.removeAll(keepingCapacity: true)
        }
        var leaves = [Bool](repeating: false, count: n)
        for i in 0..<n where rooted[i] == 2 && allOld[i] {
            leaves[i] = placeKey[i] != nil && !hasAdd[i] || hasAdd[i] && (deleted[i] || markedOff[i])
        }

        // Whole: decide children first (iteratively: runs of adds make deep trees); an item
        // whose child is still on the path (a cycle through add anchors) stays.
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
                var ok = leaves[vi]
                if ok {
                    for k in Int(childCount[vi])..<Int(childCount[vi + 1]) {
                        let c = Int(children[k])
                        if state[c] != 2 || !goes[c] { ok = false; break }
                    }
                }
                goes[vi] = ok
            }
        }

        // Sibling runs (MERGE.md §3.2) as the reducer forms them: per anchor and author, in
        // change order, split where consecutive members are more than the run window apart. An
        // orphan (its anchor not in the tree) is placed by its own key, in no run.
        var authors: [ExactString: Int32] = [:]
        var members: [(anchor: Int32, author: Int32, key: ChangeKey, item: Int32)] = []
        for i in 0..<n {
            guard let key = treeKey(i) else { continue }
            var anchor: Int32 = -1
            if treeAfter(i) != nil {
                let p = treeParent(i)
                guard p >= 0 else { continue }
                anchor = Int32(p)
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

        // An item goes whole only with its whole run: a run with a member that stays keeps every
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

        // The rest of the leaving items become placements. One whose only remaining child sits
        // under it in the tree folds into that child.
        let placement = (0..<n).map { leaves[$0] && !goes[$0] }
        var folds = [Bool](repeating: false, count: n)
        for v in 0..<n where placement[v] {
            var only = -1, count = 0
            for k in Int(childCount[v])..<Int(childCount[v + 1]) where !goes[Int(children[k])] {
                count += 1
                only = Int(children[k])
            }
            guard count == 1, treeParent(only) == v else { continue }
            // The child's own places go (the folded one replaces them): only when they are old.
            folds[v] = entryList(of: only).allSatisfy { k, old in
                if case .place = entries[k].1.operation { return old }
                return true
            }
        }

        var out = RetentionPlan()
        func purgeAll(_ i: Int, except keep: Int = -1) {
            for (k, _) in entryList(of: i) where k != keep { out.purge.append(entries[k].0) }
        }
        func place(_ item: Int, at k: Int, after: CompactID?) {
            let (seq, old) = entries[k]
            let op = Operation.place(item: ids[item], after: after)
            guard old.operation != op else { return }
            var e = old
            e.operation = op
            out.rewrite.append(.init(sequence: seq, entry: e))
        }
        for i in 0..<n {
            if goes[i] {
                purgeAll(i)
                continue
            }
            guard inTree(i), !(placement[i] && folds[i]) else {
                if placement[i] && folds[i] {
                    // Folded into its child: its key entry becomes the child's place (written
                    // below, from the child), unless a folded parent's does.
                    let p = treeParent(i)
                    let keepsKey = !(p >= 0 && placement[p] && folds[p])
                    purgeAll(i, except: keepsKey ? treeEntry(i) : -1)
                }
                continue
            }
            // The top of the folded chain above `i`, if any.
            var top = i
            while true {
                let p = treeParent(top)
                guard p >= 0, placement[p], folds[p] else { break }
                top = p
            }
            if top != i {
                // `i` takes the chain's place: its own places go (a placement's every entry).
                for (k, _) in entryList(of: i) {
                    if placement[i] { out.purge.append(entries[k].0); continue }
                    if case .place = entries[k].1.operation { out.purge.append(entries[k].0) }
                }
                place(i, at: treeEntry(top), after: treeAfter(top))
            } else if placement[i] {
                let k = treeEntry(i)
                purgeAll(i, except: k)
                place(i, at: k, after: treeAfter(i))
            }
        }
        out.rewrite.sort { $0.sequence < $1.sequence }
        return out
    }
}

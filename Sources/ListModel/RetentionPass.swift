import JournalCodec

/// One application of the retention rules (COMPACTION.md §2) to what a `RetentionPlanner` read,
/// for entries old at `cutoff` and at or below `mark`, one phase per function: the anchor graph,
/// the items that may leave, the items that go whole, the sibling runs that keep them, the folds,
/// and the verdicts. `RetentionPlanner.decide` runs it.
struct RetentionPass {
    let planner: RetentionPlanner
    let cutoff: Int64
    let mark: SequenceNumber
    let n: Int

    init(_ planner: RetentionPlanner, cutoff: Int64, mark: SequenceNumber) {
        self.planner = planner
        self.cutoff = cutoff
        self.mark = mark
        n = planner.ids.count
    }

    /// The anchor graph in compressed sparse rows: item `v`'s children are
    /// `children[childStart[v]..<childStart[v + 1]]`, its parents likewise.
    struct Graph {
        var childStart: [Int32]
        var children: [Int32]
        var parentStart: [Int32]
        var parents: [Int32]
    }

    // MARK: The tree as the planner read it

    func placed(_ i: Int) -> Bool { planner.placeSlot[i] >= 0 }
    func inTree(_ i: Int) -> Bool { planner.tallies[i].flags & RetentionPlanner.hasAdd != 0 || placed(i) }
    func treeAfter(_ i: Int) -> Int32 { placed(i) ? planner.places[Int(planner.placeSlot[i])].after : planner.firstAfter[i] }
    func treeKey(_ i: Int) -> PlannerKey { placed(i) ? planner.places[Int(planner.placeSlot[i])].key : planner.firstKey[i] }
    func treeSeq(_ i: Int) -> UInt64 { placed(i) ? planner.places[Int(planner.placeSlot[i])].seq : planner.firstSeq[i] }
    /// The item's parent in the tree, or -1 for the head or an orphan.
    func treeParent(_ i: Int) -> Int {
        let a = treeAfter(i)
        return a >= 0 && inTree(Int(a)) ? Int(a) : -1
    }
    func allOld(_ i: Int) -> Bool {
        let t = planner.tallies[i]
        return t.maxSeq <= mark && t.maxTime < cutoff && t.flags & RetentionPlanner.pinnedHere == 0
    }
    /// Whether every place the item has is old (true with none).
    func placesOld(_ i: Int) -> Bool {
        guard placed(i) else { return true }
        let p = planner.places[Int(planner.placeSlot[i])]
        return p.maxSeq <= mark && p.maxTime < cutoff && !p.pinned
    }

    // MARK: Phases

    /// Children and parents: a placed item's place anchor, every other item's every add's anchor.
    func graph() -> Graph {
        var edges: [(child: Int32, parent: Int32)] = []
        edges.reserveCapacity(n)
        for c in 0..<n where !placed(c) && planner.firstAfter[c] >= 0 && Int(planner.firstAfter[c]) != c {
            edges.append((Int32(c), planner.firstAfter[c]))
        }
        for (c, a) in planner.otherAnchors where !placed(Int(c)) { edges.append((c, a)) }
        for c in 0..<n where placed(c) {
            let a = planner.places[Int(planner.placeSlot[c])].after
            if a >= 0 && Int(a) != c { edges.append((Int32(c), a)) }
        }
        // A move's node hangs under its anchor (MERGE.md §3.5): the anchor goes only with it.
        edges.append(contentsOf: planner.moveAnchors)
        var childCount = [Int32](repeating: 0, count: n + 1)
        var parentCount = [Int32](repeating: 0, count: n + 1)
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
        return Graph(childStart: childCount, children: children, parentStart: parentCount, parents: parents)
    }

    /// The items that may leave the list as they are: rooted (their tree parents lead to the
    /// head or the orphans, not into an anchor cycle, MERGE.md §3.3), all old, and finished
    /// (deleted or marked off) or only placed.
    func leaves() -> [Bool] {
        var rooted = Self.rootedness(count: n, inTree, parent: treeParent)
        if !planner.moves.isEmpty { rootedWithMoves(&rooted) }
        var leaves = [Bool](repeating: false, count: n)
        for i in 0..<n where rooted[i] == 2 && allOld(i) {
            let flags = planner.tallies[i].flags
            let hasAdd = flags & RetentionPlanner.hasAdd != 0
            leaves[i] = placed(i) && !hasAdd || hasAdd && flags & (RetentionPlanner.deleted | RetentionPlanner.markedOff) != 0
        }
        return leaves
    }

    /// Each node's rootedness: 2 when its parents (`parent`, negative for a root) lead to a root,
    /// 3 when they run into a cycle, 0 for nodes not `inTree`. One walk per node at most.
    static func rootedness(count: Int, _ inTree: (Int) -> Bool, parent: (Int) -> Int) -> [UInt8] {
        var rooted = [UInt8](repeating: 0, count: count)  // 0 unknown, 1 on the walk, 2 rooted, 3 not
        var walk: [Int] = []
        for i in 0..<count where rooted[i] == 0 && inTree(i) {
            var v = i
            var verdict: UInt8 = 2
            while true {
                if rooted[v] >= 2 { verdict = rooted[v]; break }
                if rooted[v] == 1 { verdict = 3; break }
                rooted[v] = 1
                walk.append(v)
                let p = parent(v)
                if p < 0 { verdict = 2; break }
                v = p
            }
            for w in walk { rooted[w] = verdict }
            walk.removeAll(keepingCapacity: true)
        }
        return rooted
    }

    /// The items that go whole: a leaving item whose children all go. Children are decided
    /// first (iteratively: runs of adds make deep trees); an item whose child is still on the
    /// path (a cycle through add anchors) stays.
    func wholeItems(leaves: [Bool], _ g: Graph) -> [Bool] {
        var goes = [Bool](repeating: false, count: n)
        var state = [UInt8](repeating: 0, count: n)  // 0 new, 1 on the path, 2 decided
        var stack: [(Int32, Int32)] = []
        for root in 0..<n where state[root] == 0 {
            stack.append((Int32(root), g.childStart[root]))
            state[root] = 1
            while let (v, next) = stack.last {
                let vi = Int(v)
                if next < g.childStart[vi + 1] {
                    stack[stack.count - 1].1 += 1
                    let c = Int(g.children[Int(next)])
                    if state[c] == 0 {
                        state[c] = 1
                        stack.append((Int32(c), g.childStart[c]))
                    }
                    continue
                }
                stack.removeLast()
                state[vi] = 2
                var ok = leaves[vi]
                if ok {
                    for k in Int(g.childStart[vi])..<Int(g.childStart[vi + 1]) {
                        let c = Int(g.children[k])
                        if state[c] != 2 || !goes[c] { ok = false; break }
                    }
                }
                goes[vi] = ok
            }
        }
        return goes
    }

    /// The sibling runs (MERGE.md §3.2) as the reducer forms them: per anchor and author, in
    /// change order, split where consecutive members are more than the run window apart. An
    /// orphan (its anchor not in the tree) is placed by its own key, in no run. Returns the items
    /// in run order, where each run starts, and each item's run (-1: none).
    func siblingRuns() -> (items: [Int32], runStart: [Int32], runOf: [Int32]) {
        // Grouped by anchor (a counting sort: most groups hold one or two items), then each group
        // sorted by what the run order compares (author, clock) held in the member, so that only
        // a tie reads the items' keys.
        typealias Member = (anchor: Int32, author: Int32, clock: UInt64, item: Int32)
        var anchorOf = [Int32](repeating: -2, count: n)  // -2: not a member
        var groupStart = [Int32](repeating: 0, count: n + 2)
        for i in 0..<n where inTree(i) {
            var anchor: Int32 = -1
            let a = treeAfter(i)
            if a >= 0 {
                let p = treeParent(i)
                // An anchor with moves has nodes even with no add or place (MERGE.md §3.5): its
                // children form runs under them. Grouped under the item, all its nodes'
                // children together, which only joins runs, so keeps more.
                if p >= 0 {
                    anchor = Int32(p)
                } else if planner.tallies[Int(a)].flags & RetentionPlanner.hasMove != 0 {
                    anchor = a
                } else {
                    continue
                }
            }
            anchorOf[i] = anchor
            groupStart[Int(anchor) + 2] += 1
        }
        for g in 0..<(n + 1) { groupStart[g + 1] += groupStart[g] }
        var members = [Member](repeating: (0, 0, 0, 0), count: Int(groupStart[n + 1]))
        var fill = groupStart
        for i in 0..<n where anchorOf[i] != -2 {
            let g = Int(anchorOf[i]) + 1
            let k = treeKey(i)
            members[Int(fill[g])] = (anchorOf[i], k.author, k.clock, Int32(i))
            fill[g] += 1
        }
        func before(_ x: Member, _ y: Member) -> Bool {
            if x.author != y.author { return x.author < y.author }
            if x.clock != y.clock { return x.clock < y.clock }
            return planner.textIDs.less(treeKey(Int(x.item)).entry, treeKey(Int(y.item)).entry)
        }
        members.withUnsafeMutableBufferPointer { all in
            for g in 0...n where groupStart[g + 1] - groupStart[g] > 1 {
                var group = UnsafeMutableBufferPointer(rebasing: all[Int(groupStart[g])..<Int(groupStart[g + 1])])
                if group.count > 16 {
                    group.sort(by: before)
                    continue
                }
                for k in 1..<group.count {  // insertion sort: a handful of siblings
                    let m = group[k]
                    var j = k
                    while j > 0 && before(m, group[j - 1]) {
                        group[j] = group[j - 1]
                        j -= 1
                    }
                    group[j] = m
                }
            }
        }
        var runOf = [Int32](repeating: -1, count: n)
        var runStart: [Int32] = [0]
        for (k, m) in members.enumerated() {
            if k > 0 {
                let p = members[k - 1]
                if p.anchor != m.anchor || p.author != m.author || SiblingRun.breaks(after: p.clock, before: m.clock) {
                    runStart.append(Int32(k))
                }
            }
            runOf[Int(m.item)] = Int32(runStart.count - 1)
        }
        runStart.append(Int32(members.count))
        return (members.map(\.item), runStart, runOf)
    }

    /// An item goes whole only with its whole run: a run with a member that stays keeps every
    /// member, and an item that stays keeps its anchors (ancestors). Propagated to a fixpoint.
    func keepRuns(_ goes: inout [Bool], _ g: Graph) {
        let (items, runStart, runOf) = siblingRuns()
        var work: [Int32] = []
        for r in 0..<(runStart.count - 1) {
            let range = Int(runStart[r])..<Int(runStart[r + 1])
            if range.contains(where: { !goes[Int(items[$0])] }) && range.contains(where: { goes[Int(items[$0])] }) {
                work.append(Int32(r))
            }
        }
        var up: [Int32] = []
        while let r = work.popLast() {
            for k in Int(runStart[Int(r)])..<Int(runStart[Int(r) + 1]) {
                let m = Int(items[k])
                guard goes[m] else { continue }
                goes[m] = false
                up.append(Int32(m))
                while let v = up.popLast() {
                    for q in Int(g.parentStart[Int(v)])..<Int(g.parentStart[Int(v) + 1]) {
                        let p = Int(g.parents[q])
                        guard goes[p] else { continue }
                        goes[p] = false
                        up.append(Int32(p))
                        if runOf[p] >= 0 { work.append(runOf[p]) }
                    }
                }
            }
        }
    }

    /// A moved item leaves whole or not at all (COMPACTION.md §2.2): each of its moves is a node
    /// of the tree that a placement, which keeps one node, cannot stand for. One that cannot go
    /// whole stays, with every entry.
    /// Returns the items it kept: like a placement that does not fold, one of them that loses a
    /// child to a place may go in another pass.
    func keepMovedItems(_ leaves: inout [Bool], goes: [Bool]) -> [Bool] {
        var kept = [Bool](repeating: false, count: n)
        for v in 0..<n where leaves[v] && !goes[v] && planner.tallies[v].flags & RetentionPlanner.hasMove != 0 {
            leaves[v] = false
            kept[v] = true
        }
        return kept
    }

    /// The leaving items that stay become placements; one whose only remaining child sits under
    /// it in the tree folds into that child, when every place the child has is old.
    func folds(leaves: [Bool], goes: [Bool], _ g: Graph) -> [Bool] {
        var folds = [Bool](repeating: false, count: n)
        // Anchors a staying move names keep their own node: folding one would orphan the move's.
        var anchorsMove = [Bool](repeating: false, count: n)
        for (i, a) in planner.moveAnchors where !goes[Int(i)] { anchorsMove[Int(a)] = true }
        for v in 0..<n where leaves[v] && !goes[v] {
            // Distinct items: an item re-added after the same anchor is one child.
            var only = -1, count = 0
            for k in Int(g.childStart[v])..<Int(g.childStart[v + 1]) where !goes[Int(g.children[k])] && Int(g.children[k]) != only {
                count += 1
                only = Int(g.children[k])
                if count > 1 { break }
            }
            guard count == 1, treeParent(only) == v, !anchorsMove[v] else { continue }
            folds[v] = placesOld(only)
        }
        return folds
    }
}

extension RetentionPass {
    /// The verdicts: what goes, what folds, what becomes a placement (and the entry each
    /// placement rewrites), the counts, and the sequence ranges a rewrite must read again.
    func decision(leaves: [Bool], goes: [Bool], folds: [Bool], keptMoved: [Bool], _ g: Graph) -> RetentionDecision {
        func placement(_ i: Int) -> Bool { leaves[i] && !goes[i] }
        func folded(_ i: Int) -> Bool { placement(i) && folds[i] }

        var d = RetentionDecision(cutoff: cutoff, mark: mark, pinned: planner.pinned, index: planner.index, textIDs: planner.textIDs, ids: planner.ids,
                                  verdicts: [RetentionDecision.ItemVerdict](repeating: .stays, count: n),
                                  renameWinner: planner.rename?.seq, recolourWinner: planner.recolour?.seq)
        d.recordBase = planner.recordBase ?? 0
        d.recordedSeqs = planner.recordedSeqs
        d.recordedItems = planner.recordedItems
        var targets: [(seq: UInt64, owner: Int32, item: Int32, after: Int32)] = []
        var changed: [ClosedRange<SequenceNumber>] = []
        /// Item `c` leaves the tree of the next pass (folded), or is anchored only at `a` there
        /// (given a place): does a placement that does not fold lose it as a child? Then that
        /// item may go or fold in another pass. An item that is not a placement cannot: what makes
        /// one (rooted, old, finished or only placed) is the same in the next pass (COMPACTION.md
        /// §2.1).
        func losesAnchor(_ c: Int, _ a: Int) {
            guard !d.needsAnotherPass else { return }
            for q in Int(g.parentStart[c])..<Int(g.parentStart[c + 1]) {
                let p = Int(g.parents[q])
                if p != a && (placement(p) && !folded(p) || keptMoved[p]) { d.needsAnotherPass = true }
            }
        }
        for i in 0..<n {
            if goes[i] {
                d.verdicts[i] = .goes
                d.purgeCount += Int(planner.tallies[i].entryCount)
                changed.append(planner.tallies[i].minSeq...planner.tallies[i].maxSeq)
                continue
            }
            guard inTree(i), !folded(i) else {
                if folded(i) {
                    losesAnchor(i, treeParent(i))
                    d.verdicts[i] = .folded
                    let p = treeParent(i)
                    // The top of a chain keeps its key entry for the item under the chain.
                    let top = !(p >= 0 && folded(p))
                    d.purgeCount += Int(planner.tallies[i].entryCount) - (top ? 1 : 0)
                    changed.append(planner.tallies[i].minSeq...planner.tallies[i].maxSeq)
                }
                continue
            }
            // The top of the folded chain above `i`, if any.
            var top = i
            while true {
                let p = treeParent(top)
                guard p >= 0, folded(p) else { break }
                top = p
            }
            if top != i {
                // `i` takes the chain's place: its own planner.places go (a placement's every entry).
                if placement(i) {
                    d.verdicts[i] = .placementUnderFold
                    d.purgeCount += Int(planner.tallies[i].entryCount)
                    changed.append(planner.tallies[i].minSeq...planner.tallies[i].maxSeq)
                } else {
                    d.verdicts[i] = .staysUnderFold
                    if placed(i) {
                        let pl = planner.places[Int(planner.placeSlot[i])]
                        d.purgeCount += Int(pl.count)
                        changed.append(planner.tallies[i].minSeq...pl.maxSeq)
                    }
                }
                targets.append((treeSeq(top), Int32(top), Int32(i), treeAfter(top)))
                d.rewriteCount += 1
                losesAnchor(i, Int(treeAfter(top)))
                // `i` takes the top's place under the top's parent. When `i` was a child of that
                // parent already (by another add), the parent is left with one child fewer: a
                // placement there may fold in another pass.
                let tp = treeParent(top)
                if tp >= 0 && placement(tp) && !d.needsAnotherPass {
                    for q in Int(g.parentStart[i])..<Int(g.parentStart[i + 1]) where Int(g.parents[q]) == tp { d.needsAnotherPass = true }
                }
            } else if placement(i) {
                d.verdicts[i] = .placement
                d.purgeCount += Int(planner.tallies[i].entryCount) - 1
                targets.append((treeSeq(i), Int32(i), Int32(i), treeAfter(i)))
                // Its key entry is its place already when it has one (the tree entry is the place).
                if !placed(i) {
                    d.rewriteCount += 1
                    losesAnchor(i, Int(treeAfter(i)))
                }
                if planner.tallies[i].entryCount > 1 || !placed(i) { changed.append(planner.tallies[i].minSeq...planner.tallies[i].maxSeq) }
            }
        }
        // Superseded renames and recolours, and old compaction records (no winner: every old one goes).
        for (list, winner) in [(planner.renames, planner.rename?.seq), (planner.recolours, planner.recolour?.seq), (planner.records, nil)] {
            for r in list where r.seq <= mark && r.seq != planner.pinned && r.time < cutoff && r.seq != winner {
                d.purgeCount += 1
                changed.append(r.seq...r.seq)
            }
        }
        targets.sort { $0.seq < $1.seq }
        d.targetSeqs = targets.map(\.seq)
        d.targets = targets.map { ($0.owner, $0.item, $0.after) }
        changed.sort { $0.lowerBound < $1.lowerBound }
        for r in changed {
            if let last = d.ranges.last, r.lowerBound <= last.upperBound &+ 1 {
                d.ranges[d.ranges.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                d.ranges.append(r)
            }
        }
        return d
    }
}

import JournalCodec

/// The list order of MERGE.md §3 over a reducer's records: the tree of anchors in compressed
/// sparse rows, each sibling group sorted (§3.2), then a depth-first pre-order walk from the
/// head, then the orphans, then anything left (anchor cycles, §3.3).
/// A class: its sort comparators capture it, and as a struct (holding an array and a dictionary)
/// it was copied, with its references retained and released, for every sibling group sorted.
final class ReducerOrder {
    let records: UnsafeBufferPointer<ItemRecord>
    let rank: UnsafeBufferPointer<Int32>
    let textIDs: ReducerTextIDs
    let placements: [Int32: Placement]
    /// Sibling groups up to this size are sorted by `sortSmallGroup`.
    let smallGroup: Int
    /// Records from this number on are moves' nodes (MERGE.md §3.5), each a run of its own.
    let firstMoveNode: Int32

    init(records: UnsafeBufferPointer<ItemRecord>, rank: UnsafeBufferPointer<Int32>, textIDs: ReducerTextIDs,
         placements: [Int32: Placement], smallGroup: Int = ReducerOrder.smallGroup, firstMoveNode: Int = Int(Int32.max)) {
        self.records = records
        self.rank = rank
        self.textIDs = textIDs
        self.placements = placements
        self.smallGroup = smallGroup
        self.firstMoveNode = Int32(clamping: firstMoveNode)
    }

    /// Whether a sibling is a move's node: those are left out when the others form their runs
    /// (grouped after every author's siblings), and each is a run of its own.
    @inline(__always)
    func isMove(_ k: Key) -> Bool { k.record >= firstMoveNode }

    /// Whether a run ends between two siblings adjacent in (author, change key) order: another
    /// author, more than the run window apart, or either one a move's node.
    @inline(__always)
    func runBreaks(_ x: Key, _ y: Key) -> Bool {
        x.rank != y.rank || SiblingRun.breaks(after: x.clock, before: y.clock)
            || x.record >= firstMoveNode || y.record >= firstMoveNode
    }

    /// A record's key in the tree (its placement's when placed, else its winning add's) with its
    /// author ranked, for sorting without chasing records.
    struct Key {
        var clock: UInt64
        var rank: Int32
        var record: Int32
    }

    /// The change-key order (MERGE.md §2) of two added records. Equal keys (only from one entry
    /// id reused for two adds) fall back to the record number.
    @inline(__always)
    func less(_ x: Key, _ y: Key) -> Bool {
        if x.clock != y.clock { return x.clock < y.clock }
        if x.rank != y.rank { return x.rank < y.rank }
        let a = entry(x.record), b = entry(y.record)
        if a != b { return textIDs.less(a, b) }
        return x.record < y.record
    }

    @inline(__always)
    func key(_ i: Int32) -> Key {
        let r = records[Int(i)]
        if r.flags & ItemFlag.placed != 0, let p = placements[i] { return Key(clock: p.clock, rank: rank[Int(p.author)], record: i) }
        return Key(clock: r.addClock, rank: rank[Int(r.addAuthor)], record: i)
    }

    /// The entry id of a record's key in the tree.
    @inline(__always)
    func entry(_ i: Int32) -> RID {
        let r = records[Int(i)]
        if r.flags & ItemFlag.placed != 0, let p = placements[i] { return p.entry }
        return r.addEntry
    }

    func run() -> (order: [Int32], visible: Int, shown: [Bool]) {
        let n = records.count
        let head = n, orphans = n + 1
        // Parent of each added record: its anchor when that was added, else the head or the orphan root.
        var parent = [Int32](repeating: -1, count: n)
        var childStart = [Int32](repeating: 0, count: n + 3)
        var shown = [Bool](repeating: false, count: n)
        var added = 0, visible = 0
        // Through buffers: the arrays' uniqueness is checked once, not at every store.
        parent.withUnsafeMutableBufferPointer { parent in
            childStart.withUnsafeMutableBufferPointer { childStart in
                shown.withUnsafeMutableBufferPointer { shown in
                    for i in 0..<n {
                        let r = records[i]
                        guard r.flags & ItemFlag.inTree != 0 else { continue }
                        added += 1
                        if r.flags & (ItemFlag.added | ItemFlag.deleted) == ItemFlag.added {
                            visible += 1
                            shown[i] = true
                        }
                        var p = head
                        let a = Int(r.anchor)
                        if a >= 0 { p = records[a].flags & ItemFlag.inTree != 0 ? a : orphans }
                        parent[i] = Int32(p)
                        childStart[p + 1] += 1
                    }
                }
                for k in 1..<(n + 3) { childStart[k] += childStart[k - 1] }
            }
        }
        // Children's sort keys in one flat array, in record order: one pass over the records, so
        // sorting a sibling group never goes back to them.
        // Every slot is written exactly once (the counts above), so it need not be zeroed first.
        var keys = [Key](unsafeUninitializedCapacity: added) { buffer, count in
            var fill = childStart
            fill.withUnsafeMutableBufferPointer { fill in
                parent.withUnsafeBufferPointer { parent in
                    for i in 0..<n where parent[i] >= 0 {
                        let p = Int(parent[i])
                        (buffer.baseAddress! + Int(fill[p])).initialize(to: key(Int32(i)))
                        fill[p] += 1
                    }
                }
            }
            count = added
        }
        var runs: [(top: Key, start: Int, end: Int)] = []
        var scratch: [Key] = []
        keys.withUnsafeMutableBufferPointer { c in
            for p in 0...orphans {
                let lo = Int(childStart[p]), hi = Int(childStart[p + 1])
                guard hi - lo > 1 else { continue }
                var group = UnsafeMutableBufferPointer(rebasing: c[lo..<hi])
                if p == orphans {
                    // Orphans: oldest first.
                    group.sort(by: less)
                } else {
                    sortSiblings(&group, &runs, &scratch)
                }
            }
        }
        runs = []
        scratch = []
        let children = keys.map(\.record)
        keys = []
        return (walk(n: n, added: added, parent: parent, childStart: childStart, children: children), visible, shown)
    }

    /// Orders one sibling group (MERGE.md §3.2): each author's siblings split into runs
    /// (consecutive in change order, at most `runWindowMillis` apart); runs newest first by their
    /// newest member; within a run, newest first.
    func sortSiblings(_ keys: inout UnsafeMutableBufferPointer<Key>, _ runs: inout [(top: Key, start: Int, end: Int)],
                      _ scratch: inout [Key]) {
        if keys.count <= smallGroup { return sortSmallGroup(keys) }
        // By author, then change key; equal keys keep ascending record numbers in the output.
        let byKey = { (x: Key, y: Key) -> Bool in
            if x.clock != y.clock { return x.clock < y.clock }
            let a = self.entry(x.record), b = self.entry(y.record)
            if a != b { return self.textIDs.less(a, b) }
            return x.record > y.record
        }
        if keys.count >= 32 && rank.count <= keys.count && firstMoveNode == Int32.max {
            // A large group: bucket by author first (stable, linear), then sort each author's
            // siblings. Records arrive in change order (a replay) or in list order (a decoded
            // snapshot, each author's siblings newest first), so each author's slice is one or
            // two sorted runs and the merge sort finishes in linear time; sorting the interleaved
            // authors together would find no runs.
            var start = [Int](repeating: 0, count: rank.count + 1)
            for k in keys { start[Int(k.rank) + 1] += 1 }
            for a in 0..<rank.count { start[a + 1] += start[a] }
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: keys)
            var fill = start
            for k in scratch {
                keys[fill[Int(k.rank)]] = k
                fill[Int(k.rank)] += 1
            }
            for a in 0..<rank.count where start[a + 1] - start[a] > 1 {
                var slice = UnsafeMutableBufferPointer(rebasing: keys[start[a]..<start[a + 1]])
                slice.sort(by: byKey)
            }
        } else {
            keys.sort { x, y in
                if self.isMove(x) != self.isMove(y) { return !self.isMove(x) }
                return x.rank != y.rank ? x.rank < y.rank : byKey(x, y)
            }
        }
        runs.removeAll(keepingCapacity: true)
        var start = 0
        for k in 0..<keys.count {
            let ends = k == keys.count - 1 || runBreaks(keys[k], keys[k + 1])
            if ends {
                runs.append((keys[k], start, k))
                start = k + 1
            }
        }
        if runs.count > 1 { runs.sort { less($1.top, $0.top) } }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: keys)
        var out = 0
        for run in runs {
            for m in stride(from: run.end, through: run.start, by: -1) {
                keys[out] = scratch[m]
                out += 1
            }
        }
    }

    /// Groups up to this size take `sortSmallGroup` (by default).
    static let smallGroup = 16

    /// `sortSiblings` for a small group (most hold two or three items), with insertion sorts
    /// and buffers on the stack: the general path's arrays and library sorts cost more than the
    /// sorting itself there. Both orders are total (record numbers break the last ties), so any
    /// correct sort gives the general path's result.
    func sortSmallGroup(_ keys: UnsafeMutableBufferPointer<Key>) {
        let n = keys.count
        guard n > 1 else { return }
        // By author, then change key; equal keys keep ascending record numbers in the output.
        @inline(__always) func byAuthorThenKey(_ x: Key, _ y: Key) -> Bool {
            if isMove(x) != isMove(y) { return !isMove(x) }
            if x.rank != y.rank { return x.rank < y.rank }
            if x.clock != y.clock { return x.clock < y.clock }
            let a = entry(x.record), b = entry(y.record)
            if a != b { return textIDs.less(a, b) }
            return x.record > y.record
        }
        for k in 1..<n {
            let x = keys[k]
            var j = k
            while j > 0, byAuthorThenKey(x, keys[j - 1]) {
                keys[j] = keys[j - 1]
                j -= 1
            }
            keys[j] = x
        }
        withUnsafeTemporaryAllocation(of: (top: Key, start: Int, end: Int).self, capacity: n) { runs in
            var count = 0, start = 0
            for k in 0..<n {
                let ends = k == n - 1 || runBreaks(keys[k], keys[k + 1])
                if ends {
                    // Runs newest first, by their newest member.
                    let run = (top: keys[k], start: start, end: k)
                    var j = count
                    while j > 0, less(runs[j - 1].top, run.top) {
                        runs[j] = runs[j - 1]
                        j -= 1
                    }
                    runs[j] = run
                    count += 1
                    start = k + 1
                }
            }
            withUnsafeTemporaryAllocation(of: Key.self, capacity: n) { scratch in
                for k in 0..<n { scratch[k] = keys[k] }
                var out = 0
                for r in 0..<count {
                    for m in stride(from: runs[r].end, through: runs[r].start, by: -1) {
                        keys[out] = scratch[m]
                        out += 1
                    }
                }
            }
        }
    }

    /// Depth-first pre-order from the head, then the orphans, then anything left (anchor cycles).
    func walk(n: Int, added: Int, parent: [Int32], childStart: [Int32], children: [Int32]) -> [Int32] {
        var visited = [Bool](repeating: false, count: n)
        return [Int32](unsafeUninitializedCapacity: added) { order, count in
            // Each node is pushed at most once (by its parent, or as a root), and the stack
            // empties before the next root: n + 2 slots always suffice.
            withUnsafeTemporaryAllocation(of: Int32.self, capacity: n + 2) { stack in
                childStart.withUnsafeBufferPointer { start in
                    children.withUnsafeBufferPointer { children in
                        visited.withUnsafeMutableBufferPointer { visited in
                            var w = PreOrderWalk(start: start, children: children, visited: visited, stack: stack, order: order)
                            w.walk(from: n, n)
                            w.walk(from: n + 1, n)
                            if w.count < added {
                                var rest = (0..<n).filter { parent[$0] >= 0 && !visited[$0] }.map { key(Int32($0)) }
                                rest.sort(by: less)
                                for k in rest { w.walk(from: Int(k.record), n) }
                            }
                            count = w.count
                        }
                    }
                }
            }
            precondition(count == added, "every added record is placed exactly once")
        }
    }
}

/// `ReducerOrder.walk`'s state: fixed buffers, so a push, a pop and an append are a store and a
/// count, not an array's uniqueness and capacity checks.
struct PreOrderWalk {
    let start: UnsafeBufferPointer<Int32>
    let children: UnsafeBufferPointer<Int32>
    let visited: UnsafeMutableBufferPointer<Bool>
    let stack: UnsafeMutableBufferPointer<Int32>
    let order: UnsafeMutableBufferPointer<Int32>
    var count = 0

    /// Appends the unvisited part of `root`'s subtree in pre-order (`root` ≥ `n`: the head's or
    /// the orphans' children, not the root itself).
    mutating func walk(from root: Int, _ n: Int) {
        var top = 0
        @inline(__always) func push(_ x: Int32) {
            precondition(top < stack.count, "pre-order stack overflow")
            stack[top] = x
            top += 1
        }
        if root < n {
            guard !visited[root] else { return }
            push(Int32(root))
        } else {
            for k in stride(from: Int(start[root + 1]) - 1, through: Int(start[root]), by: -1) { push(children[k]) }
        }
        while top > 0 {
            top -= 1
            let x = stack[top]
            let xi = Int(x)
            if visited[xi] { continue }
            visited[xi] = true
            precondition(count < order.count, "more records placed than added")
            order[count] = x
            count += 1
            for k in stride(from: Int(start[xi + 1]) - 1, through: Int(start[xi]), by: -1) where !visited[Int(children[k])] {
                push(children[k])
            }
        }
    }
}

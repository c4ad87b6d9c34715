import JournalCodec

extension RetentionPass {
    /// Rootedness in the tree moves make (MERGE.md §3.5): an item's add or place is one node and
    /// each of its moves another, and a node hangs under the node its anchor had at the node's
    /// key (the anchor's latest move before it, else the anchor's own). An item whose nodes do not
    /// all lead to the head or the orphans (an anchor cycle through any of them) is marked not
    /// rooted (3) in `rooted`, so it never leaves: the order of a cycle's nodes depends on every
    /// one of them (MERGE.md §3.3).
    func rootedWithMoves(_ rooted: inout [UInt8]) {
        // Each item's moves, in change-key order, as node numbers n, n + 1, …
        var order = Array(planner.moves.indices)
        order.sort { x, y in
            let a = planner.moves[x], b = planner.moves[y]
            return a.item != b.item ? a.item < b.item : planner.less(a.key, b.key)
        }
        var first = [Int32](repeating: -1, count: n + 1)  // first move node of each item
        var count = [Int32](repeating: 0, count: n)
        for (k, m) in order.enumerated() {
            let i = Int(planner.moves[m].item)
            if first[i] < 0 { first[i] = Int32(n + k) }
            count[i] += 1
        }
        let head = -1, orphan = -2
        /// The node `anchor` had at `key`, or the head, or the orphans' root.
        func resolve(_ anchor: Int32, _ key: PlannerKey) -> Int {
            guard anchor >= 0 else { return head }
            let a = Int(anchor)
            var at = inTree(a) ? a : orphan
            if first[a] >= 0 {
                for k in Int(first[a])..<Int(first[a] + count[a]) {
                    guard planner.less(planner.moves[order[k - n]].key, key) else { break }
                    at = k
                }
            }
            return at
        }
        let nodes = n + order.count
        var parent = [Int](repeating: head, count: nodes)
        for i in 0..<n where inTree(i) { parent[i] = resolve(treeAfter(i), treeKey(i)) }
        for k in 0..<order.count {
            let m = planner.moves[order[k]]
            parent[n + k] = resolve(m.anchor, m.key)
        }
        let state = Self.rootedness(count: nodes, { $0 >= n || inTree($0) }, parent: { parent[$0] })
        for i in 0..<n where inTree(i) && state[i] == 3 { rooted[i] = 3 }
        for k in 0..<order.count where state[n + k] == 3 { rooted[Int(planner.moves[order[k]].item)] = 3 }
    }
}

import JournalCodec

/// Moves (MERGE.md §3.5). Each `move` of an item is a place of its own in the tree: a node after
/// the anchor the move names, with the move's change key, forming no run with its siblings. The
/// item shows at its latest move (the greatest change key), and every other place it stood
/// (its add's, and each earlier move's) stays in the tree, hidden, holding the items that were
/// added after the item while it stood there: an add, place or move naming an item as anchor
/// follows the place the item had at that entry's key (its latest move with a smaller key, or
/// its add's place when there is none).
extension ListReducer {
    /// Keeps every move of an item, in change-key order. Returns whether the entry is new.
    @inline(__always)
    mutating func move(_ i: Int, _ e: UnsafePointer<JournalEntry>, _ after: CompactID?) -> Bool {
        let a = intern(authorOf: e)
        let id = entryRID(e)
        let anchor = after.map { Int32(slot($0)) } ?? -1
        let m = ItemMove(clock: e.pointee.clock.rawValue, author: a, entry: id, anchor: anchor)
        var list = moves[Int32(i)] ?? []
        if list.contains(where: { $0.entry == id }) { return false }
        var at = list.count
        while at > 0, keyLess(m.clock, m.author, m.entry, list[at - 1].clock, list[at - 1].author, list[at - 1].entry) { at -= 1 }
        list.insert(m, at: at)
        moves[Int32(i)] = list
        records[i].flags |= ItemFlag.moved
        return true
    }

    /// The list order with moves (MERGE.md §3.5): the tree of `ReducerOrder` over the records
    /// and one extra node per move, each child's anchor resolved to the place its anchor had at
    /// the child's key; then each moved item stands at its latest move's node and its other
    /// nodes are dropped from the order.
    func orderWithMoves(rank: [Int32], smallGroup: Int) -> (order: [Int32], visible: Int, shown: [Bool]) {
        let n = records.count
        var nodes = records
        var itemOfNode: [Int32] = []
        // Each moved record's moves as node numbers, in change-key order (a record's list is sorted).
        var nodesOf: [Int32: Range<Int>] = [:]
        for i in moves.keys.sorted() {
            let first = nodes.count
            for m in moves[i]! {
                var r = ItemRecord(id: m.entry)
                r.flags = ItemFlag.added | ItemFlag.deleted
                r.addClock = m.clock
                r.addAuthor = m.author
                r.addEntry = m.entry
                r.anchor = m.anchor
                nodes.append(r)
                itemOfNode.append(i)
            }
            nodesOf[i] = first..<nodes.count
        }
        // The place `anchor` had at a child's key: its latest move before that key, else itself.
        func resolve(_ anchor: Int32, _ clock: UInt64, _ author: Int32, _ entry: RID) -> Int32 {
            guard anchor >= 0, let range = nodesOf[anchor] else { return anchor }
            var at = anchor
            for k in range {
                let x = nodes[k]
                guard keyLess(x.addClock, x.addAuthor, x.addEntry, clock, author, entry) else { break }
                at = Int32(k)
            }
            return at
        }
        for k in nodes.indices where nodes[k].flags & ItemFlag.inTree != 0 && nodes[k].anchor >= 0 {
            let (clock, author, entry): (UInt64, Int32, RID)
            if k < n, nodes[k].flags & ItemFlag.placed != 0, let p = placements[Int32(k)] {
                (clock, author, entry) = (p.clock, p.author, p.entry)
            } else {
                (clock, author, entry) = (nodes[k].addClock, nodes[k].addAuthor, nodes[k].addEntry)
            }
            nodes[k].anchor = resolve(nodes[k].anchor, clock, author, entry)
        }
        let (extended, visible, shownNodes) = nodes.withUnsafeBufferPointer { rec in
            rank.withUnsafeBufferPointer { rank in
                ReducerOrder(records: rec, rank: rank, textIDs: textIDs, placements: placements, smallGroup: smallGroup,
                             firstMoveNode: n).run()
            }
        }
        var order: [Int32] = []
        order.reserveCapacity(extended.count - itemOfNode.count)
        for x in extended {
            if Int(x) < n {
                if records[Int(x)].flags & ItemFlag.moved == 0 { order.append(x) }
            } else {
                let i = itemOfNode[Int(x) - n]
                // An item stands at its latest move, if it is in the tree at all.
                if Int(x) == nodesOf[i]!.upperBound - 1, records[Int(i)].flags & ItemFlag.inTree != 0 { order.append(i) }
            }
        }
        return (order, visible, Array(shownNodes[0..<n]))
    }
}

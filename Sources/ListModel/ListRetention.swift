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
/// Joins, leaves, opaque kinds and dangling operations (no add) are always kept.
public struct ListRetention: Sendable {
    /// Fourteen days: lifecycles finished for longer than this are purged.
    public static let defaultRetentionMillis: Int64 = 14 * 24 * 60 * 60 * 1000

    /// Entries at or after this time (milliseconds since the epoch) stay.
    public var cutoff: Int64
    /// Entries above this sequence stay (the zone's low-water mark, capped at the sealed log).
    public var mark: SequenceNumber

    public init(cutoff: Int64, mark: SequenceNumber) {
        self.cutoff = cutoff
        self.mark = mark
    }

    public init(now: Int64, retentionMillis: Int64 = defaultRetentionMillis, mark: SequenceNumber) {
        self.init(cutoff: now - retentionMillis, mark: mark)
    }

    private struct Item {
        var entries: [SequenceNumber] = []
        var hasAdd = false
        /// The winning (first) add: it fixes the anchor and the run (MERGE.md §5, §3.2).
        var firstAdd: (key: ChangeKey, after: CompactID?)?
        var deleted = false
        var mark: (key: ChangeKey, isMarkOff: Bool)?
        var allOld = true
        var children: [CompactID] = []
    }

    @inline(__always)
    func isOld(_ seq: SequenceNumber, _ e: JournalEntry) -> Bool {
        seq <= mark && max(e.wallTime, Int64(clamping: e.clock.physicalMillis)) < cutoff
    }

    /// The sequences to purge, ascending. `entries` are one zone incarnation's, each once.
    public func purgeable<S: Sequence>(_ entries: S) -> [SequenceNumber] where S.Element == (SequenceNumber, JournalEntry) {
        var items: [CompactID: Item] = [:]
        var rename: (key: ChangeKey, seq: SequenceNumber)?
        var recolour: (key: ChangeKey, seq: SequenceNumber)?
        var oldRenames: [(SequenceNumber, ChangeKey)] = []
        var oldRecolours: [(SequenceNumber, ChangeKey)] = []
        var anchors: [(child: CompactID, anchor: CompactID)] = []

        for (seq, e) in entries {
            let old = isOld(seq, e)
            switch e.operation {
            case .add(let item, _, let after):
                let key = ChangeKey(e)
                var it = items[item, default: Item()]
                it.hasAdd = true
                if it.firstAdd.map({ key < $0.key }) ?? true { it.firstAdd = (key, after) }
                items[item] = it
                if let after, after != item { anchors.append((item, after)) }
                fallthrough
            case .markOff, .unmark, .delete:
                guard let item = e.operation.item else { continue }
                var it = items[item, default: Item()]
                it.entries.append(seq)
                if !old { it.allOld = false }
                switch e.operation {
                case .delete: it.deleted = true
                case .markOff, .unmark:
                    let key = ChangeKey(e)
                    if it.mark.map({ $0.key < key }) ?? true {
                        if case .markOff = e.operation { it.mark = (key, true) } else { it.mark = (key, false) }
                    }
                default: break
                }
                items[item] = it
            case .rename:
                let key = ChangeKey(e)
                if rename.map({ $0.key < key }) ?? true { rename = (key, seq) }
                if old { oldRenames.append((seq, key)) }
            case .recolour:
                let key = ChangeKey(e)
                if recolour.map({ $0.key < key }) ?? true { recolour = (key, seq) }
                if old { oldRecolours.append((seq, key)) }
            case .join, .leave, .opaque:
                continue
            }
        }
        for (child, anchor) in anchors where items[anchor] != nil { items[anchor]!.children.append(child) }

        // Sibling runs (MERGE.md §3.2) as the reducer forms them: per anchor and author, in
        // change order, split where consecutive adds are more than the run window apart.
        var groups: [GroupKey: [(ChangeKey, CompactID)]] = [:]
        for (id, item) in items {
            guard let first = item.firstAdd else { continue }
            // An orphan (anchor not added) is placed by its own key, in no run.
            let anchor = first.after.flatMap { items[$0]?.hasAdd == true ? $0 : nil }
            if first.after != nil && anchor == nil { continue }
            groups[GroupKey(anchor: anchor, author: first.key.author), default: []].append((first.key, id))
        }
        var runs: [[CompactID]] = []
        for (_, var members) in groups {
            members.sort { $0.0 < $1.0 }
            var run: [CompactID] = []
            for (k, m) in members.enumerated() {
                if k > 0, m.0.clock.physicalMillis - members[k - 1].0.clock.physicalMillis > ListReducer.runWindowMillis {
                    runs.append(run)
                    run = []
                }
                run.append(m.1)
            }
            runs.append(run)
        }

        // An item goes only with its whole subtree and its whole run. Removing a run never
        // reorders the others (their keys stay) nor merges two (gaps only grow), and removing a
        // subtree leaves no orphan. Blocking one member of a run keeps its ancestors too: repeat
        // until nothing changes.
        var blocked = Set<CompactID>()
        var decided: [CompactID: Bool] = [:]
        while true {
            decided = decide(items, blocked: blocked)
            var more = false
            for run in runs where run.count > 1 && run.contains(where: { decided[$0] != true }) {
                for m in run where decided[m] == true && blocked.insert(m).inserted { more = true }
            }
            if !more { break }
        }
        var result: [SequenceNumber] = []
        for (id, purge) in decided where purge { result += items[id]!.entries }
        result += oldRenames.filter { $0.0 != rename?.seq }.map(\.0)
        result += oldRecolours.filter { $0.0 != recolour?.seq }.map(\.0)
        return result.sorted()
    }

    private struct GroupKey: Hashable {
        var anchor: CompactID?
        var author: String
    }

    /// Whether each item goes: finished, old, not blocked, and every child goes. Children are
    /// decided first (iteratively: runs of adds make deep trees); an anchor cycle keeps all of it.
    private func decide(_ items: [CompactID: Item], blocked: Set<CompactID>) -> [CompactID: Bool] {
        var decided: [CompactID: Bool] = [:]
        decided.reserveCapacity(items.count)
        for (root, _) in items where decided[root] == nil {
            var stack: [(CompactID, Int)] = [(root, 0)]
            var onPath: Set<CompactID> = [root]
            while let (id, next) = stack.last {
                let item = items[id]!
                if next < item.children.count {
                    stack[stack.count - 1].1 += 1
                    let child = item.children[next]
                    if decided[child] != nil { continue }
                    if onPath.contains(child) {
                        decided[child] = false
                        continue
                    }
                    onPath.insert(child)
                    stack.append((child, 0))
                    continue
                }
                stack.removeLast()
                onPath.remove(id)
                if decided[id] != nil { continue }
                let finished = item.hasAdd && (item.deleted || item.mark?.isMarkOff == true)
                decided[id] = finished && item.allOld && !blocked.contains(id) && item.children.allSatisfy { decided[$0] == true }
            }
        }
        return decided
    }
}

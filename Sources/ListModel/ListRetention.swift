import JournalCodec

/// Which entries of a list's journal the compactor may purge (Spec/COMPACTION.md §2). Pure: the
/// query layer reads the entries, this decides, and the store removes them.
///
/// An entry is *old* when its time (the later of its wall time and its hybrid clock) is before the
/// cutoff and its sequence is at or below the mark. Purged are:
/// - **finished lifecycles**: every entry about an item (its adds, mark-offs, unmarks, deletes),
///   when the item has an add and is deleted or marked off (by the winning mark, MERGE.md §5),
///   all of those entries are old, and no item that stays anchors after it (so every item that
///   stays keeps its place: only whole subtrees leave the tree, MERGE.md §3);
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
                items[item, default: Item()].hasAdd = true
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

        // An item goes only with its whole subtree; decided children first (iteratively, since
        // runs of adds make deep trees), and an anchor cycle keeps everything on it.
        var decided: [CompactID: Bool] = [:]
        decided.reserveCapacity(items.count)
        var result: [SequenceNumber] = []
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
                        decided[child] = false  // a cycle: keep
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
                let purge = finished && item.allOld && item.children.allSatisfy { decided[$0] == true }
                decided[id] = purge
                if purge { result += item.entries }
            }
        }
        result += oldRenames.filter { $0.0 != rename?.seq }.map(\.0)
        result += oldRecolours.filter { $0.0 != recolour?.seq }.map(\.0)
        return result.sorted()
    }
}

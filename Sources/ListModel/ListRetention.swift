import JournalCodec

/// What the compactor does to one zone's journal (Spec/COMPACTION.md §2): entries to remove, and
/// entries to write in place of others (a `place`, keeping the replaced entry's id, author, clocks
/// and sequence).
package struct RetentionPlan: Sendable, Equatable {
    package struct Rewrite: Sendable, Equatable {
        package var sequence: SequenceNumber
        package var entry: JournalEntry

        package init(sequence: SequenceNumber, entry: JournalEntry) {
            self.sequence = sequence
            self.entry = entry
        }
    }

    /// Ascending.
    package var purge: [SequenceNumber] = []
    /// Ascending by sequence; none is also in `purge`.
    package var rewrite: [Rewrite] = []

    package var isEmpty: Bool { purge.isEmpty && rewrite.isEmpty }

    package init(purge: [SequenceNumber] = [], rewrite: [Rewrite] = []) {
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
/// Superseded renames and recolours go too (every old one except the winner, MERGE.md §4), and
/// every old compaction record (`CompactionRecord.isRecord`: opaque `0x84` by `_service`). Joins,
/// leaves, other opaque entries, dangling operations (no add and no place), anchor cycles and
/// anything not old always stay.
@usableFromInline package struct ListRetention: Sendable {
    /// Fourteen days: lifecycles finished for longer than this are purged.
    @usableFromInline package static let defaultRetentionMillis: Int64 = 14 * 24 * 60 * 60 * 1000

    /// Entries at or after this time (milliseconds since the epoch) stay.
    package var cutoff: Int64
    /// Entries above this sequence stay (the zone's low-water mark, capped at the sealed log).
    package var mark: SequenceNumber
    /// An entry that stays whatever it is, with its item: the zone's incarnation, since the entry
    /// that started an implicitly created zone is the zone's identity (TOKENS.md §1).
    package var pinned: SequenceNumber?

    package init(cutoff: Int64, mark: SequenceNumber, pinned: SequenceNumber? = nil) {
        self.cutoff = cutoff
        self.mark = mark
        self.pinned = pinned
    }

    package init(now: Int64, retentionMillis: Int64 = defaultRetentionMillis, mark: SequenceNumber, pinned: SequenceNumber? = nil) {
        self.init(cutoff: now - retentionMillis, mark: mark, pinned: pinned)
    }

    /// The plan for one zone incarnation's entries, each once. Deciding can reveal more to do (an
    /// item that gets a place no longer anchors by its adds, so an anchor may now fold or go):
    /// when a decision says so (`RetentionDecision.needsAnotherPass`, COMPACTION.md §2.1) the rules
    /// are applied again to their own result, otherwise one pass is all it takes; running the
    /// compactor again on the compacted journal finds nothing more.
    package func plan(_ entries: [(SequenceNumber, JournalEntry)]) -> RetentionPlan {
        var current = entries
        var purged = Set<SequenceNumber>()
        var written: [SequenceNumber: JournalEntry] = [:]
        for _ in 0..<Self.maxPasses {
            var planner = RetentionPlanner(pinned: pinned)
            for (s, e) in current { planner.add(s, e) }
            let decision = planner.decide(cutoff: cutoff, mark: mark)
            if decision.isEmpty { break }
            var next: [(SequenceNumber, JournalEntry)] = []
            next.reserveCapacity(current.count)
            for (s, e) in current {
                switch decision.verdict(s, e) {
                case .keep: next.append((s, e))
                case .purge: purged.insert(s)
                case .replace(let op):
                    var x = e
                    x.operation = op
                    written[s] = x
                    next.append((s, x))
                }
            }
            current = next
            if !decision.needsAnotherPass { break }
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
    package static let maxPasses = 64
}

/// What compaction does to one entry.
package enum EntryVerdict: Equatable, Sendable {
    case keep
    case purge
    /// Written over by this operation (a `place`), keeping the entry's id, author, clocks and
    /// sequence (COMPACTION.md §2). Boxed: a verdict is given for every entry a rewrite reads.
    indirect case replace(EntryOperation)
}

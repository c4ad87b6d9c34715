import JournalLog
import ListModel

/// The mark a zone is compacted under, and the first pass's decision, or why nothing of it goes
/// (COMPACTION.md §1 steps 1–2, SYNC.md §6.2 rules 2 and 9): the one rule the engine's compactor
/// (`ListCompactor`) and the PostgreSQL backend both call, so a zone is compacted alike over either.
/// Pure: what the zone's entries are (`planner`) and where each bound lies.
package enum CompactionMark {
    /// Where a zone's purge may reach.
    package struct Bounds: Sendable {
        /// The zone's low-water mark now: the mark never goes below it.
        package var lowWaterMark: SequenceNumber
        /// The last position of the zone the run may touch at all: its last change, and no
        /// further than the sealed log (the engine) or the horizon (a database).
        package var unheld: SequenceNumber
        /// The highest mark the run may set (the sealed log, or the horizon).
        package var ceiling: SequenceNumber
        /// The lowest mark unexpired consumers hold the zone at (the engine's), or nil.
        package var consumers: SequenceNumber?
        /// The last position every entry at or below which arrived by the cutoff (rule 9), or nil.
        package var arrivedThrough: SequenceNumber?

        package init(lowWaterMark: SequenceNumber, unheld: SequenceNumber, ceiling: SequenceNumber,
                     consumers: SequenceNumber? = nil, arrivedThrough: SequenceNumber? = nil) {
            self.lowWaterMark = lowWaterMark
            self.unheld = unheld
            self.ceiling = ceiling
            self.consumers = consumers
            self.arrivedThrough = arrivedThrough
        }

        /// Capped by everything that holds it back. The arrival bound caps it even below the
        /// zone's low-water mark: that mark is the previous run's snapshot position, above that
        /// run's `M`, and an entry between the two that arrived within the retention must stay
        /// (a device that synced since holds it; one that did not must not lose it unseen).
        var mark: SequenceNumber { min(clamp(heldByConsumers), arrivedThrough ?? .max) }
        /// Capped by the consumers alone.
        var heldByConsumers: SequenceNumber { min(unheld, consumers ?? .max) }
        func clamp(_ limit: SequenceNumber) -> SequenceNumber { min(max(lowWaterMark, limit), ceiling) }
    }

    /// What the rule decides for a zone.
    package enum Decision {
        /// Compact under `mark`, beginning with the pass `first`.
        case compact(mark: SequenceNumber, first: RetentionDecision)
        /// Nothing of it goes, and why.
        case skip(CompactionSkip)
    }

    /// The mark and the first pass's decision, or why the zone has nothing to compact: nothing
    /// older than the cutoff; something would go but for the arrival bound (`arrivedRecently`);
    /// but for the consumers (`heldByConsumers`); or nothing finished below the mark.
    package static func decide(_ planner: RetentionPlanner, cutoff: Int64, bounds b: Bounds) -> Decision {
        let mark = b.mark
        let first = planner.decide(cutoff: cutoff, mark: mark)
        if mark > 0, !first.isEmpty { return .compact(mark: mark, first: first) }
        if planner.oldestTime >= cutoff { return .skip(.nothingOlderThanCutoff) }
        // Held back by arrivals only if, without that bound, something would go; by consumers
        // only if, without them too, something would.
        if mark < b.unheld && !planner.decide(cutoff: cutoff, mark: b.clamp(b.heldByConsumers)).isEmpty {
            return .skip(.arrivedRecently(at: mark))
        }
        if mark < b.unheld && !planner.decide(cutoff: cutoff, mark: b.unheld).isEmpty { return .skip(.heldByConsumers(at: mark)) }
        return .skip(.nothingFinished)
    }
}

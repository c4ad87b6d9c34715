import JournalLog
import ListModel

/// What compacting one zone did.
public struct ZoneCompaction: Sendable, Equatable {
    /// The zone compacted.
    public var zone: String
    /// The zone incarnation compacted (the sequence that started it).
    public var incarnation: SequenceNumber
    /// The zone's low-water mark after the run: tokens below it get `tokenExpired`.
    public var lowWaterMark: SequenceNumber
    /// Entries the list rules chose to remove (finished lifecycles, superseded renames and recolours).
    public var chosen: Int
    /// Entries the list rules chose to replace by a `place` (the placements of finished items
    /// that anchor items that stay, COMPACTION.md §2).
    public var rewritten: Int = 0
    /// The history and snapshot written at this sequence; the snapshot is what an expired client
    /// re-fetches from.
    public var snapshotSequence: SequenceNumber

    package init(zone: String, incarnation: SequenceNumber, lowWaterMark: SequenceNumber, chosen: Int, rewritten: Int = 0,
                 snapshotSequence: SequenceNumber) {
        self.zone = zone
        self.incarnation = incarnation
        self.lowWaterMark = lowWaterMark
        self.chosen = chosen
        self.rewritten = rewritten
        self.snapshotSequence = snapshotSequence
    }
}

/// Why a live zone had nothing to compact: what an operator waits for, or fixes.
public enum CompactionSkip: Sendable, Equatable {
    /// Every entry is newer than the cutoff.
    case nothingOlderThanCutoff
    /// Entries older than the cutoff lie above the mark unexpired consumers hold the zone at
    /// (`jlog consumers`): they go once those consumers advance or their leases expire.
    case heldByConsumers(at: SequenceNumber)
    /// Entries older than the cutoff by their own time lie above `at`, the last position the
    /// sync service had received by the cutoff (`ListCompactor.arrivedThrough`): they go once
    /// they have been on the service for the retention too.
    case arrivedRecently(at: SequenceNumber)
    /// Entries older than the cutoff lie below the mark, but none is a finished item or a
    /// superseded rename or recolour.
    case nothingFinished
    /// It gained entries while every one of `ListCompactor.maxAttempts` rewrites was being
    /// written, so none committed: its history, raised mark and a snapshot of its unchanged log
    /// are left, and the next run finishes the job.
    case keptChanging
    /// Its reader refuses the list (`QueryError.baseUnreadable`: a base it cannot apply,
    /// Spec/MERGE.md §10), and `reason` says why. Decided before anything of it is written, so
    /// nothing of it is purged or written over and no snapshot is written for it: purging could
    /// change what the list reads as (entries purged before a base make it the first). Every run
    /// skips it again until it is repaired or deleted (COMPACTION.md §1.1).
    case baseUnreadable(reason: String)
}

/// What a compaction run did, or in a dry run would do (`ListCompactor.run(now:dryRun:)`).
public struct ListCompactionReport: Sendable {
    /// The zones compacted, one report each.
    public var zones: [ZoneCompaction] = []
    /// Live zones with nothing to compact, and why, in name order.
    public var skipped: [(zone: String, reason: CompactionSkip)] = []
    /// The sequences the list rules chose to remove, ascending (what a dry run would purge).
    package var chosen: [SequenceNumber] = []
    /// The sequences the list rules chose to replace by a `place`, ascending.
    package var rewritten: [SequenceNumber] = []
    /// What the storage step did: entries purged and replaced, segments rewritten, bytes.
    public var storage = CompactionReport()
    /// Snapshot and history files removed: superseded ones, and those of deleted zones.
    package var filesRemoved = 0
    /// Where the run's time went, in milliseconds: `read` (the zones read through the planner
    /// and decided), `prepare` (history chain checked, snapshots removed, marks raised, late
    /// entries re-read), `rewrite` (the store's rewrite, with the history pieces written during
    /// it), `snapshot` (the state that stays, read and written).
    package var phaseMillis: [String: Double] = [:]

    package init() {}
}

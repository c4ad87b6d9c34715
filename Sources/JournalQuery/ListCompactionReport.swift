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
    /// What devices need to follow the run (Spec/SYNC.md §6.7): the ids it purged and the
    /// entries it wrote over, in the order it met them, and the state digest at
    /// `snapshotSequence` after it. Nil when the run purged more than `CompactionRecord.maxIDs`
    /// of the zone, or did not reach its snapshot: then no device follows it, and older tokens
    /// expire.
    package var followed: Followed?
    /// The lowest mark this run's purge started from (the zone's mark before it).
    package var previousMark: SequenceNumber = 0

    /// What a compaction record is made of, as the run collects it.
    package struct Followed: Sendable, Equatable {
        package var purged: [CompactID] = []
        package var placed: [CompactionRecord.Placement] = []
        package var digest: UInt64?
        /// The follow floor before the run: the `followFrom` of the zone's record at its mark
        /// before the run, or that mark when it has none (`CompactionRecord.followFrom`).
        package var followFrom: SequenceNumber = 0
        /// The previous record's `followPosition`, then raised to the highest sequence this run
        /// purges or writes over.
        package var followPosition: SequenceNumber = 0

        package init() {}

        /// Adds what the run did to `e` (purged, or written over with `replacement`); false once
        /// the record would pass `CompactionRecord.maxIDs`.
        package mutating func note(_ e: JournalEntry, at sequence: SequenceNumber, replacement: EntryOperation?) -> Bool {
            guard purged.count + placed.count < CompactionRecord.maxIDs else { return false }
            followPosition = max(followPosition, sequence)
            if case .place(let item, let after)? = replacement {
                placed.append(.init(entry: e.id, item: item, anchor: after))
            } else {
                purged.append(e.id)
            }
            return true
        }
    }

    package init(zone: String, incarnation: SequenceNumber, lowWaterMark: SequenceNumber, chosen: Int, rewritten: Int = 0,
                 snapshotSequence: SequenceNumber) {
        self.zone = zone
        self.incarnation = incarnation
        self.lowWaterMark = lowWaterMark
        self.chosen = chosen
        self.rewritten = rewritten
        self.snapshotSequence = snapshotSequence
        self.followed = Followed()
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

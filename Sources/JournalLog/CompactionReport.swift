/// What one `compact` call did.
public struct CompactionReport: Sendable, Equatable {
    /// Sealed segments read.
    public var segmentsExamined = 0
    /// Sealed segments rewritten: those that held something to purge or replace.
    public var segmentsRewritten = 0
    /// Entries removed because they were asked for and lay at or below their zone's low-water mark.
    public var entriesPurged = 0
    /// Entries removed because their zone incarnation was deleted.
    public var deletedZoneEntriesPurged = 0
    /// Entries written in place of the stored ones at the same sequences.
    public var entriesReplaced = 0
    /// Entries asked for (purge or replacement) but kept as stored: above their zone's low-water
    /// mark, or (asked by sequence, `compact(purging:)`) in the active segment. The entry that
    /// started an implicitly created zone is purged like any other, its `zoneCreate` written in
    /// its place (COMPACTION.md §6), and counted in `entriesPurged`.
    public var entriesKept = 0
    /// The rewritten segments' size before the run.
    public var bytesBefore: Int64 = 0
    /// The rewritten segments' size after it.
    public var bytesAfter: Int64 = 0

    package init() {}

    /// Adds another run's counts (a compactor that rewrites in several runs reports their sum;
    /// a segment rewritten by two runs then counts twice).
    package mutating func add(_ other: CompactionReport) {
        segmentsExamined += other.segmentsExamined
        segmentsRewritten += other.segmentsRewritten
        entriesPurged += other.entriesPurged
        deletedZoneEntriesPurged += other.deletedZoneEntriesPurged
        entriesReplaced += other.entriesReplaced
        entriesKept += other.entriesKept
        bytesBefore += other.bytesBefore
        bytesAfter += other.bytesAfter
    }
}

/// What a compaction does with one entry, as its caller decides (`JournalStore.compact(within:choosing:)`).
package enum CompactionChoice: Sendable {
    case keep
    case purge
    /// Written over by this entry (same id and zone) at the same sequence. Boxed: the choice is
    /// made for every entry a rewrite reads and copied on the way, and most are keep or purge.
    indirect case replace(JournalEntry)
}

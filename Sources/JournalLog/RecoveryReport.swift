/// What opening a store found and did.
public struct RecoveryReport: Sendable {
    /// The recovery mode the store was opened with.
    public var mode: RecoveryMode
    /// How many segments the store has after recovery.
    public var segments: Int
    /// The last sequence in the log as recovered.
    public var lastSequence: SequenceNumber
    /// The damage recovery acted on, if any.
    public var problem: Corruption?
    /// Files under `torn/` that hold the bytes recovery removed.
    public var setAside: [String] = []
    /// How many bytes recovery cut from the log (kept in `setAside`).
    public var removedBytes: Int64 = 0
    /// True when this open created the store.
    public var created: Bool = false
    /// How open got the zone index.
    package var index = IndexOpenReport()
    /// `index.source`.
    package var indexSource: IndexSource {
        get { index.source }
        set { index.source = newValue }
    }
    /// `index.recordsReplayed`.
    package var indexRecordsReplayed: Int {
        get { index.recordsReplayed }
        set { index.recordsReplayed = newValue }
    }
    /// `index.journalRecords`.
    package var indexJournalRecords: Int {
        get { index.journalRecords }
        set { index.journalRecords = newValue }
    }
    /// The token epoch this open began (Spec/TOKENS.md §7): tokens of earlier epochs stay good
    /// for the positions the log still holds as it did when they were issued.
    public var epoch: UInt64 = 0
    /// What open found about the store's past that clients will notice: no (readable) `EPOCHS`, so
    /// every earlier token is refused, or a loss of acknowledged entries the caller accepted.
    public var epochNote: String?
    /// Snapshot files (`.snap`, `.delta`, `.base`) whose sequence was past the log's end as
    /// recovered (a restored older copy, a lost unsynced tail), moved into `torn/`: their paths
    /// there (Spec/SNAPSHOT.md §2.1). New entries take those sequences; the list is a replay.
    public var snapshotsSetAside: [String] = []
    /// Consumer marks that stood past the log's end as recovered, lowered to it
    /// (Spec/COMPACTION.md §3).
    package var consumerMarksLowered: [LoweredConsumerMark] = []
}

package enum IndexSource: Sendable, Equatable {
    case checkpoint
    case rebuilt(reason: String)
}

/// How an open (a writer's or a `StoreReader`'s) got the zone index (Spec/INDEX.md §4, §5): from
/// the checkpoint files plus a replay of the records after them, or rebuilt from the whole log.
/// The index is a cache, so a rebuild loses nothing; this says why an open read the whole log.
package struct IndexOpenReport: Sendable, Equatable {
    package var source: IndexSource = .rebuilt(reason: "new store")
    /// Records decoded to bring the zone index up to date.
    package var recordsReplayed = 0
    /// Records of the index journal applied to the checkpoint file (Spec/INDEX.md §5).
    package var journalRecords = 0
    /// The last sequence the checkpoint covered, its journal applied; nil when rebuilt.
    package var checkpointSequence: SequenceNumber?

    package init() {}
}

// Workload sizes. Everything the benchmark does is sized by one of these two tables:
// `full` (the default, well under 10 minutes on a 2-core VM) and `quick` (`--quick`, under 60 s).

struct Counts: Sendable {
    /// Repetitions of every measurement (JournalLog and SQLite interleaved A B A B …); the median is reported.
    var runs: Int

    // 1. Machine limits
    /// 4 KiB records appended (or overwritten in a pre-zeroed file), one fdatasync each.
    var fsyncRecords: Int
    /// Sequential write: this many 1 MiB writes, then one fsync.
    var seqWriteMiB: Int
    /// CRC32C.checksum over a buffer of this size, `crcPasses` times per run.
    var crcBufferMiB: Int
    var crcPasses: Int
    /// LZ4 compress/decompress: this many MiB of encoded batch bodies per run.
    var lz4MiB: Int

    // 2. Buffered append (durability .none / SQLite WAL + synchronous=NORMAL)
    var bufferedEntries: Int
    var batchSize: Int

    // 3. Durable single-entry commits (.always / SQLite synchronous=FULL, one row per transaction)
    var durableCommits: Int

    // 4. Concurrent durable appenders
    var concurrentThreads: Int
    var concurrentPerThread: Int

    // 5 + 6. Open/recovery, full read and bytes per entry of one store
    var storeEntries: Int

    // 7. The change feed: entries in the measured zone of a 10-zone store (a tenth of it too),
    // and the number of zones for changedZones.
    var feedHotEntries: Int
    var feedZones: Int

    // 8. Materialising a list: entries in the zone (the snapshot runs use a tenth of it too).
    var materialiseEntries: Int

    // 9. Compaction: list entries in the zone, repetitions (each on a fresh store and database,
    // both built untimed), and the segment size that keeps most of the log sealed.
    var compactionEntries: Int
    var compactionRuns: Int
    var compactionSegmentBytes: Int

    // 10. A small store: one family list written one durable entry at a time.
    var smallStoreEntries: Int

    // 11. Sync: the list a new device syncs first, and the changes synced one at a time.
    var syncListEntries: Int = 100_000
    var syncChanges: Int = 200
    /// Entries of the family list a device re-fetches after 15 days away (`LifecycleWorkload`).
    var refetchListEntries: Int = 1_000_000

    // 12. Append tail latency beside background work, on the compaction workload's
    // list (`compactionEntries`): seconds of appends per kind with nothing, a snapshot or an
    // index checkpoint beside them (beside a compaction they run as long as it does), and the
    // small zones added so the index checkpoint has something to write.
    var tailSeconds: Double = 2
    var tailSmallZones: Int = 20_000
}

enum Workloads {
    static let full = Counts(
        runs: 5,
        fsyncRecords: 3_000,
        seqWriteMiB: 256,
        crcBufferMiB: 64,
        crcPasses: 8,
        lz4MiB: 256,
        bufferedEntries: 1_000_000,
        batchSize: 1_000,
        durableCommits: 4_000,
        concurrentThreads: 16,
        concurrentPerThread: 1_000,
        storeEntries: 1_000_000,
        feedHotEntries: 1_000_000,
        feedZones: 10_000,
        materialiseEntries: 1_000_000,
        compactionEntries: 1_000_000,
        compactionRuns: 3,
        compactionSegmentBytes: 4 << 20,
        smallStoreEntries: 300
    )

    static let quick = Counts(
        runs: 3,
        fsyncRecords: 500,
        seqWriteMiB: 64,
        crcBufferMiB: 64,
        crcPasses: 4,
        lz4MiB: 64,
        bufferedEntries: 200_000,
        batchSize: 1_000,
        durableCommits: 500,
        concurrentThreads: 16,
        concurrentPerThread: 100,
        storeEntries: 100_000,
        feedHotEntries: 100_000,
        feedZones: 10_000,
        materialiseEntries: 100_000,
        compactionEntries: 100_000,
        compactionRuns: 3,
        compactionSegmentBytes: 1 << 20,
        smallStoreEntries: 300,
        syncListEntries: 20_000,
        syncChanges: 50,
        refetchListEntries: 100_000,
        tailSeconds: 1
    )
}

/// Names accepted by `--only` (comma-separated).
enum Group: String, CaseIterable, Sendable {
    case machine
    case buffered = "buffered_append"
    case durable = "durable_single"
    case concurrent = "concurrent_durable"
    /// Open/recovery, full read and on-disk bytes per entry, all on one store.
    case store = "open_recovery"
    /// The change feed: last 100 changes of a zone, changedZones over many zones.
    case feed = "change_feed"
    /// Materialising a list, snapshots, opening a zone from a snapshot.
    case materialise = "materialise"
    /// Only the reducer-alone line of `materialise`, for profiling it.
    case reducer = "reducer"
    /// The list compactor against SQLite DELETEs + checkpoint; opening from its snapshot.
    case compaction = "compaction"
    /// Only the family-list opens of `compaction` (at three history lengths), for profiling them.
    case lifecycleOpen = "lifecycle_open"
    /// A family list of a few hundred entries: bytes on disk and open time.
    case smallStore = "small_store"
    /// A device's first sync of a large list, and one change's cost.
    case sync = "sync"
    /// Append latency (p50/p99/p999) alone and beside a compaction, a snapshot and an index
    /// checkpoint; SQLite's beside its DELETE + checkpoint.
    case tail = "tail"
    /// Append → observed list state, in process and through a reader; what an append holds its
    /// caller for.
    case observe = "observe_list"
    /// Uploads appended to PostgreSQL, alone and grouped, one node and two, beside the engine's store.
    case postgres = "postgres_append"
    /// Sealed lists: bytes per sealed add and mark-off, time to seal and open a text.
    case e2ee = "e2ee"

    static func parse(_ s: String) -> Group? {
        switch s {
        case "small_store", "small": .smallStore
        case "sync", "initial_sync", "sync_per_change": .sync
        case "machine", "limits": .machine
        case "buffered_append", "buffered", "append": .buffered
        case "durable_single", "durable", "single": .durable
        case "concurrent_durable", "concurrent": .concurrent
        case "open_recovery", "open", "recovery", "store", "full_read", "read", "bytes_per_entry", "bytes": .store
        case "change_feed", "feed", "last_100_changes", "changed_zones": .feed
        case "materialise", "materialize", "snapshot", "snapshots": .materialise
        case "reducer", "reducer_apply": .reducer
        case "compaction", "compact", "compactor", "delete": .compaction
        case "lifecycle_open", "lifecycle": .lifecycleOpen
        case "observe_list", "observe", "caller_blocked": .observe
        case "tail", "append_tail": .tail
        case "postgres_append", "postgres", "postgresql": .postgres
        case "e2ee", "sealed", "sealing": .e2ee
        default: nil
        }
    }
}

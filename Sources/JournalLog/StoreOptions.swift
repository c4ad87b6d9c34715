import Foundation

/// When an append is acknowledged (Spec/FORMAT.md §10).
public enum Durability: String, Sendable, CaseIterable {
    /// After write(2): survives a crash of the process, not of the machine.
    case none
    /// Batches are acknowledged after fdatasync; single entries after write(2), becoming
    /// durable with the next synced batch or `sync()`.
    case onBatch
    /// Every append is acknowledged after fdatasync. Concurrent appenders share one (group commit).
    case always
}

/// How a store is opened: when appends are acknowledged, segment size, recovery and the like.
public struct StoreOptions: Sendable {
    /// When an append is acknowledged (`always` by default).
    public var durability: Durability = .always
    /// A segment is sealed and a new one started once the next record would pass this size.
    public var segmentSize: Int = 64 << 20
    /// Fill new segments with zeros and sync them, so appends do not change the file size:
    /// fdatasync then skips the metadata journal (about +50% syncs/s on ext4).
    public var preallocate: Bool = true
    /// How open treats damage in the log (FORMAT.md §9.2).
    public var recovery: RecoveryMode = .tolerateTail
    /// Create the store when nothing is at its path; otherwise opening it throws `storeMissing`.
    public var createIfMissing: Bool = true
    /// LZ4-compress batch bodies of at least `Limits.compressionThreshold` bytes.
    public var compressBatches: Bool = true
    package var fileSystem: any FileSystem = PosixFileSystem()
    /// The zone index is checkpointed after this many bytes of log (and on close), so open replays
    /// at most this much. The checkpoint is a cache: losing it costs a rebuild, never data.
    public var indexCheckpointBytes: Int = 16 << 20
    /// How long `open` waits for another writer to release the store before throwing `locked`.
    public var lockWait: Duration = .zero
    /// Open even though acknowledged entries are missing (`acknowledgedEntriesMissing`: a segment
    /// removed, a restored copy, a cut that was not a torn write): an operator's decision. The
    /// store begins a new token epoch at its end, so no token ever skips what was lost.
    public var acceptLoss = false

    /// The defaults: durable appends, 64 MiB preallocated segments, a torn tail tolerated.
    public init() {}

    /// The options most callers set; the others keep their defaults.
    public init(durability: Durability = .always, segmentSize: Int = 64 << 20, preallocate: Bool = true,
                recovery: RecoveryMode = .tolerateTail, createIfMissing: Bool = true) {
        self.durability = durability
        self.segmentSize = segmentSize
        self.preallocate = preallocate
        self.recovery = recovery
        self.createIfMissing = createIfMissing
    }
}

/// What orders a compaction against the store's other work (Spec/FORMAT.md §9.4), guarded by
/// the store's `cond`: one run at a time; feed reads between choosing frame locations and
/// reading them, which a swap waits for (and new ones wait while a swap waits); the zones whose
/// compacted segments a commit swaps in with the lock released, whose appends, creations and
/// deletions wait; and a swap that failed part way, after which no frame is read.
struct CompactionGate {
    /// A compaction is running: no index checkpoint is written (its offsets may be going stale),
    /// and a second run is refused.
    var running = false
    /// Feed reads between choosing frame locations and reading them.
    var feedReaders = 0
    /// A commit waits for the feed readers to finish before it swaps; new reads wait meanwhile.
    var swapWaiting = false
    /// The zones whose compacted segments a commit is swapping in with the lock released: no
    /// entry of theirs may slip between the commit's check and its swap; other zones go on.
    var swappingZones: Set<String> = []
    /// Compaction runs committed since open (`StoreReading.rewrites`).
    var rewritesCommitted: UInt64 = 0
    /// A compaction's swap that failed part way: some segments may be renamed over while the
    /// index still holds their old frame offsets, so no frame is read until a reopen finishes the
    /// swap.
    var swapFailure: JournalError?

    /// Whether a change to `zone` must wait for the swap in progress.
    func holds(_ zone: String) -> Bool { !swappingZones.isEmpty && swappingZones.contains(zone) }

    /// Refuses a read of frames after a swap failed part way.
    func readable() throws(JournalError) {
        if let swapFailure {
            throw JournalError.writerFailed("a compaction's swap failed part way (\(swapFailure)): the store's index and its segments disagree until it is reopened, which finishes the swap")
        }
    }
}

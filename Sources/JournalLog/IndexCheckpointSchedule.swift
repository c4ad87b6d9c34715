/// When the store's zone index checkpoint is taken and written (Spec/INDEX.md §4): after
/// `indexCheckpointBytes` of durable log, taken under the store's lock (a copy of the catalog's
/// tracks) and written by the next appender once the lock is released, one write at a time,
/// never while a compaction runs. Guarded by the store's `cond`.
struct IndexCheckpointSchedule {
    /// The last frame written, and the one the checkpoint on disk covers (nil: none is current).
    var lastWritten: CoveredFrame?
    private(set) var checkpointed: CoveredFrame?
    /// Log bytes written since the last checkpoint was taken.
    private var bytesSince = 0
    /// A checkpoint taken when one fell due, waiting for a thread to write it. A compaction drops
    /// it (its offsets are about to change).
    private var due: TakenCheckpoint?
    /// A thread is writing a claimed checkpoint outside the lock; a compaction and `close` wait.
    private(set) var writing = false
    /// The files changed under the writer's `IndexCheckpointFiles` (a compaction removed them, or
    /// a due checkpoint was dropped): the next writer forgets what it knew and writes a whole one.
    private var filesChanged = false

    init(lastWritten: CoveredFrame?, checkpointed: CoveredFrame?) {
        self.lastWritten = lastWritten
        self.checkpointed = checkpointed
    }

    /// `bytes` more of the log were written.
    mutating func wrote(_ bytes: Int) { bytesSince += bytes }

    /// Whether a checkpoint is due after `threshold` bytes and none is being written.
    func isDue(after threshold: Int) -> Bool { bytesSince >= threshold && !writing }

    /// Takes a checkpoint of what `lastWritten` covers, unless the current one covers it; `make`
    /// copies the catalog. One not yet claimed is replaced; what it counted as changed still counts.
    mutating func take(_ make: (CoveredFrame) -> TakenCheckpoint) {
        bytesSince = 0
        guard let covered = lastWritten, covered.offset != checkpointed?.offset || covered.segment != checkpointed?.segment else { return }
        let taken = make(covered)
        due = due.map { taken.including($0) } ?? taken
    }

    /// The due checkpoint, now the caller's to write (and whether its files changed meanwhile),
    /// if no other is being written and no compaction runs.
    mutating func claim(compactionRunning: Bool) -> (checkpoint: TakenCheckpoint, filesChanged: Bool)? {
        guard let taken = due, !writing, !compactionRunning else { return nil }
        due = nil
        writing = true
        defer { filesChanged = false }
        return (taken, filesChanged)
    }

    /// The claimed checkpoint was written (or its write failed).
    mutating func finished(_ written: TakenCheckpoint, failed: Bool) {
        writing = false
        if !failed { checkpointed = written.covered }
    }

    /// The next sync takes a checkpoint (a compaction changed the offsets).
    mutating func force(threshold: Int) {
        checkpointed = nil
        filesChanged = true
        bytesSince = max(bytesSince, threshold)
    }

    /// The due checkpoint is not written (a compaction is about to move the frames it names);
    /// what it counted as changed is lost with it, so the next one is written whole.
    mutating func drop() {
        if due != nil { filesChanged = true }
        due = nil
    }

    /// The checkpoint file is gone: none is current.
    mutating func removed() {
        checkpointed = nil
        filesChanged = true
    }
}

import Foundation

/// The store's side of index checkpoints (Spec/INDEX.md §4, §5): taking one under `cond` when
/// `IndexCheckpointSchedule` says it is due, and writing it with the lock released.
extension JournalStore {
    /// Under `cond`, by the leader right after a sync (or on close, after its sync): takes the
    /// index checkpoint, covering only durable frames, for `writeDueCheckpoint` to write once the
    /// lock is released. Taking it copies the catalog's tracks (their arrays are shared, not
    /// copied); nothing here reads or writes a file.
    func takeCheckpointLocked() {
        assert(writer.writtenFrames == writer.durableFrames && pendingMarks.isEmpty, "a checkpoint covers durable frames only")
        guard !gate.running else { return }
        checkpoints.take { covered in catalog.takeCheckpoint(storeID: idPair, covered: covered) }
    }

    /// Writes the checkpoint that fell due, if any, without holding `cond`: appenders go on
    /// meanwhile. Called by an appender after its commit returns, by `checkpointIndex` and by
    /// `close`. A compaction waits for a write in flight before it starts, and drops a due one.
    func writeDueCheckpoint() {
        cond.lock()
        let due = claimDueCheckpointLocked()
        cond.unlock()
        if let due { write(due) }
    }

    /// Under `cond`: the checkpoint that fell due, now this thread's to write, if no other is
    /// being written and no compaction runs.
    func claimDueCheckpointLocked() -> TakenCheckpoint? {
        guard let (due, filesChanged) = checkpoints.claim(compactionRunning: gate.running) else { return nil }
        if filesChanged { checkpointFiles.forget() }
        return due
    }

    /// Writes a claimed checkpoint without holding `cond`, then records the outcome.
    func write(_ due: TakenCheckpoint) {
        var failed: JournalError? = nil
        do { try checkpointFiles.write(due) } catch { failed = error }
        cond.lock()
        checkpoints.finished(due, failed: failed != nil)
        indexCheckpointError = failed
        cond.broadcast()
        cond.unlock()
    }

    /// Writes the zone index checkpoint now, covering everything durable, so that the next open
    /// replays nothing: for a caller's background step (after a burst of appends, before the
    /// app is suspended). Appends go on while it writes. A failure is in `indexCheckpointError`.
    package func checkpointIndex() throws(JournalError) {
        try sync()
        cond.lock()
        writer.waitForLeaderLocked()
        while checkpointWriting { cond.wait() }
        if failure == nil && pendingMarks.isEmpty && writer.writtenFrames == writer.durableFrames { takeCheckpointLocked() }
        // Claimed in the same hold of the lock: the caller writes it, never an appender.
        let due = claimDueCheckpointLocked()
        cond.unlock()
        if let due { write(due) }
    }

    /// Under `cond`: the next sync writes a checkpoint (after a compaction changed offsets).
    func forceCheckpointLocked() { checkpoints.force(threshold: options.indexCheckpointBytes) }

    /// Under `cond`: the checkpoint that fell due is not written (a compaction is about to move
    /// the frames it names); the next sync after the run takes a new one.
    func dropDueCheckpointLocked() { checkpoints.drop() }

    /// Under `cond`: the checkpoint file is gone; no checkpoint is current.
    func markCheckpointRemovedLocked() { checkpoints.removed() }
}

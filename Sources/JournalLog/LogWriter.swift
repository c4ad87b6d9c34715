import Foundation

/// Group commit onto segment files (Spec/FORMAT.md §3, §10), and nothing else: frames are
/// enqueued by any thread (each gets a ticket), and one thread at a time, the leader, writes
/// everything queued and syncs once for every waiter. It rolls to a new segment when the next
/// frame would pass the segment size, and grows the active segment's zero fill as it fills.
///
/// It knows no zones: each frame carries an opaque `FrameNote` back to its owner, who learns
/// where the frame went (and whether it is durable) through `didWrite`, called under the lock.
/// Like LevelDB's `log::Writer`, it is apart from the database that uses it; unlike it, it also
/// owns group commit, rolling to a new segment and the segment's zero fill.
///
/// Locking: every `var` is guarded by `cond`, the owner's condition variable, except `active`,
/// which belongs to the leader (the thread that set `leaderActive`).
final class LogWriter: @unchecked Sendable {
    /// What the owner attaches to a frame: the zone incarnations it touches and a low-water mark
    /// that takes effect once the frame is durable.
    struct FrameNote {
        var touches: [FrameTouch] = []
        var lowWater: LowWater?
    }

    struct LowWater {
        var zone: String
        var incarnation: SequenceNumber
        var mark: SequenceNumber
        /// How far the incarnation's history pieces reach (0: the record does not say).
        var history: SequenceNumber = 0
    }

    struct PendingFrame {
        var start: Int
        var end: Int
        /// The base a new segment starting with this frame gets: its first sequence, or for a
        /// frame that takes none, the next sequence (FORMAT.md §4.2).
        var segmentBase: SequenceNumber
        var seed: UInt32
        var crc: UInt32
        var lastSequence: SequenceNumber
        var note: FrameNote
    }

    /// Where the leader wrote a frame.
    struct Placement {
        var segment: SequenceNumber
        var offset: Int64
    }

    struct ActiveSegment {
        var file: any StorageFile
        var name: SegmentName
        var writeOffset: Int64
        var records: Int
        /// Bytes the file holds, zero fill included: appends below it do not change its size.
        var allocated: Int64
    }

    /// A new segment's first zero fill; it doubles as the segment fills, up to the segment size,
    /// so a small store stays small on disk and opening checks little zero fill.
    static let initialPreallocation: Int64 = 64 << 10
    /// The most the zero fill grows by at once. The leader writes it while every append waits, and
    /// the commit's sync carries it to the disk, so the step must stay small: doubling from 16 to
    /// 32 MiB stalled a server's appends for ~0.8 s, and a 1 MiB step (write and sync ~1 ms) was
    /// the p99 of 100-entry durable batches, one in a hundred. 256 KiB costs ~0.2 ms.
    static let maxPreallocationStep: Int64 = 256 << 10

    let store: String
    let fs: any FileSystem
    let segmentSize: Int
    let preallocate: Bool
    let storeID: (UInt64, UInt64)
    let cond: NSCondition

    var chain: UInt32
    var lastAssigned: SequenceNumber
    var writtenThrough: SequenceNumber
    var durableThrough: SequenceNumber
    /// The base of the segment appends go to; every sequence below it is in a sealed segment.
    /// Updated after each write, so it may lag a roll, which only errs on the safe side.
    var activeBase: SequenceNumber
    var failure: JournalError?
    private var pending: [UInt8] = []
    private var spareBuffer: [UInt8] = []
    private var pendingFrames: [PendingFrame] = []
    // Every enqueued frame gets a ticket (1, 2, …); callers wait on their ticket, not on a
    // sequence, so records that take no sequence (seal, lowWaterMark) are written and synced too.
    private(set) var enqueuedFrames = 0
    private(set) var writtenFrames = 0
    private(set) var durableFrames = 0
    private var syncRequestedFrames = 0
    private(set) var leaderActive = false
    private var active: ActiveSegment

    /// Called under `cond` by the leader after each write round: the frames written, where, and
    /// whether everything written is durable now.
    var didWrite: (_ frames: [PendingFrame], _ placements: [Placement], _ durable: Bool) -> Void = { _, _, _ in }
    /// Called by the leader, not holding `cond`, once a roll has made `base` the active segment.
    var didRoll: (_ base: SequenceNumber) throws(JournalError) -> Void = { _ in }

    init(store: String, fs: any FileSystem, options: StoreOptions, storeID: (UInt64, UInt64), cond: NSCondition,
         chain: UInt32, lastAssigned: SequenceNumber, active: ActiveSegment) {
        self.store = store
        self.fs = fs
        segmentSize = options.segmentSize
        preallocate = options.preallocate
        self.storeID = storeID
        self.cond = cond
        self.chain = chain
        self.lastAssigned = lastAssigned
        writtenThrough = lastAssigned
        durableThrough = lastAssigned
        activeBase = active.name.base
        self.active = active
    }

    /// Under `cond`: frames the payload, chaining its CRC; returns the last sequence it takes.
    /// The frame's ticket is `enqueuedFrames` right after the call.
    func enqueueLocked(type: UInt8, payload: [UInt8], count: Int, note: FrameNote) -> SequenceNumber {
        let first = count == 0 ? lastAssigned : lastAssigned + 1
        let start = pending.count
        let seed = chain
        chain = Frame.append(type: type, sequence: first, payload: payload, chain: seed, to: &pending)
        lastAssigned += SequenceNumber(count)
        pendingFrames.append(PendingFrame(start: start, end: pending.count, segmentBase: count == 0 ? lastAssigned + 1 : first,
                                          seed: seed, crc: chain, lastSequence: lastAssigned, note: note))
        enqueuedFrames += 1
        return lastAssigned
    }

    /// Under `cond`: true when nothing is queued, being written, or waiting for a sync.
    var isIdleLocked: Bool {
        !leaderActive && pendingFrames.isEmpty && writtenFrames == enqueuedFrames && durableFrames == enqueuedFrames
    }

    /// Waits until the frame with `ticket` is written (and synced when asked), leading the I/O
    /// when no one else is.
    func commit(ticket: Int, sync: Bool) throws(JournalError) {
        cond.lock()
        defer { cond.unlock() }
        precondition(ticket <= enqueuedFrames, "waiting for a frame that was never enqueued")
        if sync { syncRequestedFrames = max(syncRequestedFrames, ticket) }
        while (sync ? durableFrames : writtenFrames) < ticket {
            if let failure { throw JournalError.writerFailed(failure.description) }
            if leaderActive {
                cond.wait()
                continue
            }
            // Lead: take everything queued, write it, and sync once for every waiter.
            leaderActive = true
            // Swap buffers rather than copy: the next group fills the spare while this one is written.
            var data = spareBuffer
            swap(&data, &pending)
            let frames = pendingFrames
            pendingFrames.removeAll(keepingCapacity: true)
            let target = lastAssigned
            let targetFrames = enqueuedFrames
            let doSync = syncRequestedFrames > durableFrames
            cond.unlock()
            var ioError: JournalError? = nil
            var placements: [Placement] = []
            do {
                placements = try writeOut(data, frames: frames, sync: doSync)
            } catch {
                ioError = error
            }
            cond.lock()
            data.removeAll(keepingCapacity: true)
            spareBuffer = data
            if let ioError {
                leaderActive = false
                failure = ioError
                cond.broadcast()
                throw ioError
            }
            if let last = placements.last { activeBase = last.segment }
            writtenThrough = target
            writtenFrames = targetFrames
            if doSync {
                durableThrough = target
                durableFrames = targetFrames
            }
            didWrite(frames, placements, doSync)
            leaderActive = false
            cond.broadcast()
        }
        if let failure, (sync ? durableFrames : writtenFrames) < ticket { throw JournalError.writerFailed(failure.description) }
    }

    /// Writes frames to the active segment, rolling over at `segmentSize`; returns where each
    /// frame went. Leader only.
    private func writeOut(_ data: [UInt8], frames: [PendingFrame], sync: Bool) throws(JournalError) -> [Placement] {
        guard !frames.isEmpty else {
            if sync { try active.file.sync() }
            return []
        }
        var placements: [Placement] = []
        placements.reserveCapacity(frames.count)
        var chunkStart = 0
        for f in frames {
            let offsetIfAppended = active.writeOffset + Int64(f.start - chunkStart)
            let size = Int64(f.end - f.start)
            // Roll only when the new segment gets a new name: a segment holding only records that
            // take no sequence (seal, skippable) grows past the size instead.
            if offsetIfAppended + size > Int64(segmentSize) && (active.records > 0 || f.start > chunkStart)
                && f.segmentBase > active.name.base {
                try flush(data, chunkStart..<f.start)
                try roll(base: f.segmentBase, previousChain: f.seed)
                chunkStart = f.start
            }
            placements.append(Placement(segment: active.name.base, offset: active.writeOffset + Int64(f.start - chunkStart)))
            active.records += 1
        }
        try flush(data, chunkStart..<data.count)
        if sync { try active.file.sync() }
        return placements
    }

    private func flush(_ data: [UInt8], _ range: Range<Int>) throws(JournalError) {
        guard !range.isEmpty else { return }
        try growFill(to: active.writeOffset + Int64(range.count))
        try active.file.write(data, range: range, at: active.writeOffset)
        active.writeOffset += Int64(range.count)
    }

    /// Keeps the zero fill ahead of the writes: when `end` passes it, it doubles, by at most
    /// `maxPreallocationStep` (up to the segment size), so that the appends after it never change
    /// the file's size and their `fdatasync` stays cheap. It is not synced by itself: the commit
    /// that needed it syncs it with its own frames (one sync, not two), and until a sync nothing
    /// written after it is acknowledged as durable. Leader only.
    private func growFill(to end: Int64) throws(JournalError) {
        guard preallocate, end > active.allocated, active.allocated < Int64(segmentSize) else { return }
        var target = min(max(active.allocated * 2, Self.initialPreallocation), active.allocated + Self.maxPreallocationStep)
        // A frame larger than the step: the fill reaches past it, rounded up to 64 KiB.
        if target < end { target = (end + Self.initialPreallocation - 1) / Self.initialPreallocation * Self.initialPreallocation }
        target = min(target, Int64(segmentSize))
        guard target > active.allocated else { return }
        try Self.zeroFill(active.file, from: active.allocated, to: target)
        active.allocated = target
    }

    private static func zeroFill(_ file: any StorageFile, from: Int64, to end: Int64) throws(JournalError) {
        let zeros = [UInt8](repeating: 0, count: Int(min(1 << 20, max(0, end - from))))
        var at = from
        while at < end {
            let n = Int(min(Int64(zeros.count), end - at))
            try file.write(zeros, range: 0..<n, at: at)
            at += Int64(n)
        }
    }

    /// Seals the active segment (synced and trimmed) and starts the next one. Leader only.
    private func roll(base: SequenceNumber, previousChain: UInt32) throws(JournalError) {
        try active.file.sync()
        if active.allocated > active.writeOffset { try active.file.truncate(to: active.writeOffset) }
        active.file.close()
        active = try Self.createSegment(store: store, base: base, storeID: storeID, previousChain: previousChain,
                                        segmentSize: segmentSize, preallocate: preallocate, fs: fs)
        try didRoll(base)
    }

    /// Seals the active segment and starts an empty one when nothing is queued and it holds a
    /// sequence (FORMAT.md §3.2). Returns the last sealed sequence, or nil when appends raced it
    /// (the caller syncs and tries again).
    func rollIfIdle() throws(JournalError) -> SequenceNumber? {
        cond.lock()
        while leaderActive && failure == nil { cond.wait() }
        if let failure {
            cond.unlock()
            throw JournalError.writerFailed(failure.description)
        }
        guard isIdleLocked else {
            cond.unlock()
            return nil
        }
        let base = lastAssigned + 1
        guard base > active.name.base else {
            cond.unlock()
            return base - 1
        }
        leaderActive = true
        let seed = chain
        cond.unlock()
        var ioError: JournalError? = nil
        do { try roll(base: base, previousChain: seed) } catch { ioError = error }
        cond.lock()
        leaderActive = false
        if let ioError {
            failure = ioError
            cond.broadcast()
            cond.unlock()
            throw ioError
        }
        activeBase = base
        cond.broadcast()
        cond.unlock()
        return base - 1
    }

    /// Under `cond`, once no leader is active: waits for the leader to finish.
    func waitForLeaderLocked() {
        while leaderActive { cond.wait() }
    }

    /// Closes the active segment's file (after the final sync). The segment keeps its zero fill.
    func closeFile() {
        active.file.close()
    }

    /// Makes what recovery read durable before it is served as durable: the last writer may have
    /// died with it only in the page cache.
    func syncActive() throws(JournalError) {
        try active.file.sync()
    }

    /// Creates a segment under a temporary name, fills and syncs it, then renames it into place
    /// and syncs the directory, so a crash never leaves a half-made segment under a real name.
    static func createSegment(store: String, base: SequenceNumber, storeID: (UInt64, UInt64), previousChain: UInt32,
                              segmentSize: Int, preallocate: Bool, fs: any FileSystem) throws(JournalError) -> ActiveSegment {
        let name = SegmentName(base: base)
        let final = store + "/" + name.fileName
        let temp = final + ".tmp"
        let file = try fs.openFile(temp, create: true, truncate: true)
        do {
            let header = SegmentHeader(storeID: storeID, baseSequence: base, previousChain: previousChain,
                                       createdAt: UInt64(max(0, Date().timeIntervalSince1970 * 1000)))
            try file.write(header.encoded(), at: 0)
            var allocated = Int64(SegmentHeader.size)
            if preallocate {
                allocated = min(Int64(segmentSize), max(initialPreallocation, allocated))
                try zeroFill(file, from: Int64(SegmentHeader.size), to: allocated)
            }
            try file.sync()
            try fs.rename(temp, final)
            try fs.syncDirectory(store)
            return ActiveSegment(file: file, name: name, writeOffset: Int64(SegmentHeader.size), records: 0, allocated: allocated)
        } catch {
            file.close()
            // Leave nothing half-made behind (a full disk, say): the next writer would overwrite
            // it, but an operator should not find it.
            if fs.kind(of: temp) != .missing { try? fs.remove(temp) }
            throw error
        }
    }
}

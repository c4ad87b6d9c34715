import Foundation

/// A segmented, append-only journal with one writer. Appends may come from many threads.
///
/// One lock, `cond`, guards the store's memory and its `LogWriter`'s. Its parts, each with its
/// invariants in its own file: `StoreRecovery` (opening), `LogWriter` (group commit and segment
/// files), `IndexCheckpointSchedule`, `CompactionGate`, the zone ids (`StoredIDs.swift`), the
/// feed (`ChangeFeed.swift`) and compaction's swap (`Compactor.swift`). The naming rule: a
/// function whose name ends in `Locked` runs with `cond` held; any other takes it itself or
/// needs none.
public final class JournalStore: @unchecked Sendable {
    /// The store directory.
    public let path: String
    /// The options the store was opened with.
    public let options: StoreOptions
    /// What opening the store found and did.
    public let recovery: RecoveryReport
    /// This store's identity (`StoreID`).
    public var storeID: StoreID { StoreID(idPair) }
    /// The identity as segment headers and tokens hold it.
    let idPair: (UInt64, UInt64)
    /// Signs change tokens (Spec/TOKENS.md); kept in `KEY`, never inside a token.
    let storeKey: (UInt64, UInt64)

    typealias LowWater = LogWriter.LowWater

    let fs: any FileSystem
    let cond = NSCondition()
    /// Serialises read-modify-write of consumer files (Consumers.swift); never held with `cond` waits.
    let consumerLock = NSLock()
    private let lock: WriterLock
    /// Group commit and segment files; its state is guarded by `cond` too.
    let writer: LogWriter
    // Guarded by `cond`.
    var catalog: ZoneCatalog
    /// When the index checkpoint is taken and written. Under `cond`.
    var checkpoints: IndexCheckpointSchedule
    /// A thread is writing a checkpoint outside the lock; a compaction and `close` wait for it.
    var checkpointWriting: Bool { checkpoints.writing }
    /// The checkpoint file and its journal as last written: owned by the thread writing a
    /// checkpoint (`checkpointWriting`), not guarded by `cond`.
    var checkpointFiles: IndexCheckpointFiles
    /// Zone incarnations (tracks) whose ids `loadIDsUnlocked` is reading. Under `cond`.
    var loadingIDs: Set<Int> = []
    /// What orders a compaction against appends, feed reads and checkpoints. Under `cond`.
    var gate = CompactionGate()

    /// Refuses a read of frames after a swap failed part way. Under `cond`.
    func readableLocked() throws(JournalError) { try gate.readable() }
    /// The last failure to write the index checkpoint (the store works on; open rebuilds).
    public internal(set) var indexCheckpointError: JournalError?
    /// Marks written but not yet durable; applied by the next sync round.
    var pendingMarks: [LowWater] = []
    /// By zone incarnation (track index): the last sequence of an entry enqueued for it, written
    /// yet or not (the catalog learns of a frame only once it is written); zone records do not
    /// count. A compaction's commit checks it.
    var lastEnqueued: [SequenceNumber] = []
    var isClosed = false
    /// What `EPOCHS` holds (TOKENS.md §7); its epochs are fixed at open.
    var epochRecord: EpochRecord
    /// Issues and checks change tokens: the store's id, key and epochs, fixed at open.
    let signer: TokenSigner
    /// Wakes change streams (ChangeStreams.swift) when the horizon moves.
    let changeSignal = ChangeSignal()
    /// Made on first use (`executor`), under `cond`.
    private var madeExecutor: StoreExecutor?

    /// The store's own executor: the thread its async calls (`ListStore`) run on, and the
    /// executor of actors that do its blocking I/O (`SyncEngine`). Made on first use; a tool
    /// that only calls the synchronous core never starts it.
    public var executor: StoreExecutor {
        cond.lock()
        defer { cond.unlock() }
        if let e = madeExecutor { return e }
        let e = StoreExecutor(name: "JournalLog " + (path.split(separator: "/").last.map(String.init) ?? path))
        madeExecutor = e
        return e
    }

    /// Adopts `executor` as the store's own (the one its open ran on), unless it has one.
    package func adopt(_ executor: StoreExecutor) {
        cond.lock()
        defer { cond.unlock() }
        if madeExecutor == nil { madeExecutor = executor }
    }

    // The writer's positions, read and written under `cond`.
    var lastAssigned: SequenceNumber { writer.lastAssigned }
    var writtenThrough: SequenceNumber { writer.writtenThrough }
    var durableThrough: SequenceNumber { writer.durableThrough }
    var activeBase: SequenceNumber { writer.activeBase }
    var failure: JournalError? {
        get { writer.failure }
        set { writer.failure = newValue }
    }

    /// Opens (and by default creates) the store at `path`, recovering it under `options.recovery`.
    public static func open(_ path: String, options: StoreOptions = StoreOptions()) throws(JournalError) -> JournalStore {
        try JournalStore(path: path, options: options)
    }

    private init(path: String, options: StoreOptions) throws(JournalError) {
        self.path = path
        self.options = options
        fs = options.fileSystem
        checkpointFiles = IndexCheckpointFiles(store: path, fs: options.fileSystem)
        guard options.recovery != .salvage else {
            throw JournalError.readOnly("salvage mode only reads; use `jlog dump --mode salvage` to copy what is intact")
        }
        // The zone index stores frame offsets in 32 bits (Spec/INDEX.md §1).
        guard options.segmentSize >= SegmentHeader.size + Frame.overhead, options.segmentSize <= 1 << 31 else {
            throw JournalError.invalidOption("segmentSize is \(SegmentHeader.size + Frame.overhead) bytes … 2 GiB, not \(options.segmentSize)")
        }
        try StoreRecovery.prepareDirectory(path, options: options, fs: fs)
        lock = try WriterLock.acquire(store: path, fs: fs, wait: options.lockWait)
        let recovered: StoreRecovery.Recovered
        do { recovered = try StoreRecovery(path: path, options: options, fs: fs).run() } catch {
            lock.release()
            throw error
        }
        catalog = recovered.catalog
        checkpoints = IndexCheckpointSchedule(lastWritten: recovered.lastWritten, checkpointed: recovered.checkpointed)
        idPair = recovered.storeID
        storeKey = recovered.storeKey
        epochRecord = recovered.epochRecord
        signer = TokenSigner(storeID: recovered.storeID, key: recovered.storeKey, epochs: recovered.epochRecord)
        writer = LogWriter(store: path, fs: fs, options: options, storeID: recovered.storeID, cond: cond, chain: recovered.chain,
                           lastAssigned: recovered.lastAssigned, active: recovered.active)
        recovery = recovered.report
        // Weak, not unowned: a store released without `close()` flushes in its deinit, when an
        // unowned reference to it traps. Then there is nobody left to tell, and a roll not
        // recorded in `EPOCHS` only weakens the next open's check.
        writer.didWrite = { [weak self] frames, placements, durable in self?.didWriteLocked(frames, placements, durable: durable) }
        writer.didRoll = { [weak self] base throws(JournalError) in try self?.recordRoll(to: base) }
    }

    /// After a roll, by the leader (not holding `cond`): `EPOCHS` records that everything below
    /// `base` was acknowledged and that `base` is the segment appends go to, so a writer's open
    /// notices if that segment is ever removed.
    private func recordRoll(to base: SequenceNumber) throws(JournalError) {
        cond.lock()
        epochRecord.activeSegment = base
        epochRecord.acknowledgedThrough = max(epochRecord.acknowledgedThrough, base - 1)
        let record = epochRecord
        cond.unlock()
        try StoreEpochs.write(record, store: path, fs: fs)
    }

    deinit {
        if !isClosed { try? close() }
    }

    // MARK: Appending

    /// The sequence the next entry will get.
    public var nextSequence: SequenceNumber {
        cond.lock()
        defer { cond.unlock() }
        return lastAssigned + 1
    }

    /// The highest sequence known to be durable.
    public var durableSequence: SequenceNumber {
        cond.lock()
        defer { cond.unlock() }
        return durableThrough
    }

    /// Appends one entry and returns its sequence once it is acknowledged under the store's
    /// durability (`StoreOptions.durability`). An entry whose id its zone already holds is not
    /// stored again: the append returns the sequence it was stored at, once that is acknowledged
    /// (an upload retry is normal).
    @discardableResult
    public func append(_ entry: JournalEntry, replicated: Bool = false) throws(JournalError) -> SequenceNumber {
        try append(entry, durabilityOrDefault: nil, replicated: replicated)
    }

    /// `append(_:)` acknowledged under `durability` instead of the store's. The parameter is not
    /// optional, so `.none` is `Durability.none`, never "the store's default".
    ///
    /// The feed (`changes`, change streams) serves what is durable, or, in a store of durability
    /// `none`, what is written. So an entry appended with a weaker durability than the store's
    /// becomes visible when it becomes durable: at the next synced append, `sync()` or `close()`;
    /// change streams wake then, as for any change.
    @discardableResult
    public func append(_ entry: JournalEntry, durability: Durability, replicated: Bool = false) throws(JournalError) -> SequenceNumber {
        try append(entry, durabilityOrDefault: durability, replicated: replicated)
    }

    private func append(_ entry: JournalEntry, durabilityOrDefault durability: Durability?, replicated: Bool) throws(JournalError) -> SequenceNumber {
        if let why = Self.refusal(entry, replicated: replicated) { throw JournalError.invalidEntry(why) }
        let payload = EntryCodec.encode(entry)
        let fingerprint = entry.operation.isPlace ? EntryFingerprint.any : EntryFingerprint.of(payload)
        let mode = durability ?? options.durability
        while true {
            let outcome = try locked { () throws(JournalError) -> Enqueued in
                waitForSwapLocked(entry.zone)
                try checkWritableLocked()
                let track = try trackAcceptingLocked(entry.zone, at: lastAssigned + 1)
                if let t = track, catalog.ids[t] == nil { return .needsIDs(track: t) }
                if let t = track, let existing = try storedIDLocked(entry.id, track: t) {
                    guard EntryFingerprint.matches(stored: existing.fingerprint, new: fingerprint) else {
                        throw JournalError.idConflict(zone: entry.zone, id: entry.id, storedAt: existing.sequence)
                    }
                    // Acknowledged once everything enqueued so far (the original included) is.
                    return .done(existing.sequence...existing.sequence, ticket: lastTicketLocked)
                }
                let first = lastAssigned + 1
                let t = track ?? catalog.create(entry.zone, at: first, implicit: true, idsLoaded: true)
                let seq = enqueueLocked(type: RecordType.entry.rawValue, payload: payload, count: 1,
                                        touches: [FrameTouch(track: t, firstSequence: first, lastSequence: first, entries: 1)])
                catalog.ids[t]![entry.id] = StoredID(sequence: seq, fingerprint: fingerprint)
                return .done(seq...seq, ticket: lastTicketLocked)
            }
            switch outcome {
            case .needsIDs(let t):
                try loadIDsUnlocked(t)
            case .done(let range, let ticket):
                try commit(ticket: ticket, sync: mode == .always)
                return range.lowerBound
            }
        }
    }

    /// What an attempt to enqueue under the lock came to.
    private enum Enqueued {
        /// The zone's id set is not loaded yet: load it with the lock released, then try again.
        case needsIDs(track: Int)
        case done(ClosedRange<SequenceNumber>, ticket: Int)
    }

    /// Runs `body` holding `cond`, releasing it on every path.
    func locked<T>(_ body: () throws(JournalError) -> T) throws(JournalError) -> T {
        cond.lock()
        defer { cond.unlock() }
        return try body()
    }

    /// Throws unless appends are accepted: `closed`, or `writerFailed` after a write or sync the
    /// store could not complete (it refuses every append until reopened). What a server's
    /// readiness probe asks.
    public func checkWritable() throws(JournalError) {
        try locked { () throws(JournalError) in try checkWritableLocked() }
    }

    /// Under `cond`: throws unless appends are accepted.
    func checkWritableLocked() throws(JournalError) {
        if isClosed { throw JournalError.closed }
        if let failure { throw JournalError.writerFailed(failure.description) }
    }

    /// Under `cond`: waits while a compaction's swap holds `zone` (see `gate.swappingZones`).
    func waitForSwapLocked(_ zone: String) {
        while gate.holds(zone) { cond.wait() }
    }

    /// Appends a raw record: for tests, tools and the zone layer. `count` sequences are consumed
    /// (0 for records that take none: seal and skippable types).
    @discardableResult
    package func appendRecord(type: UInt8, payload: [UInt8], consuming count: Int, durability: Durability? = nil) throws(JournalError) -> SequenceNumber {
        guard payload.count <= Limits.maxPayloadBytes else { throw JournalError.batchTooLarge(bytes: payload.count, limit: Limits.maxPayloadBytes) }
        let (seq, ticket) = try locked { () throws(JournalError) -> (SequenceNumber, Int) in
            // A tool's path: it waits for any compaction swap to end.
            while !gate.swappingZones.isEmpty { cond.wait() }
            try checkWritableLocked()
            // The record joins the zone index like any other: decode it as a reader will.
            let first = count == 0 ? lastAssigned : lastAssigned + 1
            let events: [LogEvent]
            do {
                events = try payload.withUnsafeBytes { p throws(CodecError) in
                    try LogReader.decode(RecordView(segment: "", offset: 0, header: Frame.Header(length: UInt32(p.count), type: type, sequence: first),
                                                    payload: p, crc: 0, lastSequence: first))
                }
            } catch { throw JournalError.invalidEntry("the payload does not decode as a type-0x\(String(type, radix: 16)) record: \(error)") }
            for case .entry(_, let e) in events {
                if case .place = e.operation, let why = Self.refusal(e) { throw JournalError.invalidEntry(why) }
                if let t = catalog.live(e.zone), catalog.ids[t] == nil { try loadIDsLocked(t) }
            }
            let (touches, marks) = catalog.prepare(events)
            let seq = enqueueLocked(type: type, payload: payload, count: count, touches: touches,
                                    lowWater: marks.last)
            return (seq, lastTicketLocked)
        }
        try commit(ticket: ticket, sync: (durability ?? options.durability) == .always)
        return seq
    }

    /// Makes everything appended so far durable.
    public func sync() throws(JournalError) {
        cond.lock()
        let ticket = lastTicketLocked
        cond.unlock()
        try commit(ticket: ticket, sync: true)
    }

    /// Seals the segment appends go to and starts an empty one, so that everything appended so far
    /// lies in sealed segments, which a compaction may rewrite (FORMAT.md §3.2). Without it, old
    /// entries in a large, slowly filling segment would wait for it to fill. Does nothing when the
    /// active segment holds no sequence. Returns `sealedThrough`.
    @discardableResult
    package func sealActiveSegment() throws(JournalError) -> SequenceNumber {
        // Appends may race the roll: write out what is queued, then roll only with nothing queued.
        for _ in 0..<8 {
            try sync()
            try locked { () throws(JournalError) in if isClosed { throw JournalError.closed } }
            if let sealed = try writer.rollIfIdle() { return sealed }
        }
        return sealedThrough
    }

    /// Under `cond`: frames the payload, chaining its CRC; returns the last sequence it takes.
    /// `touches` say which zone incarnations the frame holds records of, for the index.
    /// The frame's ticket is `lastTicketLocked` right after the call.
    func enqueueLocked(type: UInt8, payload: [UInt8], count: Int, touches: [FrameTouch], lowWater: LowWater? = nil) -> SequenceNumber {
        for t in touches where t.track >= 0 && t.entries > 0 {
            if t.track >= lastEnqueued.count { lastEnqueued += repeatElement(0, count: t.track + 1 - lastEnqueued.count) }
            lastEnqueued[t.track] = max(lastEnqueued[t.track], t.lastSequence)
        }
        return writer.enqueueLocked(type: type, payload: payload, count: count, note: LogWriter.FrameNote(touches: touches, lowWater: lowWater))
    }

    /// Under `cond`: the ticket of the last frame enqueued.
    var lastTicketLocked: Int { writer.enqueuedFrames }

    /// Waits until the frame with `ticket` (and every one before it) is acknowledged under `durability`.
    func commit(ticket: Int, durability: Durability) throws(JournalError) {
        try commit(ticket: ticket, sync: durability != .none)
    }

    /// Waits until the frame with `ticket` is written (and synced when asked); then writes a
    /// checkpoint that fell due meanwhile, with the lock released.
    func commit(ticket: Int, sync: Bool) throws(JournalError) {
        try writer.commit(ticket: ticket, sync: sync)
        writeDueCheckpoint()
    }

    /// Under `cond`, called by the writer's leader after each round: the index learns where the
    /// frames went; once they are durable, their low-water marks take effect and a checkpoint may
    /// be taken, since it then covers only durable frames.
    private func didWriteLocked(_ frames: [LogWriter.PendingFrame], _ placements: [LogWriter.Placement], durable: Bool) {
        for (f, at) in zip(frames, placements) {
            if !f.note.touches.isEmpty {
                let location = ZoneTrack.location(segmentOrdinal: catalog.ordinal(ofSegment: at.segment), offset: at.offset)
                for t in f.note.touches { catalog.place(t, location: location) }
            }
            if let m = f.note.lowWater { pendingMarks.append(m) }
            checkpoints.lastWritten = CoveredFrame(segment: at.segment, offset: at.offset, crc: f.crc, lastSequence: f.lastSequence)
        }
        checkpoints.wrote(frames.last?.end ?? 0)
        // The feed serves what is durable (or, with durability none, written): that moved.
        if durable || options.durability == .none { changeSignal.bump() }
        guard durable else { return }
        for m in pendingMarks { catalog.setLowWater(m.zone, incarnation: m.incarnation, mark: m.mark, history: m.history) }
        pendingMarks.removeAll()
        if checkpoints.isDue(after: options.indexCheckpointBytes) { takeCheckpointLocked() }
    }

    /// Syncs everything appended and releases the writer lock. The active segment keeps its zero fill.
    public func close() throws(JournalError) {
        cond.lock()
        if isClosed {
            cond.unlock()
            return
        }
        // Refuse new appends first, so nothing can be enqueued after the final sync below and
        // led onto a closed file.
        isClosed = true
        // A compaction in flight drops its run at its commit point; the lock must outlive it.
        while gate.running { cond.wait() }
        let ticket = lastTicketLocked
        cond.unlock()
        var syncError: JournalError? = nil
        do { try commit(ticket: ticket, sync: true) } catch { syncError = error }
        cond.lock()
        writer.waitForLeaderLocked()
        while checkpointWriting { cond.wait() }
        if failure == nil && syncError == nil { takeCheckpointLocked() }
        cond.unlock()
        if failure == nil && syncError == nil { writeDueCheckpoint() }
        cond.lock()
        // An appender whose commit returned just now may have claimed the checkpoint first: its
        // write must end before the writer lock is released (another writer could then open).
        while checkpointWriting { cond.wait() }
        var record = epochRecord
        record.acknowledgedThrough = max(record.acknowledgedThrough, durableThrough)
        record.closedCleanly = true
        let closedCleanly = failure == nil && syncError == nil
        cond.unlock()
        if closedCleanly {
            do { try StoreEpochs.write(record, store: path, fs: fs) } catch { syncError = error }
        }
        writer.closeFile()
        lock.release()
        // Change streams end: nothing more will come through this writer.
        changeSignal.close()
        if let syncError, failure == nil { throw syncError }
    }
}

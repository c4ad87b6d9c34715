import Foundation

/// A read-only view of a store that never takes the writer's lock, so it runs beside a writer in
/// this process or another one (an app's widget or share extension, or `jlog show` on a live
/// store), and on read-only media. It serves the change feed, the zone list and everything the
/// query layer reads (`StoreReading`), from a consistent prefix of whole, checksummed records:
/// the segments it reads form one log (never half of a compaction run, `SegmentSet`), and the
/// end of the last one is wherever the last intact frame ends (a frame the writer is appending
/// at that moment is simply not there yet). `refresh()` catches up with what was appended since.
///
/// It never writes, repairs or deletes anything. It shares nothing mutable with a writer in the
/// same process: everything it knows it read from the files (like LevelDB's `log::Reader`).
public final class StoreReader: StoreReading, FileSystemBacked, @unchecked Sendable {
    public let path: String
    package let fileSystem: any FileSystem
    /// tolerateTail (damage anywhere but at the live end is an error) or pointInTime (the prefix
    /// before the first damage).
    public let mode: RecoveryMode
    /// How often `waitForChange` (and so a change stream) looks for what a writer appended.
    public var pollInterval: Duration {
        get { lock.lock(); defer { lock.unlock() }; return poll }
        set { lock.lock(); poll = newValue; lock.unlock() }
    }
    private var poll: Duration = .milliseconds(100)
    let changeSignal = ChangeSignal()
    private let lock = NSLock()
    private var state: ReaderState
    private var rewriteCount: UInt64 = 0

    /// Opens the store at `path` for reading. A store with no segment yet reads as empty.
    public static func open(_ path: String, mode: RecoveryMode = .tolerateTail) throws(JournalError) -> StoreReader {
        try open(path, fileSystem: PosixFileSystem(), mode: mode)
    }

    /// Opens the store at `path` on `fileSystem` (the tests' in-memory one, say) for reading.
    package static func open(_ path: String, fileSystem: any FileSystem,
                             mode: RecoveryMode = .tolerateTail) throws(JournalError) -> StoreReader {
        switch fileSystem.kind(of: path) {
        case .missing: throw JournalError.storeMissing(path: path)
        case .directory: break
        case .file, .other: throw JournalError.notAStore(path: path, reason: "it is a file, not a store directory (inspect it with `jlog inspect`)")
        }
        guard mode == .tolerateTail || mode == .pointInTime else {
            throw JournalError.readOnly("a store reader reads in tolerateTail or pointInTime mode; salvage is `jlog dump --mode salvage`")
        }
        let set = try SegmentSet.open(store: path, fs: fileSystem)
        return StoreReader(path: path, fs: fileSystem, mode: mode, state: try ReaderState.build(set, fs: fileSystem, mode: mode))
    }

    private init(path: String, fs: any FileSystem, mode: RecoveryMode, state: ReaderState) {
        self.path = path
        fileSystem = fs
        self.mode = mode
        self.state = state
    }

    private var current: ReaderState {
        lock.lock()
        defer { lock.unlock() }
        return state
    }

    /// Reads what was appended since the last look (and, after a compaction swapped segments,
    /// the log anew). Returns true when the horizon moved or the log was rewritten.
    @discardableResult
    public func refresh() throws(JournalError) -> Bool {
        let old = current
        // The cheap check first: the same files, and nothing new at the end of the last one.
        if try old.set.isCurrent(fs: fileSystem), try !old.mayHaveGrown(fs: fileSystem),
           fileSystem.identity(of: StoreEpochs.path(path)) == old.epochsFile { return false }
        let set = try SegmentSet.open(store: path, fs: fileSystem)
        let next: ReaderState
        if let caught = try old.caughtUp(with: set, fs: fileSystem, mode: mode) {
            next = caught
        } else {
            next = try ReaderState.build(set, fs: fileSystem, mode: mode)
        }
        let rewritten = next.set !== old.set && !next.extends(old)
        lock.lock()
        state = next
        if rewritten { rewriteCount += 1 }
        lock.unlock()
        return next.horizon != old.horizon || rewritten
    }

    /// Refreshes that found the files read before rewritten (a compaction committed meanwhile).
    public var rewrites: UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return rewriteCount
    }

    /// Whether a compaction run is committed but not yet finished by a writer (its `.swap` files
    /// are read in place of their segments).
    public var compactionCommitPending: Bool { current.set.commitPending }

    /// The highest sequence read: the end of the consistent prefix.
    public var horizon: SequenceNumber { current.horizon }

    /// Ends the reader's change streams (they finish rather than wait for another change).
    /// Reads still work; a reader holds no lock to release.
    public func close() { changeSignal.close() }

    /// The store's identity, from its first segment's header (nil before it has one).
    public var storeID: StoreID? { current.storeID.map(StoreID.init) }

    /// How the zone index was got when the store was last read from its files (at open, or anew
    /// after a compaction rewrote the log): from the checkpoint files, or the whole log, and why.
    package var index: IndexOpenReport { current.index }

    /// Damage at the end of the last segment, taken as the live end of the log (a frame being
    /// written, or a torn tail a writer's next open will cut).
    public var liveTail: Corruption? { current.liveTail }

    /// Whether a writer may be appending now (`LOCK` names a live process): then `liveTail` is
    /// most likely a frame in flight. Best effort, erring towards yes; a store without `LOCK` has
    /// no writer (every writer writes it before it appends).
    public var writerMayBeLive: Bool { WriterLock.writerMayBeLive(store: path, fs: fileSystem) }

    /// Every sequence through this lies in a sealed segment: what a writer opening the store now
    /// would leave sealed (it starts a new segment after a sealed one, or one of an older minor
    /// version). A compactor's dry run decides from it without taking the writer's lock.
    public var sealedThrough: SequenceNumber { current.sealedThrough }

    /// Whether a deleted zone incarnation may still hold entries in the last (active) segment,
    /// which a compaction seals first (COMPACTION.md §1); as `JournalStore`'s, from what was read.
    public var deletedZoneEntriesInActiveSegment: Bool {
        let s = current
        return s.catalog.deletedEntries(above: s.sealedThrough, deletedThrough: s.horizon)
    }

    public func zones() -> [ZoneInfo] {
        let s = current
        return ZoneFeed.zones(s.catalog, horizon: s.horizon)
    }

    /// The zone's newest incarnation as far as the reader has read (nil: no zone has this name).
    public func zone(_ name: String) -> ZoneInfo? {
        let s = current
        return ZoneFeed.zone(name, s.catalog, horizon: s.horizon)
    }

    public func changedZones(since token: FeedToken?) throws(FeedError) -> DatabaseChanges {
        let s = try withFreshState(for: token)
        return try ZoneFeed.changedZones(since: token, s.catalog, horizon: s.horizon, signer: try s.signer())
    }

    public func changes(in zone: String, since token: FeedToken?, limit: Int = 1_000) throws(FeedError) -> ZoneChanges {
        let s = try withFreshState(for: token)
        let signer = try s.signer()
        return try ZoneFeed.changes(limit: limit) { slack throws(FeedError) in
            let plan = try ZoneFeed.plan(zone, since: token, limit: limit, frameSlack: slack, s.catalog, horizon: s.horizon,
                                         signer: signer) { z, inc in
                SnapshotDirectory.list(store: path, zone: z, incarnation: inc, kinds: SnapshotFile.Kind.states, fs: fileSystem)
            }
            return try ZoneFeed.read(plan, fetcher: s.fetcher(path: path, fs: fileSystem), signer: signer)
        }
    }

    public func zoneToken(_ zone: String, position: SequenceNumber? = nil) throws(FeedError) -> FeedToken {
        let s = current
        return try ZoneFeed.zoneToken(zone, position: position, s.catalog, horizon: s.horizon, signer: try s.signer())
    }

    /// The state to answer `token` from: a token from the writer may be ahead of what this reader
    /// has read so far, so it catches up first.
    private func withFreshState(for token: FeedToken?) throws(FeedError) -> ReaderState {
        let s = current
        // Unchecked: the answer checks the token; this only decides whether to read further first.
        guard let token, s.key != nil, let position = ChangeToken.unverifiedPosition(token.text), position > s.horizon else { return s }
        do { try refresh() } catch { throw .storage(error) }
        return current
    }
}

/// One consistent look at a store: the open segments, the zone catalog read from them, and where
/// reading stopped. Immutable: a refresh builds the next one.
final class ReaderState: @unchecked Sendable {
    let set: SegmentSet
    let catalog: ZoneCatalog
    let summaries: [SegmentSummary]
    let liveTail: Corruption?
    let key: (UInt64, UInt64)?
    /// The store's epochs as `EPOCHS` held them when this state was read, and which file that was.
    let epochs: EpochRecord?
    let epochsFile: FileIdentity?
    /// How the zone index was got when the store was last read from its files; a state caught up
    /// over appended frames carries its predecessor's.
    let index: IndexOpenReport

    init(set: SegmentSet, catalog: ZoneCatalog, summaries: [SegmentSummary], liveTail: Corruption?, key: (UInt64, UInt64)?,
         index: IndexOpenReport, fs: any FileSystem) {
        self.set = set
        self.index = index
        self.catalog = catalog
        self.summaries = summaries
        self.liveTail = liveTail
        self.key = key
        // Read after the segments: a writer's open writes it before it appends anything.
        epochsFile = fs.identity(of: StoreEpochs.path(set.store))
        if case .record(let r) = StoreEpochs.load(store: set.store, fs: fs), r.storeID == (summaries.first?.header?.storeID ?? r.storeID) {
            epochs = r
        } else {
            epochs = nil
        }
    }

    var horizon: SequenceNumber { summaries.last?.lastSequence ?? 0 }

    var sealedThrough: SequenceNumber {
        guard let last = summaries.last, let header = last.header else { return 0 }
        return last.sealed || header.minor < SegmentHeader.currentMinor ? last.lastSequence : header.baseSequence - 1
    }
    var storeID: (UInt64, UInt64)? { summaries.first?.header?.storeID }

    func signer() throws(FeedError) -> TokenSigner {
        guard let storeID, let key else {
            throw .storage(.readOnly("the store has no token key yet (no writer has opened it), so it issues no change tokens"))
        }
        return TokenSigner(storeID: storeID, key: key, epochs: epochs)
    }

    /// Frames are read from this state's own open files, whatever the directory holds now.
    func fetcher(path: String, fs: any FileSystem) -> FrameFetcher {
        var files: [Int: any StorageFile] = [:]
        let byBase = Dictionary(set.segments.map { ($0.base, $0.file) }, uniquingKeysWith: { a, _ in a })
        for (k, base) in catalog.segments.enumerated() { files[k] = byBase[base] }
        return FrameFetcher(store: path, fs: fs, segments: catalog.segments, files: files)
    }

    /// Whether `other`'s segments are a prefix of this state's (the same files, the last perhaps grown).
    func extends(_ other: ReaderState) -> Bool {
        other.set.segments.count <= set.segments.count
            && zip(other.set.segments, set.segments).allSatisfy { $0.base == $1.base && $0.identity == $1.identity }
    }

    /// Whether bytes may have been appended after the last intact frame: cheap (one small read).
    func mayHaveGrown(fs: any FileSystem) throws(JournalError) -> Bool {
        guard let last = set.segments.last, let summary = summaries.last else { return false }
        let size = try last.file.size()
        guard size > summary.validEnd, !summary.sealed else { return false }
        let header = UnsafeMutableRawBufferPointer.allocate(byteCount: Frame.headerSize, alignment: 8)
        defer { header.deallocate() }
        let n = try last.file.read(into: header, at: summary.validEnd)
        return header[0..<n].contains { $0 != 0 }
    }

    /// Reads a whole set: from the index checkpoint when it matches the log, else from scratch.
    static func build(_ set: SegmentSet, fs: any FileSystem, mode: RecoveryMode) throws(JournalError) -> ReaderState {
        let key = try StoreKey.load(store: set.store, fs: fs)
        guard !set.segments.isEmpty else {
            return ReaderState(set: set, catalog: ZoneCatalog(), summaries: [], liveTail: nil, key: key,
                               index: IndexBuilder(checkpoint: nil).report(source: .rebuilt(reason: "no segment yet")), fs: fs)
        }
        let inputs = set.segments.map { StoreScanner.ScanInput(name: $0.name, file: $0.file) }
        var scanner = StoreScanner(fs: fs, mode: mode)
        var builder = IndexBuilder(checkpoint: IndexBuilder.loadCheckpoint(store: set.store, fs: fs))
        do { try scanner.scan(files: inputs, liveTail: true) { try builder.visit($0) } } catch { throw JournalError.wrap(error) }
        if !builder.isUsable(storeID: scanner.summaries.first?.header?.storeID) {
            var fresh = IndexBuilder(checkpoint: nil)
            var rescan = StoreScanner(fs: fs, mode: mode)
            do { try rescan.scan(files: inputs, liveTail: true) { try fresh.visit($0) } } catch { throw JournalError.wrap(error) }
            return ReaderState(set: set, catalog: fresh.catalog, summaries: rescan.summaries, liveTail: rescan.liveTailProblem, key: key,
                               index: fresh.report(source: .rebuilt(reason: builder.rebuildReason)), fs: fs)
        }
        return ReaderState(set: set, catalog: builder.catalog, summaries: scanner.summaries, liveTail: scanner.liveTailProblem, key: key,
                           index: builder.report(source: builder.usableSource), fs: fs)
    }

    /// This state carried on over `set`, when `set` only adds to what this one read (the same
    /// files, new frames at the end, new segments after it); nil when the log was rewritten.
    func caughtUp(with set: SegmentSet, fs: any FileSystem, mode: RecoveryMode) throws(JournalError) -> ReaderState? {
        let old = self.set.segments
        guard !old.isEmpty, set.segments.count >= old.count, summaries.count == old.count,
              zip(old, set.segments).allSatisfy({ $0.base == $1.base && $0.identity == $1.identity }),
              set.commitPending == self.set.commitPending else { return nil }
        let from = old.count - 1
        let inputs = set.segments[from...].map { StoreScanner.ScanInput(name: $0.name, file: $0.file) }
        var builder = IndexBuilder(checkpoint: nil)
        builder.catalog = catalog
        var scanner = StoreScanner(fs: fs, mode: mode)
        do {
            try scanner.scan(files: Array(inputs), liveTail: true, resume: summaries[from]) { try builder.visit($0) }
        } catch { throw JournalError.wrap(error) }
        var key = self.key
        if key == nil { key = try StoreKey.load(store: set.store, fs: fs) }
        return ReaderState(set: set, catalog: builder.catalog, summaries: Array(summaries[..<from]) + scanner.summaries,
                           liveTail: scanner.liveTailProblem, key: key, index: index, fs: fs)
    }
}

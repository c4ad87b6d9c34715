import JournalLog
import ListModel

/// Why a query could not answer.
public enum QueryError: Error, Sendable, CustomStringConvertible {
    /// The change feed refused the read (an expired token, a deleted zone): its answer says
    /// what to do next.
    case feed(FeedError)
    /// The store or its snapshot files failed underneath the query.
    case storage(JournalError)
    /// The zone's log was compacted (its low-water mark is above 0), so events of purged entries
    /// live only in its history files, and none that covers the mark can be read: the history
    /// would be silently short, so it is not given at all (COMPACTION.md §4).
    case historyIncomplete(zone: String, reason: String)
    /// A compaction of a store that syncs, by a caller that may not (Spec/SYNC.md §6.2 rule 1): a
    /// device's store (it has `sync/state`) is compacted only by replacing its lists with the
    /// service's copies, a server's (it has `service/`) only by its service.
    case syncedStore(path: String, reason: String)
    /// The list starts from a base (a snapshot its service sent, Spec/MERGE.md §10) that cannot
    /// be applied: the state would not be the list's, so none is given.
    case baseUnreadable(zone: String, reason: String)
    /// The list was installed from its service's snapshot and its history before that has not
    /// been fetched yet (Spec/SYNC.md §7.5): the history here would be short, so none is given.
    /// A sync engine fetches it (`SyncEngine.fetchHistory`).
    case historyNotFetched(zone: String)

    public var description: String {
        switch self {
        case .baseUnreadable(let zone, let reason):
            "list \(zone) cannot be read: \(reason). Fetch it anew from its service"
        case .historyNotFetched(let zone):
            "the history of list \(zone) from before it was installed from its service's snapshot is not fetched yet: fetch it (`SyncEngine.fetchHistory(_:)`)"
        case .feed(let e): e.description
        case .storage(let e): e.description
        case .syncedStore(let path, let reason): "refusing to compact \(path): \(reason). Nothing was changed."
        case .historyIncomplete(let zone, let reason):
            "the history of zone \(zone) cannot be read whole: \(reason). Events of entries compaction purged are kept only in its history files; "
                + "restore snapshots/ from a backup (`jlog restore`) to answer it"
        }
    }
}

/// A point in a zone's history: after a sequence, or as of a wall-clock time (milliseconds).
public enum HistoryPoint: Sendable, Equatable {
    /// Through this sequence: the state after the entry there was applied.
    case sequence(SequenceNumber)
    /// As of this wall-clock time, in milliseconds since 1970: entries their authors made later
    /// are left out.
    case time(Int64)
}

/// A zone's state as materialised, and how it was obtained.
public struct MaterialisedList: Sendable {
    /// The zone (list) materialised.
    public var zone: String
    /// The zone incarnation read: the sequence that started it, new each time the zone is
    /// deleted and created again.
    public var incarnation: SequenceNumber
    /// The last sequence applied (the feed's horizon, or the `at` point).
    public var sequence: SequenceNumber
    package var reducer: ListReducer
    /// The list as materialised: its name, colour and items.
    public var state: ListState
    /// The snapshot started from, if any.
    package var snapshot: SnapshotFile?
    /// Entries replayed on top of the snapshot (all of them without one).
    public var replayed: Int
    /// Damaged or unusable snapshots passed over, one line each.
    public var warnings: [String]
}

/// What writing a snapshot of a zone produced (`ListQuery.writeSnapshot(_:)`).
public struct SnapshotReport: Sendable {
    package var file: SnapshotFile
    /// Entries the snapshot covers: those folded into the state it records.
    public var entries: Int
    /// The snapshot file's size on disk, compressed.
    public var fileBytes: Int
    /// The size of its body uncompressed.
    public var rawBytes: Int
    /// The digest of the list state it records (MERGE.md §8): equal digests mean equal lists.
    public var digest: UInt64
}

/// The query layer: list state, history and snapshots, read through the change feed. It knows
/// the list model; the store below it does not.
public struct ListQuery: Sendable {
    /// What the lists are read from: the writer, or a reader beside it (`StoreReader`).
    package let store: any StoreReading
    /// The store's writer when this query was made over it: what writes snapshots of its own
    /// horizon and what a compactor needs.
    package let writer: JournalStore?
    package let fs: any FileSystem
    /// Entries read per feed page while replaying. A replay holds up to four pages at once (two
    /// read ahead, one being read, one being applied): at 65,536 that was ~50 MB of decoded
    /// entries for a large list, and replays ran slower than at 8,192 (pages that stay in cache).
    package var pageSize = 8_192
    /// Whether a replay may use a second core: a replay of many pages decodes the next ones on a
    /// helper thread (at most two ahead of the one being applied), and its reducer prefaults its
    /// room and builds a large list's items on one too (`ListReducer.helperThreads`): on two cores
    /// a long replay then takes about a third less. Off by default, as a library call takes no
    /// thread unless its caller asks: the thread competes with the caller's own, and beside a
    /// compaction with it, appends on another thread of a two-core machine waited 3–6× longer at
    /// p99 than alone (1.1–1.6× without; `jlog-bench --only tail`). `jlog` asks for it where it
    /// only reads a list; a compactor follows its query.
    public var helperThreads = false

    /// Lists read through the store's writer (which also writes snapshots of its own horizon).
    public init(store: JournalStore) {
        self.init(store: store, fs: store.fileSystem)
    }

    package init(store: JournalStore, fs: any FileSystem) {
        self.store = store
        writer = store
        self.fs = fs
    }

    /// Lists read through a reader that never takes the writer's lock (another process may be
    /// appending); snapshots and histories written through it are as safe as any (atomic files).
    public init(reader: any StoreReading) {
        self.init(reader: reader, fs: reader.storeFileSystem)
    }

    package init(reader: any StoreReading, fs: any FileSystem) {
        store = reader
        writer = nil
        self.fs = fs
    }

    /// Feeds the zone's entries after `position` (through `until`, when given) to `body`, page
    /// by page; returns the incarnation and the last position read. When the first page says
    /// more are coming and `helperThreads` is on, the rest are read ahead on another thread (`PageReader`).
    func replayPages(_ zone: String, after position: SequenceNumber?, until: SequenceNumber? = nil,
                             _ body: ([FeedEntry]) -> Void) throws(QueryError) -> (SequenceNumber, SequenceNumber) {
        let rewrites = store.rewrites
        let read = try replayPagesOnce(zone, after: position, until: until, body)
        // A compaction that committed meanwhile may have purged half of what was read: an add
        // read before it, its mark-off after. Said as the feed says a page it overtook.
        if store.rewrites != rewrites { throw Self.overtaken(zone, store: store) }
        return read
    }

    static func overtaken(_ zone: String, store: any StoreReading) -> QueryError {
        let info = store.zone(zone)
        return .feed(.tokenExpired(zone: zone, lowWaterMark: info?.lowWaterMark ?? 0,
                                   refetch: Refetch(zone: zone, incarnation: info?.incarnation ?? 0, snapshotSequence: nil)))
    }

    /// Reads again what a compaction overtook (`tokenExpired` mid-replay: the mark rose, or the
    /// log was rewritten, under it). Its snapshot and history pieces were in place before, so the
    /// next read starts from them; one overtaken `attempts` times in a row is answered as it was.
    func unbroken<T>(_ read: () throws(QueryError) -> T) throws(QueryError) -> T {
        var tries = 1
        while true {
            do { return try read() } catch {
                guard case .feed(.tokenExpired) = error, tries < Self.attempts else { throw error }
                tries += 1
            }
        }
    }

    /// Reads a replay tries (the first and two more).
    static let attempts = 3

    private func replayPagesOnce(_ zone: String, after position: SequenceNumber?, until: SequenceNumber?,
                                 _ body: ([FeedEntry]) -> Void) throws(QueryError) -> (SequenceNumber, SequenceNumber) {
        var token: FeedToken?
        do throws(FeedError) {
            token = try position.map { p throws(FeedError) in try store.zoneToken(zone, position: p) }
        } catch { throw .feed(error) }
        var incarnation: SequenceNumber = 0
        var last = position ?? 0
        /// Applies one page; false once `until` is reached.
        func take(_ page: ZoneChanges) -> Bool {
            incarnation = page.incarnation
            if let until, let past = page.entries.firstIndex(where: { $0.sequence > until }) {
                if past > 0 { body(Array(page.entries[..<past])) }
                last = until
                return false
            }
            if let e = page.entries.last {
                body(page.entries)
                last = e.sequence
            }
            return true
        }
        let first: ZoneChanges
        do { first = try store.changes(in: zone, since: token, limit: pageSize) } catch { throw .feed(error) }
        guard take(first) else { return (incarnation, last) }
        if first.moreComing {
            let reader = PageReader(store: store, zone: zone, after: first.token, pageSize: pageSize, readAhead: helperThreads && PageReader.worthwhile)
            defer { reader.stop() }
            while true {
                let page: ZoneChanges?
                do { page = try reader.next() } catch { throw .feed(error) }
                guard let page else { break }
                guard take(page) else { return (incarnation, last) }
            }
        }
        return (incarnation, until ?? max(last, store.zone(zone)?.lastChange ?? last))
    }

    /// `replayPages`, one entry at a time.
    private func replay(_ zone: String, after position: SequenceNumber?, until: SequenceNumber? = nil,
                        _ body: (FeedEntry) -> Void) throws(QueryError) -> (SequenceNumber, SequenceNumber) {
        try replayPages(zone, after: position, until: until) { page in page.forEach(body) }
    }

    /// The zone's state now, or at `point`: from the newest valid snapshot at or before that
    /// point plus the entries after it. A damaged snapshot is passed over with a warning (an
    /// older one, or a full replay, is used instead).
    public func materialise(_ zone: ZoneID, at point: HistoryPoint? = nil) throws(QueryError) -> MaterialisedList {
        try materialise(zone.storeName, at: point)
    }

    /// `materialise(_:at:)` by the zone's name in the store (tools: `jlog show`).
    package func materialise(_ zone: String, at point: HistoryPoint? = nil) throws(QueryError) -> MaterialisedList {
        var m = try unbroken { () throws(QueryError) in try replayed(zone, at: point) }
        if let why = m.reducer.baseProblem { throw .baseUnreadable(zone: zone, reason: why) }
        m.state = m.reducer.state()
        return m
    }

    /// `materialise` without the visible state (the reducer is what a snapshot needs; building
    /// the state too would cost the compactor time and memory for nothing). `state` is empty.
    package func materialisedReducer(_ zone: String, at point: HistoryPoint? = nil) throws(QueryError) -> MaterialisedList {
        let m = try unbroken { () throws(QueryError) in try replayed(zone, at: point) }
        if let why = m.reducer.baseProblem { throw .baseUnreadable(zone: zone, reason: why) }
        return m
    }

    private func replayed(_ zone: String, at point: HistoryPoint?) throws(QueryError) -> MaterialisedList {
        guard let info = store.zone(zone) else { throw .feed(.zoneNotFound(zone)) }
        if let d = info.deletedAt { throw .feed(.zoneDeleted(zone: zone, at: d, reason: info.deletionReason ?? .deleted)) }
        var warnings: [String] = []
        if case .time(let ms) = point {
            // Wall time is the authors' clocks: replay everything and keep what they made by then.
            var r = ListReducer(zone: zone)
            var n = 0
            let (inc, _) = try replay(zone, after: nil) { e in
                // A base is where the list starts: what it folded in has no times of its own here.
                if e.entry.wallTime <= ms || ListBase.isBase(e.entry) { _ = r.apply(e.entry); n += 1 }
            }
            return MaterialisedList(zone: zone, incarnation: inc, sequence: info.lastChange, reducer: r, state: ListState(),
                                    snapshot: nil, replayed: n, warnings: [])
        }
        let until: SequenceNumber? = { if case .sequence(let s) = point { return s } else { return nil } }()
        for file in SnapshotDirectory.list(store: store.path, zone: zone, incarnation: info.incarnation, kinds: SnapshotFile.Kind.states, fs: fs) {
            if let until, file.sequence > until { continue }
            guard file.sequence >= info.lowWaterMark else {
                // Entries after it may have been purged in pairs straddling it (an add before, its
                // mark-off after): it plus the tail would bring the item back.
                warnings.append("\(file.name): predates the low-water mark \(info.lowWaterMark); skipped")
                continue
            }
            guard file.sequence <= info.lastChange || file.sequence <= store.horizon else {
                warnings.append("\(file.name): sequence \(file.sequence) is past the log's end; skipped")
                continue
            }
            do {
                let (header, reducer) = try readState(file)
                guard header.zone == zone, header.incarnation == info.incarnation, header.sequence == file.sequence else {
                    warnings.append("\(file.name): its header names another zone, incarnation or sequence; skipped")
                    continue
                }
                return try continued(zone, from: reducer, after: header.sequence, until: until, snapshot: file, warnings)
            } catch let e as QueryError {
                throw e
            } catch {
                warnings.append("\(file.name): damaged (\(error)); falling back")
            }
        }
        if let m = try fromInstalledBase(zone, info, until: until, warnings) { return m }
        var r = ListReducer(zone: zone)
        // The catalog's count of the zone's entries: room for a full replay, reserved once.
        r.reserveCapacity(info.entryCount)
        return try continued(zone, from: r, after: nil, until: until, snapshot: nil, warnings)
    }

    /// `reducer` (a snapshot's state, a base's, or an empty one) with the zone's entries after
    /// `position` applied, through `until`.
    private func continued(_ zone: String, from reducer: ListReducer, after position: SequenceNumber?, until: SequenceNumber?,
                           snapshot: SnapshotFile?, _ warnings: [String]) throws(QueryError) -> MaterialisedList {
        var r = reducer
        r.helpers = helperThreads ? HelperThreads() : nil
        var n = 0
        let (inc, last) = try replayPages(zone, after: position, until: until) { page in
            r.apply(contentsOf: page, entry: \.entry)
            n += page.count
        }
        return MaterialisedList(zone: zone, incarnation: inc, sequence: last, reducer: r, state: ListState(),
                                snapshot: snapshot, replayed: n, warnings: warnings)
    }

    /// The list from the base a sync engine just installed (`BaseCache`) plus the entries after
    /// it, when its live incarnation still starts with that base entry; nil otherwise.
    private func fromInstalledBase(_ zone: String, _ info: ZoneInfo, until: SequenceNumber?, _ warnings: [String]) throws(QueryError) -> MaterialisedList? {
        guard let base = BaseCache.shared.lookup(store: store.path, zone: zone, incarnation: info.incarnation),
              until.map({ $0 >= base.sequence }) ?? true else { return nil }
        let first: FeedEntry?
        do { first = try store.changes(in: zone, since: nil, limit: 1).entries.first } catch { return nil }
        guard let first, first.sequence == base.sequence, first.entry.id == base.id, ListBase.isBase(first.entry) else { return nil }
        return try continued(zone, from: base.reducer, after: base.sequence, until: until, snapshot: nil, warnings)
    }

    /// Every change to the zone with who, what and when: from the newest valid history file
    /// (which survives compaction) plus the entries after it.
    public func history(_ zone: ZoneID) throws(QueryError) -> (log: ActivityLog, warnings: [String]) {
        try history(zone.storeName)
    }

    /// `history(_:)` by the zone's name in the store (tools: `jlog history`).
    package func history(_ zone: String) throws(QueryError) -> (log: ActivityLog, warnings: [String]) {
        try unbroken { () throws(QueryError) in
            // The pieces first, then the log after them: a rewrite in between moves events from
            // the log into a piece not read, and the replay's check sees it.
            let rewrites = store.rewrites
            var (log, through, warnings) = try storedHistory(zone)
            var based = false
            _ = try replay(zone, after: through) { e in
                if ListBase.isBase(e.entry) { based = true }
                _ = log.record(e.entry)
            }
            // Events from before a base are on the service until fetched into a piece above it.
            if based { throw .historyNotFetched(zone: zone) }
            if store.rewrites != rewrites { throw Self.overtaken(zone, store: store) }
            return (log, warnings)
        }
    }

    /// What the zone's history pieces hold (SNAPSHOT.md §5: the events of entries compaction
    /// removed from the log, or a whole history installed at a sequence) and the sequence to
    /// replay the log after (nil: all of it), without reading the log. Once the zone was
    /// compacted (its low-water mark is above 0) the pieces must chain back whole from the newest,
    /// and the newest must reach the mark, or the history would lack purged events:
    /// `historyIncomplete`, never a shorter answer.
    package func storedHistory(_ zone: String) throws(QueryError) -> (log: ActivityLog, through: SequenceNumber?, warnings: [String]) {
        try readHistoryPieces(zone)
    }

    /// The sequence the zone's history pieces cover (the newest piece's; nil when it has none):
    /// every entry at or below it that the log no longer holds is in them.
    package func historyCoverage(_ zone: String) throws(QueryError) -> SequenceNumber? {
        try historyFiles(zone).files.first?.sequence
    }

    /// Every entry of the zone now, in order, and the position read to.
    package func entries(_ zone: String) throws(QueryError) -> (entries: [(SequenceNumber, JournalEntry)], sequence: SequenceNumber) {
        try unbroken { () throws(QueryError) in
            var all: [(SequenceNumber, JournalEntry)] = []
            let (_, last) = try replay(zone, after: nil) { all.append(($0.sequence, $0.entry)) }
            return (all, last)
        }
    }

    /// Writes a snapshot of the zone at the feed's horizon. (Its history needs none: the log and
    /// the history pieces compaction writes hold every event.)
    public func writeSnapshot(_ zone: ZoneID) throws(QueryError) -> SnapshotReport {
        try writeSnapshot(zone.storeName)
    }

    /// `writeSnapshot(_:)` by the zone's name in the store (tools: `jlog snapshot`).
    package func writeSnapshot(_ zone: String) throws(QueryError) -> SnapshotReport {
        let m = try materialisedReducer(zone)
        return try writeSnapshot(zone, reducer: m.reducer, incarnation: m.incarnation, sequence: m.sequence)
    }

    /// Writes `reducer` as the zone's snapshot at `sequence`.
    @discardableResult
    package func writeSnapshot(_ zone: String, reducer: ListReducer, incarnation: SequenceNumber,
                              sequence: SequenceNumber) throws(QueryError) -> SnapshotReport {
        let (file, bytes, raw) = try writeState(zone, reducer: reducer, incarnation: incarnation, sequence: sequence)
        return SnapshotReport(file: file, entries: reducer.entryCount, fileBytes: bytes, rawBytes: raw, digest: reducer.stateDigest())
    }

    /// Installs `history` as the zone incarnation's whole history through `sequence` (a complete
    /// piece, SNAPSHOT.md §5): what a device does with the history its service sends after a
    /// re-fetch. A piece past `sequence` already there is refused (it would be newer than this).
    @discardableResult
    package func writeHistory(_ zone: String, history: ActivityLog, incarnation: SequenceNumber,
                             sequence: SequenceNumber) throws(QueryError) -> (SnapshotFile, Int) {
        let newer = SnapshotDirectory.list(store: store.path, zone: zone, incarnation: incarnation, kind: .history, fs: fs)
            .first { $0.sequence > sequence }
        if let newer {
            throw .storage(.invalidEntry("zone \(zone) has a history piece at \(newer.sequence), past \(sequence): a whole history at \(sequence) would be older"))
        }
        let header = HistoryPieceHeader(zone: zone, incarnation: incarnation, sequence: sequence, complete: true)
        let w: HistoryPieceWriter
        do { w = try HistoryPieceWriter(store: store.path, header: header, fs: fs) } catch { throw .storage(error) }
        do throws(JournalError) {
            try w.add(contentsOf: history)
            return try w.finish()
        } catch {
            w.abandon()
            throw .storage(error)
        }
    }

    /// The state a `.snap` or `.base` file holds (each a whole snapshot), or a `.delta` file with
    /// the `.base` it names (SNAPSHOT.md §6). Only `materialise` decides which kinds a list may be
    /// read from: a base alone never.
    package func readState(_ file: SnapshotFile) throws -> (header: SnapshotHeader, reducer: ListReducer) {
        try Self.readState(file, fs: fs)
    }

    /// `readState` without a store (`jlog inspect`).
    package static func readState(_ file: SnapshotFile, fs: any FileSystem = PosixFileSystem()) throws -> (header: SnapshotHeader, reducer: ListReducer) {
        let bytes = try SnapshotDirectory.read(file.path, limit: SnapshotCodec.maxStoredBytes, fs: fs)
        guard file.kind == .delta else { return try SnapshotCodec.decode(bytes) }
        return try SnapshotDelta.decode(bytes) { sequence in
            let base = SnapshotDirectory.fileName(zone: file.zoneKey, incarnation: file.incarnation, sequence: sequence, kind: .base, keyed: true)
            return try? SnapshotDirectory.read(parentOf(file.path) + "/" + base, limit: SnapshotCodec.maxStoredBytes, fs: fs)
        }
    }

    /// Writes the zone's state at `sequence` as a delta against `base` (a `.base` file, SNAPSHOT.md
    /// §6), atomically; nil (nothing written) when the base cannot serve or the delta would not be
    /// small. Returns its file, size and raw size.
    package func writeDelta(_ zone: String, reducer: ListReducer, incarnation: SequenceNumber, sequence: SequenceNumber,
                           base: SnapshotFile) throws(QueryError) -> (SnapshotFile, Int, Int)? {
        guard let baseBytes = try? SnapshotDirectory.read(base.path, limit: SnapshotCodec.maxStoredBytes, fs: fs),
              let bytes = SnapshotDelta.encode(reducer: reducer, incarnation: incarnation, sequence: sequence, base: baseBytes) else {
            return nil
        }
        return try write(bytes, zone: zone, incarnation: incarnation, sequence: sequence, kind: .delta)
    }

    /// Writes the zone's state at `sequence` (`.snap`, atomically); returns its file, size and raw size.
    @discardableResult
    package func writeState(_ zone: String, reducer: ListReducer, incarnation: SequenceNumber,
                           sequence: SequenceNumber) throws(QueryError) -> (SnapshotFile, Int, Int) {
        let bytes = SnapshotCodec.encode(reducer: reducer, incarnation: incarnation, sequence: sequence)
        return try write(bytes, zone: zone, incarnation: incarnation, sequence: sequence, kind: .state)
    }

    /// Writes snapshot-file bytes just encoded under their name, atomically.
    private func write(_ bytes: [UInt8], zone: String, incarnation: SequenceNumber, sequence: SequenceNumber,
                       kind: SnapshotFile.Kind) throws(QueryError) -> (SnapshotFile, Int, Int) {
        // The header records the decompressed length: no second, uncompressed encode to measure it.
        let raw: Int
        do { raw = try bytes.withUnsafeBytes { b throws(SnapshotError) in try SnapshotCodec.rawBodyLength(b) } } catch {
            preconditionFailure("a snapshot just encoded must have a readable header: \(error)")
        }
        let name = SnapshotDirectory.fileName(zone: zone, incarnation: incarnation, sequence: sequence, kind: kind)
        do {
            let path = try SnapshotDirectory.write(bytes, store: store.path, name: name, fs: fs)
            return (SnapshotDirectory.parse(name, in: parentOf(path))!, bytes.count, raw)
        } catch {
            throw .storage(error)
        }
    }
}

func parentOf(_ path: String) -> String {
    guard let i = path.lastIndex(of: "/") else { return "." }
    return String(path[..<i])
}

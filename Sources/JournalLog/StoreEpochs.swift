/// The store's `EPOCHS` file (Spec/FORMAT.md §2, TOKENS.md §7): read, checked against the log as
/// recovered, and rewritten atomically by the writer at open, at each roll and at close.
enum StoreEpochs {
    static let fileName = "EPOCHS"

    static func path(_ store: String) -> String { store + "/" + fileName }

    enum Loaded {
        case missing
        case record(EpochRecord)
        case unreadable(String)
    }

    /// The record, or why there is none.
    static func load(store: String, fs: any FileSystem) -> Loaded {
        let p = path(store)
        guard fs.kind(of: p) == .file else { return .missing }
        do {
            let bytes = try AtomicFile.read(p, fs: fs, limit: EpochCodec.maxFileBytes)
            do { return .record(try EpochCodec.decode(bytes)) } catch { return .unreadable("EPOCHS is damaged (\(error))") }
        } catch {
            return .unreadable("EPOCHS cannot be read (\(error))")
        }
    }

    static func write(_ record: EpochRecord, store: String, fs: any FileSystem) throws(JournalError) {
        try AtomicFile.write(EpochCodec.encode(record), to: path(store), fs: fs)
    }

    /// Why the log as recovered lacks acknowledged entries, or nil: it ends below what the store
    /// acknowledged, or the segment the writer was appending to is gone.
    static func missing(_ record: EpochRecord, lastSequence: SequenceNumber, segmentBases: [SequenceNumber]) -> String? {
        if lastSequence < record.acknowledgedThrough {
            return "the log ends at sequence \(lastSequence), but this store acknowledged appends through \(record.acknowledgedThrough)"
        }
        if record.activeSegment > 0, !segmentBases.contains(record.activeSegment), record.activeSegment > (segmentBases.first ?? 0) {
            return "segment \(SegmentName(base: record.activeSegment).fileName), which the writer was appending to, is gone (the log ends at \(lastSequence))"
        }
        return nil
    }

    /// A new random epoch id (never 0: that marks tokens issued before the store kept epochs).
    static func newID() -> UInt64 { UInt64.random(in: 1 ... .max) }
}

/// What `EPOCHS` says about a scanned log, for `jlog verify` and `inspect` (TOKENS.md §7).
package struct EpochCheck: Sendable {
    /// The record, when there is a readable one of this store.
    package var record: EpochRecord?
    /// Why there is none (missing, damaged, another store's).
    package var note: String?
    /// Acknowledged entries the log lacks: a writer refuses to open until an operator decides.
    package var missing: String?

    /// `EPOCHS` as read at one moment: read it **before** scanning a store a writer may be
    /// appending to, and check the scan against it. A writer only moves `EPOCHS` forward after
    /// the log got there (a segment exists before `EPOCHS` names it, entries are durable before
    /// they are acknowledged), so an earlier `EPOCHS` never claims more than a later scan finds;
    /// one read after the scan can, and a live store would look as if it had lost entries.
    package struct Reading: Sendable {
        let load: StoreEpochs.Loaded
    }

    package static func read(store path: String, fs: any FileSystem = PosixFileSystem()) -> Reading {
        Reading(load: StoreEpochs.load(store: path, fs: fs))
    }

    /// Checks the store at `path` against the log a scan found (its segments as read), reading
    /// `EPOCHS` now: for a store no writer holds.
    package static func check(store path: String, report: ScanReport, fs: any FileSystem = PosixFileSystem()) -> EpochCheck {
        check(read(store: path, fs: fs), report: report)
    }

    /// Checks a scan against `EPOCHS` as read before it.
    package static func check(_ reading: Reading, report: ScanReport) -> EpochCheck {
        var c = EpochCheck()
        switch reading.load {
        case .missing: c.note = "no EPOCHS file (a store no writer of this version has opened): earlier change tokens will be refused"
        case .unreadable(let why): c.note = why + ": the next writer begins a new epoch and refuses every earlier change token"
        case .record(let r):
            guard let id = report.segments.first?.header?.storeID, id == r.storeID else {
                c.note = "EPOCHS belongs to another store"
                return c
            }
            c.record = r
            c.missing = StoreEpochs.missing(r, lastSequence: report.lastSequence,
                                            segmentBases: report.segments.compactMap { $0.header?.baseSequence })
        }
        return c
    }
}

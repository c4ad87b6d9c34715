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

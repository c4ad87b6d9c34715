import JournalCodec

/// Writes index checkpoints (Spec/INDEX.md §2, §5): a whole checkpoint file, then a record in the
/// index journal for each later one, until the journal outgrows half the file and a whole
/// checkpoint is written again. Why: a checkpoint of every zone costs I/O in
/// proportion to the store; a journal record costs what changed, so a store with many zones can
/// checkpoint often without durable appends beside it waiting on the disk.
///
/// Owned by whoever writes a checkpoint (one at a time). It knows what the two files hold only
/// because it wrote them: a fresh one (after open, a failed write, a compaction) writes a whole
/// checkpoint first.
struct IndexCheckpointFiles {
    /// Journal bytes allowed beside a small checkpoint file before it is rewritten whole.
    static let minJournalBudget = 64 << 10

    let store: String
    let fs: any FileSystem
    /// What the files hold of each zone incarnation, by position; nil when not known: the next
    /// write is a whole file.
    private var marks: [TrackMark]?
    /// The position and segment table the files hold.
    private var position: ZoneIndexCheckpoint?
    /// Tracks the files hold less of than the table did (a deletion past the covered sequence):
    /// compared again at the next record even if not touched.
    private var partlyHidden: [Int] = []
    private var fileBytes = 0
    /// The journal header naming the file written last.
    private var journalHeader: [UInt8] = []
    /// The journal's valid length (header included); 0 when this file has no journal yet.
    private var journalBytes = 0

    /// What a record is compared against: the fields that change, and the frames' count and last.
    struct TrackMark: Equatable {
        var lastSequence: SequenceNumber
        var entryCount: Int
        var lowWaterMark: SequenceNumber
        var historyThrough: SequenceNumber
        var deletedAt: SequenceNumber?
        var frames: Int
        var lastFrame: SequenceNumber
        var lastLocation: UInt64

        init(_ t: ZoneTrack) {
            lastSequence = t.lastSequence
            entryCount = t.entryCount
            lowWaterMark = t.lowWaterMark
            historyThrough = t.historyThrough
            deletedAt = t.deletedAt
            frames = t.frameSequences.count
            lastFrame = t.frameSequences.last ?? 0
            lastLocation = t.frameLocations.last ?? 0
        }

        /// How many of this mark's frames `t` starts with, judged by the last: frames are only
        /// appended between checkpoints (a compaction, which moves them, forgets the marks).
        func kept(by t: ZoneTrack) -> Int {
            guard frames > 0, t.frameSequences.count >= frames, t.frameSequences[frames - 1] == lastFrame,
                  t.frameLocations[frames - 1] == lastLocation else { return 0 }
            return frames
        }
    }

    init(store: String, fs: any FileSystem) {
        self.store = store
        self.fs = fs
    }

    var filePath: String { store + "/" + StoreLayout.indexFile }
    var journalPath: String { store + "/" + StoreLayout.indexJournalFile }

    /// Forgets what the files hold: the next write is a whole checkpoint.
    mutating func forget() { marks = nil }

    /// Writes `due` as a journal record when it extends what the files hold and the journal has
    /// room, else as a whole checkpoint file. On failure the files are not known any more.
    mutating func write(_ due: TakenCheckpoint) throws(JournalError) {
        let budget = max(fileBytes / 2, Self.minJournalBudget)
        if var marks, let position,
           let (record, hidden) = Self.record(from: position, marks: &marks, to: due, recheck: partlyHidden),
           journalBytes + record.count <= budget {
            self.marks = nil
            try append(record)
            self.marks = marks
            self.position = due.position
            partlyHidden = hidden
            return
        }
        marks = nil
        let c = due.index()
        let bytes = ZoneIndexCodec.encode(c)
        // A journal left from an earlier file names that file's CRC: it stays until replaced,
        // and open ignores it.
        try AtomicFile.write(bytes, to: filePath, fs: fs)
        fileBytes = bytes.count
        journalHeader = ZoneIndexJournalCodec.header(extending: c, baseCRC: ZoneIndexJournalCodec.fileCRC(bytes))
        journalBytes = 0
        marks = c.zones.map(TrackMark.init)
        position = due.position
        partlyHidden = (0..<c.zones.count).filter { due.hidesPart(of: due.tracks[$0]) }
    }

    /// The record taking the files from `position` and `marks` to `new` (updating `marks`), and
    /// the tracks `new` hides part of; nil when `new` does not extend them. Compares only the
    /// tracks touched since, those in `recheck`, and new ones.
    static func record(from position: ZoneIndexCheckpoint, marks: inout [TrackMark], to new: TakenCheckpoint,
                       recheck: [Int]) -> ([UInt8], [Int])? {
        let before = marks.count, after = new.visibleCount
        guard after >= before, ZoneIndexJournalCodec.extends(old: position, new: new.position) else { return nil }
        var changes: [ZoneIndexJournalCodec.Change] = []
        var hidden: [Int] = []
        for i in Set(new.touched + recheck).sorted() where i < before {
            let t = new.visible(new.tracks[i])
            if new.hidesPart(of: new.tracks[i]) { hidden.append(i) }
            let mark = TrackMark(t)
            guard mark != marks[i] else { continue }
            changes.append(ZoneIndexJournalCodec.Change(index: i, track: t, keep: marks[i].kept(by: t)))
            marks[i] = mark
        }
        for i in before..<after {
            let t = new.visible(new.tracks[i])
            if new.hidesPart(of: new.tracks[i]) { hidden.append(i) }
            changes.append(ZoneIndexJournalCodec.Change(index: i, track: t, keep: 0))
            marks.append(TrackMark(t))
        }
        return (ZoneIndexJournalCodec.record(covering: new.position, segmentsBefore: position.segments.count, changes: changes), hidden)
    }

    private mutating func append(_ record: [UInt8]) throws(JournalError) {
        if journalBytes == 0 {
            // Created whole under a temporary name (replacing an earlier file's journal), so a
            // journal under the real name always starts with a header naming its file.
            let bytes = journalHeader + record
            try AtomicFile.write(bytes, to: journalPath, fs: fs)
            journalBytes = bytes.count
        } else {
            let file = try fs.openFile(journalPath, create: false, truncate: false)
            defer { file.close() }
            // Not synced: a record lost or torn in a crash ends the journal there, and open replays
            // that stretch from the log (records cover durable frames only). Syncing each one made
            // the disk flush for it beside durable appends.
            try file.write(record, at: Int64(journalBytes))
            journalBytes += record.count
        }
    }
}

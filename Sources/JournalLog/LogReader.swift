import Foundation

/// What a record means, decoded. Entries of a batch come out one by one.
package enum LogEvent: Sendable, Equatable {
    case entry(SequenceNumber, JournalEntry)
    case zoneCreated(SequenceNumber, zone: String)
    case zoneDeleted(SequenceNumber, zone: String, reason: ZoneDeletionReason)
    case seal(lastSequence: SequenceNumber)
    /// Tokens for this zone incarnation below `mark` get `tokenExpired` (Spec/TOKENS.md); its
    /// history pieces reach through `history` (0: the record does not say, FORMAT.md §5.6).
    case lowWaterMark(SequenceNumber, zone: String, incarnation: SequenceNumber, mark: SequenceNumber, history: SequenceNumber)
    /// A skippable record this version does not interpret.
    case skipped(type: UInt8, sequence: SequenceNumber)

    package var sequence: SequenceNumber {
        switch self {
        case .entry(let s, _), .zoneCreated(let s, _), .zoneDeleted(let s, _, _): s
        case .seal(let s): s
        case .lowWaterMark(let s, _, _, _, _): s
        case .skipped(_, let s): s
        }
    }
}

/// What a read-only scan found.
package struct ScanReport: Sendable {
    package var mode: RecoveryMode
    package var segments: [SegmentSummary]
    /// Damage found, in order; the scan kept going past it only in salvage mode.
    package var problems: [Corruption]
    package var lastSequence: SequenceNumber
    package var isClean: Bool { problems.isEmpty }
    /// A compaction run was committed but not finished by a writer's open: its rewritten segments
    /// (`.swap`, `.cleaned`) were read in place of the old ones (FORMAT.md §9.4).
    package var compactionCommitPending = false
    /// Frames a live writer was appending at the end of the log while it was read: the scan ended
    /// before them, as it would have a moment earlier.
    package var liveTailBytesSkipped: Int64 = 0
}

/// Read-only access to a store directory or to a single segment file. Needs no lock,
/// so it runs beside a writer; memory stays bounded by the largest record.
package enum LogReader {
    /// Segment paths for `path`, and whether it is one standalone segment file.
    package static func segments(of path: String, fs: any FileSystem = PosixFileSystem()) throws(JournalError) -> (paths: [String], standalone: Bool) {
        switch fs.kind(of: path) {
        case .missing: throw JournalError.storeMissing(path: path)
        case .directory:
            let paths = try StoreLayout.segmentPaths(path, fs: fs)
            guard !paths.isEmpty else {
                throw JournalError.notAStore(path: path, reason: "the directory holds no segment files (<20 digits>.seg)")
            }
            return (paths, false)
        case .file: return ([path], true)
        case .other: throw JournalError.notAStore(path: path, reason: "not a regular file or directory")
        }
    }

    /// Visits every intact record in order under `mode`. A store directory is read as one
    /// consistent set of segments (`SegmentSet`: a pending compaction commit whole). Damage at
    /// the very end of it while `LOCK` names a live writer is looked at again (`LiveTail`, FORMAT.md
    /// §11.4): a frame being written is read once it is whole, or the scan ends before it when it
    /// still moves after `settle`; damage that holds still is reported under `mode`.
    package static func scanRecords(_ path: String, mode: RecoveryMode = .tolerateTail, fs: any FileSystem = PosixFileSystem(),
                                   settle: Duration = .milliseconds(200),
                                   visit: (RecordView) throws -> Void) throws -> ScanReport {
        let (paths, standalone) = try segments(of: path, fs: fs)
        var scanner = StoreScanner(fs: fs, mode: mode)
        guard !standalone else {
            try scanner.scan(paths: paths, standalone: true, visit: visit)
            return ScanReport(mode: mode, segments: scanner.summaries, problems: scanner.problems, lastSequence: scanner.lastSequence)
        }
        let set = try SegmentSet.open(store: path, fs: fs)
        let inputs = set.segments.map { StoreScanner.ScanInput(name: $0.name, file: $0.file) }
        try scanner.scan(files: inputs, liveTail: true, visit: visit)
        var report = ScanReport(mode: mode, segments: [], problems: [], lastSequence: 0, compactionCommitPending: set.commitPending)
        if scanner.liveTailProblem != nil, let last = inputs.last {
            let live = settle > .zero && WriterLock.writerMayBeLive(store: path, fs: fs)
            let tail = live ? try LiveTail.settle(&scanner, last: last, within: settle, visit: visit) : .heldStill
            switch tail {
            case .resolved: break
            case .inFlight(let p):
                // A busy writer: the log ends before its frame, as it did a moment earlier.
                report.liveTailBytesSkipped = (try? last.file.size()).map { $0 - p.offset } ?? 0
            case .heldStill:
                // Real damage, which the mode decides about.
                try LiveTail.lookAgain(&scanner, last: last, liveTail: false, visit: visit)
            }
        }
        report.segments = scanner.summaries
        report.problems = scanner.problems
        report.lastSequence = scanner.lastSequence
        return withExtendedLifetime(set) { report }
    }

    /// Visits every event with a sequence of at least `from`. A record whose checksum holds but
    /// whose payload does not decode is corruption: skipped in salvage mode, thrown otherwise.
    package static func read(_ path: String, mode: RecoveryMode = .tolerateTail, from: SequenceNumber = 0,
                            fs: any FileSystem = PosixFileSystem(), settle: Duration = .milliseconds(200),
                            visit: (LogEvent, RecordView) throws -> Void) throws -> ScanReport {
        try scanRecords(path, mode: mode, fs: fs, settle: settle) { record in
            // Decoded even below `from`: a payload that does not decode is corruption wherever it
            // is, and the mode decides what is kept (FORMAT.md §9.2).
            let events: [LogEvent]
            do throws(CodecError) { events = try decode(record) } catch { throw PayloadDamage(error: error) }
            guard record.lastSequence >= from else { return }
            for e in events where e.sequence >= from { try visit(e, record) }
        }
    }

    /// Decodes one record's payload.
    package static func decode(_ r: RecordView) throws(CodecError) -> [LogEvent] {
        switch RecordType(rawValue: r.header.type) {
        case .entry: return [.entry(r.header.sequence, try EntryCodec.decode(r.payload))]
        case .batch: return try BatchCodec.decode(r.payload, firstSequence: r.header.sequence).map { .entry($0.0, $0.1) }
        case .zoneCreate: return [.zoneCreated(r.header.sequence, zone: try ZoneRecordCodec.decodeCreate(r.payload))]
        case .zoneDelete:
            let (z, reason) = try ZoneRecordCodec.decodeDelete(r.payload)
            return [.zoneDeleted(r.header.sequence, zone: z, reason: reason)]
        case .seal: return [.seal(lastSequence: try SealCodec.decode(r.payload).lastSequence)]
        case nil:
            if r.header.type == SkippableRecordType.lowWaterMark {
                let m = try LowWaterCodec.decode(r.payload)
                return [.lowWaterMark(r.header.sequence, zone: m.zone, incarnation: m.incarnation, mark: m.mark, history: m.history)]
            }
            return [.skipped(type: r.header.type, sequence: r.header.sequence)]
        }
    }

    /// Every entry, in order: for tests and small tools. Large logs should use `read`.
    package static func entries(_ path: String, mode: RecoveryMode = .tolerateTail,
                               fs: any FileSystem = PosixFileSystem()) throws -> [(SequenceNumber, JournalEntry)] {
        var out: [(SequenceNumber, JournalEntry)] = []
        _ = try read(path, mode: mode, fs: fs) { event, _ in
            if case .entry(let s, let e) = event { out.append((s, e)) }
        }
        return out
    }
}

/// Damage at the end of the last segment, looked at again while a writer may be appending
/// (FORMAT.md §11.4): a reader can see the first bytes of a write before the rest, so damage
/// there may be a frame in flight. Only what the bytes do decides: damage that resolves or moves
/// was being written; damage that holds still is damage, however long the looks took. The clock
/// only bounds how long a reader follows a tail that keeps moving (a busy writer), so a slow or
/// loaded reader never takes a store that nothing is writing for clean.
enum LiveTail {
    /// Looks in a row that must find the same damage before it is reported.
    static let stillLooks = 5
    /// The pause between looks: long enough for a writer to finish a frame it has begun.
    static let pause = 0.01

    /// What looking again found.
    enum Outcome: Equatable {
        /// The damage went away: the frame was completed and has been read.
        case resolved
        /// The end kept moving until the settle time ran out: a frame still being written, at
        /// this damage, which the scan ends before.
        case inFlight(Corruption)
        /// The same damage `stillLooks` times in a row: real, to be reported under the mode.
        case heldStill
    }

    /// Looks at `scanner`'s live tail problem again until it resolves, holds still for
    /// `stillLooks` looks, or has moved and `within` has run out.
    static func settle(_ scanner: inout StoreScanner, last: StoreScanner.ScanInput, within: Duration,
                       visit: (RecordView) throws -> Void) throws -> Outcome {
        let deadline = ContinuousClock.now + within
        var still = 0
        var moved = false
        while let seen = scanner.liveTailProblem, still < stillLooks {
            if moved && ContinuousClock.now >= deadline { return .inFlight(seen) }
            Thread.sleep(forTimeInterval: pause)
            try lookAgain(&scanner, last: last, liveTail: true, visit: visit)
            if scanner.liveTailProblem == seen {
                still += 1
            } else {
                still = 0
                moved = true
            }
        }
        return scanner.liveTailProblem == nil ? .resolved : .heldStill
    }

    /// Scans the last segment again from where the scan stopped in it. With `liveTail` false,
    /// damage there is reported under the scanner's mode (and may throw).
    static func lookAgain(_ scanner: inout StoreScanner, last: StoreScanner.ScanInput, liveTail: Bool,
                          visit: (RecordView) throws -> Void) throws {
        let from = scanner.summaries.removeLast()
        scanner.liveTailProblem = nil
        try scanner.scan(files: [last], liveTail: liveTail, resume: from, visit: visit)
    }
}

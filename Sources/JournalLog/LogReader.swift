/// What a record means, decoded. Entries of a batch come out one by one.
public enum LogEvent: Sendable, Equatable {
    case entry(SequenceNumber, JournalEntry)
    case zoneCreated(SequenceNumber, zone: String)
    case zoneDeleted(SequenceNumber, zone: String, reason: ZoneDeletionReason)
    case seal(lastSequence: SequenceNumber)
    /// Tokens for this zone incarnation below `mark` get `tokenExpired` (Spec/TOKENS.md).
    case lowWaterMark(SequenceNumber, zone: String, incarnation: SequenceNumber, mark: SequenceNumber)
    /// A skippable record this version does not interpret.
    case skipped(type: UInt8, sequence: SequenceNumber)

    public var sequence: SequenceNumber {
        switch self {
        case .entry(let s, _), .zoneCreated(let s, _), .zoneDeleted(let s, _, _): s
        case .seal(let s): s
        case .lowWaterMark(let s, _, _, _): s
        case .skipped(_, let s): s
        }
    }
}

/// What a read-only scan found.
public struct ScanReport: Sendable {
    public var mode: RecoveryMode
    public var segments: [SegmentSummary]
    /// Damage found, in order; the scan kept going past it only in salvage mode.
    public var problems: [Corruption]
    public var lastSequence: SequenceNumber
    public var isClean: Bool { problems.isEmpty }
}

/// Read-only access to a store directory or to a single segment file. Needs no lock,
/// so it runs beside a writer; memory stays bounded by the largest record.
public enum LogReader {
    /// Segment paths for `path`, and whether it is one standalone segment file.
    public static func segments(of path: String, fs: any FileSystem = PosixFileSystem()) throws(JournalError) -> (paths: [String], standalone: Bool) {
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

    /// Visits every intact record in order under `mode`.
    public static func scanRecords(_ path: String, mode: RecoveryMode = .tolerateTail, fs: any FileSystem = PosixFileSystem(),
                                   visit: (RecordView) throws -> Void) throws -> ScanReport {
        let (paths, standalone) = try segments(of: path, fs: fs)
        var scanner = StoreScanner(fs: fs, mode: mode)
        try scanner.scan(paths: paths, standalone: standalone, visit: visit)
        return ScanReport(mode: mode, segments: scanner.summaries, problems: scanner.problems, lastSequence: scanner.lastSequence)
    }

    /// Visits every event with a sequence of at least `from`. A record whose checksum holds but
    /// whose payload does not decode is corruption: skipped in salvage mode, thrown otherwise.
    public static func read(_ path: String, mode: RecoveryMode = .tolerateTail, from: SequenceNumber = 0,
                            fs: any FileSystem = PosixFileSystem(),
                            visit: (LogEvent, RecordView) throws -> Void) throws -> ScanReport {
        try scanRecords(path, mode: mode, fs: fs) { record in
            // Decoded even below `from`: a payload that does not decode is corruption wherever it
            // is, and the mode decides what is kept (FORMAT.md §9.2).
            let events: [LogEvent]
            do throws(CodecError) { events = try decode(record) } catch { throw PayloadDamage(error: error) }
            guard record.lastSequence >= from else { return }
            for e in events where e.sequence >= from { try visit(e, record) }
        }
    }

    /// Decodes one record's payload.
    public static func decode(_ r: RecordView) throws(CodecError) -> [LogEvent] {
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
                return [.lowWaterMark(r.header.sequence, zone: m.zone, incarnation: m.incarnation, mark: m.mark)]
            }
            return [.skipped(type: r.header.type, sequence: r.header.sequence)]
        }
    }

    /// Every entry, in order: for tests and small tools. Large logs should use `read`.
    public static func entries(_ path: String, mode: RecoveryMode = .tolerateTail,
                               fs: any FileSystem = PosixFileSystem()) throws -> [(SequenceNumber, JournalEntry)] {
        var out: [(SequenceNumber, JournalEntry)] = []
        _ = try read(path, mode: mode, fs: fs) { event, _ in
            if case .entry(let s, let e) = event { out.append((s, e)) }
        }
        return out
    }
}

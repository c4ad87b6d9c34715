import ArgumentParser
import Foundation
import JournalLog

/// Totals over a scan, shared by inspect and verify.
struct StoreStats {
    var records = 0
    var entries = 0
    var byType: [String: Int] = [:]
    var byOperation: [String: Int] = [:]
    var byZone: [String: Int] = [:]
    var firstTime: Int64? = nil
    var lastTime: Int64? = nil
    var firstSequence: SequenceNumber? = nil
    var lastSequence: SequenceNumber = 0
    var payloadBytes = 0

    mutating func add(record r: RecordView) {
        records += 1
        payloadBytes += r.payload.count
        byType[RecordType(rawValue: r.header.type)?.name ?? "skippable0x" + String(r.header.type, radix: 16), default: 0] += 1
    }

    mutating func add(event: LogEvent) {
        switch event {
        case .entry(let s, let e):
            entries += 1
            byOperation[e.operation.name, default: 0] += 1
            byZone[e.zone, default: 0] += 1
            firstTime = min(firstTime ?? e.wallTime, e.wallTime)
            lastTime = max(lastTime ?? e.wallTime, e.wallTime)
            if firstSequence == nil { firstSequence = s }
            lastSequence = max(lastSequence, s)
        case .zoneCreated(let s, _), .zoneDeleted(let s, _, _):
            if firstSequence == nil { firstSequence = s }
            lastSequence = max(lastSequence, s)
        case .seal, .skipped, .lowWaterMark: break
        }
    }

    /// Scans `path` read-only under `mode`; `inspect` uses pointInTime so a damaged store
    /// still gets a report of its intact prefix.
    static func collect(_ path: String, mode: RecoveryMode) throws -> (StoreStats, ScanReport) {
        var stats = StoreStats()
        var progress = Progress(label: "scanned records")
        var lastRecordOffset: (String, Int64) = ("", -1)
        let report = try LogReader.read(path, mode: mode) { event, record in
            if lastRecordOffset != (record.segment, record.offset) {
                lastRecordOffset = (record.segment, record.offset)
                stats.add(record: record)
                progress.tick()
            }
            stats.add(event: event)
        }
        progress.finish()
        // The log's end (FORMAT.md §12.1): seals and segment bases count, so a store whose last
        // entries a compaction purged reports what its seal and segment table say.
        stats.lastSequence = max(stats.lastSequence, report.lastSequence)
        return (stats, report)
    }
}

/// `1.M`, `M` the highest minor of the segment headers read (FORMAT.md §12.1), or "unknown".
func formatVersion(_ report: ScanReport) -> String {
    let headers = report.segments.compactMap(\.header)
    guard let major = headers.first?.major, let minor = headers.map(\.minor).max() else { return "unknown" }
    return "\(major).\(minor)"
}

func healthText(_ report: ScanReport) -> String {
    guard let p = report.problems.first else { return "ok" }
    return p.description
}

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise a store or a single segment file: version, segments, sequences, counts, bytes, times and health.")

    @Argument(help: "A store directory or a segment file.") var path: String
    @Flag(help: "Print one JSON object.") var json = false
    @Option(help: "Recovery mode for reading (strict, tolerateTail, pointInTime, salvage).") var mode: RecoveryMode = .pointInTime

    /// A snapshot file's kind in `--json` (`state`, `delta`, `base`, `history`).
    static func kindName(_ kind: SnapshotFile.Kind) -> String {
        switch kind {
        case .state: "state"
        case .delta: "delta"
        case .base: "base"
        case .history: "history"
        }
    }

    func run() throws {
        let stats: StoreStats
        let report: ScanReport
        do {
            (stats, report) = try StoreStats.collect(path, mode: mode)
        } catch {
            throw fail(error, path: path)
        }
        let header = report.segments.first?.header
        let version = formatVersion(report)
        let storeID = header.map { hex64($0.storeID.0) + hex64($0.storeID.1) } ?? ""
        let logical = report.segments.reduce(Int64(0)) { $0 + $1.validEnd }
        let allocated = report.segments.reduce(Int64(0)) { $0 + $1.fileSize }
        let zones = stats.byZone.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        let (consumers, consumerProblems) = JournalStore.consumers(store: path)
        let now = nowMillis()
        let index = IndexSummary(store: path, mode: mode)
        if json {
            let obj: JSON = .object([
                ("path", .string(path)),
                ("formatVersion", .string(version)),
                ("storeID", .string(storeID)),
                ("segments", .array(report.segments.map { s in
                    .object([("name", .string(s.name)), ("baseSequence", .uint(s.header?.baseSequence ?? 0)),
                             ("firstSequence", s.firstSequence.map { .uint($0) } ?? .null), ("lastSequence", .uint(s.lastSequence)),
                             ("records", .int(Int64(s.records))), ("bytes", .int(s.validEnd)), ("fileBytes", .int(s.fileSize)),
                             ("compacted", .bool(s.header?.flags.contains(.compacted) ?? false))])
                })),
                ("firstSequence", stats.firstSequence.map { .uint($0) } ?? .null),
                ("lastSequence", .uint(stats.lastSequence)),
                ("records", .int(Int64(stats.records))),
                ("entries", .int(Int64(stats.entries))),
                ("recordTypes", .object(stats.byType.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
                ("operations", .object(stats.byOperation.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
                ("zones", .object(zones.map { ($0.key, .int(Int64($0.value))) })),
                ("bytes", .int(logical)),
                ("fileBytes", .int(allocated)),
                ("firstTime", stats.firstTime.map { .string(iso($0)) } ?? .null),
                ("lastTime", stats.lastTime.map { .string(iso($0)) } ?? .null),
                ("health", .string(healthText(report))),
                ("problems", .array(report.problems.map { .string($0.description) })),
                ("snapshots", .array(snapshotSummaries(path, logEnd: report.lastSequence).map { f, status, size in
                    .object([("file", .string(f.name)), ("kind", .string(Self.kindName(f.kind))),
                             ("incarnation", .uint(f.incarnation)), ("sequence", .uint(f.sequence)), ("bytes", .int(size)),
                             ("status", .string(status))])
                })),
                ("consumers", .array(consumers.map { consumerJSON($0, now: now) })),
                ("consumerProblems", .array(consumerProblems.map { .string($0) })),
                ("index", index?.json ?? .null),
            ])
            print(obj.rendered)
        } else {
            print("path            \(path)")
            print("format version  \(version)")
            print("store id        \(storeID)")
            print("segments        \(report.segments.count)")
            for s in report.segments.prefix(20) {
                let range = s.firstSequence.map { "\($0)–\(s.lastSequence)" } ?? "empty"
                let compacted = s.header?.flags.contains(.compacted) == true ? "  compacted" : ""
                print("  \(s.name)  \(range)  \(s.records) records  \(s.validEnd) bytes (\(s.fileSize) on disk)\(compacted)")
            }
            if report.segments.count > 20 { print("  … \(report.segments.count - 20) more (use --json for all)") }
            print("sequences       \(stats.firstSequence.map { "\($0)–\(stats.lastSequence)" } ?? "none")")
            print("records         \(stats.records) (\(stats.byType.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))")
            print("entries         \(stats.entries) (\(stats.byOperation.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))")
            print("zones           \(zones.count)")
            for (z, n) in zones.prefix(10) { print("  \(printable(z))  \(n)") }
            if zones.count > 10 { print("  … \(zones.count - 10) more (use --json for all)") }
            print("bytes           \(logical) (\(allocated) on disk)")
            print("first time      \(stats.firstTime.map(iso) ?? "-")")
            print("last time       \(stats.lastTime.map(iso) ?? "-")")
            print("health          \(healthText(report))")
            let snaps = snapshotSummaries(path, logEnd: report.lastSequence)
            print("snapshots       \(snaps.isEmpty ? "none (write one with `jlog snapshot`)" : String(snaps.count))")
            for (f, status, size) in snaps.prefix(20) { print("  \(f.name)  sequence \(f.sequence)  \(size) bytes  \(status)") }
            print("consumers       \(consumers.count)\(consumerProblems.isEmpty ? "" : ", \(consumerProblems.count) damaged file(s)")")
            for l in consumerLines(consumers, problems: consumerProblems, now: now) { print(l) }
            if isDirectory(path) { print("index           \(index?.line ?? "not read (no reader opens the store as it is)")") }
        }
        if let p = report.problems.first { throw ExitCode(p.isTornTail ? Status.tornTail : Status.corruption) }
    }
}

func hex64(_ v: UInt64) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: 16 - s.count) + s
}

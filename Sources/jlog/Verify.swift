import ArgumentParser
import Foundation
import JournalLog
import JournalQuery

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every checksum and record; exit 0 when clean.",
        discussion: "Otherwise names the first problem and what each recovery mode would keep. Exit 1: torn tail only; 2: corruption.")

    @Argument(help: "A store directory or a segment file.") var path: String
    @Flag(help: "Print one JSON object.") var json = false

    struct Outcome {
        var mode: RecoveryMode
        var opens: Bool
        var entries = 0
        var lastSequence: SequenceNumber = 0
        var skippedBytes: Int64 = 0
        var note: String
    }

    func run() throws {
        // Salvage first: it visits every intact record and lists every damaged spot, so clean
        // means every record of every segment checks out.
        // EPOCHS before the log: a writer appending meanwhile only moves it forward after the
        // log got there, so read first it never claims more than the scan finds.
        let epochsBefore = isDirectory(path) ? EpochCheck.read(store: path) : nil
        let strict: (StoreStats, ScanReport)
        do {
            strict = try StoreStats.collect(path, mode: .salvage)
        } catch {
            throw fail(error, path: path)
        }
        let (stats, report) = strict
        let epochs = report.segments.isEmpty ? nil : epochsBefore.map { EpochCheck.check($0, report: report) }
        if let missing = epochs?.missing {
            if json {
                print(JSON.object([("path", .string(path)), ("ok", .bool(false)),
                                   ("problem", .object([("kind", .string("acknowledgedEntriesMissing")),
                                                        ("description", .string("acknowledged entries are missing: \(missing)"))])),
                                   ("acknowledgedEntriesMissing", .bool(true))] + epochsFields(epochs)).rendered)
            } else {
                print("problem: acknowledged entries are missing: \(missing)")
                print("  every recovery mode keeps only what is there (\(stats.entries) entries through sequence \(stats.lastSequence)); a writer refuses to open")
                print("next: put the missing segment files back (from a backup, or torn/), or accept the loss with `jlog recover \(path) --accept-loss`")
            }
            throw ExitCode(Status.corruption)
        }
        // The files beside the log: a compacted zone's history must be readable whole.
        let reader = report.isClean && isDirectory(path) ? try? StoreReader.open(path) : nil
        let files = reader.map { StoreFileCheck.run($0) }
        if let files, !files.problems.isEmpty {
            if json {
                print(JSON.object([("path", .string(path)), ("ok", .bool(false)),
                                   ("problem", .object([("kind", .string("historyIncomplete")), ("description", .string(files.problems[0]))])),
                                   ("historyProblems", .array(files.problems.map { .string($0) }))] + epochsFields(epochs)).rendered)
            } else {
                for p in files.problems { print("problem: \(p)") }
                print("  the log itself is whole: \(stats.entries) entries through sequence \(stats.lastSequence)")
            }
            throw ExitCode(Status.corruption)
        }
        let pendingNote = "a compaction run is committed but not finished (.swap files): every reader reads its rewritten segments; "
            + "the next writer's open (`jlog recover \(path)`) renames them into place"
        if report.isClean {
            // The index is a cache: one that cannot be used is a note, not a problem.
            let indexNote = reader.flatMap { IndexSummary(reader: $0).unusedCheckpoint }
            if json {
                print(JSON.object([("path", .string(path)), ("ok", .bool(true)), ("records", .int(Int64(stats.records))),
                                   ("entries", .int(Int64(stats.entries))), ("lastSequence", .uint(stats.lastSequence)),
                                   ("segments", .int(Int64(report.segments.count))),
                                   ("compactionCommitPending", .bool(report.compactionCommitPending)),
                                   ("indexNote", indexNote.map { .string($0) } ?? .null)] + epochsFields(epochs)).rendered)
            } else {
                print("ok: \(report.segments.count) segments, \(stats.records) records, \(stats.entries) entries, last sequence \(stats.lastSequence)")
                if report.compactionCommitPending { print("note: " + pendingNote) }
                if let indexNote { print("note: " + indexNote) }
                if let files {
                    print("files: \(files.snapshotFiles) snapshots, \(files.historyFiles) histories")
                    for n in files.notes { print("note: \(n)") }
                }
                if let r = epochs?.record {
                    print("epochs: \(r.epochs.count) (current \(String(r.current.id, radix: 16)), since sequence \(r.current.start)); "
                          + "acknowledged through \(r.acknowledgedThrough)\(r.closedCleanly ? ", closed cleanly" : "")")
                } else if let note = epochs?.note {
                    print("note: \(note)")
                }
            }
            return
        }
        let first = report.problems[0]
        var outcomes: [Outcome] = []
        for mode in RecoveryMode.allCases {
            do {
                let (s, r) = try StoreStats.collect(path, mode: mode)
                let skipped = r.segments.reduce(Int64(0)) { $0 + $1.skippedBytes }
                let note: String
                switch mode {
                case .strict: note = "opens"
                case .tolerateTail: note = "cuts the torn tail and keeps everything before it"
                case .pointInTime: note = "keeps the prefix before the first damage and sets the rest aside in torn/"
                case .salvage: note = "read-only: keeps every intact record, skipping \(skipped) damaged bytes"
                }
                outcomes.append(Outcome(mode: mode, opens: true, entries: s.entries, lastSequence: s.lastSequence, skippedBytes: skipped, note: note))
            } catch {
                outcomes.append(Outcome(mode: mode, opens: false, note: "refuses to open: \(error)"))
            }
        }
        if json {
            print(JSON.object([
                ("path", .string(path)), ("ok", .bool(false)),
                ("problem", .object([("kind", .string(first.problem.kind))] + (first.problem.reason.map { [("reason", JSON.string($0))] } ?? [])
                                    + [("segment", .string(first.segment)), ("offset", .int(first.offset)),
                                       ("lastGoodSequence", .uint(first.lastGoodSequence)), ("tornTail", .bool(first.isTornTail)),
                                       ("description", .string(first.description))])),
                ("problems", .int(Int64(report.problems.count))),
                ("modes", .object(outcomes.map { o in
                    (o.mode.rawValue, .object([("opens", .bool(o.opens)), ("entries", .int(Int64(o.entries))),
                                               ("lastSequence", .uint(o.lastSequence)), ("note", .string(o.note))]))
                })),
            ] + epochsFields(epochs)).rendered)
        } else {
            print("problem: \(first.description)")
            if report.compactionCommitPending { print("note: " + pendingNote) }
            if report.problems.count > 1 { print("(\(report.problems.count) damaged spots in all)") }
            for o in outcomes {
                if o.opens {
                    print("  \(o.mode.rawValue): keeps \(o.entries) entries through sequence \(o.lastSequence); \(o.note)")
                } else {
                    print("  \(o.mode.rawValue): \(o.note)")
                }
            }
            print("next: " + nextStep(first, path: path))
        }
        throw ExitCode(first.isTornTail ? Status.tornTail : Status.corruption)
    }
}

extension Verify {
    /// `epochs` (FORMAT.md §12.3): the facts of a usable `EPOCHS`, or null with `epochsNote`.
    func epochsFields(_ epochs: EpochCheck?) -> [(String, JSON)] {
        guard isDirectory(path) else { return [] }
        guard let r = epochs?.record else {
            return [("epochs", .null), ("epochsNote", .string(epochs?.note ?? "the store holds no segment, so its epochs were not checked"))]
        }
        return [("epochs", .object([("count", .int(Int64(r.epochs.count))), ("current", .string(hex64(r.current.id))),
                                    ("since", .uint(r.current.start)), ("acknowledgedThrough", .uint(r.acknowledgedThrough)),
                                    ("activeSegment", .uint(r.activeSegment)), ("closedCleanly", .bool(r.closedCleanly))]))]
    }
}

func isDirectory(_ path: String) -> Bool {
    var d: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &d) && d.boolValue
}

// jlog-bench: JournalLog against SQLite and against this machine's limits, in one run.
//
//   swift run -c release jlog-bench [--quick] [--dir PATH] [--only NAME,...] [--system journallog|sqlite]
//
// stdout: one JSON object per line per measurement. stderr: progress, then a summary table.
// Workload sizes live in Config.swift (`Workloads.full`, `Workloads.quick`).

import Foundation
import JournalLog
#if canImport(Glibc)
import Glibc
#endif

let usage = """
    usage: jlog-bench [--quick] [--dir PATH] [--only NAME,...] [--system journallog|sqlite]

      --quick        smaller counts (finishes in under a minute)
      --dir PATH     parent for the scratch directory (default ./.bench-tmp); must be on the disk you
                     want to measure. A fresh subdirectory is made there and removed at the end.
      --only LIST    comma-separated subset of: \(Group.allCases.map(\.rawValue).joined(separator: ", "))
                     (durable_single measures the fdatasync limits beside each of its runs)
      --system S     run only journallog or only sqlite (for profiling one side; no ratios)
    """

var quick = false
var parent: String? = nil
var only: Set<Group> = Set(Group.allCases)
var systems: Set<String> = ["journallog", "sqlite"]
var args = Array(CommandLine.arguments.dropFirst())
while !args.isEmpty {
    let a = args.removeFirst()
    switch a {
    case "--quick": quick = true
    case "--dir":
        guard !args.isEmpty else { log(usage); exit(64) }
        parent = args.removeFirst()
    case "--only":
        guard !args.isEmpty else { log(usage); exit(64) }
        var set = Set<Group>()
        for name in args.removeFirst().split(separator: ",") {
            guard let g = Group.parse(String(name).trimmingCharacters(in: .whitespaces)) else {
                log("jlog-bench: unknown measurement '\(name)'\n" + usage)
                exit(64)
            }
            set.insert(g)
        }
        only = set
    case "--system":
        guard !args.isEmpty, ["journallog", "sqlite"].contains(args[0]) else { log(usage); exit(64) }
        systems = [args.removeFirst()]
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        log("jlog-bench: unknown argument '\(a)'\n" + usage)
        exit(64)
    }
}

let counts = quick ? Workloads.quick : Workloads.full
let defaultParent = FileManager.default.currentDirectoryPath + "/.bench-tmp"
let parentDir = parent ?? defaultParent
let parentExisted = FileManager.default.fileExists(atPath: parentDir)
makeDirectory(parentDir)
var template = Array((parentDir + "/run-XXXXXX").utf8CString)
guard let made = mkdtemp(&template) else {
    log("jlog-bench: cannot create a scratch directory under \(parentDir)")
    exit(2)
}
let workDir = String(cString: made)

/// Removes the scratch directory, and the default parent when this run created it and it is empty.
func cleanUp() {
    removeTree(workDir)
    if !parentExisted, let left = try? FileManager.default.contentsOfDirectory(atPath: parentDir), left.isEmpty {
        rmdir(parentDir)
    }
}

let started = now()
let report = Report()
let loadAtStart = loadAverage()
scratchDirectory.set(workDir, parent: parentExisted ? nil : parentDir)
log("jlog-bench: \(quick ? "quick" : "full") run in \(workDir); groups: \(Group.allCases.filter { only.contains($0) }.map(\.rawValue).joined(separator: ", "))")

let machine = MachineBench(counts: counts, dir: workDir, report: report)
if only.contains(.machine) {
    log("[1/8] machine limits")
    machine.run()
}

let needsBatches = systems.contains("journallog") && (only.contains(.buffered) || only.contains(.store))
let batchPath = needsBatches ? probeBatchPath(dir: workDir) : .appendBatch
let compare = CompareBench(counts: counts, dir: workDir, report: report, batchPath: batchPath,
                           jlOn: systems.contains("journallog"), sqOn: systems.contains("sqlite"))
if only.contains(.buffered) {
    log("[2/8] buffered append")
    compare.buffered()
}
if only.contains(.durable) {
    log("[3/8] durable single-entry commits")
    compare.durable(limits: { (machine.fsyncAppend(), machine.fsyncPrezeroed()) })
}
if only.contains(.concurrent) {
    log("[4/8] \(counts.concurrentThreads) concurrent durable appenders")
    compare.concurrent()
}
if only.contains(.store) {
    log("[5/8] open/recovery, full read and bytes per entry")
    compare.store()
}
if only.contains(.feed) {
    log("[6/8] change feed: last 100 changes, changedZones")
    compare.feed()
}
if only.contains(.materialise) {
    log("[7/8] materialising a list, snapshots")
    compare.materialise()
}
if only.contains(.reducer) && !only.contains(.materialise) {
    log("[7/8] the reducer alone")
    compare.reducer(ListWorkload.generate(counts.materialiseEntries, seed: ListWorkload.seed, zone: ListWorkload.zone), zone: ListWorkload.zone)
}
if only.contains(.compaction) {
    log("[8/8] compaction against DELETE + checkpoint, open from its snapshot")
    compare.compaction()
}
if only.contains(.e2ee) && systems.contains("journallog") {
    SealingBench(counts: counts, report: report).run()
    SealedRefetchBench(counts: counts, report: report).run()
}
if only.contains(.sync) && systems.contains("journallog") {
    SyncBench(counts: counts, dir: workDir, report: report).run()
}
if only.contains(.smallStore) {
    log("[9/9] a small store: bytes on disk and open time")
    compare.smallStore()
}
if only.contains(.compaction) || only.contains(.lifecycleOpen) {
    log("[8/8] opening a family list from a snapshot at three history lengths")
    compare.lifecycleOpen()
}
if only.contains(.tail) {
    log("[10/10] append tail latency beside background work")
    compare.tail()
}

if only.contains(.observe) && systems.contains("journallog") {
    ObserveBench(counts: counts, dir: workDir, report: report).run()
}

if only.contains(.postgres) {
    PostgresBench(counts: counts, dir: workDir, report: report).run()
}

report.emit(Measurement(name: "load_average", system: "machine", unit: "1-min load", runs: [loadAtStart, loadAverage()],
                        extra: [("cores", .i(ProcessInfo.processInfo.activeProcessorCount)), ("runs_are", .s("[at start, at end]")),
                                ("mode", .s(quick ? "quick" : "full"))]))
cleanUp()
scratchDirectory.set(nil)
let elapsed = now() - started
log("")
log("jlog-bench \(quick ? "--quick" : "(full)") finished in \(String(format: "%.1f", elapsed)) s. Ratios are JournalLog over SQLite, > 1 favours JournalLog.")
log(report.summary())
if case .appendRecord(let why) = batchPath { log("NOTE: JournalLog batches went through \(batchPath.label): \(why).") }

import ArgumentParser
import Foundation
import JournalLog
import JournalQuery

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Purge what no reader needs any more: finished items and superseded renames older than the retention (Spec/COMPACTION.md).",
        discussion: """
        Per live zone, chooses the entries the list rules let go, writes the zone's history and a \
        snapshot of what stays, raises its low-water mark (older tokens then get tokenExpired), then \
        rewrites the sealed segments that hold purged entries or entries of deleted zones. The active \
        segment is never rewritten, and nothing above an unexpired consumer's mark goes (`jlog consumers`). \
        Each live zone with nothing to compact is listed with the reason: every entry newer than the cutoff, \
        older entries held back by consumers, no finished item, a list its reader refuses (a base it cannot \
        apply: left whole, reported, exit status 0, skipped again until repaired or deleted), or (exit status 1) \
        entries kept arriving during every rewrite. \
        Opens the store as its writer; --dry-run only reads it (no lock), so it runs beside a live writer and on \
        read-only media. Safe to interrupt: running again finishes the job. \
        A store that syncs (it has sync/state) is refused, dry run or not: only the service compacts a synced \
        list (Spec/COMPACTION.md §5), and `jlog sync` adopts what it purged.
        """)

    @Argument(help: "The store directory.") var store: String
    @Option(help: ArgumentHelp("Keep finished items, and renames and recolours since superseded, for this many days.", valueName: "days")) var retentionDays = 14
    @Option(help: ArgumentHelp("Compact as of this time (ISO-8601 or milliseconds since the epoch) instead of the real clock.", valueName: "time")) var now: TimeArgument?
    @Flag(help: "Decide and report, write nothing.") var dryRun = false
    @Flag(help: "One JSON object: {\"zones\":[{zone,incarnation,chosen,rewritten,lowWaterMark,snapshotSequence}],\"storage\":{…},…}.") var json = false

    /// Skipped zones listed one by one up to this many; past it, counted by reason.
    static let skippedListed = 20

    func validate() throws {
        guard retentionDays >= 0 && retentionDays <= 100_000 else { throw ValidationError("--retention-days must be 0...100000") }
    }

    func run() throws {
        try refuseIfSynced()
        // A dry run decides and writes nothing: a reader, which takes no lock, is enough.
        let query: ListQuery
        var writer: JournalStore? = nil
        if dryRun {
            query = ListQuery(reader: try openReader(store))
        } else {
            let s = try openExisting(store)
            writer = s
            query = ListQuery(store: s)
        }
        defer { try? writer?.close() }
        let at = now?.millis ?? nowMillis()
        let retention = Int64(retentionDays) * 86_400_000
        let problems = JournalStore.consumers(store: store).problems
        for p in problems { printError("warning: consumer \(p)") }
        let report: ListCompactionReport
        do {
            report = try ListCompactor(query: query, retentionMillis: retention).run(now: at, dryRun: dryRun)
        } catch {
            throw queryFailure(error, json: json, path: store)
        }
        let st = report.storage
        // A zone that kept changing was left out: the run did not finish the job.
        let incomplete = report.skipped.contains { $0.reason == .keptChanging }
        if json {
            print(JSON.object([
                ("store", .string(store)),
                ("now", .string(iso(at))),
                ("retentionDays", .int(Int64(retentionDays))),
                ("cutoff", .string(iso(at - retention))),
                ("dryRun", .bool(dryRun)),
                ("zones", .array(report.zones.map { z in
                    .object([("zone", .string(z.zone)), ("incarnation", .uint(z.incarnation)), ("chosen", .int(Int64(z.chosen))),
                             ("rewritten", .int(Int64(z.rewritten))),
                             ("lowWaterMark", .uint(z.lowWaterMark)), ("snapshotSequence", .uint(z.snapshotSequence))])
                })),
                ("storage", dryRun ? .null : .object([
                    ("segmentsExamined", .int(Int64(st.segmentsExamined))), ("segmentsRewritten", .int(Int64(st.segmentsRewritten))),
                    ("entriesPurged", .int(Int64(st.entriesPurged))), ("entriesReplaced", .int(Int64(st.entriesReplaced))),
                    ("deletedZoneEntriesPurged", .int(Int64(st.deletedZoneEntriesPurged))),
                    ("entriesKept", .int(Int64(st.entriesKept))), ("bytesBefore", .int(st.bytesBefore)), ("bytesAfter", .int(st.bytesAfter)),
                ])),
                ("skipped", .array(report.skipped.map { z in
                    var fields: [(String, JSON)] = [("zone", .string(z.zone)), ("reason", .string(z.reason.code))]
                    if case .heldByConsumers(let at) = z.reason { fields.append(("mark", .uint(at))) }
                    if case .arrivedRecently(let at) = z.reason { fields.append(("mark", .uint(at))) }
                    if case .baseUnreadable(let why) = z.reason { fields.append(("detail", .string(why))) }
                    return .object(fields)
                })),
                ("filesRemoved", .int(Int64(report.filesRemoved))),
                ("consumerProblems", .array(problems.map { .string($0) })),
            ]).rendered)
            if incomplete { throw ExitCode(1) }
            return
        }
        print("\(dryRun ? "dry run: " : "")compacting as of \(iso(at)), retention \(retentionDays) days (cutoff \(iso(at - retention)))")
        if report.zones.isEmpty {
            print("no zone has entries to purge (an entry goes once it is older than the cutoff, in a sealed segment, "
                  + "and processed by every unexpired consumer)")
        } else {
            print("zone".padding(toLength: 32, withPad: " ", startingAt: 0) + "  chosen  placed  low-water mark  snapshot at")
            for z in report.zones {
                print(printable(z.zone).padding(toLength: 32, withPad: " ", startingAt: 0)
                      + "  \(String(z.chosen).leftPad(6))  \(String(z.rewritten).leftPad(6))  \(String(z.lowWaterMark).leftPad(14))  \(String(z.snapshotSequence).leftPad(11))")
            }
        }
        // A store of many lists skips most of them on most runs: past a screenful, count them by
        // reason, but always name a zone that needs running again or repairing.
        if report.skipped.count <= Self.skippedListed {
            for z in report.skipped { print("skipped \(printable(z.zone)): \(z.reason.explanation)") }
        } else {
            var byReason: [String: (count: Int, explanation: String)] = [:]
            for z in report.skipped where !z.reason.alwaysNamed {
                byReason[z.reason.code, default: (0, z.reason.explanation(naming: false))].count += 1
            }
            for (_, r) in byReason.sorted(by: { $0.key < $1.key }) {
                print("skipped \(r.count) zone\(r.count == 1 ? "" : "s"): \(r.explanation) (`--json` lists them)")
            }
            for z in report.skipped where z.reason.alwaysNamed { print("skipped \(printable(z.zone)): \(z.reason.explanation)") }
        }
        if dryRun {
            print("nothing was written; run without --dry-run to purge \(report.zones.reduce(0) { $0 + $1.chosen }) entries "
                  + "and replace \(report.zones.reduce(0) { $0 + $1.rewritten }) by placements")
            return
        }
        print("segments        \(st.segmentsExamined) examined, \(st.segmentsRewritten) rewritten")
        print("entries         \(st.entriesPurged) purged, \(st.entriesReplaced) replaced by placements, \(st.deletedZoneEntriesPurged) of deleted zones purged, \(st.entriesKept) kept (above their zone's mark)")
        print("bytes           \(st.bytesBefore) → \(st.bytesAfter) in the rewritten segments")
        print("snapshot files  \(report.filesRemoved) removed (superseded, or of deleted zones)")
        if incomplete { throw ExitCode(1) }
    }
}

extension Compact {
    /// Spec/COMPACTION.md §5 rule 1, "One decider": a device never compacts a list it syncs. Two
    /// replicas that purge on their own diverge for ever (a late unmark shows an item on one and
    /// not the other, §2 "Late operations"), so a store that syncs is refused outright, with no
    /// override, dry run or not: the service compacts, and `jlog sync` adopts its result. The rule
    /// is the library's (`ListCompactor.syncedStoreRefusal`); this adds what to do next.
    func refuseIfSynced() throws {
        guard let refusal = ListCompactor.syncedStoreRefusal(store: store, fs: PosixFileSystem(), isTheSyncService: false) else { return }
        let next = StoreRole.of(store: store, fs: PosixFileSystem()) == .device
            ? "The service compacts (`jlog serve --compact-every`); the next `jlog sync \(store)` then re-fetches each compacted list from it."
            : "The server compacts it itself (`jlog serve --compact-every`, Spec/SYNC.md §6.2)."
        printError("\(refusal.description) \(next)")
        throw ExitCode(Status.failure)
    }
}

extension CompactionSkip {
    /// The JSON `reason`.
    var code: String {
        switch self {
        case .nothingOlderThanCutoff: "nothingOlderThanCutoff"
        case .heldByConsumers: "heldByConsumers"
        case .arrivedRecently: "arrivedRecently"
        case .nothingFinished: "nothingFinished"
        case .keptChanging: "keptChanging"
        case .baseUnreadable: "baseUnreadable"
        }
    }

    /// What it means, and what to do about it.
    var explanation: String { explanation(naming: true) }

    /// Whether the text lists each zone skipped for it even past a screenful: it needs running
    /// again (`keptChanging`) or repairing (`baseUnreadable`).
    var alwaysNamed: Bool {
        switch self {
        case .keptChanging, .baseUnreadable: true
        default: false
        }
    }

    /// `naming`: with the one zone's mark; without, it reads for several zones at once.
    func explanation(naming: Bool) -> String {
        switch self {
        case .nothingOlderThanCutoff: "every entry is newer than the cutoff"
        case .heldByConsumers(let at):
            "older entries lie above \(naming ? "sequence \(at)" : "the marks"), where unexpired consumers hold the zone; they go once the consumers advance or their leases expire (`jlog consumers`)"
        case .arrivedRecently(let at):
            "entries old by their own time lie above \(naming ? "sequence \(at)" : "the positions"), which the service received less than the retention ago; they go once they have been on the service that long"
        case .nothingFinished: "no item older than the cutoff is finished (marked off or deleted), and no rename or recolour is superseded"
        case .keptChanging:
            "it gained entries during every one of \(ListCompactor.maxAttempts) rewrites, so nothing of it was purged; run `jlog compact` again when it is quieter"
        case .baseUnreadable(let why):
            "its reader refuses the list (\(naming ? why : "a base it cannot apply")), so nothing of it was compacted, and every run skips it "
                + "until it is repaired: fetch it anew from its service, or delete it (`jlog delete-zone`)"
        }
    }
}

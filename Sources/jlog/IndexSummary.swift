import Foundation
import JournalLog

/// The zone index's checkpoint files and how a reader got the index from them, for `jlog inspect`
/// and `jlog verify` (Spec/INDEX.md §4, §5). The index is a cache: a checkpoint that cannot be
/// used costs an open a read of the whole log, never an entry.
struct IndexSummary {
    var report: IndexOpenReport
    /// Sizes of `index/zones.idx` and `index/zones.idj`; nil when absent.
    var fileBytes: Int64?
    var journalBytes: Int64?

    /// Nil for a segment file, or a store no reader can open (the log's own problem says why).
    init?(store: String, mode: RecoveryMode) {
        guard isDirectory(store), let reader = try? StoreReader.open(store, mode: mode == .pointInTime ? .pointInTime : .tolerateTail) else {
            return nil
        }
        self.init(reader: reader)
    }

    /// From a reader already open on the store.
    init(reader: StoreReader) {
        let store = reader.path
        report = reader.index
        func size(_ name: String) -> Int64? { (try? FileManager.default.attributesOfItem(atPath: store + "/" + name)[.size]) as? Int64 }
        fileBytes = size(StoreLayout.indexFile)
        journalBytes = size(StoreLayout.indexJournalFile)
    }

    /// Why the checkpoint files on disk were not used, when there are some: worth a note.
    var unusedCheckpoint: String? {
        guard case .rebuilt(let reason) = report.source, fileBytes != nil else { return nil }
        return "the zone index checkpoint (\(StoreLayout.indexFile)) is not used: \(reason); an open reads the whole log to rebuild it "
            + "and a writer replaces it (it is a cache: nothing is lost)"
    }

    /// One line for `jlog inspect`.
    var line: String {
        guard report.source == .checkpoint else { return Self.describe(report) }
        let journal = journalBytes.map { ", \(StoreLayout.indexJournalFile) \($0) bytes" } ?? ""
        return Self.describe(report) + " (\(StoreLayout.indexFile) \(fileBytes ?? 0) bytes\(journal))"
    }

    /// How an open got the zone index, in words (`jlog inspect`, `jlog recover`).
    static func describe(_ report: IndexOpenReport) -> String {
        switch report.source {
        case .checkpoint:
            let journal = report.journalRecords > 0 ? " and \(report.journalRecords) journal records" : ""
            return "from its checkpoint through sequence \(report.checkpointSequence ?? 0)\(journal), then \(report.recordsReplayed) records replayed"
        case .rebuilt(let reason):
            return "rebuilt from the whole log (\(report.recordsReplayed) records): \(reason)"
        }
    }

    var json: JSON {
        var fields: [(String, JSON)] = []
        switch report.source {
        case .checkpoint: fields.append(("source", .string("checkpoint")))
        case .rebuilt(let reason): fields += [("source", .string("rebuilt")), ("reason", .string(reason))]
        }
        fields += [
            ("checkpointSequence", report.checkpointSequence.map { .uint($0) } ?? .null),
            ("journalRecords", .int(Int64(report.journalRecords))),
            ("recordsReplayed", .int(Int64(report.recordsReplayed))),
            ("fileBytes", fileBytes.map { .int($0) } ?? .null),
            ("journalBytes", journalBytes.map { .int($0) } ?? .null),
        ]
        return .object(fields)
    }
}

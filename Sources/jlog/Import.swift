import ArgumentParser
import Foundation
import JournalLog

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Append JSON Lines entries to a store, creating it if needed.",
        discussion: """
        One entry per line: {"zone","op","item","text","after","by","at"} plus optional "id" and "hlc".
        A missing hlc is "at" with counter 0 and a missing id is derived from the entry's content: both depend on the line alone, so the same lines in any order, imported any number of times, give the same entries.
        Entries are appended in atomic batches. With --sync each batch is fsynced before
        `acked <lastSeq>` is printed on stdout.
        """
    )

    @Argument(help: "The store directory, e.g. list.wal.") var store: String
    @Argument(help: "JSON Lines input; '-' or nothing reads stdin.") var file: String = "-"
    @Flag(help: "Sync each batch and print `acked <lastSeq>` once it is durable.") var sync = false
    @Option(help: "Entries per atomic batch.") var batchSize = 1000
    @Option(help: ArgumentHelp("Seal a segment and start the next once it would pass this many bytes (a batch larger than this gets a segment of its own).", valueName: "bytes"))
    var segmentSize = 64 << 20

    func validate() throws {
        guard batchSize >= 1 && batchSize <= Limits.maxBatchEntries else {
            throw ValidationError("--batch-size must be 1...\(Limits.maxBatchEntries)")
        }
        guard segmentSize >= 512 && segmentSize <= 1 << 31 else {
            throw ValidationError("--segment-size must be 512...\(1 << 31) bytes")
        }
    }

    /// The input: the file, or standard input for `-`.
    private func openInput() throws -> UnsafeMutablePointer<FILE> {
        if file == "-" {
            guard let f = fdopen(0, "r") else { throw ExitCode(Status.failure) }
            return f
        }
        guard let f = fopen(file, "r") else {
            printError("cannot open \(file): \(String(cString: strerror(errno))); check the path")
            throw ExitCode(Status.badInput)
        }
        return f
    }

    /// The store, opened (or made) for the import, with what its recovery found said.
    private func openStore() throws -> JournalStore {
        let store: JournalStore
        do {
            var options = StoreOptions()
            options.durability = sync ? .onBatch : .none
            options.segmentSize = segmentSize
            store = try JournalStore.open(self.store, options: options)
        } catch {
            throw fail(error, path: self.store)
        }
        if let p = store.recovery.problem {
            printError("recovered: \(p.description); removed bytes kept in \(store.recovery.setAside.joined(separator: ", "))")
        }
        for note in store.recovery.pastEndNotes { printError("note: \(note)") }
        return store
    }

    /// The closing line: what was imported, what was new, and why lines were skipped.
    private func report(imported: Int, added: Int, conflicts: Int, startSequence: SequenceNumber) throws {
        if conflicts > 0 {
            printError("imported \(imported) entries into \(self.store) (\(added) new); \(conflicts) line\(conflicts == 1 ? "" : "s") skipped: "
                       + "an id already used with other content (give each new entry its own id, or leave \"id\" out to derive one)")
            throw ExitCode(Status.badInput)
        }
        if imported == 0 {
            printError("no entries in the input; \(self.store) is unchanged")
        } else if added == 0 {
            printError("read \(imported) entries; every one was already stored in \(self.store) (idempotent import: nothing added)")
        } else {
            printError("imported \(imported) entries into \(self.store): \(added) new (sequences \(startSequence)–\(startSequence + UInt64(added) - 1))"
                       + (added < imported ? ", \(imported - added) already stored" : ""))
        }
    }

    func run() throws {
        let input = try openInput()
        defer { if file != "-" { fclose(input) } }
        let store = try openStore()

        var batch: [JournalEntry] = []
        var batchLines: [Int] = []
        batch.reserveCapacity(batchSize)
        var lineNumber = 0
        var imported = 0
        var conflicts = 0
        var firstSeq: SequenceNumber? = nil
        var lastSeq: SequenceNumber = 0
        var progress = Progress(label: "imported")
        let startSequence = store.nextSequence
        var linePtr: UnsafeMutablePointer<CChar>? = nil
        var cap = 0
        defer { free(linePtr) }
        let source = file == "-" ? "stdin" : file

        func flush() throws {
            while !batch.isEmpty {
                do {
                    let r = try store.append(batch: batch, durability: sync ? .always : Durability.none)
                    if firstSeq == nil { firstSeq = r.lowerBound }
                    lastSeq = max(lastSeq, r.upperBound)
                    break
                } catch .idConflict(let zone, let id, let at) {
                    // The same id with other content: not a retry. Report it, drop that line, and
                    // append the rest of the batch (a batch is atomic, so nothing of it was stored).
                    let k = batch.lastIndex { $0.id == id && $0.zone == zone } ?? 0
                    printError("\(source), line \(batchLines[k]): entry id \(id) in zone \(quote(zone)) is already "
                               + (at.map { "stored at sequence \($0)" } ?? "used by an earlier line of this batch") + " with other content; line skipped")
                    conflicts += 1
                    batch.remove(at: k)
                    batchLines.remove(at: k)
                } catch {
                    throw fail(error, path: self.store)
                }
            }
            imported += batchLines.count
            progress.tick(batchLines.count)
            batch.removeAll(keepingCapacity: true)
            batchLines.removeAll(keepingCapacity: true)
            if sync {
                print("acked \(lastSeq)")
                fflush(nil)
            }
        }

        /// Stops at a line that cannot be imported, after storing every line before it.
        func refuse(_ why: String) throws -> Never {
            try? flush()
            try? store.close()
            printError("\(source), line \(lineNumber), \(why)")
            printError("lines before \(lineNumber) were imported (\(imported) entries, through sequence \(lastSeq)); fix the line and import the rest")
            throw ExitCode(Status.badInput)
        }

        while true {
            let n = getline(&linePtr, &cap, input)
            if n < 0 { break }
            lineNumber += 1
            var len = n
            while len > 0, let c = linePtr?[len - 1], c == 0x0A || c == 0x0D { len -= 1 }
            let raw = UnsafeRawBufferPointer(start: linePtr, count: len)
            if raw.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            let parsed: ParsedEntryLine
            do {
                parsed = try EntryJSON.parse(utf8: raw)
            } catch {
                try refuse(error.description)
            }
            // A missing hlc or id is derived from the line alone: any order, any number of times,
            // gives the same entries.
            let entry = parsed.entry()
            if let why = JournalStore.refusal(entry) { try refuse(why) }
            batch.append(entry)
            batchLines.append(lineNumber)
            if batch.count == batchSize { try flush() }
        }
        if ferror(input) != 0 {
            printError("reading \(file) failed: \(String(cString: strerror(errno)))")
            throw ExitCode(Status.failure)
        }
        try flush()
        let added = Int(store.nextSequence - startSequence)
        do { try store.close() } catch { throw fail(error, path: self.store) }
        progress.finish()
        try report(imported: imported, added: added, conflicts: conflicts, startSequence: startSequence)
    }
}

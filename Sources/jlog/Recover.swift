import ArgumentParser
import Foundation
import JournalLog

struct Recover: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open a store for writing under a recovery mode, repairing what that mode repairs, and report what it did.",
        discussion: """
        tolerateTail (the default) cuts a torn tail; pointInTime also keeps only the prefix before \
        the first damage anywhere. Removed bytes are copied to torn/ first, never deleted. Copy the \
        store aside before a pointInTime recovery; `jlog verify` shows what each mode keeps.
        """)

    @Argument(help: "The store directory.") var store: String
    @Option(help: "tolerateTail or pointInTime (strict only checks; salvage only reads: use `jlog dump --mode salvage`).")
    var mode: RecoveryMode = .tolerateTail
    @Flag(help: "Open even though acknowledged entries are missing (a removed segment, a restored copy): begins a new token epoch, so no change token skips what was lost.")
    var acceptLoss = false

    func validate() throws {
        guard mode == .tolerateTail || mode == .pointInTime || mode == .strict else {
            throw ValidationError("--mode salvage only reads: copy what is intact with `jlog dump --mode salvage --json`")
        }
    }

    func run() throws {
        var options = StoreOptions()
        options.createIfMissing = false
        options.recovery = mode
        options.acceptLoss = acceptLoss
        let s: JournalStore
        do { s = try JournalStore.open(store, options: options) } catch { throw fail(error, path: store) }
        let r = s.recovery
        do { try s.close() } catch { throw fail(error, path: store) }
        if let p = r.problem {
            print("recovered: \(p.description)")
            print("removed \(r.removedBytes) bytes, kept in \(r.setAside.joined(separator: ", "))")
        } else {
            print("nothing to repair")
        }
        for note in r.pastEndNotes { print("put right: \(note)") }
        if let note = r.epochNote { print("epoch: \(note)") }
        print("token epoch \(String(r.epoch, radix: 16)) begins at sequence \(r.lastSequence + 1)")
        print("store \(store): \(r.segments) segments, last sequence \(r.lastSequence)")
        print("zone index: " + IndexSummary.describe(r.index))
    }
}

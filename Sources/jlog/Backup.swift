import ArgumentParser
import Foundation
import JournalLog

struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a store, live or not, to a new directory that restores to exactly the same store.",
        discussion: """
        Takes no lock: a writer may go on appending. The copy is one consistent moment of the store: \
        its log cut at the last whole record, compacted segments and placements as they are, zone \
        deletions, low-water marks, snapshot and history files (the only copy of purged events), \
        consumers and the token key. `jlog dump --json | jlog import` copies entries, not a store.
        """)

    @Argument(help: "The store directory.") var store: String
    @Argument(help: "Where the copy goes (must not exist).") var destination: String

    func run() throws {
        let r: BackupReport
        do { r = try StoreBackup.copy(from: store, to: destination) } catch { throw fail(error, path: store) }
        print("backed up \(store) to \(destination): \(r.segments) segments through sequence \(r.lastSequence), "
              + "\(r.files) other files, \(r.bytes) bytes" + (r.attempts > 1 ? " (\(r.attempts) tries: the store changed meanwhile)" : ""))
    }
}

struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore a backup to a new store directory, opening it once so that it begins a new token epoch.",
        discussion: """
        Clients holding change tokens from after the backup get invalidToken (they fetch again), \
        never an answer from the older log.
        """)

    @Argument(help: "The backup (a directory made by `jlog backup`).") var backup: String
    @Argument(help: "The store to create (must not exist).") var store: String

    func run() throws {
        let copied: BackupReport
        let opened: RecoveryReport
        do { (copied, opened) = try StoreBackup.restore(from: backup, to: store) } catch { throw fail(error, path: backup) }
        print("restored \(backup) to \(store): \(copied.segments) segments through sequence \(copied.lastSequence), \(copied.files) other files; "
              + "token epoch \(String(opened.epoch, radix: 16)) begins at \(opened.lastSequence + 1)")
    }
}

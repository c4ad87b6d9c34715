import ArgumentParser
import Foundation
import JournalServer

@main
struct JLog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jlog",
        abstract: "Inspect, verify, dump, import and compact JournalLog stores.",
        discussion: """
        A store is a directory such as list.wal/ holding segment files. inspect, verify and dump
        also accept a single segment file copied out of a store. Exit status: 0 ok, 1 torn tail,
        2 corruption, 3 other failure, 4 bad input (a bad argument too), 5 token expired, 6 zone deleted.
        """,
        subcommands: [Import.self, Inspect.self, Verify.self, Dump.self, Recover.self, Zones.self, Changes.self,
                      CreateZone.self, DeleteZone.self, Show.self, History.self, Snapshot.self, Compact.self, Consumers.self,
                      Backup.self, Restore.self, Simulate.self,
                      Sync.self, SyncStatusCommand.self, CreateList.self, Add.self, MarkOff.self, Unmark.self, DeleteItem.self,
                      Move.self, Rename.self, Recolour.self, Share.self, Accept.self, Leave.self, Serve.self, Accounts.self]
    )

    /// Argument errors exit with 4 (bad input), like every other bad input, not ArgumentParser's 64.
    static func main() async {
        // A server process runs its tasks on the event loops (SyncServer.runConcurrencyOnEventLoops).
        if CommandLine.arguments.dropFirst().first == "serve" { SyncServer.runConcurrencyOnEventLoops() }
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error).rawValue == 64 {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(Status.badInput)
            }
            exit(withError: error)
        }
    }
}

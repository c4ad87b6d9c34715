import ArgumentParser

@main
struct JLog: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jlog",
        abstract: "Inspect, verify, dump, import and compact JournalLog stores.",
        discussion: """
        A store is a directory such as list.wal/ holding segment files. inspect, verify and dump
        also accept a single segment file copied out of a store. Exit status: 0 ok, 1 torn tail,
        2 corruption, 3 other failure, 4 bad input, 5 token expired, 6 zone deleted.
        """,
        subcommands: [Import.self, Inspect.self, Verify.self, Dump.self, Zones.self, Changes.self, DeleteZone.self, Show.self, History.self, Snapshot.self, Compact.self, Consumers.self]
    )
}

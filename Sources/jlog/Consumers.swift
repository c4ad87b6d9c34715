import ArgumentParser
import Foundation
import JournalLog

func consumerJSON(_ c: ConsumerState, now: Int64) -> JSON {
    .object([
        ("name", .string(c.name)),
        ("leaseUntil", c.leaseUntil.map { .string(iso($0)) } ?? .null),
        ("expired", .bool(c.isExpired(now: now))),
        ("marks", .array(c.marks.map { m in
            .object([("zone", .string(m.zone)), ("incarnation", .uint(m.incarnation)), ("position", .uint(m.position))])
        })),
    ])
}

/// Human lines for a store's consumers and damaged consumer files; shared with `jlog inspect`.
func consumerLines(_ consumers: [ConsumerState], problems: [String], now: Int64) -> [String] {
    var lines: [String] = []
    for c in consumers {
        let lease = c.leaseUntil.map { "lease until \(iso($0))\(c.isExpired(now: now) ? " (expired: holds nothing back)" : "")" } ?? "lease never expires"
        lines.append("  \(c.name)  \(lease)")
        for m in c.marks { lines.append("    \(m.zone) (incarnation \(m.incarnation)) processed through \(m.position)") }
        if c.marks.isEmpty && !c.isExpired(now: now) { lines.append("    no marks: holds every zone at 0") }
    }
    for p in problems { lines.append("  problem: \(p)") }
    return lines
}

struct Consumers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, register, advance or remove consumers: readers whose marks hold back compaction (Spec/COMPACTION.md §3).",
        discussion: """
        Without an action, lists every consumer (name, lease, marks) and every consumer file that \
        cannot be read (it holds every zone back until removed); listing needs no lock. \
        --register, --advance and --remove open the store as its writer. A mark only rises.
        """)

    @Argument(help: "The store directory.") var store: String
    @Option(help: ArgumentHelp("Register (or re-register, keeping its marks) a consumer with this name.", valueName: "name")) var register: String?
    @Option(help: ArgumentHelp("Raise this consumer's mark for --zone to --to.", valueName: "name")) var advance: String?
    @Option(help: ArgumentHelp("Remove this consumer, or a damaged consumer file by the file name listed under problems.", valueName: "name|file")) var remove: String?
    @Option(help: "With --advance: the zone.") var zone: String?
    @Option(help: ArgumentHelp("With --advance: the sequence through which the consumer has processed the zone.", valueName: "seq")) var to: UInt64?
    @Option(help: ArgumentHelp("With --register or --advance: the lease's end (ISO-8601 or milliseconds since the epoch); --register without it: never expires.", valueName: "time"))
    var leaseUntil: TimeArgument?
    @Option(help: ArgumentHelp("Judge leases as of this time (ISO-8601 or milliseconds since the epoch), as `jlog compact --now` does; default: now.", valueName: "time"))
    var now: TimeArgument?
    @Flag(help: "One JSON object: {\"consumers\":[{name,leaseUntil,expired,marks[{zone,incarnation,position}]}],\"problems\":[…]}.") var json = false

    func validate() throws {
        guard [register, advance, remove].compactMap({ $0 }).count <= 1 else {
            throw ValidationError("give at most one of --register, --advance and --remove")
        }
        if advance != nil {
            guard zone != nil, to != nil else { throw ValidationError("--advance needs --zone and --to") }
        } else if zone != nil || to != nil {
            throw ValidationError("--zone and --to go with --advance")
        }
        if leaseUntil != nil && register == nil && advance == nil {
            throw ValidationError("--lease-until goes with --register or --advance")
        }
    }

    func run() throws {
        if register != nil || advance != nil || remove != nil {
            let s = try openExisting(store)
            defer { try? s.close() }
            let done: String
            do {
                if let name = register {
                    try s.registerConsumer(name, leaseUntil: leaseUntil?.millis)
                    done = "registered consumer \(name), " + (leaseUntil.map { "lease until \(iso($0.millis))" } ?? "lease never expires")
                } else if let name = advance, let zone, let to {
                    try s.advanceConsumer(name, zone: zone, to: to, leaseUntil: leaseUntil?.millis)
                    let mark = s.consumer(name)?.marks.first { $0.zone == zone }?.position ?? to
                    done = "consumer \(name) has processed \(zone) through \(mark)" + (mark > to ? " (marks only rise)" : "")
                } else if let name = remove {
                    try s.removeConsumer(name)
                    done = "removed consumer \(name)"
                } else {
                    done = ""
                }
            } catch JournalError.invalidEntry(let why) {
                // An unknown consumer, a bad name or a position past the log's end: the input.
                printError(why + "; `jlog consumers \(store)` lists the consumers, `jlog zones \(store)` each zone's last change")
                throw ExitCode(Status.badInput)
            } catch {
                throw fail(error, path: store)
            }
            if !json { print(done) }
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: store, isDirectory: &isDirectory), isDirectory.boolValue else {
                printError("no store at \(store); check the path (`jlog import` creates a store)")
                throw ExitCode(Status.failure)
            }
        }
        let (consumers, problems) = JournalStore.consumers(store: store)
        let now = self.now?.millis ?? nowMillis()
        if json {
            print(JSON.object([("consumers", .array(consumers.map { consumerJSON($0, now: now) })),
                               ("problems", .array(problems.map { .string($0) }))]).rendered)
        } else {
            print(consumers.isEmpty ? "no consumers (nothing holds compaction back but the retention)"
                  : "consumers (leases as of \(iso(now)); `jlog compact --now T` judges them as of T)")
            for l in consumerLines(consumers, problems: problems, now: now) { print(l) }
        }
        if !problems.isEmpty {
            printError("\(problems.count) consumer file(s) cannot be read and hold every zone back; remove each with --remove FILE once its reader is re-registered")
        }
    }
}

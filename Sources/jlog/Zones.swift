import ArgumentParser
import Foundation
import JournalLog

extension ZoneDeletionReason {
    var name: String { self == .purged ? "purged" : "deleted" }
}

/// `--reason deleted|purged`: the names, not ZoneDeletionReason's raw bytes, on the command line.
enum DeletionReasonArgument: String, ExpressibleByArgument, CaseIterable {
    case deleted, purged
    var reason: ZoneDeletionReason { self == .purged ? .purged : .deleted }
}

/// Opens a store that must exist for reading, without the writer's lock: the read commands run
/// beside a writer (an app, `jlog import`) and on read-only media. The log read is a consistent
/// prefix; a torn tail that a writer's next open would cut is read as the end.
func openReader(_ path: String) throws -> StoreReader {
    do {
        let reader = try StoreReader.open(path)
        if let tail = reader.liveTail, !reader.writerMayBeLive {
            printError("note: \(tail.description); reading the log before it (the next writer's open repairs it)")
        }
        return reader
    } catch {
        throw fail(error, path: path)
    }
}

/// Opens a store that must already exist as its writer, for the commands that write.
func openExisting(_ path: String) throws -> JournalStore {
    do {
        var options = StoreOptions()
        options.createIfMissing = false
        let store = try JournalStore.open(path, options: options)
        if let p = store.recovery.problem {
            printError("recovered: \(p.description); removed bytes kept in \(store.recovery.setAside.joined(separator: ", "))")
        }
        for note in store.recovery.pastEndNotes { printError("note: \(note)") }
        if let note = store.recovery.epochNote { printError("note: \(note)") }
        return store
    } catch {
        throw fail(error, path: path)
    }
}

func zoneJSON(_ z: ZoneInfo) -> JSON {
    .object([
        ("name", .string(z.name)),
        ("incarnation", .uint(z.incarnation)),
        ("entries", .int(Int64(z.entryCount))),
        ("lastChange", .uint(z.lastChange)),
        ("lowWaterMark", .uint(z.lowWaterMark)),
        ("deleted", z.deletedAt.map { .object([("at", .uint($0)), ("reason", .string((z.deletionReason ?? .deleted).name))]) } ?? .null),
    ])
}

struct Zones: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a store's zones (lists): incarnation, entries, last change, deletion.")

    @Argument(help: "The store directory.") var store: String
    @Flag(help: "One JSON object: {\"zones\":[…]}.") var json = false

    func run() throws {
        let s = try openReader(store)
        let zones = s.zones()
        if json {
            print(JSON.object([("zones", .array(zones.map(zoneJSON)))]).rendered)
            return
        }
        print("zone".padding(toLength: 32, withPad: " ", startingAt: 0) + " incarnation  entries  lastChange  status")
        for z in zones {
            let status = z.deletedAt.map { "\((z.deletionReason ?? .deleted).name) at \($0)" } ?? "live"
            print(printable(z.name).padding(toLength: 32, withPad: " ", startingAt: 0)
                  + " \(String(z.incarnation).leftPad(11))  \(String(z.entryCount).leftPad(7))  \(String(z.lastChange).leftPad(10))  \(status)")
        }
        if zones.isEmpty { print("(no zones)") }
    }
}

struct Changes: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "What changed in one zone since a change token: entries, a new token, moreComing.",
        discussion: """
        Without --since, every entry of the zone. Pass the printed token back with --since to get
        only what came after it; while moreComing is true, call again at once. Exit status:
        \(Status.tokenExpired) tokenExpired (re-fetch without --since and replace local data),
        \(Status.zoneDeleted) zoneDeleted (delete the local copy), \(Status.badInput) invalid token.
        """)

    @Argument(help: "The store directory.") var store: String
    @Option(help: "The zone (list).") var zone: String
    @Option(help: "A token from an earlier call.") var since: String?
    @Option(help: "At most this many entries (≥ 1).") var limit = 1000
    @Flag(help: "One JSON object: {\"entries\":[…],\"token\":…,\"moreComing\":…}.") var json = false

    func validate() throws {
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        let s = try openReader(store)
        let page: ZoneChanges
        do {
            page = try s.changes(in: zone, since: since.map(FeedToken.init), limit: limit)
        } catch {
            throw feedFailure(error, json: json)
        }
        if json {
            let entries = page.entries.map { "{\"seq\":\($0.sequence)," + entryJSON($0.entry).dropFirst() }
            print("{\"zone\":\(EntryJSON.jsonLiteral(page.zone)),\"incarnation\":\(page.incarnation),\"entries\":["
                  + entries.joined(separator: ",") + "],\"token\":\(EntryJSON.jsonLiteral(page.token.text)),\"moreComing\":\(page.moreComing)}")
            return
        }
        for e in page.entries { print("\(e.sequence) \(entryJSON(e.entry))") }
        print("token: \(page.token.text)")
        print("moreComing: \(page.moreComing)")
    }
}

/// Prints a feed answer that is not a page (as JSON when asked) and picks its exit status.
func feedFailure(_ error: FeedError, json: Bool) -> ExitCode {
    let code: Int32
    let object: JSON
    switch error {
    case .tokenExpired(let zone, let mark, let refetch):
        code = Status.tokenExpired
        object = .object([("error", .string("tokenExpired")), ("zone", .string(zone)), ("lowWaterMark", .uint(mark)),
                          ("incarnation", .uint(refetch.incarnation)),
                          ("snapshotSequence", refetch.snapshotSequence.map { .uint($0) } ?? .null),
                          ("next", .string("re-fetch without --since and replace the local copy"))])
    case .zoneDeleted(let zone, let at, let reason):
        code = Status.zoneDeleted
        object = .object([("error", .string("zoneDeleted")), ("zone", .string(zone)), ("at", .uint(at)), ("reason", .string(reason.name)),
                          ("next", .string("delete the local copy of the zone"))])
    case .invalidToken(let why):
        code = Status.badInput
        object = .object([("error", .string("invalidToken")), ("reason", .string(why)), ("next", .string("fetch again without --since"))])
    case .zoneNotFound(let zone):
        code = Status.failure
        object = .object([("error", .string("zoneNotFound")), ("zone", .string(zone)), ("next", .string("list the zones with `jlog zones`"))])
    case .invalidLimit:
        code = Status.badInput
        object = .object([("error", .string("invalidLimit")), ("reason", .string(error.description)), ("next", .string("ask for --limit 1 or more"))])
    case .storage(let e):
        return fail(e, path: "")
    }
    if json { print(object.rendered) }
    // The library names its API call; the operator's is a command.
    if case .zoneNotFound(let zone) = error { printError("no zone named \(zone) (list the zones with `jlog zones`)") } else { printError(error.description) }
    return ExitCode(code)
}

struct CreateZone: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-zone",
        abstract: "Create a zone (a list) with a synced zoneCreate record; a deleted zone starts a new incarnation.")

    @Argument(help: "The store directory.") var store: String
    @Argument(help: "The zone to create.") var zone: String

    func run() throws {
        let s = try openExisting(store)
        defer { try? s.close() }
        let before = s.zone(zone)
        do {
            let incarnation = try s.createZone(zone)
            if let before, !before.isDeleted, before.incarnation == incarnation {
                print("zone \(printable(zone)) already exists (incarnation \(incarnation)); nothing written")
            } else {
                print("created zone \(printable(zone)), incarnation \(incarnation)" + (before?.isDeleted == true ? " (the deleted one's tokens stay deleted)" : ""))
            }
        } catch {
            if case .invalidEntry(let why) = error {
                printError(why)
                throw ExitCode(Status.badInput)
            }
            throw fail(error, path: store)
        }
    }
}

struct DeleteZone: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-zone",
        abstract: "Delete a zone and all its entries atomically (one synced zoneDelete record).")

    @Argument(help: "The store directory.") var store: String
    @Argument(help: "The zone to delete.") var zone: String
    @Option(help: "deleted (by a user) or purged.") var reason: DeletionReasonArgument = .deleted

    func run() throws {
        let s = try openExisting(store)
        defer { try? s.close() }
        do {
            let at = try s.deleteZone(zone, reason: reason.reason)
            print("deleted zone \(zone) at sequence \(at)")
        } catch {
            throw fail(error, path: store)
        }
    }
}

extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}

import ArgumentParser
import Foundation
import JournalLog
import JournalQuery
import JournalSync
import ListModel

/// `--at 120` (a sequence) or `--at 2026-11-22T18:00:00Z` (a time).
extension HistoryPoint: ExpressibleByArgument {
    public init?(argument: String) {
        if let s = UInt64(argument) {
            self = .sequence(s)
        } else if let ms = ISO8601Time.parse(argument) {
            self = .time(ms)
        } else {
            return nil
        }
    }
}

func queryFailure(_ error: QueryError, json: Bool, path: String) -> ExitCode {
    switch error {
    case .feed(let f): return feedFailure(f, json: json)
    case .storage(let e): return fail(e, path: path)
    case .historyIncomplete(let zone, let reason):
        if json {
            print(JSON.object([("error", .string("historyIncomplete")), ("zone", .string(zone)), ("reason", .string(reason)),
                               ("next", .string("restore the store's snapshots/ from a backup"))]).rendered)
        }
        printError(error.description)
        return ExitCode(Status.corruption)
    case .syncedStore:
        printError(error.description)
        return ExitCode(Status.failure)
    case .historyNotFetched(let zone):
        if json {
            print(JSON.object([("error", .string("historyNotFetched")), ("zone", .string(zone)),
                               ("next", .string("jlog sync --history"))]).rendered)
        }
        // The library names its API call; the operator's is a command.
        printError("the history of list \(zone) from before it was installed from its service's snapshot is not fetched yet: fetch it with `jlog sync --history`")
        return ExitCode(Status.failure)
    case .baseUnreadable(let zone, let reason):
        if json {
            print(JSON.object([("error", .string("baseUnreadable")), ("zone", .string(zone)), ("reason", .string(reason))]).rendered)
        }
        printError(error.description)
        return ExitCode(Status.corruption)
    }
}

/// `jlog show --json`'s object, its items made one at a time as they are written
/// (`StreamedOutput`): a list's JSON is never built whole (527 MB at 323k items).
func stateJSON(_ m: MaterialisedList, _ state: ListState) -> [(String, StreamedField)] {
    let items = state.items
    return [
        ("zone", .value(.string(m.zone))),
        ("incarnation", .value(.uint(m.incarnation))),
        ("sequence", .value(.uint(m.sequence))),
        ("name", .value(.string(state.name))),
        ("colour", .value(.string(state.colour))),
        ("items", .elements(count: items.count) { k in
            let i = items[k]
            return .object([("item", .string(i.id.description)), ("text", .string(i.text)),
                             ("state", .string(i.state == .markedOff ? "markedOff" : "active")),
                             ("addedBy", .string(i.addedBy)), ("addedAt", .string(iso(i.addedAt))),
                             ("markedOffBy", i.markedOffBy.map { .string($0) } ?? .null),
                             ("markedOffAt", i.markedOffAt.map { .string(iso($0)) } ?? .null)])
        }),
        ("participants", .value(.array(state.participants.map { .string($0) }))),
        ("digest", .value(.string(hex64(state.digest)))),
    ]
}

struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a list's state: name, colour, items in order (from the newest snapshot plus the entries after it).")

    @Argument(help: "The store directory.") var store: String
    @Option(help: "The zone (list).") var zone: String
    @Option(help: "The state after this sequence, or as of this ISO-8601 time.") var at: HistoryPoint?
    @Flag(help: "Hide items added and marked off more than 3 hours before now (or before --at).") var hideDone = false
    @Flag(help: "One JSON object: name, colour, items[{item,text,state,addedBy,addedAt,markedOffBy,markedOffAt}].") var json = false

    func run() throws {
        let s = try openReader(store)
        let m: MaterialisedList
        do { m = try ListQuery.reading(s).materialise(zone, at: at) } catch { throw queryFailure(error, json: json, path: store) }
        for w in m.warnings { printError("warning: snapshot \(w)") }
        var state = m.state
        if hideDone {
            let now: Int64
            if case .time(let t) = at { now = t } else { now = nowMillis() }
            state = state.hidingDone(now: now)
        }
        if json {
            let out = StreamedOutput()
            out.writeObject(stateJSON(m, state))
            out.write("\n")
            out.flush()
            return
        }
        print("\(state.name.isEmpty ? "(unnamed list)" : state.name)  [\(state.colour.isEmpty ? "no colour" : state.colour)]  zone \(zone), sequence \(m.sequence)")
        for i in state.items {
            let mark = i.state == .markedOff ? "[x]" : "[ ]"
            let who = i.markedOffBy.map { " — marked off by \($0) \(i.markedOffAt.map(iso) ?? "")" } ?? ""
            print("  \(mark) \(i.text)  (\(i.id), added by \(i.addedBy) \(iso(i.addedAt)))\(who)")
        }
        if state.items.isEmpty { print("  (no items)") }
        let from = m.snapshot.map { "\($0.kind == .delta ? "snapshot delta" : "snapshot") at \($0.sequence) + \(m.replayed) entries" } ?? "\(m.replayed) entries replayed"
        print("(\(from))")
    }
}

extension ActivityKind {
    var verb: String {
        switch self {
        case .added: "added"
        case .markedOff: "markedOff"
        case .unmarked: "unmarked"
        case .deleted: "deleted"
        case .renamed: "renamed"
        case .recoloured: "recoloured"
        case .joined: "joined"
        case .left: "left"
        case .moved: "moved"
        }
    }
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A list's activity: who did what and when, per zone or per item.",
        discussion: """
        "Who deleted the milk?": --text milk. "When did we last buy coffee?": --text coffee --kind \
        markedOff (the last line). On a device whose list was installed from its service's \
        snapshot, the history before it is on the service until fetched: with --server and \
        --credential it is fetched first; without them the command says so and fails (status 1).
        """)

    @Argument(help: "The store directory.") var store: String
    @Option(help: "The zone (list).") var zone: String
    @Option(help: "Only this item id.") var item: String?
    @Option(help: "Only items whose text contains this (case-insensitive).") var text: String?
    @Option(help: "Only this kind: added, markedOff, unmarked, deleted, renamed, recoloured, joined, left, moved.") var kind: String?
    @Flag(help: "One JSON object: {\"zone\",\"events\":[{entry,kind,by,at,hlc,item,text}]}.") var json = false
    @Option(help: ArgumentHelp("A device's sync server: fetch the history from it when it is not here yet.", valueName: "url")) var server: String?
    @Option(help: ArgumentHelp("With --server: the device's credential file.", valueName: "file")) var credential: String?

    func validate() throws {
        guard (server == nil) == (credential == nil) else { throw ValidationError("--server and --credential go together") }
    }

    func run() async throws {
        let log: ActivityLog
        do { log = try read() } catch QueryError.historyNotFetched(let zone) where server != nil {
            try await fetch(zone)
            do { log = try read() } catch let e as QueryError { throw queryFailure(e, json: json, path: store) }
        } catch let e as QueryError { throw queryFailure(e, json: json, path: store) }
        try show(log)
    }

    func read() throws -> ActivityLog {
        let s = try openReader(store)
        let (l, warnings) = try ListQuery.reading(s).history(zone)
        for w in warnings { printError("warning: history \(w)") }
        return l
    }

    /// The list's history from the device's service, installed beside its log.
    func fetch(_ zone: String) async throws {
        var c = ServiceConnection()
        c.server = server
        c.credential = credential
        let recorded = try recordedSyncState(store)
        let open = try c.open(as: recorded?.account)
        defer { open.close() }
        guard let replica = recorded?.replica, let id = ZoneID(storeName: zone) else {
            printError("\(store) does not sync \(zone)")
            throw ExitCode(Status.failure)
        }
        let (local, engine) = try openEngine(store, service: open.service, replica: replica)
        defer { try? local.close() }
        do { try await engine.fetchHistory(id) } catch {
            printError("the history of \(zone) could not be fetched: \(error)")
            throw ExitCode(Status.failure)
        }
    }

    func show(_ log: ActivityLog) throws {
        var events = log.allEvents()
        if let item {
            guard let id = CompactID(item) else { throw ValidationError("--item is not a valid item id") }
            events = events.filter { $0.item == id }
        }
        if let text {
            let ids = log.items(matching: text, .contains)
            events = events.filter { $0.item.map(ids.contains) ?? false }
        }
        if let kind {
            guard ActivityKind.allCases.contains(where: { $0.verb == kind }) else { throw ValidationError("--kind must be one of \(ActivityKind.allCases.map(\.verb).joined(separator: ", "))") }
            events = events.filter { $0.kind.verb == kind }
        }
        if json {
            print(JSON.object([("zone", .string(zone)), ("events", .array(events.map { e in
                .object([("entry", .string(e.entryID.description)), ("kind", .string(e.kind.verb)), ("by", .string(e.author)),
                         ("at", .string(iso(e.wallTime))), ("hlc", .string(e.clock.description)),
                         ("item", e.item.map { .string($0.description) } ?? .null),
                         ("text", (e.text ?? e.item.flatMap(log.text(of:))).map { .string($0) } ?? .null)])
            }))]).rendered)
            return
        }
        for e in events {
            let what = e.item.map { "\(log.text(of: $0) ?? e.text ?? "?") (\($0))" } ?? (e.text ?? "")
            print("\(iso(e.wallTime))  \(e.author)  \(e.kind.verb)  \(what)")
        }
        if events.isEmpty { print("(no matching events)") }
    }
}

struct Snapshot: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a snapshot (LZ4, checksummed, with a state digest) of one zone, or of every live zone.")

    @Argument(help: "The store directory.") var store: String
    @Option(help: "Only this zone.") var zone: String?

    func run() throws {
        let s = try openExisting(store)
        defer { try? s.close() }
        let q = ListQuery(store: s)
        let zones = zone.map { [$0] } ?? s.zones().filter { !$0.isDeleted }.map(\.name)
        for z in zones {
            let started = Date()
            do {
                let r = try q.writeSnapshot(z)
                let ms = Date().timeIntervalSince(started) * 1000
                print("\(z): \(r.file.name) at sequence \(r.file.sequence), \(r.entries) entries, \(r.fileBytes) bytes "
                      + "(raw \(r.rawBytes), LZ4 ratio \(String(format: "%.2f", Double(r.rawBytes) / Double(max(1, r.fileBytes))))), "
                      + "digest \(hex64(r.digest)), \(String(format: "%.1f", ms)) ms")
            } catch {
                throw queryFailure(error, json: false, path: store)
            }
        }
        if zones.isEmpty { print("(no live zones)") }
    }
}

/// Snapshot files of a store, for `jlog inspect`: each checked by decoding it. A state past
/// `logEnd` (the log as read) is one the next writer's open sets aside (SNAPSHOT.md §2.1).
func snapshotSummaries(_ store: String, logEnd: SequenceNumber) -> [(SnapshotFile, String, Int64)] {
    SnapshotDirectory.list(store: store).map { f in
        let size = (try? FileManager.default.attributesOfItem(atPath: f.path)[.size] as? Int64) ?? 0
        if f.kind != .history, f.sequence > logEnd {
            return (f, "past the log's end \(logEnd) (a restored older copy, or a lost tail): never used; the next writer's open moves it to torn/", size)
        }
        switch f.kind {
        case .state, .delta, .base:
            do {
                let (h, _) = try ListQuery.readState(f)
                var what = f.kind == .base ? "base of deltas, " : ""
                if f.kind == .delta {
                    // Which base: named in the delta's body, which `readState` decoded against it.
                    let base = (try? SnapshotDirectory.read(f.path, limit: SnapshotCodec.maxStoredBytes))
                        .flatMap { b in try? b.withUnsafeBytes { p throws(SnapshotError) in try SnapshotDelta.base(ofFile: p) } }
                    what = "delta on the base at \(base?.sequence ?? 0), "
                }
                return (f, "\(what)zone \(h.zone), \(h.entryCount) entries, digest \(hex64(h.digest)), ok", size)
            } catch { return (f, "damaged: \(error)", size) }
        case .history:
            guard let bytes = try? SnapshotDirectory.read(f.path, limit: SnapshotCodec.maxStoredBytes) else { return (f, "unreadable", size) }
            do {
                let (h, log) = try HistoryPieceCodec.decode(bytes)
                let what = h.major == ActivityLogCodec.major ? "whole history (an older writer's)" : h.complete ? "whole history" : "history piece"
                let follows = h.previous > 0 ? ", after the piece at \(h.previous)" : ""
                return (f, "\(what) of zone \(log.zone), \(log.count) events\(follows), ok", size)
            } catch { return (f, "damaged: \(error)", size) }
        }
    }
}

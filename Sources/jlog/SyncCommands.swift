import ArgumentParser
import Foundation
import JournalLog
import JournalSync

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sync a device's store with a service: push its queued changes, then fetch and apply everyone else's.",
        discussion: """
        The first sync of a store records its account and device (ACCOUNT:DEVICE is the author of \
        its changes). Exit status 0 when the sync completed, 3 when something stayed queued \
        (offline, busy, quota; the report says which), 4 for bad arguments.
        """)

    @Argument(help: "The device's store directory (created if missing).") var store: String
    @OptionGroup var connection: ServiceConnection
    @Flag(help: "Keep running: sync again on every hint, and every --interval.") var watch = false
    @Option(help: ArgumentHelp("With --watch: seconds between syncs when nothing hints.", valueName: "s")) var interval: Double = 30
    @Flag(help: "One JSON object per sync: {complete, sent, uploaded, applied, held, refetched, firstFetched, gone, rejected, offline, quotaExceeded, signedOut, errors}.")
    var json = false
    @Flag(help: "Push the device's queued changes and fetch nothing: what an app that listens for hints does after a local change (other devices' changes come as hints, Spec/SYNC.md §7.7).")
    var pushOnly = false
    @Flag(help: "After the sync, fetch the history of every list installed from its service's snapshot whose history is not here yet (a sync does so itself unless an earlier one was cut short).")
    var history = false
    @Flag(help: "Fetch every list anew from the service, then sync (troubleshooting: the device's copies are replaced by the service's; changes not yet uploaded are kept and sent).")
    var refetch = false

    func validate() throws {
        guard interval > 0, interval <= 86_400 else { throw ValidationError("--interval must be 0…86400 seconds") }
        if pushOnly && (watch || history || refetch) { throw ValidationError("--push-only fetches nothing: it goes with neither --watch, --history nor --refetch") }
        if refetch && watch { throw ValidationError("--refetch is one sync: it does not go with --watch") }
    }

    func run() async throws {
        let recorded = try recordedSyncState(store)
        let open = try connection.open(as: recorded?.account ?? recorded?.signedOutAccount)
        defer { open.close() }
        let replica = try recorded?.replica ?? replicaName(store: store, account: open.service.account, device: connection.device)
        let (local, engine) = try openEngine(store, service: open.service, replica: replica)
        defer { try? local.close() }
        let json = self.json
        let show: @Sendable (SyncReport) -> Void = { r in
            if json { print(reportJSON(r).rendered) } else { for l in reportLines(r) { print(l) } }
            fflush(nil)
        }
        guard watch else {
            let r = pushOnly ? await engine.sync(hinted: []) : refetch ? await engine.refetchAllLists() : await engine.sync()
            show(r)
            if !r.isComplete { throw ExitCode(Status.failure) }
            if history {
                for zone in await engine.lists {
                    do { try await engine.fetchHistory(zone) } catch {
                        printError("\(zone): the history could not be fetched: \(error)")
                        throw ExitCode(Status.failure)
                    }
                }
            }
            return
        }
        let hints = SyncHints()
        let listener = open.listen.map { listen in Task { await listen(hints) } }
        defer { listener?.cancel() }
        let period = interval
        let timer = Task {
            while !Task.isCancelled {
                hints.hint()
                try? await Task.sleep(for: .seconds(period))
            }
        }
        defer { timer.cancel() }
        await engine.run(hints: hints, onSync: show)
    }
}

struct SyncStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sync-status",
        abstract: "Show a device's sync status: per list, what is queued each way, its token and last error (no lock, no service).")

    @Argument(help: "The device's store directory.") var store: String
    @Flag(help: "One JSON object: {replica, account, lastSync, lastError, databaseTokens, keptAcrossSignOut, lists[…]}.") var json = false

    func run() throws {
        let status: SyncStatus
        do { status = try SyncStatus.read(store: store) } catch {
            printError(error.description)
            if case .stateDamaged = error { throw ExitCode(Status.corruption) }
            throw ExitCode(Status.badInput)
        }
        if json {
            print(statusJSON(status).rendered)
        } else {
            for line in status.reportLines(now: nowMillis()) { print(line) }
        }
    }
}

func statusJSON(_ s: SyncStatus) -> JSON {
    .object([
        ("replica", .string(s.replica)),
        ("account", s.account.map { .string($0) } ?? .null),
        ("lastSync", s.lastSync.map { .string(iso($0)) } ?? .null),
        ("lastError", s.lastError.map { .string($0) } ?? .null),
        ("databaseTokens", .object(s.databaseTokens.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
        ("keptAcrossSignOut", .int(Int64(s.keptAcrossSignOut))),
        ("lists", .array(s.lists.map { l in
            .object([
                ("zone", .string(l.zone.storeName)), ("scope", .string(l.scope.rawValue)),
                ("queued", .int(Int64(l.queued))), ("toApply", .int(Int64(l.toApply))), ("held", .int(Int64(l.held))),
                ("rejected", .int(Int64(l.rejected))), ("shopping", .bool(l.shopping)), ("needsFetch", .bool(l.needsFetch)),
                ("refetching", .bool(l.refetching)), ("refetchWanted", .bool(l.refetchWanted)), ("pendingDelete", .bool(l.pendingDelete)), ("existsOnService", .bool(l.existsOnService)),
                ("uploadedThrough", .uint(l.uploadedThrough)), ("token", l.token.map { .string($0) } ?? .null),
                ("lastError", l.lastError.map { .string($0) } ?? .null),
                ("queuedByKind", .object(l.queuedByKind.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
                ("oldestQueued", .array(l.oldestQueued.map { q in
                    .object([("id", .string(q.id.description)), ("kind", .string(q.kind)), ("item", q.item.map { .string($0.description) } ?? .null),
                             ("since", .string(iso(q.since))), ("lastError", q.lastError.map { .string($0) } ?? .null)])
                })),
                ("holdsNewerChanges", .bool(l.holdsNewerChanges)),
            ])
        })),
    ])
}

/// The commands that need the service as well as the store: sharing.
struct Share: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Invite an account to a list this store's account owns; prints the invitation for `jlog accept`.")
    @OptionGroup var editing: ListEditing
    @Option(help: ArgumentHelp("The account to invite.", valueName: "account")) var with: String
    @OptionGroup var connection: ServiceConnection

    func run() async throws {
        try await withConnectedEngine(editing.store, connection) { engine in
            let zone = try await resolveList(editing.zone, engine: engine)
            let invitation = try await engine.share(zone, with: with)
            print(invitation.text)
        }
    }
}

struct Accept: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Accept an invitation: the list joins this device (run `jlog sync` to fetch it).")
    @Argument(help: "The device's store directory.") var store: String
    @Argument(help: "The invitation `jlog share` printed.") var invitation: String
    @OptionGroup var connection: ServiceConnection

    func run() async throws {
        try await withConnectedEngine(store, connection) { engine in
            let zone = try await engine.accept(ShareInvitation(invitation))
            print("joined \(zone.storeName); `jlog sync` fetches it")
        }
    }
}

struct Leave: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a participant from a list this account owns, or (without --participant) leave a list shared with it.")
    @OptionGroup var editing: ListEditing
    @Option(help: ArgumentHelp("The participant to remove (owner only).", valueName: "account")) var participant: String?
    @OptionGroup var connection: ServiceConnection

    func run() async throws {
        try await withConnectedEngine(editing.store, connection) { engine in
            let zone = try await resolveList(editing.zone, engine: engine)
            let who: String
            if let participant { who = participant } else { who = await engine.service.account }
            try await engine.remove(who, from: zone)
            print("\(who) left \(zone.storeName)")
        }
    }
}

/// Runs `body` with the store's engine connected to the service; engine errors become messages.
func withConnectedEngine(_ path: String, _ connection: ServiceConnection, _ body: (SyncEngine) async throws -> Void) async throws {
    let recorded = try recordedSyncState(path)
    let open = try connection.open(as: recorded?.account ?? recorded?.signedOutAccount)
    defer { open.close() }
    let replica = try recorded?.replica ?? replicaName(store: path, account: open.service.account, device: connection.device)
    let (store, engine) = try openEngine(path, service: open.service, replica: replica)
    defer { try? store.close() }
    do { try await body(engine) } catch let e as SyncEngineError {
        printError(e.description)
        throw ExitCode(Status.failure)
    }
}

import ArgumentParser
import Foundation
import JournalLog
import JournalService
import JournalSync
import JournalSyncWire
import JournalSyncHTTP
import JournalSyncHTTPNIO

/// Where a device's service is: `jlog serve`'s HTTP API (`--server` and `--credential`), or the
/// reference service over a store this process opens itself (`--service-store`, no network).
struct ServiceConnection: ParsableArguments {
    @Option(help: ArgumentHelp("The sync server's URL (`jlog serve`), e.g. http://127.0.0.1:8080.", valueName: "url"))
    var server: String?
    @Option(help: ArgumentHelp("With --server: the file holding this device's credential (`jlog accounts add … --output FILE`).", valueName: "file"))
    var credential: String?
    @Option(help: ArgumentHelp("Sync through the reference service over this store directory, opened by this process (created if missing).", valueName: "dir"))
    var serviceStore: String?
    @Option(help: ArgumentHelp("With --service-store: the account to act as (the first sync of a store records it).", valueName: "name"))
    var account: String?
    @Option(help: ArgumentHelp("This device's name: the store syncs as ACCOUNT:DEVICE (default: the store directory's name).", valueName: "name"))
    var device: String?

    func validate() throws {
        switch (server, serviceStore) {
        case (nil, nil): throw ValidationError("give --server URL --credential FILE (or --service-store DIR for a service in this process)")
        case (.some, .some): throw ValidationError("give --server or --service-store, not both")
        case (.some, nil):
            guard credential != nil else { throw ValidationError("--server needs --credential FILE") }
            guard account == nil else { throw ValidationError("with --server the credential names the account; drop --account") }
            guard server!.hasPrefix("http://") || server!.hasPrefix("https://") else { throw ValidationError("--server takes an http:// or https:// URL") }
        case (nil, .some):
            guard credential == nil else { throw ValidationError("--credential goes with --server") }
        }
        if let account, let why = SyncNames.accountRefusal(account) { throw ValidationError("--account: \(why)") }
    }
}

/// A service connection opened for one command: the service, what to close afterwards, and
/// (for a server) its hint channel.
struct OpenService {
    var service: any SyncService
    var close: () -> Void
    var listen: (@Sendable (SyncHints) async -> Void)? = nil
}

extension ServiceConnection {
    /// Opens the service as `account` (the store's recorded account wins; --account must agree).
    func open(as recorded: String?) throws -> OpenService {
        if let server, let file = credential {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8),
                  let c = DeviceCredential(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                printError("\(file) does not hold a device credential (jlc1.ACCOUNT.ID.SECRET, as `jlog accounts add` prints it)")
                throw ExitCode(Status.badInput)
            }
            if let recorded, recorded != c.account {
                printError("this store syncs as account \(recorded); \(file) is a credential of \(c.account)")
                throw ExitCode(Status.badInput)
            }
            let http = HTTPSyncService(server: server, credential: c, transport: AsyncHTTPClientTransport())
            return OpenService(service: http, close: {}, listen: { await http.listenForHints($0) })
        }
        guard let dir = serviceStore else { throw ValidationError("give --service-store DIR") }
        if let recorded, let account, recorded != account {
            printError("this store syncs as account \(recorded), not \(account)")
            throw ExitCode(Status.badInput)
        }
        guard let name = recorded ?? account else {
            printError("the first sync of a store needs --account NAME (the account it syncs as)")
            throw ExitCode(Status.badInput)
        }
        let store: JournalStore
        do { store = try JournalStore.open(dir, options: StoreOptions()) } catch { throw fail(error, path: dir) }
        let core: ServiceCore
        do { core = try ServiceCore(store: store, now: { nowMillis() }) } catch {
            try? store.close()
            throw fail(error, path: dir)
        }
        return OpenService(service: LocalService(core: core, account: name)) { try? store.close() }
    }
}

/// The sync state of a store, if it has synced before (`sync/state`), read without the engine.
func recordedSyncState(_ path: String) throws -> SyncState? {
    let file = path + "/sync/state"
    guard PosixFileSystem().kind(of: file) == .file else { return nil }
    do { return try SyncStateCodec.decode(try AtomicFile.read(file, fs: PosixFileSystem(), limit: SyncStateCodec.maxFileBytes)) } catch {
        printError("\(file) cannot be read (\(error)); move it aside to start syncing over (local changes not yet uploaded stay in the log)")
        throw ExitCode(Status.corruption)
    }
}

/// The replica name a store syncs as: recorded, or ACCOUNT:DEVICE for its first sync.
func replicaName(store: String, account: String, device: String?) throws -> String {
    let base = (store as NSString).lastPathComponent.split(separator: ".").first.map(String.init) ?? "device"
    let name = device ?? String(base.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) || "-_".unicodeScalars.contains($0) })
    guard !name.isEmpty, name.utf8.count <= 64, !name.contains(":") else {
        printError("--device: 1–64 bytes without ':'")
        throw ExitCode(Status.badInput)
    }
    return account + ":" + name
}

/// Opens `path` (created if missing) and its engine against `service`.
func openEngine(_ path: String, service: any SyncService, replica: String) throws -> (JournalStore, SyncEngine) {
    let store: JournalStore
    do { store = try JournalStore.open(path, options: StoreOptions()) } catch { throw fail(error, path: path) }
    do { return (store, try SyncEngine(store: store, service: service, replica: replica)) } catch {
        try? store.close()
        printError(error.description)
        throw ExitCode(Status.failure)
    }
}

/// A store's engine for editing without a connection: changes queue for the next `jlog sync`.
func openOfflineEngine(_ path: String) throws -> (JournalStore, SyncEngine) {
    guard let state = try recordedSyncState(path), let account = state.account ?? state.signedOutAccount else {
        printError("\(path) has not synced yet, so it has no account: run `jlog sync \(path) --server URL --credential FILE` (or `--service-store DIR --account NAME`) first")
        throw ExitCode(Status.badInput)
    }
    return try openEngine(path, service: OfflineService(account: account), replica: state.replica)
}

/// A list named on the command line: `owner/name`, or a name of the store's own account.
func resolveList(_ text: String, engine: SyncEngine) async throws -> ZoneID {
    let lists = await engine.lists
    if let z = ZoneID(storeName: text), lists.contains(z) { return z }
    let own = lists.filter { $0.name == text }
    if own.count == 1 { return own[0] }
    if own.count > 1 {
        printError("\(text) names several lists: \(own.map(\.storeName).joined(separator: ", ")); give OWNER/NAME")
        throw ExitCode(Status.badInput)
    }
    printError("no list \(text) on this device (lists: \(lists.map(\.storeName).joined(separator: ", ")); `jlog create-list` makes one, `jlog accept` joins one)")
    throw ExitCode(Status.badInput)
}

func reportLines(_ r: SyncReport) -> [String] {
    var lines = ["sent \(r.sent) (\(r.uploaded) taken), applied \(r.applied), held \(r.held)"]
    if !r.firstFetched.isEmpty { lines.append("fetched for the first time: \(r.firstFetched.map(\.storeName).joined(separator: ", "))") }
    if !r.refetched.isEmpty { lines.append("installed the service's copy anew (its token expired, it could not follow a compaction, or the service refused a change): \(r.refetched.map(\.storeName).joined(separator: ", "))") }
    for g in r.gone { lines.append("gone: \(g.zone.storeName) (\(g.reason.rawValue))") }
    for (id, why) in r.rejected { lines.append("rejected: \(id) (\(why))") }
    if r.offline { lines.append("offline: everything stays queued") }
    if r.quotaExceeded { lines.append("the account's quota is exceeded: changes stay queued") }
    if r.signedOut { lines.append("not signed in: nothing was synced; the lists and their queued changes stay on this device until a credential the service takes is given") }
    for p in r.problems where p.reason != .unreachable { lines.append("error: \(p)") }
    return lines
}

func reportJSON(_ r: SyncReport) -> JSON {
    .object([
        ("complete", .bool(r.isComplete)), ("sent", .int(Int64(r.sent))), ("uploaded", .int(Int64(r.uploaded))),
        ("applied", .int(Int64(r.applied))), ("held", .int(Int64(r.held))),
        ("refetched", .array(r.refetched.map { .string($0.storeName) })), ("firstFetched", .array(r.firstFetched.map { .string($0.storeName) })),
        ("gone", .array(r.gone.map { .object([("zone", .string($0.zone.storeName)), ("reason", .string($0.reason.rawValue))]) })),
        ("rejected", .array(r.rejected.map { .object([("id", .string($0.id.description)), ("why", .string($0.why))]) })),
        ("offline", .bool(r.offline)), ("quotaExceeded", .bool(r.quotaExceeded)), ("signedOut", .bool(r.signedOut)),
        ("errors", .array(r.errors.map { .string($0) })),
    ])
}

// jlog-load: drives `jlog serve` from a second process with many concurrent devices over
// loopback, beside the HTTP framework's own ceiling measured on the same server in the same run
// (Benchmarks/README.md, "Server"). It starts the server itself, on a fresh store.
//
//   jlog-load [--devices 200] [--families 50] [--seconds 10] [--runs 3] [--offered 0.5] [--jlog PATH]
//
// Two ways of driving it: closed loop (every device syncs again as soon as its last round trip
// ends: the most the server sustains, where latency is queueing by construction, since a round
// trip waits for the 199 others) and open loop (the devices together offer a fixed rate, a
// fraction of the ceiling's requests/s, each round trip timed from when it was due, so a slow
// server cannot hide its backlog: what a device sees at that load).
//
// stdout: one JSON object per line (the jlog-bench format). stderr: progress and a summary.

import AsyncHTTPClient
import Foundation
import JournalLog
import JournalPostgres
import Logging
import JournalService
import JournalSync
import JournalSyncWire
import JournalSyncHTTP
import JournalSyncHTTPNIO
import NIOCore
import NIOPosix

struct Options {
    var devices = 200
    var families = 50
    var seconds = 10.0
    var runs = 3
    var jlog: String?
    /// The open-loop run's offered load, as a fraction of the ceiling's requests/s (0: none).
    var offered = 0.5
    /// Serve over this PostgreSQL database (`jlog serve --database`), the accounts in it.
    var database: String?
    /// Drive the server(s) already at this URL (a load balancer in front of nodes) instead of
    /// starting one.
    var url: String?
    /// What the JSON lines name as the system under test.
    var label = "journallog"
}

func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

/// The command line, or exit with usage.
func parseOptions() -> Options {
    var options = Options()
    var args = Array(CommandLine.arguments.dropFirst())
    while !args.isEmpty {
        let a = args.removeFirst()
        func value() -> String {
            guard !args.isEmpty else { log("jlog-load: \(a) needs a value"); exit(64) }
            return args.removeFirst()
        }
        switch a {
        case "--devices": options.devices = Int(value()) ?? 200
        case "--families": options.families = Int(value()) ?? 50
        case "--seconds": options.seconds = Double(value()) ?? 10
        case "--runs": options.runs = Int(value()) ?? 3
        case "--jlog": options.jlog = value()
        case "--offered": options.offered = Double(value()) ?? 0.5
        case "--database": options.database = value()
        case "--url": options.url = value()
        case "--label": options.label = value()
        case "-h", "--help":
            print("usage: jlog-load [--devices N] [--families N] [--seconds S] [--runs N] [--offered FRACTION] [--jlog PATH] [--database URL [--url URL]] [--label NAME]")
            exit(0)
        default:
            log("jlog-load: unknown argument \(a)")
            exit(64)
        }
    }
    guard options.devices >= 1, options.families >= 1, options.families <= options.devices, options.seconds > 0, options.runs >= 1,
          options.offered >= 0, options.offered <= 2 else {
        log("jlog-load: need devices ≥ families ≥ 1, seconds > 0, runs ≥ 1, 0 ≤ offered ≤ 2")
        exit(64)
    }

    return options
}

/// Latencies in nanoseconds, and a count, from one measured interval.
struct Sample {
    var latencies: [UInt64] = []
    var operations = 0
    var entries = 0
    var errors = 0
    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        let sorted = latencies.sorted()
        return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1e6
    }
    mutating func merge(_ o: Sample) {
        latencies += o.latencies
        operations += o.operations
        entries += o.entries
        errors += o.errors
    }
}

func monotonic() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// `jlog serve` on a fresh store in a temporary directory, on a free loopback port.
final class ServerProcess {
    let process = Process()
    let dir: String
    var port = 0

    init(jlog: String, dir: String, database: String?) throws {
        self.dir = dir
        process.executableURL = URL(fileURLWithPath: jlog)
        process.arguments = (database.map { ["serve", "--database", $0] } ?? ["serve", dir + "/server.wal"])
            + ["--listen", "127.0.0.1:0", "--port-file", dir + "/port", "--rate-limit", "0", "--compact-every", "0"]
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    }

    func start() throws {
        try process.run()
        for _ in 0..<400 {
            if let text = try? String(contentsOfFile: dir + "/port", encoding: .utf8), let p = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                port = p
                return
            }
            usleep(25_000)
        }
        throw NSError(domain: "jlog-load", code: 1, userInfo: [NSLocalizedDescriptionKey: "the server did not start"])
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// One device of a family: its own credential (the family's account), the family's list.
struct Device {
    var service: HTTPSyncService
    var zone: ZoneID
    var replica: String
}

@main
struct Load {
    static func main() async throws {
        // The load generator shares the machine's cores with the server: its tasks run on the
        // event loops, as the server's do, so its own thread hops cost neither side's budget.
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        let options = parseOptions()
        let jlog = options.jlog ?? (URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path + "/jlog")
        guard FileManager.default.isExecutableFile(atPath: jlog) else {
            log("jlog-load: no jlog at \(jlog); build it (swift build -c release --product jlog) or pass --jlog PATH")
            exit(2)
        }
        let dir = NSTemporaryDirectory() + "jlog-load-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }

        // Accounts first (the server reads them on each request): one per family.
        let credentials = try await issueCredentials(options, dir: dir)
        var server: ServerProcess? = nil
        if options.url == nil {
            server = try ServerProcess(jlog: jlog, dir: dir, database: options.database)
            try server!.start()
        }
        defer { server?.stop() }
        let url = options.url ?? "http://127.0.0.1:\(server!.port)"
        var config = HTTPClient.Configuration()
        config.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = options.devices + 8
        config.timeout = .init(connect: .seconds(10), read: .seconds(60))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
        defer { _ = client.shutdown() as EventLoopFuture<Void> }

        let devices = credentials.enumerated().map { d, c in
            Device(service: HTTPSyncService(server: url, credential: c, transport: AsyncHTTPClientTransport(client: client)),
                   zone: ZoneID(owner: c.account, name: "list")!, replica: "\(c.account):d\(d)")
        }
        for f in 0..<options.families { try await devices[f].service.createZone(devices[f].zone) }
        log("jlog-load: \(options.devices) devices in \(options.families) families on \(url); \(options.runs) × (ceiling, sync) of \(options.seconds) s")

        var ceilings: [Sample] = [], syncs: [Sample] = []
        var uploaded: [[CompactID]] = Array(repeating: [], count: options.devices)
        // Each device keeps its change token from run to run, as a phone does: only its first
        // round trip fetches the family's whole list.
        var tokens: [ServiceToken?] = Array(repeating: nil, count: options.devices)
        for run in 0..<options.runs {
            ceilings.append(await ceiling(url: url, client: client, connections: options.devices, seconds: options.seconds))
            let (s, ids) = await sync(devices, seconds: options.seconds, tokens: &tokens)
            syncs.append(s)
            for (i, x) in ids.enumerated() { uploaded[i] += x }
            log("  run \(run + 1): ceiling \(Int(Double(ceilings.last!.operations) / options.seconds)) requests/s; sync \(Int(Double(s.operations) / options.seconds)) round trips/s, p99 \(String(format: "%.1f", s.percentile(0.99))) ms, \(s.errors) errors")
        }
        // Open loop: the devices together offer `offered` × the ceiling's requests/s.
        var open = Sample()
        var offeredRoundTrips = 0.0
        if options.offered > 0 {
            let ceilingNow = ceilings.map { Double($0.operations) / options.seconds }.sorted()[ceilings.count / 2]
            offeredRoundTrips = ceilingNow * options.offered / 2
            for _ in 0..<options.runs {
                let (s, ids) = await sync(devices, seconds: options.seconds, tokens: &tokens, roundTripsPerSecond: offeredRoundTrips)
                open.merge(s)
                for (i, x) in ids.enumerated() { uploaded[i] += x }
            }
            log("  open loop: offered \(Int(offeredRoundTrips)) round trips/s, achieved \(Int(Double(open.operations) / options.seconds / Double(options.runs))), p99 \(String(format: "%.1f", open.percentile(0.99))) ms, \(open.errors) errors")
        }
        let lost = try await verify(devices, uploaded: uploaded)

        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        let ceilingRates = ceilings.map { Double($0.operations) / options.seconds }
        let syncRates = syncs.map { Double($0.operations) / options.seconds }
        let requestRates = syncs.map { Double($0.operations * 2) / options.seconds }
        let entryRates = syncs.map { Double($0.entries) / options.seconds }
        var all = Sample(); for s in syncs { all.merge(s) }
        var top = Sample(); for s in ceilings { top.merge(s) }
        func json(_ pairs: [(String, Any)]) -> String {
            let body = pairs.map { k, v -> String in
                let value: String
                switch v {
                case let s as String: value = "\"\(s)\""
                case let d as Double: value = d.isFinite ? String(format: "%.3f", d) : "null"
                case let a as [Double]: value = "[" + a.map { String(format: "%.1f", $0) }.joined(separator: ",") + "]"
                default: value = "\(v)"
                }
                return "\"\(k)\":\(value)"
            }
            return "{" + body.joined(separator: ",") + "}"
        }
        print(json([("name", "server_ceiling"), ("system", "hummingbird"), ("unit", "requests/s"), ("median", median(ceilingRates)),
                    ("runs", ceilingRates), ("connections", options.devices), ("endpoint", "GET /v1/health"),
                    ("p50_ms", top.percentile(0.5)), ("p99_ms", top.percentile(0.99)), ("errors", top.errors)]))
        let fraction = median(requestRates) / median(ceilingRates)
        let p99 = all.percentile(0.99)
        print(json([("name", "server_sync"), ("system", "\(options.label)"), ("unit", "round trips/s"), ("median", median(syncRates)),
                    ("runs", syncRates), ("devices", options.devices), ("families", options.families),
                    ("requests_per_s", median(requestRates)), ("uploaded_entries_per_s", median(entryRates)),
                    ("p50_ms", all.percentile(0.5)), ("p99_ms", p99), ("p999_ms", all.percentile(0.999)),
                    ("fraction_of_ceiling", fraction), ("errors", all.errors), ("lost", lost),
                    ("goal", "requests/s ≥ 0.5 × ceiling, p99 < 50 ms, 0 lost"),
                    ("met", fraction >= 0.5 && p99 < 50 && lost == 0 ? "true" : "false")]))
        if options.offered > 0 {
            let achieved = Double(open.operations) / options.seconds / Double(options.runs)
            let fractionOpen = achieved * 2 / median(ceilingRates)
            let p99Open = open.percentile(0.99)
            print(json([("name", "server_sync_open_loop"), ("system", "\(options.label)"), ("unit", "round trips/s"), ("median", achieved),
                        ("offered_round_trips_per_s", offeredRoundTrips), ("offered_fraction_of_ceiling", options.offered),
                        ("devices", options.devices), ("requests_per_s", achieved * 2), ("fraction_of_ceiling", fractionOpen),
                        ("p50_ms", open.percentile(0.5)), ("p99_ms", p99Open), ("p999_ms", open.percentile(0.999)),
                        ("errors", open.errors), ("lost", lost),
                        ("what", "each round trip timed from when it was due (no coordinated omission); the devices together offer the rate"),
                        ("goal", "requests/s ≥ 0.5 × ceiling, p99 < 50 ms, 0 lost"),
                        ("met", fractionOpen >= 0.5 && p99Open < 50 && lost == 0 && open.errors == 0 ? "true" : "false")]))
        }
        log("jlog-load: ceiling \(Int(median(ceilingRates))) requests/s; sync \(Int(median(syncRates))) round trips/s = \(Int(median(requestRates))) requests/s (\(String(format: "%.0f", fraction * 100))% of the ceiling), \(Int(median(entryRates))) entries/s, p50 \(String(format: "%.1f", all.percentile(0.5))) ms, p99 \(String(format: "%.1f", p99)) ms, lost \(lost)")
    }

    /// `body`, as a task started on event loop `i` mod their count: with the event loops as the
    /// concurrency executor a task stays on the loop it runs on, and a connection it opens is
    /// opened there, so the clients spread over every core instead of all running where `main` did.
    static func onLoop<T: Sendable>(_ i: Int, _ body: @escaping @Sendable () async -> T) async -> T {
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        return await withCheckedContinuation { done in
            loops[i % loops.count].execute { Task { done.resume(returning: await body()) } }
        }
    }

    /// `connections` clients calling the trivial endpoint as fast as they can.
    static func ceiling(url: String, client: HTTPClient, connections: Int, seconds: Double) async -> Sample {
        let deadline = monotonic() + UInt64(seconds * 1e9)
        return await withTaskGroup(of: Sample.self) { group in
            for i in 0..<connections {
                group.addTask { await onLoop(i) {
                    var s = Sample()
                    let request = HTTPClientRequest(url: url + "/v1/health")
                    while monotonic() < deadline {
                        let t0 = monotonic()
                        do {
                            let r = try await client.execute(request, timeout: .seconds(30))
                            _ = try await r.body.collect(upTo: 1 << 16)
                            s.latencies.append(monotonic() - t0)
                            s.operations += 1
                        } catch { s.errors += 1 }
                    }
                    return s
                } }
            }
            var total = Sample()
            for await s in group { total.merge(s) }
            return total
        }
    }

    /// Every device, as fast as it can: one local change uploaded, then the family list's
    /// changes fetched since its token (what a phone does on each edit): one round trip.
    /// With `roundTripsPerSecond`, open loop: device `i` is due every `devices ÷ rate` seconds
    /// (staggered), and a round trip's latency counts from when it was due.
    static func sync(_ devices: [Device], seconds: Double, tokens: inout [ServiceToken?],
                     roundTripsPerSecond: Double? = nil) async -> (Sample, [[CompactID]]) {
        let tokensBefore = tokens
        let start = monotonic()
        let deadline = start + UInt64(seconds * 1e9)
        let interval = roundTripsPerSecond.map { UInt64(Double(devices.count) / $0 * 1e9) }
        let (sample, ids, tokensAfter) = await withTaskGroup(of: (Int, Sample, [CompactID], ServiceToken?).self) { group in
            for (i, d) in devices.enumerated() {
                group.addTask { await onLoop(i) {
                    var s = Sample()
                    var ids: [CompactID] = []
                    var token = tokensBefore[i]
                    var clock = HybridClock()
                    var n = 0
                    var due = start + (interval ?? 0) * UInt64(i) / UInt64(devices.count)
                    while monotonic() < deadline {
                        if interval != nil {
                            let now = monotonic()
                            if due > now { try? await Task.sleep(nanoseconds: due - now) }
                            if due >= deadline { break }
                        }
                        n += 1
                        let wall = Int64(Date().timeIntervalSince1970 * 1000)
                        let e = JournalEntry(id: CompactID.random(), zone: d.zone.storeName, author: d.replica, wallTime: wall,
                                             clock: clock.tick(wallMillis: wall), operation: .add(item: CompactID.random(), text: "item \(n)", after: nil))
                        let t0 = interval == nil ? monotonic() : due
                        if let interval { due += interval }
                        do {
                            _ = try await d.service.upload([e], to: d.zone)
                            ids.append(e.id)
                            s.entries += 1
                            while true {
                                let page = try await d.service.fetchZoneChanges(d.zone, since: token, limit: 1_000)
                                token = page.token
                                if !page.moreComing { break }
                            }
                            s.latencies.append(monotonic() - t0)
                            s.operations += 1
                        } catch {
                            s.errors += 1
                        }
                    }
                    return (i, s, ids, token)
                } }
            }
            var total = Sample()
            var ids = Array(repeating: [CompactID](), count: devices.count)
            var tokens = tokensBefore
            for await (i, s, x, token) in group {
                tokens[i] = token
                total.merge(s)
                ids[i] = x
            }
            return (total, ids, tokens)
        }
        tokens = tokensAfter
        return (sample, ids)
    }

    /// Every acknowledged upload is in its family's list: the count of those missing.
    static func verify(_ devices: [Device], uploaded: [[CompactID]]) async throws -> Int {
        var byZone: [ZoneID: Set<CompactID>] = [:]
        for (i, d) in devices.enumerated() { byZone[d.zone, default: []].formUnion(uploaded[i]) }
        var lost = 0
        for (zone, ids) in byZone {
            let reader = devices.first { $0.zone == zone }!.service
            var stored = Set<CompactID>()
            var token: ServiceToken? = nil
            while true {
                let page = try await reader.fetchZoneChanges(zone, since: token, limit: 10_000)
                for e in page.entries { stored.insert(e.id) }
                token = page.token
                if !page.moreComing { break }
            }
            lost += ids.subtracting(stored).count
        }
        return lost
    }
}

/// One credential per device, its account the family's: in the store's accounts file, or in the
/// database (`--database`) where every node reads them.
func issueCredentials(_ options: Options, dir: String) async throws -> [DeviceCredential] {
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    let families = (0..<options.devices).map { "family\($0 % options.families)" }
    guard let database = options.database else {
        let accounts = try AccountDirectory(store: dir + "/server.wal")
        return try families.map { try accounts.issue(account: $0, now: now, expiresAt: nil) }
    }
    var logger = Logger(label: "jlog-load")
    logger.logLevel = .warning
    let db = try await PostgresStorage.open(try PostgresLocation(database), connections: 2, logger: logger)
    var out: [DeviceCredential] = []
    for account in families {
        let (credential, record) = try AccountDirectory.newCredential(account: account, now: now, expiresAt: nil)
        try await db.addCredential(record)
        out.append(credential)
    }
    await db.close()
    return out
}

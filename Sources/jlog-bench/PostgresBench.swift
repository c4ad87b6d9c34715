import Foundation
import JournalLog
import JournalPostgres
import Logging

/// Uploads appended to PostgreSQL (Spec/SYNC.md §11.2), beside the engine's own store, in one
/// run: 16 uploaders, one entry per upload, each to a list of its own, on one node and on two
/// (two connection pools to one database), each upload committing alone and in group commits.
/// The cluster is a private one (`scripts/postgres.sh`: a Unix socket, fsync on, under /tmp)
/// started for the run; without PostgreSQL's server installed the group is skipped.
struct PostgresBench {
    let counts: Counts
    let dir: String
    let report: Report

    static let uploaders = 16

    func run() {
        // Under /tmp: PostgreSQL's own user must reach it (a run directory is private), and a
        // socket's path has to stay under 108 bytes.
        let pgDir = "/tmp/jlog-bench-pg-\(ProcessInfo.processInfo.processIdentifier)"
        guard Self.shell("bash scripts/postgres.sh start \(pgDir)") else {
            log("postgres_append: skipped (no PostgreSQL server: bash scripts/setup.sh installs it)")
            return
        }
        defer { _ = Self.shell("bash scripts/postgres.sh stop \(pgDir); rm -rf \(pgDir)") }
        let perUploader = counts.runs >= 3 ? 150 : 40
        log("postgres_append: \(Self.uploaders) uploaders × \(perUploader) uploads of one entry, per upload and grouped, one node and two")
        let location: PostgresLocation
        do { location = try PostgresLocation("postgres://jlog@/jlog?host=\(pgDir)") } catch { fail("the bench's PostgreSQL", error) }
        var engine: [Double] = [], engineLatency: [Double] = []
        for run in 0..<3 {
            let (rate, lat) = engineRun(run, perUploader)
            engine.append(rate)
            engineLatency += lat
        }
        report.emit(Measurement(name: "uploads_durable_16", system: "journallog", unit: "uploads/s", runs: engine,
                                extra: latencyFields(engineLatency) + [("note", .s("the engine's store (durability .always), 16 tasks, one entry per append: the service's own backend"))]))
        for grouped in [false, true] {
            for nodes in [1, 2] {
                var rates: [Double] = [], latencies: [Double] = []
                for run in 0..<3 {
                    let (rate, lat) = blocking { try await Self.postgresRun(location, schema: "bench_\(grouped ? "g" : "s")\(nodes)_\(run)", nodes: nodes, grouped: grouped, perUploader) }
                    rates.append(rate)
                    latencies += lat
                }
                report.emit(Measurement(
                    name: "uploads_postgres_\(grouped ? "grouped" : "alone")_\(nodes)_node\(nodes == 1 ? "" : "s")", system: "postgresql", unit: "uploads/s", runs: rates,
                    extra: latencyFields(latencies) + [("nodes", .i(nodes)),
                        ("note", .s(grouped ? "appends that arrive while one commits share the next transaction (AppendBatcher)" : "each upload its own transaction: positions lock, id check, insert, commit"))],
                    ratio: medianOf(rates) / medianOf(engine)))
            }
        }
    }

    private func latencyFields(_ ms: [Double]) -> [(String, JSON)] {
        let s = ms.sorted()
        guard !s.isEmpty else { return [] }
        return [("p50_ms", .n(s[s.count / 2])), ("p99_ms", .n(s[min(s.count - 1, s.count * 99 / 100)]))]
    }

    private func engineRun(_ run: Int, _ perUploader: Int) -> (Double, [Double]) {
        let path = dir + "/pg-engine-\(run).wal"
        var o = StoreOptions()
        o.durability = .always
        let store: JournalStore
        do { store = try JournalStore.open(path, options: o) } catch { fail("opening the engine store", error) }
        defer { try? store.close(); removeTree(path) }
        let latencies = LatencyBox()
        let t0 = now()
        DispatchQueue.concurrentPerform(iterations: Self.uploaders) { u in
            for i in 0..<perUploader {
                let t = now()
                do { _ = try store.append(batch: [Self.entry(u, i)]) } catch { fail("an engine append", error) }
                latencies.add((now() - t) * 1000)
            }
        }
        return (Double(Self.uploaders * perUploader) / (now() - t0), latencies.values)
    }

    private static func postgresRun(_ location: PostgresLocation, schema: String, nodes: Int, grouped: Bool, _ perUploader: Int) async throws -> (Double, [Double]) {
        var quiet = Logger(label: "bench")
        quiet.logLevel = .error
        _ = Self.shell("\(Self.psql) -h \(location.host) -U jlog -d jlog -qc 'CREATE SCHEMA \(schema)'")
        var storages: [PostgresStorage] = []
        for _ in 0..<nodes {
            storages.append(try await PostgresStorage.open(location, connections: Self.uploaders, schema: schema, batchesAppends: grouped, logger: quiet))
        }
        for u in 0..<Self.uploaders { try await storages[0].makeZone("u\(u)/list") }
        let latencies = LatencyBox()
        let t0 = now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for u in 0..<Self.uploaders {
                let node = storages[u % nodes]
                group.addTask {
                    for i in 0..<perUploader {
                        let t = now()
                        _ = try await node.append([Self.entry(u, i)], to: "u\(u)/list")
                        latencies.add((now() - t) * 1000)
                    }
                }
            }
            try await group.waitForAll()
        }
        let rate = Double(Self.uploaders * perUploader) / (now() - t0)
        for s in storages { await s.close() }
        return (rate, latencies.values)
    }

    static var psql: String { (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.sorted().last.map { "/usr/lib/postgresql/\($0)/bin/psql" } ?? "psql" }

    static func entry(_ u: Int, _ i: Int) -> JournalEntry {
        JournalEntry(id: CompactID("u\(u)-\(i)")!, zone: "u\(u)/list", author: "u\(u):phone", wallTime: 1_795_424_400_000 + Int64(i),
                     clock: HybridTime(physicalMillis: 1_795_424_400_000 + UInt64(i), counter: 0),
                     operation: .add(item: CompactID("item-\(u)-\(i)")!, text: "thing \(i)", after: nil))
    }

    /// `body` in a fresh task, waited for on this thread.
    private func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> T {
        SyncBench(counts: counts, dir: dir, report: report).blocking(body)
    }

    /// Runs `command` through bash and waits for it. posix_spawn, not Foundation's Process: the
    /// server a command starts in the background would inherit the pipe Process watches for the
    /// child's end, and waiting would last as long as the server.
    private static func shell(_ command: String) -> Bool {
        var pid: pid_t = 0
        let args = ["/bin/bash", "-c", command + " </dev/null >/dev/null 2>&1"]
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        guard posix_spawn(&pid, "/bin/bash", nil, nil, &argv, environ) == 0 else { return false }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return status == 0
    }
}

/// Latencies from many threads.
final class LatencyBox: @unchecked Sendable {
    private let lock = NSLock()
    private var all: [Double] = []
    func add(_ ms: Double) { lock.withLock { all.append(ms) } }
    var values: [Double] { lock.withLock { all } }
}

import Foundation
import JournalLog
import JournalQuery
import ListModel

/// `observe_list`: how long after `append` returns a list observation shows the entry,
/// from the writer (`ListStore.observe`) and through a `StoreReader` as another process reads
/// (polling the log's end every `pollInterval`); and `caller_blocked`: how long a caller's thread
/// is held by an append, through `ListStore` (the work runs on the store's thread) and by the
/// synchronous core (the caller waits out the fdatasync itself).
struct ObserveBench {
    let counts: Counts
    let dir: String
    let report: Report

    /// How often the reader looks for more (StoreReader's default is 100 ms).
    static let pollMillis = 10.0

    /// Appends observed one at a time.
    var appends: Int { counts.tailSeconds < 2 ? 200 : 1_000 }

    func run() {
        log("[11/11] observing a list: append → observed state, and what an append holds the caller for")
        let sync = SyncBench(counts: counts, dir: dir, report: report)
        let (dir, appends) = (self.dir, self.appends)
        let writer = sync.blocking { try await Self.observed(dir: dir, appends: appends, throughReader: false) }
        emit("observe_list", writer, [("source", .s("ListStore.observe, in the writer's process")), ("path", .s("append returned → state with the entry yielded"))])
        let reader = sync.blocking { try await Self.observed(dir: dir, appends: appends / 2, throughReader: true) }
        emit("observe_list", reader, [("source", .s("ListObservation(reader:) over a StoreReader, as another process reads (it polls the log's end)")),
                                      ("poll_interval_ms", .n(Self.pollMillis))])
        let (async, core) = sync.blocking { try await Self.callerBlocked(dir: dir, appends: appends) }
        emit("caller_blocked", async, [("call", .s("await ListStore.append (durability always): the caller's thread is held only to enqueue"))])
        emit("caller_blocked", core, [("call", .s("JournalStore.append (durability always) from the caller's thread: it waits out the fdatasync"))])
    }

    func emit(_ name: String, _ ns: [UInt64], _ extra: [(String, JSON)]) {
        let sorted = ns.sorted()
        func at(_ permille: Int) -> Double { sorted.isEmpty ? .nan : Double(sorted[max(1, (sorted.count * permille + 999) / 1000) - 1]) / 1e3 }
        report.emit(Measurement(name: name, system: "journallog", unit: "us", runs: [at(500)],
                                extra: [("p50", .n(at(500))), ("p99", .n(at(990))), ("max", .n(sorted.last.map { Double($0) / 1e3 } ?? .nan)),
                                        ("samples", .i(sorted.count))] + extra))
    }

    /// Latencies (ns) from each append's return to the first observed state holding it.
    static func observed(dir: String, appends: Int, throughReader: Bool) async throws -> [UInt64] {
        let path = dir + "/observe-\(throughReader ? "reader" : "writer").wal"
        defer { removeTree(path) }
        let lists = try await ListStore.open(path)
        let zone = "List-observe"
        let clock = ContinuousClock()
        try await lists.append(entry(0, zone))
        let reader = throughReader ? try StoreReader.open(path) : nil
        reader?.pollInterval = .milliseconds(Int(Self.pollMillis))
        let observation: ListObservation = reader.map { ListObservation(reader: $0, zone: zone) } ?? lists.observe(zone)
        var iterator = observation.makeAsyncIterator()
        _ = try await iterator.next()
        var latencies: [UInt64] = []
        for n in 1...appends {
            try await lists.append(entry(n, zone))
            let returned = clock.now
            while let state = try await iterator.next(), state.items.count < n + 1 {}
            let d = clock.now - returned
            latencies.append(UInt64(d.components.seconds) * 1_000_000_000 + UInt64(d.components.attoseconds / 1_000_000_000))
        }
        reader?.close()
        try await lists.close()
        return latencies
    }

    /// How long (ns) the calling thread is held per durable append: through ListStore, and by
    /// the synchronous core.
    static func callerBlocked(dir: String, appends: Int) async throws -> (async: [UInt64], core: [UInt64]) {
        let path = dir + "/observe-blocked.wal"
        defer { removeTree(path) }
        let lists = try await ListStore.open(path)
        let zone = "List-blocked"
        var async: [UInt64] = [], core: [UInt64] = []
        let caller = Caller()
        for n in 0..<appends {
            let e = entry(n, zone)
            // The caller's thread is held from the call until the task suspends: measured as the
            // time until another task on the same serial context gets to run.
            async.append(await caller.heldFor { _ = try? await lists.append(e) })
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try lists.store.append(entry(appends + n, zone))
            core.append(DispatchTime.now().uptimeNanoseconds - start)
        }
        try await lists.close()
        return (async, core)
    }

    /// An app's actor (its main actor, in an app; the bench's main thread waits for the run, so
    /// an actor of its own stands in for it).
    actor Caller {
        /// How long `call` holds this actor before it suspends: a second task on the actor notes
        /// when it gets to run.
        func heldFor(_ call: @escaping @Sendable () async -> Void) async -> UInt64 {
            let start = DispatchTime.now().uptimeNanoseconds
            let work = Task { await self.run(call) }
            let probe = Task { self.now() }
            let ran = await probe.value
            await work.value
            return ran - start
        }

        private func run(_ call: @Sendable () async -> Void) async { await call() }
        private func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
    }

    static func entry(_ n: Int, _ zone: String) -> JournalEntry {
        let t = Int64(1_795_424_400_000) + Int64(n)
        return JournalEntry(id: CompactID.random(), zone: zone, author: "alice", wallTime: t,
                            clock: HybridTime(physicalMillis: UInt64(t), counter: 0),
                            operation: .add(item: CompactID.random(), text: "Item \(n)", after: nil))
    }
}

import Foundation
import JournalLog
import JournalQuery
import JournalService
import JournalSync
import JournalSyncWire
import ListModel

/// What a device's calls cost on the wire, measured where a transport would put them: entries
/// in the wire batch form (`WireBatch`), database changes and upload results as the HTTP
/// binding's JSON, histories as they are. Wraps the reference service in this process.
final class WireMeter: ForwardingSyncService, @unchecked Sendable {
    let inner: LocalService
    var account: String { inner.account }
    private let lock = NSLock()
    private(set) var calls = 0
    private(set) var entriesUp = 0, entriesDown = 0
    private(set) var bytesUp = 0, bytesDown = 0
    /// Of `bytesDown`, the histories'.
    private(set) var historyBytes = 0
    /// History pages fetched, and the largest (as a page's bytes travel).
    private(set) var historyPages = 0, largestHistoryPage = 0
    /// Change tokens and heads, sent and received: what the bytes above spend on positions.
    private(set) var tokenBytes = 0
    /// The last snapshot fetched, as it came (looked into after the timed part).
    private(set) var lastSnapshot: [UInt8]? = nil
    /// Snapshots asked for (`fetchZoneSnapshot` calls, answered with one or none).
    private(set) var snapshots = 0
    /// Of `bytesDown`, the zone pages' entries as wire batches (compaction records included),
    /// and of those the compaction records' (SYNC.md §6.7): how many, their bytes in the batches
    /// they came in, and the last one met.
    private(set) var entryBytesDown = 0
    private(set) var recordsDown = 0, recordBytesDown = 0
    private(set) var lastRecord: JournalEntry? = nil

    init(_ inner: LocalService) { self.inner = inner }

    func reset() {
        lock.withLock {
            (calls, entriesUp, entriesDown, bytesUp, bytesDown, historyBytes, tokenBytes) = (0, 0, 0, 0, 0, 0, 0)
            (historyPages, largestHistoryPage) = (0, 0)
            (snapshots, entryBytesDown, recordsDown, recordBytesDown, lastRecord) = (0, 0, 0, 0, nil)
        }
    }
    private func count(up: Int = 0, down: Int = 0, entriesUp eu: Int = 0, entriesDown ed: Int = 0) {
        lock.withLock {
            calls += 1
            bytesUp += up; bytesDown += down; entriesUp += eu; entriesDown += ed
        }
    }
    static func json(_ v: some Encodable) -> Int { (try? JSONEncoder().encode(v).count) ?? 0 }

    func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
        let answer = try await inner.forward(call)
        // Tokens sent travel in the request (query parameters); HTTP's own headers are not counted.
        let sent: Int = switch call {
        case .upload(_, _, let t, _), .fetchDatabaseChanges(_, let t, _), .fetchZoneChanges(_, let t, _): t?.text.utf8.count ?? 0
        case .fetchZoneHistoryPage(_, let c): c?.text.utf8.count ?? 0
        case .fetchBothDatabases(let t, _): (t.private?.text.utf8.count ?? 0) + (t.shared?.text.utf8.count ?? 0)
        default: 0
        }
        let received: Int = switch answer {
        case .upload(let r): (r.token?.text.utf8.count ?? 0) + (r.head?.text.utf8.count ?? 0)
        case .databaseChanges(let p): p.token.text.utf8.count + p.heads.values.reduce(0) { $0 + $1.text.utf8.count }
        case .bothDatabases(let p): [p.private, p.shared].reduce(0) { $0 + $1.token.text.utf8.count + $1.heads.values.reduce(0) { $0 + $1.text.utf8.count } }
        case .zoneChanges(let p): p.token.text.utf8.count + (p.head?.text.utf8.count ?? 0)
        default: 0
        }
        lock.withLock { tokenBytes += sent + received }
        switch (call, answer) {
        case (.upload(let entries, _, _, _), .upload(let r)):
            count(up: sent + WireBatch.encode(entries).count, down: HTTPBinding.UploadJSON(r).encoded.count, entriesUp: entries.count)
        case (_, .databaseChanges(let p)): count(up: sent, down: Self.json(HTTPBinding.DatabaseChangesJSON(p)))
        case (_, .bothDatabases(let p)): count(up: sent, down: Self.json(HTTPBinding.BothDatabasesJSON(p)))
        case (_, .zoneChanges(let p)):
            let batch = WireBatch.encode(p.entries).count
            count(up: sent, down: batch + p.token.text.utf8.count + (p.head?.text.utf8.count ?? 0), entriesDown: p.entries.count)
            let records = p.entries.filter(CompactionRecord.isRecord)
            let recordBytes = records.isEmpty ? 0 : batch - WireBatch.encode(p.entries.filter { !CompactionRecord.isRecord($0) }).count
            lock.withLock {
                entryBytesDown += batch
                recordsDown += records.count
                recordBytesDown += recordBytes
                if let r = records.last { lastRecord = r }
            }
        case (_, .history(let h)):
            // As the HTTP binding carries it to a client that takes LZ4 (SYNC.md §9.5).
            let n = CompressedBody.encode(h)?.count ?? h.count
            count(down: n)
            lock.withLock { historyBytes += n }
        case (_, .historyPage(let page)):
            // The page as the HTTP binding carries it (LZ4 when it pays, §9.5), and its cursor.
            let n = (CompressedBody.encode(page.bytes)?.count ?? page.bytes.count) + (page.next?.text.utf8.count ?? 0)
            count(up: sent, down: n)
            lock.withLock {
                historyBytes += n
                historyPages += 1
                largestHistoryPage = max(largestHistoryPage, n)
            }
        case (_, .snapshot(let snap?)):
            count(down: snap.bytes.count + snap.token.text.utf8.count)
            lock.withLock { lastSnapshot = snap.bytes; snapshots += 1 }
        case (_, .snapshot(nil)):
            count()
            lock.withLock { snapshots += 1 }
        default: count()
        }
        return answer
    }
}

/// The sync measurements, in this process over the reference service (no network: the
/// transport's cost is the server's load test, `jlog-load`): a device's first sync of a large
/// list, from the service's compacted copy (snapshot path: its entries after compaction and its
/// history) against the same list never compacted (every entry replayed); and the steady-state
/// cost of one change, on the wire and on the devices.
struct SyncBench {
    let counts: Counts
    let dir: String
    let report: Report

    /// `body` in a fresh task, waited for on this thread (the bench is synchronous).
    func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do { box.value = .success(try await body()) } catch { box.value = .failure(error) }
            done.signal()
        }
        done.wait()
        switch box.value! {
        case .success(let v): return v
        case .failure(let e): fail("the sync bench", e)
        }
    }

    final class ResultBox<T>: @unchecked Sendable { var value: Result<T, any Error>? }

    /// The service's clock, set by the bench.
    final class ManualNow: @unchecked Sendable {
        private let lock = NSLock()
        private var millis: Int64
        init(_ millis: Int64) { self.millis = millis }
        var value: Int64 {
            get { lock.withLock { millis } }
            set { lock.withLock { millis = newValue } }
        }
    }

    static func storeOptions() -> StoreOptions {
        var o = StoreOptions()
        o.durability = .always
        return o
    }

    /// A service store holding the workload's list as `alice/list`, compacted as of 15 days after
    /// its last entry or not; and its core.
    func service(_ name: String, entries: [JournalEntry], compacted: Bool) throws -> (ServiceCore, JournalStore) {
        let store = try JournalStore.open(dir + "/" + name, options: Self.storeOptions())
        var k = 0
        while k < entries.count {
            try store.append(batch: Array(entries[k..<min(k + 1_000, entries.count)]))
            k += 1_000
        }
        // The service starts when the last entry has arrived (its arrival checkpoint, SYNC.md §6.2
        // rule 9, covers them all), and compacts 15 days later.
        let last = entries.last!.wallTime
        let clock = ManualNow(last)
        let core = try ServiceCore(store: store, now: { clock.value })
        clock.value = last + 15 * 86_400_000
        if compacted { try core.compact(now: clock.value) }
        return (core, store)
    }

    func run() {
        let n = counts.syncListEntries
        let zone = ZoneID(owner: "alice", name: "list")!
        let w = ListWorkload.generate(n, seed: 41, zone: zone.storeName)
        log("sync: a \(n)-entry list, its first sync on a new device (compacted and not), then one change at a time")
        var results: [String: (ms: [Double], wire: (Int, Int, Int), state: Int)] = [:]
        var historyMS: [Double] = [], historyBytes = 0, historyPages = 0, snapshotIDs = 0
        var firstPage: [Double] = [], firstPageEvents = 0
        for compacted in [true, false] {
            let label = compacted ? "snapshot" : "replay"
            let (core, store): (ServiceCore, JournalStore)
            do { (core, store) = try service("service-\(label).wal", entries: w.entries, compacted: compacted) } catch { fail("building the service store", error) }
            var ms: [Double] = [], wire = (0, 0, 0), items = 0
            for run in 0..<max(3, counts.runs) {
                let meter = WireMeter(LocalService(core: core, account: "alice"))
                let path = dir + "/device-\(label)-\(run).wal"
                let dev: JournalStore
                do { dev = try JournalStore.open(path, options: Self.storeOptions()) } catch { fail("opening a device store", error) }
                var engineOptions = SyncEngineOptions()
                engineOptions.pageLimit = 1_000
                // The list is usable once its state is here; its history is a line of its own.
                engineOptions.fetchesHistoryAfterRefetch = false
                let options = engineOptions
                let t = blocking { () async throws -> FirstSync in
                    let engine = try SyncEngine(store: dev, service: meter, replica: "alice:new", options: options)
                    let t0 = now()
                    let r = await engine.sync()
                    guard r.isComplete else { throw JournalError.invalidEntry("the first sync did not complete: \(r.errors)") }
                    let state = try ListQuery(store: dev, fs: dev.fileSystem).materialise(zone.storeName).state
                    var out = FirstSync(usable: now() - t0, items: state.items.count,
                                        wire: (meter.entriesDown, meter.bytesDown + meter.bytesUp, meter.calls))
                    guard compacted else { return out }
                    // The first page as an app showing "recent activity" would ask for it: fetched
                    // and decoded into events.
                    let t2 = now()
                    let first = try await meter.fetchZoneHistoryPage(zone, after: nil)
                    out.firstPageEvents = try HistoryPieceCodec.decode(first.bytes).log.count
                    out.firstPage = now() - t2
                    meter.reset()
                    let t1 = now()
                    try await engine.fetchHistory(zone)
                    _ = try ListQuery(store: dev, fs: dev.fileSystem).history(zone.storeName)
                    out.history = now() - t1
                    return out
                }
                ms.append(t.usable * 1000)
                if compacted, snapshotIDs == 0 { snapshotIDs = Self.idsWritten(meter.lastSnapshot) }
                items = t.items
                wire = t.wire
                if compacted {
                    historyMS.append(t.history * 1000)
                    firstPage.append(t.firstPage * 1000)
                    (historyBytes, historyPages, firstPageEvents) = (meter.historyBytes, meter.historyPages, t.firstPageEvents)
                }
                try? dev.close()
                removeTree(path)
            }
            try? store.close()
            results[label] = (ms, wire, items)
        }
        for label in ["snapshot", "replay"] {
            let r = results[label]!
            let other = results[label == "snapshot" ? "replay" : "snapshot"]!
            report.emit(Measurement(
                name: "initial_sync_\(label)", system: "journallog", unit: "ms", runs: r.ms,
                extra: [("list_entries", .i(n)), ("entries_on_wire", .i(r.wire.0)), ("bytes_on_wire", .i(r.wire.1)),
                        ("requests", .i(r.wire.2)), ("items", .i(r.state))]
                    + (label == "snapshot" ? Self.idFloor(snapshotIDs) : []) + [
                        ("note", .s(label == "snapshot"
                            ? "the service compacted the list (14-day retention, 15 days after its last entry): the device installs the service's snapshot as the list's base (durably) and materialises the list; bytes and requests up to the list being usable (the history is history_fetch)"
                            : "the list never compacted: the device fetches and appends every entry durably, then materialises the list (a full replay)"))],
                ratio: label == "snapshot" ? medianOf(other.ms) / medianOf(r.ms) : nil))
        }
        report.emit(Measurement(
            name: "history_first_page", system: "journallog", unit: "ms", runs: firstPage,
            extra: [("list_entries", .i(n)), ("events", .i(firstPageEvents)),
                    ("note", .s("after initial_sync_snapshot: the first page of the list's history (SYNC.md §3.12) fetched from the service in this process and decoded into events, as an app showing recent activity would"))],
            goal: "<= 20 ms", met: medianOf(firstPage) <= 20))
        report.emit(Measurement(
            name: "history_fetch", system: "journallog", unit: "ms", runs: historyMS,
            extra: [("list_entries", .i(n)), ("bytes_on_wire", .i(historyBytes)), ("pages", .i(historyPages)),
                    ("note", .s("after initial_sync_snapshot: the device fetches the list's history page by page (SYNC.md §3.12), installs it beside the log and reads it whole"))]))
        refetchAfterAway()
        followingCompactions()
        steadyState(zone)
    }

    /// The ids a snapshot writes once each (`ListReducer.idsWritten`); 0 when it does not decode
    /// alone (a delta).
    static func idsWritten(_ snapshot: [UInt8]?) -> Int {
        guard let snapshot, let decoded = try? SnapshotCodec.decode(snapshot) else { return 0 }
        return decoded.reducer.idsWritten
    }

    /// The snapshot's ids, and the bytes they take at 16 each: random, so incompressible, the
    /// least any encoding of the list carries while the merge rules order by entry ids.
    static func idFloor(_ ids: Int) -> [(String, JSON)] {
        [("snapshot_ids", .i(ids)), ("snapshot_random_id_bytes", .i(16 * ids))]
    }

    /// What one device's first sync came to: the list usable, and its history after.
    struct FirstSync: Sendable {
        var usable: Double
        var items: Int
        /// Entries down, bytes both ways and requests, until the list was usable.
        var wire: (Int, Int, Int)
        var firstPage = 0.0, firstPageEvents = 0, history = 0.0
    }

    /// The two-year family list (`LifecycleWorkload`, compacted by the service every day): a
    /// device synced it, was away 16 days while the family went on, and the service compacted
    /// it meanwhile, so the device's token expired. Its sync re-fetches the list.
    func refetchAfterAway() {
        let n = counts.refetchListEntries
        let zone = ZoneID(owner: "alice", name: "family")!
        let entries = LifecycleWorkload.generate(n, seed: 43, zone: zone.storeName).entries
        let last = entries.last!.wallTime
        // Away one day longer than the 14-day retention: the compaction record of its first day
        // away is purged, so its token is older than the service can describe (SYNC.md §6.7).
        let away = last - 16 * 86_400_000
        let cut = entries.partitionPoint { $0.wallTime <= away }
        log("sync: a \(n)-entry family list; a device away for its last 16 days (\(n - cut) entries) re-fetches it")
        let dir = self.dir
        var ms: [Double] = [], wire = (0, 0, 0), items = 0
        var historyMS: [Double] = [], historyCosts: [StepCost] = [], historyWire = (0, 0, 0), snapshotIDs = 0
        for run in 0..<max(3, counts.runs) {
            let (store, core, clock): (JournalStore, ServiceCore, ManualNow)
            do {
                // Everything before the device went away arrived long enough ago to be purged by
                // its own time alone (the service's first arrival checkpoint covers it).
                store = try JournalStore.open(dir + "/family-\(run).wal", options: Self.storeOptions())
                var k = 0
                while k < cut {
                    try store.append(batch: Array(entries[k..<min(k + 1_000, cut)]))
                    k += 1_000
                }
                clock = ManualNow(away - 15 * 86_400_000)
                core = try ServiceCore(store: store, now: { clock.value })
                clock.value = away
                try core.compact(now: away)
            } catch { fail("building the family list's service", error) }
            let meter = WireMeter(LocalService(core: core, account: "alice"))
            let devPath = dir + "/family-device-\(run).wal"
            let result = blocking { () async throws -> (Double, Int, (Int, Int, Int), Double, StepCost) in
                let dev = try JournalStore.open(devPath, options: SyncBench.storeOptions())
                var options = SyncEngineOptions()
                options.pageLimit = 1_000
                options.fetchesHistoryAfterRefetch = false
                let engine = try SyncEngine(store: dev, service: meter, replica: "alice:phone", options: options)
                guard await engine.sync().isComplete else { throw JournalError.invalidEntry("the first sync did not complete") }
                // 16 days away: the family goes on, and the service compacts once a day.
                var k = cut
                for day in 1...16 {
                    let end = away + Int64(day) * 86_400_000
                    let next = entries.partitionPoint { $0.wallTime <= end }
                    while k < next {
                        try store.append(batch: Array(entries[k..<min(k + 1_000, next)]))
                        k += 1_000
                    }
                    k = next
                    clock.value = end
                    try core.compact(now: end)
                }
                meter.reset()
                let t0 = now()
                let r = await engine.sync()
                guard r.isComplete, r.refetched == [zone] else { throw JournalError.invalidEntry("the re-fetch did not happen: \(r.errors)") }
                let state = try ListQuery(store: dev, fs: dev.fileSystem).materialise(zone.storeName).state
                let t = now() - t0
                let refetchWire = (meter.entriesDown, meter.bytesDown + meter.bytesUp, meter.calls)
                // Then its whole history, page by page: memory is one page on each side.
                meter.reset()
                let cost = StepCost.started()
                let t1 = now()
                try await engine.fetchHistory(zone)
                let historyTime = now() - t1
                let spent = cost.finished()
                try dev.close()
                return (t, state.items.count, refetchWire, historyTime, spent)
            }
            ms.append(result.0 * 1000)
            if snapshotIDs == 0 { snapshotIDs = Self.idsWritten(meter.lastSnapshot) }
            items = result.1
            wire = result.2
            historyMS.append(result.3 * 1000)
            historyCosts.append(result.4)
            historyWire = (meter.historyBytes, meter.historyPages, meter.largestHistoryPage)
            try? store.close()
            removeTree(dir + "/family-\(run).wal")
            removeTree(devPath)
        }
        report.emit(Measurement(
            name: "refetch_after_16_days", system: "journallog", unit: "ms", runs: ms,
            extra: [("list_entries", .i(n)), ("entries_while_away", .i(n - cut)), ("entries_on_wire", .i(wire.0)),
                    ("bytes_on_wire", .i(wire.1)), ("requests", .i(wire.2)), ("items", .i(items))] + Self.idFloor(snapshotIDs) + [
                    ("note", .s("a device synced the two-year family list (LifecycleWorkload), was away its last 16 days (the retention and a day) while the service compacted it daily; its next sync (token older than the compaction records kept) installs the service's snapshot and what followed it, durably, and materialises the list. History on demand: refetch_history_paged"))]))
        report.emit(Measurement(
            name: "refetch_history_paged", system: "journallog", unit: "ms", runs: historyMS,
            extra: [("list_entries", .i(n)), ("bytes_on_wire", .i(historyWire.0)), ("pages", .i(historyWire.1)),
                    ("largest_page_bytes", .i(historyWire.2))] + StepCost.fields(historyCosts)
                + [("note", .s("after refetch_after_16_days: the device fetches the family list's whole history page by page (SYNC.md §3.12) from the service in this process and installs it as one piece, streamed to disk; the peak RSS is both sides' (one process), reset before the fetch"))]))
    }

    /// One change: Alice's phone records it and syncs; Bob's phone syncs and has it.
    /// One change at a time between two devices, polling (each device syncs whole: its
    /// databases, then the zones they name) and hinted (each device listens to the service's
    /// hints, as `jlog serve`'s `/v1/hints` carries them, and fetches the zone a hint names).
    func steadyState(_ zone: ZoneID) {
        for hinted in [false, true] { steadyState(zone, hinted: hinted) }
    }

    private func steadyState(_ zone: ZoneID, hinted: Bool) {
        let changes = counts.syncChanges
        let label = hinted ? "hinted" : "polling"
        let serviceStore: JournalStore
        let core: ServiceCore
        do {
            serviceStore = try JournalStore.open(dir + "/steady-service-\(label).wal", options: Self.storeOptions())
            core = try ServiceCore(store: serviceStore, now: { Int64(Date().timeIntervalSince1970 * 1000) })
        } catch { fail("building the steady-state service", error) }
        let a = WireMeter(LocalService(core: core, account: "alice")), b = WireMeter(LocalService(core: core, account: "bob"))
        let dir = self.dir
        let (perChange, wire) = blocking { () async throws -> ([Double], SteadyWire) in
            let sa = try JournalStore.open(dir + "/steady-alice-\(label).wal", options: SyncBench.storeOptions())
            let sb = try JournalStore.open(dir + "/steady-bob-\(label).wal", options: SyncBench.storeOptions())
            let alice = try SyncEngine(store: sa, service: a, replica: "alice:phone")
            let bob = try SyncEngine(store: sb, service: b, replica: "bob:phone")
            let list = try await alice.createList(zone.name)
            for i in 0..<50 { try await alice.record(.add(item: CompactID.random(), text: "item \(i)", after: nil), in: list) }
            await alice.sync()
            _ = try await bob.accept(try await alice.share(list, with: "bob"))
            await bob.sync()
            await alice.sync()
            guard let heardA = core.hints.subscribe("alice"), let heardB = core.hints.subscribe("bob") else { throw JournalError.invalidEntry("no hint channel") }
            var (hintsA, hintsB) = (heardA.makeAsyncIterator(), heardB.makeAsyncIterator())
            a.reset(); b.reset()
            var times: [Double] = [], hintBytes = 0
            for i in 0..<changes {
                let t0 = now()
                try await alice.record(.add(item: CompactID.random(), text: "more \(i)", after: nil), in: list)
                let rb: SyncReport
                if hinted {
                    // Alice only pushes; each device then takes the hint the upload made.
                    let ra = await alice.sync(hinted: [])
                    guard ra.isComplete, let ha = await hintsA.next(), let hb = await hintsB.next() else { throw JournalError.invalidEntry("no hint") }
                    hintBytes += Self.eventBytes(ha) + Self.eventBytes(hb)
                    _ = await Self.sync(alice, on: ha)
                    rb = await Self.sync(bob, on: hb)
                } else {
                    let ra = await alice.sync()
                    guard ra.isComplete else { throw JournalError.invalidEntry("alice's sync failed") }
                    rb = await bob.sync()
                }
                guard rb.isComplete, rb.applied == 1 else { throw JournalError.invalidEntry("a change did not arrive in one sync") }
                times.append((now() - t0) * 1000)
            }
            try sa.close(); try sb.close()
            return (times, SteadyWire(entriesUp: a.entriesUp + b.entriesUp, entriesDown: a.entriesDown + b.entriesDown,
                                      bytes: a.bytesUp + a.bytesDown + b.bytesUp + b.bytesDown + hintBytes, requests: a.calls + b.calls,
                                      bytesUp: a.bytesUp + b.bytesUp, tokenBytes: a.tokenBytes + b.tokenBytes, hintBytes: hintBytes))
        }
        try? serviceStore.close()
        let c = Double(changes)
        let note = hinted
            ? "one device records an add (durably) and pushes; each device takes the hint of that upload (zone and head, as GET /v1/hints carries it) and syncs the zone it names: the uploader holds the head and fetches nothing, the other fetches the zone; bytes include the two hints"
            : "one device records an add (durably) and syncs (push, then both databases), the other syncs (both databases, then the zone) and applies it; local work of both, in this process; bytes as the HTTP binding would carry them (wire batches, JSON)"
        report.emit(Measurement(
            name: hinted ? "sync_per_change_hinted" : "sync_per_change", system: "journallog", unit: "ms", runs: perChange,
            extra: [("changes", .i(changes)), ("entries_up_per_change", .n(Double(wire.entriesUp) / c)),
                    ("entries_down_per_change", .n(Double(wire.entriesDown) / c)), ("bytes_on_wire_per_change", .n(Double(wire.bytes) / c)),
                    ("bytes_up_per_change", .n(Double(wire.bytesUp) / c)), ("token_bytes_per_change", .n(Double(wire.tokenBytes) / c)),
                    ("hint_bytes_per_change", .n(Double(wire.hintBytes) / c)),
                    ("requests_per_change", .n(Double(wire.requests) / c)), ("note", .s(note))]))
    }

    /// What one steady-state run carried.
    struct SteadyWire: Sendable {
        var entriesUp = 0, entriesDown = 0, bytes = 0, requests = 0, bytesUp = 0, tokenBytes = 0, hintBytes = 0
    }

    /// A hint's bytes as `GET /v1/hints` writes it (`event: changed`, the zone, its head).
    static func eventBytes(_ hint: ServiceHint) -> Int { HintEvent.text(zone: hint.zone, head: hint.head).utf8.count }

    /// The sync a hint makes, as the device's listener hands it to the engine: of the zone it
    /// names, or everything.
    static func sync(_ engine: SyncEngine, on hint: ServiceHint) async -> SyncReport {
        guard let name = hint.zone, let zone = ZoneID(storeName: name) else { return await engine.sync() }
        return await engine.sync(hinted: [ZoneHint(zone: zone, head: hint.head)])
    }
}

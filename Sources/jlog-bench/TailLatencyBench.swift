import CSQLite
import Foundation
import JournalLog
import JournalQuery

/// Append tail latency beside background work: durable writes to a small list (a
/// family editing another list), one entry or 100 per commit, timed one by one on this thread,
/// alone and while another thread works on the compaction workload's big list: the compactor, a
/// snapshot, the zone-index checkpoint. SQLite's inserts alone and while another connection runs
/// the compaction group's DELETEs + checkpoint. The goal: p99 beside background work ≤ 2 × alone.
extension CompareBench {
    private static let tailGoal = "p99 during ≤ 2 × p99 alone"

    func tail() {
        let n = counts.compactionEntries, zone = ListWorkload.zone
        log("  append_tail: generating \(n) list entries")
        let w = ListWorkload.generate(n, seed: ListWorkload.seed, zone: zone)
        let history = w.entries[...]
        let nowMs = Self.compactionNow(history)
        // The small lists are being edited now (from an hour before `now`), so no compaction
        // touches them and appending to them never conflicts with one.
        var lists = SmallLists(EntryGenerator(seed: 2_100, wall: nowMs - 3_600_000))
        // SQLite deletes the rows the compactor purges: decided as the compaction group does.
        var purge: ListPurge? = nil
        if sqOn {
            log("  append_tail: what the compaction purges, on a reference store")
            purge = decidePurge(history, zone: zone, now: nowMs, name: "tail")
        }
        if jlOn { tailJournalLog(history, now: nowMs, purge: purge, lists: &lists) }
        if let purge { tailSQLite(w, purge, lists: &lists) }
    }

    // MARK: JournalLog

    private func tailJournalLog(_ history: ArraySlice<JournalEntry>, now nowMs: Int64, purge: ListPurge?, lists: inout SmallLists) {
        let zone = ListWorkload.zone
        /// The compaction group's store.
        func build(_ name: String) -> (JournalStore, String) {
            let p = path(name)
            return (buildListStore(p, history, segmentBytes: counts.compactionSegmentBytes), p)
        }
        /// Appends with durability `.always` until `more()` says stop, one latency each.
        func sample(_ s: JournalStore, _ kind: TailKind, while more: () -> Bool) -> [UInt64] {
            sampleWrites(kind, lists: &lists, while: more) { b in
                do {
                    if kind == .single {
                        try s.append(b.entries[0], durability: .always)
                    } else {
                        try s.append(batch: b.entries, durability: .always)
                    }
                } catch { fail("append beside background work", error) }
            }
        }
        // The disk of a shared VM drifts over a run: the writes alone are sampled on the same
        // store right before each background condition (half of `tailSeconds` each), and the
        // `none` line pools those slices.
        var alone: [TailKind: [UInt64]] = [:]
        func aloneBefore(_ s: JournalStore, _ kind: TailKind) -> Latencies {
            // Building the store left hundreds of MB dirty: without this, the kernel writes them
            // back during the slice, and "alone" is measured beside that writeback (1 ms bursts).
            sync()
            let ns = sample(s, kind, while: forSeconds(counts.tailSeconds / 2))
            alone[kind, default: []] += ns
            return Latencies(ns)
        }
        var lines: [TailLine] = []

        // Each compaction needs a store it has not compacted yet: one built for each kind.
        for kind in TailKind.allCases {
            log("  append_tail: journallog \(kind.rawValue) beside a compaction")
            let (s, p) = build("tail-compaction-\(kind.rawValue).store")
            let before = aloneBefore(s, kind)
            let job = BackgroundJob(repeating: false) { () -> ListCompactionReport in
                do { return try ListCompactor(store: s).run(now: nowMs) } catch { fail("ListCompactor.run beside appends", error) }
            }
            let lat = Latencies(sample(s, kind, while: { job.isRunning }))
            let pass = job.finish()[0]
            let purged = pass.result.storage.entriesPurged
            if let purge, purged != purge.chosen.count {
                fail("ListCompactor.run beside appends", SQLiteError(code: 0, message: "purged \(purged), the reference chose \(purge.chosen.count)"))
            }
            lines.append(TailLine(kind: kind, during: "compaction", latencies: lat, before: before, backgroundMs: pass.ms, extra: [
                ("background", .s("ListCompactor(store:).run(now:) on the list (the compaction group's job, same now), once; sampled while it ran")),
                ("entries_purged", .i(purged)), ("entries_replaced", .i(pass.result.storage.entriesReplaced)),
                ("segments_rewritten", .i(pass.result.storage.segmentsRewritten)),
                ("phases_ms", .o(pass.result.phaseMillis.sorted { $0.key < $1.key }.map { ($0.key, JSON.n($0.value)) })),
            ]))
            closeStore(s)
            removeTree(p)
        }

        // One store for the conditions that leave it as it was: a snapshot, an index checkpoint.
        log("  append_tail: journallog store of \(history.count) list entries and \(counts.tailSmallZones) small zones: beside a snapshot, an index checkpoint")
        let (store, sp) = build("tail.store")
        addSmallZones(store, wall: nowMs - 86_400_000)
        for kind in TailKind.allCases {
            let before = aloneBefore(store, kind)
            let job = BackgroundJob(repeating: true) { () -> Int in
                do { return try ListQuery(store: store).writeSnapshot(zone).fileBytes } catch { fail("writeSnapshot beside appends", error) }
            }
            let lat = Latencies(sample(store, kind, while: forSeconds(counts.tailSeconds)))
            let passes = job.finish()
            lines.append(TailLine(kind: kind, during: "snapshot", latencies: lat, before: before, backgroundMs: medianOf(passes.map(\.ms)), extra: [
                ("background", .s("ListQuery(store:).writeSnapshot(list) in a loop (materialise the list, encode, write); background_ms: median pass")),
                ("background_passes", .i(passes.count)), ("snapshot_bytes", .i(passes.last?.result ?? 0)),
            ]))
        }

        let indexFile = sp + "/" + StoreLayout.indexFile
        for kind in TailKind.allCases {
            let before = aloneBefore(store, kind)
            let job = BackgroundJob(repeating: true) { () -> Double in
                let covered = store.horizon
                let ms = timed {
                    do { try store.checkpointIndex() } catch { fail("checkpointIndex beside appends", error) }
                } * 1e3
                // Then wait (up to 10 ms, untimed) for an append this checkpoint did not cover, so
                // every pass has something to write rather than spinning on the writer's lock.
                let until = now() + 0.01
                while store.horizon <= covered && now() < until { usleep(200) }
                return ms
            }
            let lat = Latencies(sample(store, kind, while: forSeconds(counts.tailSeconds)))
            let passes = job.finish()
            if let e = store.indexCheckpointError { fail("checkpointIndex beside appends", e) }
            lines.append(TailLine(kind: kind, during: "index_checkpoint", latencies: lat, before: before,
                                  backgroundMs: medianOf(passes.map(\.result)), extra: [
                ("background", .s("store.checkpointIndex() in a loop, each pass once an append it did not cover is in (sync, take the checkpoint under the writer's lock, then write it after: a record of what changed in the index journal, or the whole file; INDEX.md §2, §5); background_ms: median checkpointIndex() call")),
                ("background_passes", .i(passes.count)), ("zones", .i(store.zones().count)),
                ("checkpoint_bytes", .i(Int(fileSizes(indexFile).size))),
                ("journal_bytes", .i(Int(fileSizes(sp + "/" + StoreLayout.indexJournalFile).size))),
            ]))
        }
        closeStore(store)
        removeTree(sp)

        let params: [(String, JSON)] = [("store_entries", .i(history.count)), ("durability", .s("always")),
                                        ("segment_size", .i(counts.compactionSegmentBytes))]
        for kind in TailKind.allCases {
            let pooled = Latencies(alone[kind] ?? [])
            emitTail("journallog", TailLine(kind: kind, during: "none", latencies: pooled, extra: [
                ("alone", .s("pooled: half of tail_seconds on the same store right before each background condition")),
            ]), alone: pooled, params)
            for line in lines where line.kind == kind { emitTail("journallog", line, alone: pooled, params) }
        }
    }

    /// Adds `tailSmallZones` zones of 5 entries, in 1,000-entry batches that each span 1,000
    /// zones: every zone lies in 5 frames, and the index checkpoint, which grows with the zones
    /// and their frames, has something to write.
    private func addSmallZones(_ s: JournalStore, wall: Int64) {
        let zones = counts.tailSmallZones
        guard zones > 0 else { return }
        var source = EntryGenerator(seed: 2_200, wall: wall)
        var entries: [JournalEntry] = []
        entries.reserveCapacity(zones * 5)
        for i in 0..<(zones * 5) {
            var e = source.next().entry
            e.zone = "Family-\(i % zones)"
            entries.append(e)
        }
        do {
            try appendInBatches(s, entries[...], batchSize: counts.batchSize)
            try s.checkpointIndex()
        } catch { fail("adding small zones", error) }
    }

    // MARK: SQLite

    private func tailSQLite(_ w: ListWorkload, _ purge: ListPurge, lists: inout SmallLists) {
        let n = w.entries.count
        for kind in TailKind.allCases {
            // The DELETEs are destructive: a database for each kind, built as the compaction group builds it.
            log("  append_tail: sqlite \(kind.rawValue): \(n)-row database, alone and beside DELETE + checkpoint")
            let dp = path("tail-\(kind.rawValue).sqlite")
            let db = buildListDB(dp, w)
            do {
                // The measured connection commits durably, as durable_single does, and waits for
                // the writer's lock rather than failing.
                try db.exec("PRAGMA synchronous=FULL")
                try db.exec("PRAGMA busy_timeout=60000")
                // The other connection runs the compaction group's job as it runs there.
                let bg = try SQLiteDB(path: dp)
                try bg.exec("PRAGMA synchronous=NORMAL")
                try bg.exec("PRAGMA busy_timeout=60000")
                let ins = try db.prepare(SQLiteDB.insertSQL)
                let begin = try db.prepare("BEGIN"), commit = try db.prepare("COMMIT")
                defer { sqlite3_finalize(ins); sqlite3_finalize(begin); sqlite3_finalize(commit) }
                var rows = 0
                /// One transaction: an autocommit INSERT for one row, BEGIN … COMMIT for 100.
                func write(_ b: FreshEntries) {
                    if b.entries.count > 1 { stepInsertless(db, begin) }
                    for k in b.entries.indices {
                        bindEntry(ins, b.entries[k], b.keys[k])
                        stepInsert(db, ins)
                    }
                    if b.entries.count > 1 { stepInsertless(db, commit) }
                    rows += b.entries.count
                }
                sync()   // as for JournalLog's slices: not beside the build's writeback
                let alone = Latencies(sampleWrites(kind, lists: &lists, while: forSeconds(counts.tailSeconds), write))
                let params: [(String, JSON)] = [("store_entries", .i(n)),
                                                ("config", .s("WAL, synchronous=FULL, busy_timeout 60 s; one row per autocommit transaction, or 100 in BEGIN … COMMIT"))]
                emitTail("sqlite", TailLine(kind: kind, during: "none", latencies: alone), alone: alone, params)

                let job = BackgroundJob(repeating: false) { () -> (lockWaitMs: Double, deleteMs: Double, checkpointMs: Double, busy: Int64) in
                    do {
                        let t0 = now()
                        var locked = t0
                        try deletePurged(bg, purge, locked: { locked = now() })
                        let t1 = now()
                        var busy: Int64 = 0
                        let c = try timed { busy = try bg.scalar("PRAGMA wal_checkpoint(TRUNCATE)") }
                        return ((locked - t0) * 1e3, (t1 - locked) * 1e3, c * 1e3, busy)
                    } catch { fail("sqlite DELETE + checkpoint beside inserts", error) }
                }
                // A writer that never pauses can keep the other connection's busy handler from
                // ever finding the lock free: sampling ends at a deadline, and the job then finishes.
                let deadline = now() + 10 * counts.tailSeconds
                let during = Latencies(sampleWrites(kind, lists: &lists, while: { job.isRunning && now() < deadline }, write))
                let cutShort = job.isRunning
                let pass = job.finish()[0]
                let left = try db.scalar("SELECT count(*) FROM journal")
                if left != Int64(n - purge.rowids.count + rows) {
                    fail("sqlite tail", SQLiteError(code: 0, message: "\(left) rows left, expected \(n - purge.rowids.count + rows)"))
                }
                emitTail("sqlite", TailLine(kind: kind, during: "delete_checkpoint", latencies: during, backgroundMs: pass.ms, extra: [
                    ("background", .s("another connection (synchronous=NORMAL, busy_timeout 60 s): the compaction group's BEGIN, DELETE per purged rowid, UPDATE per replaced one, COMMIT, then PRAGMA wal_checkpoint(TRUNCATE), once; sampled while it ran; delete_lock_wait_ms: until its first DELETE held the writer's lock, delete_ms: from then to COMMIT; checkpoint_ms includes its own wait for the lock")),
                    ("rows_deleted", .i(purge.rowids.count)), ("rows_updated", .i(purge.placeRows.count)),
                    ("delete_lock_wait_ms", .n(pass.result.lockWaitMs)), ("delete_ms", .n(pass.result.deleteMs)),
                    ("checkpoint_ms", .n(pass.result.checkpointMs)),
                    ("checkpoint_busy", .b(pass.result.busy != 0)), ("sampling_cut_at_deadline", .b(cutShort)),
                ]), alone: alone, params)
                bg.close()
            } catch { fail("sqlite tail", error) }
            db.close()
            removeDB(dp)
        }
    }

    // MARK: Measuring

    /// A `while` condition that holds for `seconds` from now.
    private func forSeconds(_ seconds: Double) -> () -> Bool {
        let end = now() + seconds
        return { now() < end }
    }

    /// Makes writes one after another on this thread while `more()` says so, each of fresh
    /// entries of a small list (made before its clock starts), and returns their latencies in ns.
    private func sampleWrites(_ kind: TailKind, lists: inout SmallLists, while more: () -> Bool,
                              _ write: (FreshEntries) -> Void) -> [UInt64] {
        var out: [UInt64] = []
        while more() {
            let b = lists.next(kind.entries)
            let t0 = nowNanos()
            write(b)
            out.append(nowNanos() - t0)
        }
        return out
    }

    /// Prints one `append_tail` line. Only JournalLog's lines beside background work carry the
    /// goal (as in every other group, the SQLite line is the comparison).
    private func emitTail(_ system: String, _ line: TailLine, alone: Latencies, _ params: [(String, JSON)]) {
        let lat = line.latencies, vsAlone = lat.p99 / alone.p99
        let judged = system == "journallog" && line.during != "none"
        var fields: [(String, JSON)] = [
            ("kind", .s(line.kind.rawValue)), ("during", .s(line.during)),
            ("p50", .n(lat.p50)), ("p99", .n(lat.p99)), ("p999", .n(lat.p999)), ("max", .n(lat.max)),
            ("samples", .i(lat.count)), ("background_ms", line.backgroundMs.map { .n($0) } ?? .null), ("p99_vs_alone", .n(vsAlone)),
        ]
        if let b = line.before { fields.append(("p99_alone_just_before", .n(b.p99))) }
        fields += [("entries_per_write", .i(line.kind.entries)), ("tail_seconds", .n(counts.tailSeconds))] + params + line.extra
        // `runs` holds the one run's median, so `median` is the p50.
        report.emit(Measurement(name: "append_tail", system: system, unit: "us", runs: [lat.p50], extra: fields,
                                goal: judged ? Self.tailGoal : nil, met: judged ? vsAlone <= 2 : nil,
                                label: "append_tail \(line.kind.rawValue) \(line.during) (p50; p99 \(human(lat.p99)))"))
    }
}

/// One `append_tail` line before it is printed (JournalLog's `none` line is known only once
/// every condition has run).
private struct TailLine {
    var kind: TailKind
    var during: String
    var latencies: Latencies
    /// The same writes alone on the same store just before the background work began.
    var before: Latencies? = nil
    var backgroundMs: Double? = nil
    var extra: [(String, JSON)] = []
}

/// A measured write: one entry per commit (one row per transaction), or 100.
private enum TailKind: String, CaseIterable {
    case single, batch100

    var entries: Int { self == .single ? 1 : 100 }
}

/// Entries for one write, with the UUID halves SQLite binds.
private struct FreshEntries {
    var entries: [JournalEntry] = []
    var keys: [RowKeys] = []
}

/// The small lists the measured writes go to (other families' lists; the zone, or SQLite's
/// `zone` value). A family list holds a few thousand entries, so a new one starts every
/// `perList`: 2 s of 100-entry batches would otherwise make one list of a million entries, and
/// measure the growth of its id index rather than the background work.
private struct SmallLists {
    static let perList = 20_000
    private var source: EntryGenerator
    private var written = 0

    init(_ source: EntryGenerator) { self.source = source }

    /// The next `count` fresh entries, all in one list.
    mutating func next(_ count: Int) -> FreshEntries {
        let zone = "List-5c1f0e42-\(written / Self.perList)"
        written += count
        var out = FreshEntries()
        out.entries.reserveCapacity(count)
        out.keys.reserveCapacity(count)
        for _ in 0..<count {
            var (e, k) = source.next()
            e.zone = zone
            out.entries.append(e)
            out.keys.append(k)
        }
        return out
    }
}

/// One condition's latencies, sorted; percentiles by nearest rank, in µs to 0.1.
private struct Latencies {
    let ns: [UInt64]

    init(_ samples: [UInt64]) { ns = samples.sorted() }

    var count: Int { ns.count }
    var p50: Double { at(permille: 500) }
    var p99: Double { at(permille: 990) }
    var p999: Double { at(permille: 999) }
    var max: Double { ns.last.map(Self.micros) ?? .nan }

    /// The smallest latency with at least `permille`/1000 of the samples at or below it
    /// (integer ranks: 0.99 × n in floating point can land one rank off).
    private func at(permille: Int) -> Double {
        guard !ns.isEmpty else { return .nan }
        return Self.micros(ns[Swift.max(1, (ns.count * permille + 999) / 1000) - 1])
    }

    private static func micros(_ v: UInt64) -> Double { (Double(v) / 100).rounded() / 10 }
}

/// Work on its own thread beside the measured writes: one pass (a compaction; SQLite's DELETEs
/// and checkpoint), or passes one after another until `finish` (a snapshot, an index checkpoint).
/// The thread has begun its first pass when `init` returns; each pass's duration and result are kept.
private final class BackgroundJob<Output: Sendable>: @unchecked Sendable {
    private let cond = NSCondition()
    private var started = false
    private var done = false
    private var stopping = false
    private var passes: [(ms: Double, result: Output)] = []

    init(repeating: Bool, _ pass: @escaping @Sendable () -> Output) {
        let t = Thread { [self] in
            cond.lock()
            started = true
            cond.broadcast()
            cond.unlock()
            while true {
                var result: Output? = nil
                let ms = timed { result = pass() } * 1e3
                cond.lock()
                passes.append((ms, result!))
                let stop = stopping || !repeating
                cond.unlock()
                if stop { break }
            }
            cond.lock()
            done = true
            cond.broadcast()
            cond.unlock()
        }
        t.stackSize = 8 << 20
        t.start()
        cond.lock()
        while !started { cond.wait() }
        cond.unlock()
    }

    /// Whether the work goes on: a single pass until it ends, a loop until `finish`.
    var isRunning: Bool {
        cond.lock()
        defer { cond.unlock() }
        return !done
    }

    /// Lets the pass under way end, starts no other, and returns every pass.
    func finish() -> [(ms: Double, result: Output)] {
        cond.lock()
        defer { cond.unlock() }
        stopping = true
        while !done { cond.wait() }
        return passes
    }
}

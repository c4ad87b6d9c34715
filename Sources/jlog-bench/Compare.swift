import CSQLite
import Foundation
import JournalLog

/// Measurements 2–6: JournalLog and SQLite side by side, interleaved run by run.
struct CompareBench {
    let counts: Counts
    let dir: String
    let report: Report
    /// How batches are appended (see BatchPath.swift).
    let batchPath: BatchPath
    /// Which systems run (`--system`; both by default). With one, no ratios are computed.
    let jlOn: Bool
    let sqOn: Bool

    func path(_ name: String) -> String { dir + "/" + name }

    func openStore(_ p: String, durability: Durability) -> JournalStore {
        var o = StoreOptions()
        o.durability = durability
        do { return try JournalStore.open(p, options: o) } catch { fail("JournalStore.open \(p)", error) }
    }

    func closeStore(_ s: JournalStore) {
        do { try s.close() } catch { fail("JournalStore.close", error) }
    }

    func removeDB(_ p: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(p + suffix) }
    }

    /// Emits both lines of a pair with the ratio oriented so that > 1 favours JournalLog.
    @discardableResult
    func pair(_ name: String, unit: String, jl: [Double], sq: [Double], higherIsBetter: Bool,
                      params: [(String, JSON)], jlExtra: [(String, JSON)] = [], sqExtra: [(String, JSON)] = [],
                      goal: String? = nil, met: ((Double, Double) -> Bool)? = nil) -> Double {
        let a = medianOf(jl), b = medianOf(sq)
        let both = !jl.isEmpty && !sq.isEmpty
        let ratio = higherIsBetter ? a / b : b / a
        if !jl.isEmpty {
            report.emit(Measurement(name: name, system: "journallog", unit: unit, runs: jl, extra: params + jlExtra,
                                    ratio: both ? ratio : nil, goal: both ? goal : nil, met: both ? met?(ratio, a) : nil))
        }
        if !sq.isEmpty {
            report.emit(Measurement(name: name, system: "sqlite", unit: unit, runs: sq, extra: params + sqExtra,
                                    ratio: both ? ratio : nil))
        }
        return ratio
    }

    // MARK: 2. Buffered append

    func buffered() {
        let n = counts.bufferedEntries, bs = counts.batchSize
        let set = EntrySet.generate(n, seed: 2)
        let batches = stride(from: 0, to: n, by: bs).map { set.slice($0, bs) }
        var jl: [Double] = [], sq: [Double] = [], jlCreate: [Double] = [], jlLogical: [Double] = []
        for r in 0..<counts.runs {
            log("  buffered_append run \(r + 1)/\(counts.runs)")
            // A: JournalLog, durability .none.
            if jlOn {
                let sp = path("buffered-\(r).store")
                var store: JournalStore? = nil
                // Creating the store preallocates (zero-fills and syncs) its first segment: timed apart.
                jlCreate.append(timed { store = openStore(sp, durability: .none) })
                let tj = timed {
                    for b in batches {
                        do { try batchPath.append(store!, b, durability: .none) } catch { fail(batchPath.label, error) }
                    }
                }
                closeStore(store!)
                store = nil
                do {
                    let scan = try LogReader.scanRecords(sp) { _ in }
                    jlLogical.append(Double(scan.segments.reduce(Int64(0)) { $0 + $1.validEnd }))
                } catch { fail("LogReader.scanRecords", error) }
                removeTree(sp)
                jl.append(tj)
            }

            // B: SQLite, WAL + synchronous=NORMAL, one transaction per batch.
            if sqOn {
                let dp = path("buffered-\(r).sqlite")
                do {
                    let db = try SQLiteDB.create(path: dp, synchronous: "NORMAL")
                    let ins = try db.prepare(SQLiteDB.insertSQL)
                    let begin = try db.prepare("BEGIN"), commit = try db.prepare("COMMIT")
                    let ts = timed {
                        var i = 0
                        for b in batches {
                            stepInsertless(db, begin)
                            for e in b {
                                bindEntry(ins, e, set.keys[i])
                                stepInsert(db, ins)
                                i += 1
                            }
                            stepInsertless(db, commit)
                        }
                    }
                    sqlite3_finalize(ins); sqlite3_finalize(begin); sqlite3_finalize(commit)
                    db.close()
                    sq.append(ts)
                } catch { fail("sqlite buffered", error) }
                removeDB(dp)
            }
        }
        let jlRate = jl.map { Double(n) / $0 }, sqRate = sq.map { Double(n) / $0 }
        let params: [(String, JSON)] = [("entries", .i(n)), ("batch_size", .i(bs)),
                                        ("entry_bytes", .n(set.bytesPerEntry))]
        let mb = { (t: [Double]) -> [(String, JSON)] in
            [("mb_per_s", .n(medianOf(t.map { Double(set.encodedBytes) / $0 / 1e6 }))),
             ("mb_per_s_runs", .a(t.map { .n(Double(set.encodedBytes) / $0 / 1e6) }))]
        }
        // A writer that keeps going fills a segment every segmentSize / bytes-per-entry entries and then
        // creates (preallocates) the next one: charge that cost per entry as well.
        let segmentSize = Double(StoreOptions().segmentSize)
        let amortized = zip(zip(jl, jlCreate), jlLogical).map { tc, logical in
            Double(n) / (tc.0 + tc.1 * logical / segmentSize)
        }
        let prealloc: [(String, JSON)] = jlOn ? [
            ("segment_create_ms", .n(medianOf(jlCreate) * 1000)),
            ("segment_create_ms_runs", .a(jlCreate.map { .n($0 * 1000) })),
            ("entries_per_s_with_segment_rolls", .n(medianOf(amortized))),
            ("entries_per_s_with_segment_rolls_runs", .a(amortized.map { .n($0) })),
            ("rolls_note", .s("median excludes creating the preallocated segment (done at open); the _with_segment_rolls figure adds its cost pro rata per segmentSize of logical bytes")),
        ] : []
        pair("buffered_append", unit: "entries/s", jl: jlRate, sq: sqRate, higherIsBetter: true,
             params: params,
             jlExtra: mb(jl) + [("durability", .s("none"))] + prealloc + batchPath.json,
             sqExtra: mb(sq) + [("config", .s("WAL, synchronous=NORMAL, 1 transaction per batch, prepared INSERT, index (zone, seq)"))],
             goal: "ratio ≥ 5 and ≥ 3,000,000 entries/s", met: { r, a in r >= 5 && a >= 3_000_000 })
    }

    // MARK: 3. Durable single-entry commits

    /// `limits` measures fdatasync/s (append, pre-zeroed) right beside each run, so the fractions
    /// compare figures taken seconds apart rather than minutes apart on a shared, noisy disk.
    func durable(limits: () -> (append: Double, prezeroed: Double)) {
        let n = counts.durableCommits
        let set = EntrySet.generate(n, seed: 3)
        var jl: [Double] = [], sq: [Double] = [], fsAppend: [Double] = [], fsZeroed: [Double] = []
        for r in 0..<counts.runs {
            log("  durable_single run \(r + 1)/\(counts.runs)")
            if jlOn {
                let sp = path("durable-\(r).store")
                let store = openStore(sp, durability: .always)
                let tj = timed {
                    for e in set.entries {
                        do { try store.append(e, durability: .always) } catch { fail("append(.always)", error) }
                    }
                }
                closeStore(store)
                removeTree(sp)
                jl.append(Double(n) / tj)
            }

            if sqOn {
                let dp = path("durable-\(r).sqlite")
                do {
                    let db = try SQLiteDB.create(path: dp, synchronous: "FULL")
                    let ins = try db.prepare(SQLiteDB.insertSQL)
                    let ts = timed {
                        for (i, e) in set.entries.enumerated() {
                            bindEntry(ins, e, set.keys[i])
                            stepInsert(db, ins)  // autocommit: one row per transaction
                        }
                    }
                    sqlite3_finalize(ins)
                    db.close()
                    sq.append(Double(n) / ts)
                } catch { fail("sqlite durable", error) }
                removeDB(dp)
            }

            let l = limits()
            fsAppend.append(l.append)
            fsZeroed.append(l.prezeroed)
        }
        func fractions(_ runs: [Double]) -> [(String, JSON)] {
            let z = zip(runs, fsZeroed).map { $0 / $1 }, a = zip(runs, fsAppend).map { $0 / $1 }
            return [("fraction_of_fsync_prezeroed", .n(medianOf(z))), ("fraction_of_fsync_prezeroed_runs", .a(z.map { .n($0) })),
                    ("fraction_of_fsync_append", .n(medianOf(a))), ("fraction_of_fsync_append_runs", .a(a.map { .n($0) }))]
        }
        let limitsJSON: [(String, JSON)] = [
            ("fsync_prezeroed_beside", .n(medianOf(fsZeroed))), ("fsync_prezeroed_beside_runs", .a(fsZeroed.map { .n($0) })),
            ("fsync_append_beside", .n(medianOf(fsAppend))), ("fsync_append_beside_runs", .a(fsAppend.map { .n($0) })),
        ]
        let jlZeroFraction = medianOf(zip(jl, fsZeroed).map { $0 / $1 })
        pair("durable_single", unit: "commits/s", jl: jl, sq: sq, higherIsBetter: true,
             params: [("commits", .i(n)), ("entries_per_commit", .i(1)), ("entry_bytes", .n(set.bytesPerEntry))],
             jlExtra: fractions(jl) + limitsJSON + [("durability", .s("always")), ("median_latency_us", .n(1e6 / medianOf(jl)))],
             sqExtra: fractions(sq) + [("config", .s("WAL, synchronous=FULL, one row per transaction (autocommit)")),
                                       ("median_latency_us", .n(1e6 / medianOf(sq)))],
             goal: "ratio ≥ 1.2 and ≥ 90% of fdatasync_prezeroed",
             met: { r, _ in r >= 1.2 && jlZeroFraction >= 0.9 })
    }

    // MARK: 4. Concurrent durable appenders

    func concurrent() {
        let threads = counts.concurrentThreads, per = counts.concurrentPerThread, n = threads * per
        let set = EntrySet.generate(n, seed: 4)
        var jl: [Double] = [], sq: [Double] = []
        let entries = set.entries
        for r in 0..<counts.runs {
            log("  concurrent_durable run \(r + 1)/\(counts.runs)")
            if jlOn {
                let sp = path("concurrent-\(r).store")
                let store = openStore(sp, durability: .always)
                let tj = runThreads(threads) { t in
                    for j in 0..<per {
                        do { try store.append(entries[t * per + j], durability: .always) } catch { fail("concurrent append", error) }
                    }
                }
                closeStore(store)
                removeTree(sp)
                jl.append(Double(n) / tj)
            }

            if sqOn {
                let dp = path("concurrent-\(r).sqlite")
                do {
                    let db = try SQLiteDB.create(path: dp, synchronous: "FULL")
                    let ins = try db.prepare(SQLiteDB.insertSQL)
                    let lock = NSLock()
                    let keys = set.keys
                    let stmt = UncheckedBox(ins)
                    let ts = runThreads(threads) { t in
                        for j in 0..<per {
                            let k = t * per + j
                            lock.lock()
                            bindEntry(stmt.value, entries[k], keys[k])
                            stepInsert(db, stmt.value)  // one row, one FULL transaction
                            lock.unlock()
                        }
                    }
                    sqlite3_finalize(ins)
                    db.close()
                    sq.append(Double(n) / ts)
                } catch { fail("sqlite concurrent", error) }
                removeDB(dp)
            }
        }
        pair("concurrent_durable", unit: "entries/s", jl: jl, sq: sq, higherIsBetter: true,
             params: [("threads", .i(threads)), ("entries_per_thread", .i(per)), ("entries", .i(n)),
                      ("entry_bytes", .n(set.bytesPerEntry))],
             jlExtra: [("durability", .s("always")), ("commit", .s("group commit inside JournalStore"))],
             sqExtra: [("config", .s("WAL, synchronous=FULL, one connection, NSLock around each one-row transaction"))],
             goal: "ratio ≥ 5 and ≥ 50,000 entries/s", met: { r, a in r >= 5 && a >= 50_000 })
    }

    // MARK: 5 + 6. Open/recovery, full read, bytes per entry

    func store() {
        let n = counts.storeEntries, bs = counts.batchSize
        let sp = path("recovery.store"), dp = path("recovery.sqlite")
        log("  open_recovery: building a \(n)-entry store and database")
        do {
            let set = EntrySet.generate(n, seed: 5)
            if jlOn {
                let store = openStore(sp, durability: .none)
                var i = 0
                while i < n {
                    try batchPath.append(store, set.slice(i, bs), durability: .none)
                    i += bs
                }
                try store.close()
            }
            if sqOn {
                let db = try SQLiteDB.create(path: dp, synchronous: "NORMAL")
                try insertAll(db, set, batchSize: bs)
                try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
                db.close()
            }
        } catch { fail("building the recovery store", error) }

        // 6. Bytes per entry.
        var logical: Int64 = 0, segs: (size: Int64, allocated: Int64, files: Int) = (0, 0, 0)
        var segmentCount = 0
        if jlOn {
            let scan: ScanReport
            do { scan = try LogReader.scanRecords(sp) { _ in } } catch { fail("LogReader.scanRecords", error) }
            logical = scan.segments.reduce(Int64(0)) { $0 + $1.validEnd }
            segmentCount = scan.segments.count
            segs = directorySizes(sp, suffix: ".seg")
        }
        let dbFile = fileSizes(dp), wal = fileSizes(dp + "-wal")
        let sqliteBytes = dbFile.size + wal.size
        let jlPer = Double(logical) / Double(n), sqPer = Double(sqliteBytes) / Double(n)
        let both = jlOn && sqOn
        let bytesRatio = both ? sqPer / jlPer : nil
        if jlOn {
            report.emit(Measurement(
                name: "bytes_per_entry", system: "journallog", unit: "bytes/entry", runs: [jlPer],
                extra: [("entries", .i(n)), ("segments", .i(segmentCount)), ("logical_bytes", .i(Int(logical))),
                        ("file_bytes", .i(Int(segs.size))), ("allocated_bytes", .i(Int(segs.allocated))),
                        ("file_bytes_per_entry", .n(Double(segs.size) / Double(n))),
                        ("allocated_bytes_per_entry", .n(Double(segs.allocated) / Double(n))),
                        ("journallog_over_sqlite", both ? .n(jlPer / sqPer) : .null),
                        ("journallog_over_sqlite_file_bytes", both ? .n(Double(segs.size) / Double(sqliteBytes)) : .null),
                        ("note", .s("median = logical bytes (sum of SegmentSummary.validEnd); segments are preallocated to segmentSize"))]
                        + batchPath.json,
                ratio: bytesRatio, goal: both ? "journallog/sqlite ≤ 0.6 (logical bytes)" : nil, met: both ? jlPer / sqPer <= 0.6 : nil))
        }
        if sqOn {
            report.emit(Measurement(
                name: "bytes_per_entry", system: "sqlite", unit: "bytes/entry", runs: [sqPer],
                extra: [("entries", .i(n)), ("db_bytes", .i(Int(dbFile.size))), ("wal_bytes", .i(Int(wal.size))),
                        ("page_size", .i(4096)), ("note", .s("main file after PRAGMA wal_checkpoint(TRUNCATE), plus the WAL"))],
                ratio: bytesRatio))
        }

        // 5. Open/recovery and full reads, interleaved.
        var jlOpen: [Double] = [], sqOpenOnly: [Double] = [], jlRead: [Double] = [], sqReadAll: [Double] = []
        var checksum: UInt64 = 0
        for r in 0..<counts.runs {
            log("  open_recovery run \(r + 1)/\(counts.runs)")
            if jlOn {
                jlOpen.append(timed {
                    var o = StoreOptions()
                    o.durability = .always
                    do {
                        let s = try JournalStore.open(sp, options: o)
                        checksum &+= s.recovery.lastSequence
                        try s.close()
                    } catch { fail("open/recovery", error) }
                })
            }
            if sqOn {
                sqOpenOnly.append(timed {
                    do {
                        let db = try SQLiteDB(path: dp)
                        checksum &+= UInt64(try db.scalar("SELECT max(seq) FROM journal"))
                        db.close()
                    } catch { fail("sqlite open", error) }
                })
            }
            if jlOn {
                var count = 0
                jlRead.append(timed {
                    do {
                        _ = try LogReader.read(sp) { event, _ in
                            if case .entry(let s, let e) = event {
                                count += 1
                                checksum &+= s ^ e.clock.rawValue ^ UInt64(e.zone.utf8.count + e.author.utf8.count)
                            }
                        }
                    } catch { fail("LogReader.read", error) }
                })
                if count != n { fail("LogReader.read", SQLiteError(code: 0, message: "read \(count) of \(n) entries")) }
            }
            if sqOn {
                var rows = 0
                sqReadAll.append(timed {
                    do {
                        let db = try SQLiteDB(path: dp)
                        let st = try db.prepare(SQLiteDB.selectAllSQL)
                        while sqlite3_step(st) == SQLITE_ROW {
                            let (s, e) = rowEntry(st)
                            rows += 1
                            checksum &+= UInt64(s) ^ e.clock.rawValue ^ UInt64(e.zone.utf8.count + e.author.utf8.count)
                        }
                        sqlite3_finalize(st)
                        db.close()
                    } catch { fail("sqlite read all", error) }
                })
                if rows != n { fail("sqlite read all", SQLiteError(code: 0, message: "read \(rows) of \(n) rows")) }
            }
        }
        let ms = { (xs: [Double]) in xs.map { $0 * 1000 } }
        let openRatio = both ? medianOf(sqReadAll) / medianOf(jlOpen) : nil
        let openOnlyRatio = both ? medianOf(sqOpenOnly) / medianOf(jlOpen) : nil
        let storeParams: [(String, JSON)] = [("entries", .i(n)), ("batch_size", .i(bs)), ("cache", .s("warm (files just written)"))]
        if jlOn {
            let scanMBs = jlOpen.map { Double(segs.size) / $0 / 1e6 }
            let logicalMBs = jlOpen.map { Double(logical) / $0 / 1e6 }
            report.emit(Measurement(
                name: "open_recovery", system: "journallog", unit: "ms", runs: ms(jlOpen),
                extra: storeParams + [
                    ("what", .s("JournalStore.open (full recovery scan: CRC chain + batch summaries) + close")),
                    ("scan_mb_per_s", .n(medianOf(scanMBs))), ("scan_mb_per_s_runs", .a(scanMBs.map { .n($0) })),
                    ("scan_bytes", .i(Int(segs.size))),
                    ("logical_scan_mb_per_s", .n(medianOf(logicalMBs))), ("logical_bytes", .i(Int(logical))),
                    ("ratio_vs_sqlite_open_only", openOnlyRatio.map { .n($0) } ?? .null),
                    ("scan_goal", .s("≥ 1,000 MB/s")), ("scan_met", .b(medianOf(scanMBs) >= 1000)),
                ] + batchPath.json,
                ratio: openRatio, goal: both ? "ratio ≥ 3 (vs SQLite open + read all rows)" : nil, met: openRatio.map { $0 >= 3 }))
        }
        if sqOn {
            report.emit(Measurement(
                name: "open_recovery", system: "sqlite", unit: "ms", runs: ms(sqReadAll),
                extra: storeParams + [("what", .s("sqlite3_open_v2 + SELECT every column ORDER BY seq into JournalEntry values + close"))],
                ratio: openRatio))
            report.emit(Measurement(
                name: "open_only", system: "sqlite", unit: "ms", runs: ms(sqOpenOnly),
                extra: storeParams + [("what", .s("sqlite3_open_v2 + SELECT max(seq) + close: ready to append")),
                                      ("journallog_open_ms", jlOn ? .n(medianOf(jlOpen) * 1000) : .null)],
                ratio: openOnlyRatio))
        }
        pair("full_read", unit: "entries/s", jl: jlRead.map { Double(n) / $0 }, sq: sqReadAll.map { Double(n) / $0 },
             higherIsBetter: true, params: storeParams,
             jlExtra: [("what", .s("LogReader.read: every entry decoded to a JournalEntry")),
                       ("mb_per_s_logical", .n(Double(logical) / medianOf(jlRead) / 1e6))],
             sqExtra: [("what", .s("open + SELECT … ORDER BY seq, every column, rows rebuilt as JournalEntry values"))])
        if checksum == 42 { log("") }
        removeTree(sp)
        removeDB(dp)
    }
}

/// Steps a statement that returns no rows (BEGIN, COMMIT) and resets it.
@inline(__always)
func stepInsertless(_ db: SQLiteDB, _ st: OpaquePointer) {
    let rc = sqlite3_step(st)
    if rc != SQLITE_DONE { fail("sqlite step", SQLiteError(code: rc, message: db.errorMessage())) }
    sqlite3_reset(st)
}

/// Carries a non-Sendable value into threads that synchronise access themselves.
struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ v: T) { value = v }
}

import CSQLite
import Foundation
import JournalLog
import JournalQuery
import ListModel

/// A shopping-list history for one zone: adds placed after recent items, mark-offs, deletes,
/// renames and recolours, with UUID ids so SQLite stores them as 16-byte blobs.
struct ListWorkload {
    /// The zone and seed of the one-zone list history that `materialise`, `reducer` and
    /// `compaction` share.
    static let zone = "List-db6a6e29"
    static let seed: UInt64 = 21

    var entries: [JournalEntry] = []
    var ids: [(UInt64, UInt64)] = []
    var items: [(UInt64, UInt64)] = []
    var afters: [(UInt64, UInt64)?] = []

    static func generate(_ n: Int, seed: UInt64, zone: String) -> ListWorkload {
        var g = SplitMix64(seed: seed)
        var w = ListWorkload()
        w.entries.reserveCapacity(n)
        var recent: [(UInt64, UInt64)] = []
        var clock = HybridClock()
        var wall: Int64 = 1_795_000_000_000
        func uuid() -> (UInt64, UInt64) { ((g.next() & ~0xF000) | 0x4000, (g.next() & ~(0xC000 << 48)) | (0x8000 << 48)) }
        func pick() -> (UInt64, UInt64) { recent.isEmpty ? uuid() : recent[Int(g.next() % UInt64(recent.count))] }
        for i in 0..<n {
            wall += Int64(g.next() % 5)
            let id = uuid()
            var item = (UInt64(0), UInt64(0))
            var after: (UInt64, UInt64)? = nil
            let op: JournalCodec.EntryOperation
            switch g.next() % 20 {
            case 0..<9:
                item = uuid()
                after = recent.isEmpty || g.next() % 10 < 3 ? nil : pick()
                recent.append(item)
                if recent.count > 200 { recent.removeFirst(50) }
                op = .add(item: CompactID(uuidHigh: item.0, low: item.1), text: EntrySet.texts[Int(g.next() % 16)],
                          after: after.map { CompactID(uuidHigh: $0.0, low: $0.1) })
            case 9..<15:
                item = pick()
                op = .markOff(item: CompactID(uuidHigh: item.0, low: item.1))
            case 15..<18:
                item = pick()
                op = .delete(item: CompactID(uuidHigh: item.0, low: item.1))
            case 18: op = .rename(name: "Weekly \(i % 50)")
            default: op = .recolour(colour: ["yellow", "red", "blue"][i % 3])
            }
            w.entries.append(JournalEntry(id: CompactID(uuidHigh: id.0, low: id.1), zone: zone, author: EntrySet.authors[i % 5],
                                          wallTime: wall, clock: clock.tick(wallMillis: wall), operation: op))
            w.ids.append(id)
            w.items.append(item)
            w.afters.append(after)
        }
        return w
    }

    /// Rows in SQLite's journal table: every field, ids as 16-byte blobs, as an application would.
    func insert(into db: SQLiteDB, batchSize: Int) throws {
        let st = try db.prepare(SQLiteDB.insertSQL)
        defer { sqlite3_finalize(st) }
        func blob(_ i: Int32, _ v: (UInt64, UInt64)?) {
            guard let v else { sqlite3_bind_null(st, i); return }
            var b = (v.0.bigEndian, v.1.bigEndian)
            withUnsafeBytes(of: &b) { _ = sqlite3_bind_blob(st, i, $0.baseAddress, 16, sqliteTransient) }
        }
        func text(_ i: Int32, _ s: String?) {
            guard var s else { sqlite3_bind_null(st, i); return }
            _ = s.withUTF8 { p in
                if p.isEmpty { sqlite3_bind_text(st, i, "", 0, sqliteTransient) } else {
                    sqlite3_bind_text(st, i, UnsafeRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(p.count), sqliteTransient)
                }
            }
        }
        var k = 0
        while k < entries.count {
            try db.exec("BEGIN")
            for j in k..<min(k + batchSize, entries.count) {
                let e = entries[j]
                text(1, e.zone)
                blob(2, ids[j])
                text(3, e.author)
                sqlite3_bind_int64(st, 4, e.wallTime)
                sqlite3_bind_int64(st, 5, Int64(bitPattern: e.clock.rawValue))
                sqlite3_bind_int64(st, 6, Int64(e.operation.kindByte))
                blob(7, e.operation.item == nil ? nil : items[j])
                switch e.operation {
                case .add(_, let t, _), .rename(let t), .recolour(let t): text(8, t)
                default: text(8, nil)
                }
                blob(9, afters[j])
                stepInsert(db, st)
            }
            try db.exec("COMMIT")
            k += batchSize
        }
    }
}

@inline(__always) private func blobID(_ st: OpaquePointer, _ i: Int32) -> CompactID? {
    guard let p = sqlite3_column_blob(st, i), sqlite3_column_bytes(st, i) == 16 else { return nil }
    return CompactID(uuidHigh: UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                     low: UInt64(bigEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
}

@inline(__always) private func columnText(_ st: OpaquePointer, _ i: Int32) -> String {
    guard let p = sqlite3_column_text(st, i) else { return "" }
    return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(st, i))), as: UTF8.self)
}

/// The current row as the entry it stores, for every operation kind.
func rowFullEntry(_ st: OpaquePointer) -> JournalEntry {
    let id = blobID(st, 2) ?? CompactID(uuidHigh: 0, low: 0)
    let item = blobID(st, 7) ?? CompactID(uuidHigh: 0, low: 0)
    let op: JournalCodec.EntryOperation
    switch sqlite3_column_int64(st, 6) {
    case 1: op = .add(item: item, text: columnText(st, 8), after: blobID(st, 9))
    case 2: op = .markOff(item: item)
    case 3: op = .unmark(item: item)
    case 4: op = .delete(item: item)
    case 5: op = .rename(name: columnText(st, 8))
    default: op = .recolour(colour: columnText(st, 8))
    }
    return JournalEntry(id: id, zone: columnText(st, 1), author: columnText(st, 3), wallTime: sqlite3_column_int64(st, 4),
                        clock: HybridTime(rawValue: UInt64(bitPattern: sqlite3_column_int64(st, 5))), operation: op)
}

extension CompareBench {
    /// A query whose replays read pages ahead on a helper thread (`ListQuery.helperThreads`, off by
    /// default): what `jlog show` asks for.
    static func readingAhead(_ store: JournalStore) -> ListQuery {
        var q = ListQuery(store: store)
        q.helperThreads = true
        return q
    }

    /// Materialising a list: the reducer alone, then end to end against SQLite; snapshot
    /// size, time and LZ4 ratio; opening a zone from a snapshot plus a 1,000-entry tail.
    func materialise() {
        let n = counts.materialiseEntries
        let zone = ListWorkload.zone
        log("  materialise: generating \(n) list entries")
        let w = ListWorkload.generate(n, seed: ListWorkload.seed, zone: zone)
        let digest = reducer(w, zone: zone)
        // End to end: JournalLog reads through the feed; SQLite reads the zone's rows in order.
        let sp = path("list.store"), dp = path("list.sqlite")
        var store: JournalStore? = nil
        var db: SQLiteDB? = nil
        do {
            if jlOn {
                let s = openStore(sp, durability: .none)
                try appendInBatches(s, w.entries[..<n], batchSize: counts.batchSize)
                try s.close()
                store = openStore(sp, durability: .always)
            }
            if sqOn {
                let d = try SQLiteDB.create(path: dp, synchronous: "NORMAL")
                try w.insert(into: d, batchSize: counts.batchSize)
                try d.exec("PRAGMA wal_checkpoint(TRUNCATE)")
                db = d
            }
        } catch { fail("building the list store", error) }
        var jl: [Double] = [], sq: [Double] = []
        var jlCost: [StepCost] = [], sqCost: [StepCost] = []
        let select = db.flatMap { try? $0.prepare("SELECT seq, zone, id, author, ts, hlc, op, item, text, after FROM journal WHERE zone=? ORDER BY seq") }
        for r in 0..<counts.runs {
            log("  materialise run \(r + 1)/\(counts.runs)")
            if let store {
                // The digest only checks that both paths agree: it is computed after the clock
                // stops, on both sides.
                var state = ListState()
                var t = 0.0
                jlCost.append(StepCost.of {
                    t = timed {
                        do { state = try Self.readingAhead(store).materialise(zone).state } catch { fail("materialise", error) }
                    }
                })
                if state.digest != digest { fail("materialise", SQLiteError(code: 0, message: "journallog digest differs from the reducer's")) }
                jl.append(Double(n) / t)
            }
            if let select {
                var state = ListState()
                var t = 0.0
                sqCost.append(StepCost.of {
                    t = timed {
                        sqlite3_reset(select)
                        sqlite3_bind_text(select, 1, zone, -1, sqliteTransient)
                        var r = ListReducer(zone: zone)
                        while sqlite3_step(select) == SQLITE_ROW { _ = r.apply(rowFullEntry(select)) }
                        state = r.state()
                    }
                })
                if state.digest != digest { fail("materialise", SQLiteError(code: 0, message: "sqlite digest differs from the reducer's")) }
                sq.append(Double(n) / t)
            }
        }
        if let select { sqlite3_finalize(select) }
        db?.close()
        pair("materialise_list", unit: "entries/s", jl: jl, sq: sq, higherIsBetter: true,
             params: [("entries", .i(n))],
             jlExtra: [("path", .s("ListQuery.materialise: feed pages + ListReducer, no snapshot; helperThreads on (pages decoded on a helper thread, as jlog show asks)"))] + StepCost.fields(jlCost)
                + [("peak_rss_note", .s(Self.peakNote))],
             sqExtra: [("query", .s("SELECT … WHERE zone=? ORDER BY seq, rows → ListReducer"))] + StepCost.fields(sqCost)
                + [("peak_rss_note", .s(Self.peakNote))],
             goal: "journallog/sqlite ≥ 3", met: { ratio, _ in ratio >= 3 })

        guard let store else { return removeDB(dp) }
        // Snapshots and opening a zone from one, at two history lengths.
        for (label, size) in [("short_history", n / 10), ("full_history", n)] {
            let hp = path("open-\(label).store")
            let s = openStore(hp, durability: .none)
            let tail = ListWorkload.generate(1_000, seed: 22, zone: zone).entries
            do {
                try appendInBatches(s, w.entries[..<size], batchSize: counts.batchSize)
                try s.sync()
                let q = ListQuery(store: s)
                var snap: SnapshotReport? = nil
                let ms = timed { do { snap = try q.writeSnapshot(zone) } catch { fail("writeSnapshot", error) } } * 1e3
                try s.append(batch: tail, durability: .always)
                if let snap {
                    report.emit(Measurement(name: "snapshot_\(label)", system: "journallog", unit: "ms to write", runs: [ms],
                                            extra: [("entries", .i(size)), ("file_bytes", .i(snap.fileBytes)), ("raw_bytes", .i(snap.rawBytes)),
                                                    ("lz4_ratio", .n(Double(snap.rawBytes) / Double(max(1, snap.fileBytes)))),
                                                    ("bytes_per_entry", .n(Double(snap.fileBytes) / Double(size)))]))
                }
                var open: [Double] = []
                var replayed = 0
                for _ in 0..<counts.runs {
                    open.append(timed {
                        do { replayed = try ListQuery(store: s).materialise(zone).replayed } catch { fail("materialise", error) }
                    } * 1e3)
                }
                report.emit(Measurement(name: "open_with_snapshot_\(label)", system: "journallog", unit: "ms", runs: open,
                                        extra: [("history_entries", .i(size)), ("tail_entries", .i(replayed))],
                                        goal: "< 20 ms", met: medianOf(open) < 20))
                try s.close()
            } catch { fail("snapshot", error) }
            removeTree(hp)
        }
        closeStore(store)
        removeTree(sp)
        removeDB(dp)
    }

    /// The reducer alone, on decoded entries (`--only reducer` runs just this). Returns the digest.
    @discardableResult
    func reducer(_ w: ListWorkload, zone: String) -> UInt64 {
        // Timed: folding the entries in and building the state; the digest only checks the
        // other paths agree, so it is computed after the clock stops (its cost is reported).
        var reduce: [Double] = [], applyMs: [Double] = [], stateMs: [Double] = [], digestMs: [Double] = []
        var applyFaults: [Double] = [], stateFaults: [Double] = []
        var digest: UInt64 = 0
        let n = w.entries.count
        for _ in 0..<counts.runs {
            var r = ListReducer(zone: zone)
            var state = ListState(name: "", colour: "", items: [], participants: [])
            let f0 = minorFaults()
            let a = timed {
                r.reserveCapacity(n)
                _ = r.apply(contentsOf: w.entries)
            }
            let f1 = minorFaults()
            let s = timed { state = r.state() }
            applyFaults.append(Double(f1 - f0))
            stateFaults.append(Double(minorFaults() - f1))
            digestMs.append(timed { digest = state.digest } * 1e3)
            applyMs.append(a * 1e3)
            stateMs.append(s * 1e3)
            reduce.append(Double(n) / (a + s))
        }
        report.emit(Measurement(name: "reducer_apply", system: "journallog", unit: "entries/s", runs: reduce,
                                extra: [("entries", .i(n)), ("digest", .s(String(digest, radix: 16))),
                                        ("apply_ms", .n(medianOf(applyMs))), ("state_ms", .n(medianOf(stateMs))),
                                        ("apply_page_faults", .i(Int(medianOf(applyFaults)))),
                                        ("state_page_faults", .i(Int(medianOf(stateFaults)))),
                                        ("digest_ms_untimed", .n(medianOf(digestMs)))],
                                goal: "≥ 5M entries/s", met: medianOf(reduce) >= 5e6))

        return digest
    }
}

/// Minor page faults this thread has taken so far (each the first touch of a fresh page); a
/// helper thread's prefaults (`PageWarmer`) are not counted.
func minorFaults() -> Int {
    var u = rusage()
    getrusage(1, &u)  // RUSAGE_THREAD (Linux), which Glibc does not import
    return u.ru_minflt
}

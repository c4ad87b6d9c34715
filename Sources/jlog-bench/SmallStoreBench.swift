import CSQLite
import Foundation
import JournalLog
import JournalQuery
import ListModel

extension CompareBench {
    /// A small store is small: one family list of a few hundred entries, written one
    /// durable entry at a time as an app would, then its bytes on disk (st_blocks, what `du`
    /// counts) and the time to open it and show the list, beside SQLite's.
    func smallStore() {
        let n = counts.smallStoreEntries
        let zone = "List-family"
        let w = ListWorkload.generate(n, seed: 31, zone: zone)
        let sp = path("small.store"), dp = path("small.sqlite")
        do {
            if jlOn {
                var o = StoreOptions()
                o.durability = .always
                let s = try JournalStore.open(sp, options: o)
                for e in w.entries { try s.append(e) }
                try s.close()
            }
            if sqOn {
                let d = try SQLiteDB.create(path: dp, synchronous: "FULL")
                try w.insert(into: d, batchSize: 1)
                d.close()
            }
        } catch { fail("building the small store", error) }
        if jlOn {
            let all = treeSizes(sp)
            let segs = directorySizes(sp, suffix: ".seg")
            report.emit(Measurement(
                name: "small_store_bytes", system: "journallog", unit: "bytes on disk", runs: [Double(all.allocated)],
                extra: [("entries", .i(n)), ("file_bytes", .i(Int(all.size))), ("files", .i(all.files)),
                        ("segment_bytes", .i(Int(segs.size))), ("segment_allocated_bytes", .i(Int(segs.allocated))),
                        ("note", .s("every file of the store directory (segments, KEY, EPOCHS, index, LOCK), st_blocks × 512; the active segment's zero fill starts at 64 KiB and doubles"))],
                goal: "< 1 MiB", met: all.allocated < 1 << 20))
        }
        if sqOn {
            let files = [dp, dp + "-wal", dp + "-shm"].map(fileSizes)
            report.emit(Measurement(
                name: "small_store_bytes", system: "sqlite", unit: "bytes on disk", runs: [Double(files.reduce(0) { $0 + $1.allocated })],
                extra: [("entries", .i(n)), ("file_bytes", .i(Int(files.reduce(0) { $0 + $1.size }))),
                        ("note", .s("database, WAL and shared-memory files after closing, st_blocks × 512"))]))
        }
        // Open and show the list, interleaved: as a reader (a widget, `jlog show`), and as the
        // writer (an app at launch: recovery, a new token epoch in EPOCHS, close).
        var jl: [Double] = [], jlReader: [Double] = [], sq: [Double] = []
        for _ in 0..<max(counts.runs, 5) {
            if jlOn {
                jlReader.append(timed {
                    do {
                        let r = try StoreReader.open(sp)
                        _ = try ListQuery(reader: r).materialise(zone)
                    } catch { fail("reading the small store", error) }
                })
                jl.append(timed {
                    do {
                        var o = StoreOptions()
                        o.durability = .always
                        let s = try JournalStore.open(sp, options: o)
                        _ = try ListQuery(store: s).materialise(zone)
                        try s.close()
                    } catch { fail("opening the small store", error) }
                })
            }
            if sqOn {
                sq.append(timed {
                    do {
                        let d = try SQLiteDB(path: dp)
                        let st = try d.prepare("SELECT seq, zone, id, author, ts, hlc, op, item, text, after FROM journal WHERE zone=? ORDER BY seq")
                        sqlite3_bind_text(st, 1, zone, -1, sqliteTransient)
                        var r = ListReducer(zone: zone)
                        while sqlite3_step(st) == SQLITE_ROW { _ = r.apply(rowFullEntry(st)) }
                        _ = r.state()
                        sqlite3_finalize(st)
                        d.close()
                    } catch { fail("opening the small sqlite database", error) }
                })
            }
        }
        pair("small_store_open_read", unit: "ms", jl: jlReader.map { $0 * 1000 }, sq: sq.map { $0 * 1000 }, higherIsBetter: false,
             params: [("entries", .i(n))],
             jlExtra: [("path", .s("StoreReader.open (consistent segment set, scan, zone index) + ListQuery.materialise"))],
             sqExtra: [("path", .s("sqlite3_open + SELECT … WHERE zone=? ORDER BY seq → ListReducer + close"))])
        pair("small_store_open_write", unit: "ms", jl: jl.map { $0 * 1000 }, sq: sq.map { $0 * 1000 }, higherIsBetter: false,
             params: [("entries", .i(n))],
             jlExtra: [("path", .s("JournalStore.open (lock, recovery scan, zone index, new epoch: EPOCHS written and synced) + ListQuery.materialise + close (EPOCHS again)"))],
             sqExtra: [("path", .s("sqlite3_open + SELECT … WHERE zone=? ORDER BY seq → ListReducer + close"))])
        removeTree(sp)
        removeDB(dp)
    }
}

/// Sizes of every file under `dir`, recursively.
func treeSizes(_ dir: String) -> (size: Int64, allocated: Int64, files: Int) {
    var total: (Int64, Int64, Int) = (0, 0, 0)
    guard let e = FileManager.default.enumerator(atPath: dir) else { return total }
    while let rel = e.nextObject() as? String {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir + "/" + rel, isDirectory: &isDir), !isDir.boolValue else { continue }
        let s = fileSizes(dir + "/" + rel)
        total = (total.0 + s.size, total.1 + s.allocated, total.2 + 1)
    }
    return total
}

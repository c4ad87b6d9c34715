import CSQLite
import Foundation
import JournalLog

/// Appends `entries` in atomic batches of `batchSize`, unsynced (how the benchmark builds
/// stores), handing each batch and its sequences to `each`.
func appendInBatches(_ store: JournalStore, _ entries: ArraySlice<JournalEntry>, batchSize: Int,
                     each: (ClosedRange<SequenceNumber>, ArraySlice<JournalEntry>) -> Void = { _, _ in }) throws {
    var i = entries.startIndex
    while i < entries.endIndex {
        let batch = entries[i..<min(i + batchSize, entries.endIndex)]
        each(try store.append(batch: Array(batch), durability: Durability.none), batch)
        i += batchSize
    }
}

/// The change feed: the last 100 changes of one zone in a 10-zone store, against an
/// indexed SQLite query, at two history lengths to show the cost does not grow with history;
/// and `changedZones` over many zones.
extension CompareBench {
    /// Entries for a 10-zone store where zone "Z0" holds `hot` entries and the other nine share as many.
    private static func zonedEntries(hot: Int, seed: UInt64) -> EntrySet {
        var set = EntrySet.generate(hot * 2, seed: seed)
        for i in set.entries.indices { set.entries[i].zone = i % 2 == 0 ? "Z0" : "Z\(1 + (i / 2) % 9)" }
        return set
    }

    func feed() {
        for hot in [counts.feedHotEntries / 10, counts.feedHotEntries] {
            lastChanges(hot: hot)
        }
        changedZonesMany()
    }

    private func lastChanges(hot: Int) {
        let sp = path("feed-\(hot).store"), dp = path("feed-\(hot).sqlite")
        let set = Self.zonedEntries(hot: hot, seed: 11)
        let entries = set.entries
        let bs = counts.batchSize
        log("  last_100_changes: building a 10-zone store of \(entries.count) entries (\(hot) in the measured zone)")
        var hotSeqs: [SequenceNumber] = []
        var store: JournalStore? = nil
        var db: SQLiteDB? = nil
        do {
            if jlOn {
                let s = openStore(sp, durability: .none)
                try appendInBatches(s, entries[...], batchSize: bs) { range, batch in
                    for (seq, e) in zip(range, batch) where e.zone == "Z0" { hotSeqs.append(seq) }
                }
                try s.close()
                store = openStore(sp, durability: .always)
            }
            if sqOn {
                let d = try SQLiteDB.create(path: dp, synchronous: "NORMAL")
                try insertAll(d, set, batchSize: bs)
                try d.exec("PRAGMA wal_checkpoint(TRUNCATE)")
                db = d
            }
        } catch { fail("building the feed store", error) }

        // Both sides: the entries of Z0 after the one 101 from the end, i.e. its last 100 changes.
        let iterations = 200
        var jl: [Double] = [], sq: [Double] = []
        let jlPosition = hotSeqs.count > 100 ? hotSeqs[hotSeqs.count - 101] : 0
        let token = store.flatMap { try? $0.zoneToken("Z0", position: jlPosition) }
        var sqPosition: Int64 = 0
        if let d = db { sqPosition = (try? d.scalar("SELECT seq FROM journal WHERE zone='Z0' ORDER BY seq DESC LIMIT 1 OFFSET 100")) ?? 0 }
        let select = db.flatMap { try? $0.prepare("SELECT seq, zone, id, author, ts, hlc, op, item, text, after FROM journal WHERE zone=? AND seq>? ORDER BY seq LIMIT 101") }
        var got = 0
        for r in 0..<counts.runs {
            log("  last_100_changes (\(hot)) run \(r + 1)/\(counts.runs)")
            if let store, let token {
                let t = timed {
                    for _ in 0..<iterations {
                        do { got = try store.changes(in: "Z0", since: token, limit: 100).entries.count } catch { fail("changes", error) }
                    }
                }
                jl.append(t / Double(iterations) * 1e3)
                if got != 100 { fail("last_100_changes", SQLiteError(code: 0, message: "journallog returned \(got) entries, not 100")) }
            }
            if let select {
                let t = timed {
                    for _ in 0..<iterations {
                        sqlite3_reset(select)
                        sqlite3_bind_text(select, 1, "Z0", -1, sqliteTransient)
                        sqlite3_bind_int64(select, 2, sqPosition)
                        var n = 0
                        while sqlite3_step(select) == SQLITE_ROW {
                            _ = rowEntry(select)
                            n += 1
                        }
                        got = n
                    }
                }
                sq.append(t / Double(iterations) * 1e3)
                if got != 100 { fail("last_100_changes", SQLiteError(code: 0, message: "sqlite returned \(got) rows, not 100")) }
            }
        }
        if let select { sqlite3_finalize(select) }
        db?.close()
        if let store { closeStore(store) }
        pair(hot == counts.feedHotEntries ? "last_100_changes" : "last_100_changes_short_history", unit: "ms per call", jl: jl, sq: sq,
             higherIsBetter: false,
             params: [("zone_entries", .i(hot)), ("store_entries", .i(entries.count)), ("zones", .i(10)), ("iterations", .i(iterations))],
             sqExtra: [("query", .s("WHERE zone=? AND seq>? ORDER BY seq LIMIT 101 on index (zone, seq)"))],
             goal: hot == counts.feedHotEntries ? "journallog ≥ sqlite and < 1 ms" : nil,
             met: hot == counts.feedHotEntries ? { ratio, median in ratio >= 1 && median < 1 } : nil)
        removeTree(sp)
        removeDB(dp)
    }

    private func changedZonesMany() {
        let zones = counts.feedZones
        let sp = path("zones.store")
        guard jlOn else { return }
        log("  changed_zones: a store of \(zones) zones")
        var set = EntrySet.generate(zones * 2, seed: 12).entries
        for i in set.indices { set[i].zone = "List-\(i % zones)" }
        let store = openStore(sp, durability: .none)
        do {
            var batch: [JournalEntry] = []
            for e in set {
                batch.append(e)
                if batch.count == counts.batchSize {
                    try store.append(batch: batch, durability: Durability.none)
                    batch.removeAll()
                }
            }
            if !batch.isEmpty { try store.append(batch: batch, durability: Durability.none) }
            try store.sync()
        } catch { fail("building the zones store", error) }
        var all: [Double] = [], recent: [Double] = []
        for _ in 0..<counts.runs {
            do {
                var token: FeedToken? = nil
                all.append(timed { token = (try? store.changedZones(since: nil))?.token } * 1e3)
                for k in 0..<10 { try store.append(set[k], durability: Durability.none) }  // duplicates: no change
                try store.append(JournalEntry(id: .random(), zone: "List-7", author: "ann", wallTime: 0, clock: HybridTime(rawValue: 0),
                                              operation: .rename(name: "x")), durability: .always)
                var n = 0
                recent.append(timed { n = (try? store.changedZones(since: token))?.changed.count ?? -1 } * 1e3)
                if n != 1 { fail("changed_zones", SQLiteError(code: 0, message: "expected 1 changed zone, got \(n)")) }
            } catch { fail("changed_zones", error) }
        }
        closeStore(store)
        report.emit(Measurement(name: "changed_zones_all", system: "journallog", unit: "ms per call", runs: all,
                                extra: [("zones", .i(zones)), ("token", .s("nil: every zone"))]))
        report.emit(Measurement(name: "changed_zones_since", system: "journallog", unit: "ms per call", runs: recent,
                                extra: [("zones", .i(zones)), ("changed", .i(1))]))
        removeTree(sp)
    }
}


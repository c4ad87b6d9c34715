import CSQLite
import Foundation
import JournalLog
import JournalQuery
import ListModel

/// Compaction (issue: "compacting 1M entries, against the equivalent DELETEs followed by a
/// checkpoint"): the list compactor on a one-zone store, against SQLite deleting the same entries
/// in one transaction and checkpointing, interleaved run by run on fresh copies (both are
/// destructive); then opening the zone from the snapshot the compactor wrote plus 1,000 new entries.
extension CompareBench {
    /// A one-zone store of `entries`, built with durability `.none` in batches, closed and reopened
    /// with `.always` (as an application would find it). `segmentBytes` keeps most of it sealed.
    func buildListStore(_ p: String, _ entries: ArraySlice<JournalEntry>, segmentBytes: Int,
                        each: (ClosedRange<SequenceNumber>, ArraySlice<JournalEntry>) -> Void = { _, _ in }) -> JournalStore {
        var o = StoreOptions(durability: .none, segmentSize: segmentBytes)
        do {
            let s = try JournalStore.open(p, options: o)
            try appendInBatches(s, entries, batchSize: counts.batchSize, each: each)
            try s.close()
            o.durability = .always
            return try JournalStore.open(p, options: o)
        } catch { fail("building the compaction store", error) }
    }

    /// The same history as rows, checkpointed into the main file.
    func buildListDB(_ p: String, _ w: ListWorkload) -> SQLiteDB {
        do {
            let d = try SQLiteDB.create(path: p, synchronous: "NORMAL")
            try w.insert(into: d, batchSize: counts.batchSize)
            try d.exec("PRAGMA wal_checkpoint(TRUNCATE)")
            return d
        } catch { fail("building the compaction database", error) }
    }

    /// The compaction workload's `now`: the last entry's wall time + 15 days, so every lifecycle
    /// finished in the history is older than the 14-day cutoff.
    static func compactionNow(_ history: ArraySlice<JournalEntry>) -> Int64 {
        history.last!.wallTime + 15 * 86_400_000
    }

    /// What the list rules purge and replace in `history` (one zone) as of `now`, decided once on a
    /// reference store built as `buildListStore` builds one (the same on every fresh copy). SQLite
    /// deletes and updates the same entries:
    /// JournalLog sequence → workload index → SQLite rowid (index + 1).
    func decidePurge(_ history: ArraySlice<JournalEntry>, zone: String, now nowMs: Int64, name: String) -> ListPurge {
        let n = history.count
        let rp = path(name + "-ref.store")
        var seqs: [SequenceNumber] = []
        seqs.reserveCapacity(n)
        let ref = buildListStore(rp, history, segmentBytes: counts.compactionSegmentBytes) { range, _ in seqs.append(contentsOf: range) }
        guard seqs.count == n, let info = ref.zone(zone) else {
            fail("compaction", SQLiteError(code: 0, message: "the store took \(seqs.count) sequences for \(n) entries"))
        }
        // Every entry is old, so the compactor seals the active segment first (COMPACTION.md §1).
        let sealedBefore = ref.sealedThrough
        let sealed: SequenceNumber
        do { sealed = try ref.sealActiveSegment() } catch { fail("sealActiveSegment", error) }
        let mark = min(sealed, info.lastChange)
        let sealedEntries = seqs.lazy.filter { $0 <= sealedBefore }.count
        let segmentFiles = directorySizes(rp, suffix: ".seg").files
        var read: [(SequenceNumber, JournalEntry)] = []
        do { read = try ListQuery(store: ref).entries(zone).entries } catch { fail("ListQuery.entries", error) }
        let plan = ListRetention(now: nowMs, mark: mark).plan(read)
        let replacing = Dictionary(uniqueKeysWithValues: plan.rewrite.map { ($0.sequence, $0.entry) })
        read = []
        var storeCompact = CompactionReport()
        do {
            try ref.setLowWaterMark(zone, to: mark)
            storeCompact = try ref.compact(purging: plan.purge, replacing: replacing)
            try ref.close()
        } catch { fail("compact(purging:)", error) }
        removeTree(rp)
        // SQLite rowids of ascending sequences (sequence → workload index → rowid): one merge walk.
        func rowidsOf(_ sequences: [SequenceNumber], _ what: String) -> [Int64] {
            var out: [Int64] = []
            out.reserveCapacity(sequences.count)
            var k = 0
            for s in sequences {
                while k < n && seqs[k] < s { k += 1 }
                guard k < n, seqs[k] == s else { fail("compaction", SQLiteError(code: 0, message: "\(what) sequence \(s) is no entry")) }
                out.append(Int64(k + 1))
            }
            return out
        }
        return ListPurge(chosen: plan.purge, replacing: replacing, mark: mark,
                         rowids: rowidsOf(plan.purge, "purged"),
                         placeRows: Array(zip(rowidsOf(plan.rewrite.map(\.sequence), "replaced"), plan.rewrite.map(\.entry))),
                         sealedEntries: sealedEntries, segmentFiles: segmentFiles, storeCompact: storeCompact)
    }

    func compaction() {
        let n = counts.compactionEntries, runs = counts.compactionRuns, segmentBytes = counts.compactionSegmentBytes
        let zone = ListWorkload.zone, tailCount = 1_000
        log("  compaction: generating \(n) + \(tailCount) list entries")
        // The same history as `materialise` (same seed); the 1,000 entries after it are the tail
        // appended once the compactor has run.
        let all = ListWorkload.generate(n + tailCount, seed: ListWorkload.seed, zone: zone)
        var rows = all
        rows.entries.removeLast(tailCount); rows.ids.removeLast(tailCount)
        rows.items.removeLast(tailCount); rows.afters.removeLast(tailCount)
        let history = all.entries[..<n], tail = Array(all.entries[n...])
        let nowMs = Self.compactionNow(history)

        log("  compaction: reference store, retention decision")
        let decided = decidePurge(history, zone: zone, now: nowMs, name: "compaction")
        let chosen = decided.chosen, replacing = decided.replacing, mark = decided.mark
        let rowids = decided.rowids, sealedEntries = decided.sealedEntries
        log("  compaction: \(chosen.count) of \(n) entries to purge, \(replacing.count) to replace by placements (\(sealedEntries) in sealed segments)")

        var jl: [Double] = [], sq: [Double] = [], jlRewrite: [Double] = []
        var jlReport: ListCompactionReport? = nil
        var jlBefore: (size: Int64, allocated: Int64, files: Int) = (0, 0, 0), jlAfter = jlBefore
        var snapBytes: Int64 = 0, histBytes: Int64 = 0
        var kept: JournalStore? = nil, keptPath = ""
        var sqDelete: [Double] = [], sqCheckpoint: [Double] = []
        var sqBefore: Int64 = 0, sqAfter: Int64 = 0, walPeak: Int64 = 0, freePages: Int64 = 0, pageCount: Int64 = 0
        var keptDB: SQLiteDB? = nil, keptDBPath = ""
        // Peak memory and bytes written of each run's whole job, on both sides.
        var jlCost: [StepCost] = [], sqCost: [StepCost] = []
        var jlAhead: [Double] = []
        var aheadReport: ListCompactionReport? = nil
        for r in 0..<runs {
            log("  compaction run \(r + 1)/\(runs)")
            // A: JournalLog, a fresh store each run.
            if jlOn {
                let sp = path("compaction-\(r).store")
                let s = buildListStore(sp, history, segmentBytes: segmentBytes)
                jlBefore = directorySizes(sp, suffix: ".seg")
                var t = 0.0
                jlCost.append(StepCost.of {
                    t = timed {
                        do { jlReport = try ListCompactor(query: ListQuery(store: s)).run(now: nowMs) } catch { fail("ListCompactor.run", error) }
                    }
                })
                jlAfter = directorySizes(sp, suffix: ".seg")
                snapBytes = directorySizes(sp + "/" + SnapshotDirectory.name, suffix: ".snap").size
                histBytes = directorySizes(sp + "/" + SnapshotDirectory.name, suffix: ".hist").size
                if jlReport?.storage.entriesPurged != chosen.count || jlReport?.zones.first?.chosen != chosen.count
                    || jlReport?.storage.entriesReplaced != replacing.count {
                    fail("ListCompactor.run", SQLiteError(code: 0, message: "purged \(jlReport?.storage.entriesPurged ?? 0) and replaced \(jlReport?.storage.entriesReplaced ?? 0), the reference chose \(chosen.count) and \(replacing.count)"))
                }
                jl.append(t * 1e3)
                if r == runs - 1 {
                    kept = s
                    keptPath = sp
                } else {
                    closeStore(s)
                    removeTree(sp)
                }
            }

            // A'': the same job with the query's pages read ahead on a helper thread (what a
            // caller that opts in gets; the library's default reads on the calling thread).
            if jlOn {
                let sp = path("compaction-ahead-\(r).store")
                let s = buildListStore(sp, history, segmentBytes: segmentBytes)
                let t = timed { do { aheadReport = try ListCompactor(query: Self.readingAhead(s)).run(now: nowMs) } catch { fail("ListCompactor.run, read ahead", error) } }
                jlAhead.append(t * 1e3)
                closeStore(s)
                removeTree(sp)
            }

            // A': JournalLog's storage step alone (the equivalent of SQLite's DELETEs): the same
            // entries, given, on a fresh store whose mark is already raised.
            if jlOn {
                let sp = path("compaction-rewrite-\(r).store")
                let s = buildListStore(sp, history, segmentBytes: segmentBytes)
                do {
                    try s.sealActiveSegment()
                    try s.setLowWaterMark(zone, to: mark)
                    var rep = CompactionReport()
                    let t = try timed { rep = try s.compact(purging: chosen, replacing: replacing) }
                    guard rep.entriesPurged == chosen.count, rep.entriesReplaced == replacing.count else {
                        fail("compact(purging:replacing:)", SQLiteError(code: 0, message: "purged \(rep.entriesPurged) of \(chosen.count), replaced \(rep.entriesReplaced) of \(replacing.count)"))
                    }
                    jlRewrite.append(t * 1e3)
                } catch { fail("compact(purging:)", error) }
                closeStore(s)
                removeTree(sp)
            }

            // B: SQLite, a fresh database each run: one transaction of prepared single-row
            // DELETEs by rowid and UPDATEs for the placements, then a checkpoint that truncates
            // the WAL.
            if sqOn {
                let dp = path("compaction-\(r).sqlite")
                let db = buildListDB(dp, rows)
                sqBefore = fileSizes(dp).size + fileSizes(dp + "-wal").size
                do {
                    var wal: Int64 = 0
                    var td = 0.0, tc = 0.0
                    sqCost.append(try StepCost.of {
                        td = try timed { try deletePurged(db, decided) }
                        wal = fileSizes(dp + "-wal").size
                        tc = try timed { try db.exec("PRAGMA wal_checkpoint(TRUNCATE)") }
                    })
                    let left = try db.scalar("SELECT count(*) FROM journal")
                    if left != Int64(n - rowids.count) {
                        fail("sqlite delete", SQLiteError(code: 0, message: "\(left) rows left, expected \(n - rowids.count)"))
                    }
                    walPeak = wal
                    freePages = try db.scalar("PRAGMA freelist_count")
                    pageCount = try db.scalar("PRAGMA page_count")
                    sqDelete.append(td * 1e3)
                    sqCheckpoint.append(tc * 1e3)
                    sq.append((td + tc) * 1e3)
                } catch { fail("sqlite delete", error) }
                sqAfter = fileSizes(dp).size + fileSizes(dp + "-wal").size
                if r == runs - 1 {
                    keptDB = db
                    keptDBPath = dp
                } else {
                    db.close()
                    removeDB(dp)
                }
            }
        }

        let mb = { (b: Int64) in JSON.n(Double(b) / 1e6) }
        let params: [(String, JSON)] = [("entries", .i(n)), ("entries_purged", .i(chosen.count)), ("entries_replaced", .i(replacing.count)),
                                        ("purged_fraction", .n(Double(chosen.count) / Double(n))),
                                        ("now", .s("last entry's wall time + 15 days (retention 14 days)"))]
        let st = jlReport?.storage ?? decided.storeCompact
        pair("compaction", unit: "ms", jl: jl, sq: sq, higherIsBetter: false, params: params,
             jlExtra: [
                ("what", .s("ListCompactor.run(now:): read the zone, ListRetention, history + snapshot, low-water mark, rewrite sealed segments (each .cleaned, fsync, .swap, rename)")),
                ("segment_size", .i(segmentBytes)), ("segments", .i(decided.segmentFiles)),
                ("sealed_fraction_before_the_seal", .n(Double(sealedEntries) / Double(n))), ("low_water_mark", .i(Int(mark))),
                ("segments_examined", .i(st.segmentsExamined)), ("segments_rewritten", .i(st.segmentsRewritten)),
                ("entries_purged_by_store", .i(st.entriesPurged)), ("entries_replaced_by_store", .i(st.entriesReplaced)), ("entries_kept_above_mark", .i(st.entriesKept)),
                ("bytes_before", .i(Int(jlBefore.size))), ("bytes_after", .i(Int(jlAfter.size))),
                ("mb_before", mb(jlBefore.size)), ("mb_after", mb(jlAfter.size)),
                ("rewritten_bytes_before", .i(Int(st.bytesBefore))), ("rewritten_bytes_after", .i(Int(st.bytesAfter))),
                ("snapshot_bytes", .i(Int(snapBytes))), ("history_bytes", .i(Int(histBytes))),
                ("phases_ms", .o((jlReport?.phaseMillis ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, JSON.n($0.value)) })),
                ("read_ahead", .s("off (the library's default, ListQuery.helperThreads); the same job with it on:")),
                ("read_ahead_median_ms", .n(medianOf(jlAhead))), ("read_ahead_runs", .a(jlAhead.map { JSON.n($0) })),
                ("read_ahead_ratio", .n(medianOf(sq) / max(medianOf(jlAhead), 1e-9))),
                ("read_ahead_phases_ms", .o((aheadReport?.phaseMillis ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, JSON.n($0.value)) })),
             ] + StepCost.fields(jlCost) + Self.bytesWritten(jlCost) + [("peak_rss_note", .s(Self.peakNote))],
             sqExtra: [
                ("what", .s("BEGIN; prepared DELETE FROM journal WHERE seq=? per purged rowid; COMMIT; PRAGMA wal_checkpoint(TRUNCATE)")),
                ("config", .s("WAL, synchronous=NORMAL, default cache; the checkpoint syncs WAL and database")),
                ("delete_ms", .n(medianOf(sqDelete))), ("delete_ms_runs", .a(sqDelete.map { .n($0) })),
                ("checkpoint_ms", .n(medianOf(sqCheckpoint))), ("checkpoint_ms_runs", .a(sqCheckpoint.map { .n($0) })),
                ("wal_bytes_before_checkpoint", .i(Int(walPeak))),
                ("bytes_before", .i(Int(sqBefore))), ("bytes_after", .i(Int(sqAfter))),
                ("mb_before", mb(sqBefore)), ("mb_after", mb(sqAfter)),
                ("freelist_pages_after", .i(Int(freePages))), ("page_count_after", .i(Int(pageCount))),
                ("note", .s("SQLite does not shrink the file without VACUUM: freed pages go to the freelist")),
             ] + StepCost.fields(sqCost) + Self.bytesWritten(sqCost) + [("peak_rss_note", .s(Self.peakNote))],
             goal: "whole job ≥ 1.0 × SQLite's DELETE + checkpoint", met: { ratio, _ in ratio >= 1.0 })

        pair("compaction_rewrite", unit: "ms", jl: jlRewrite, sq: sq, higherIsBetter: false, params: params,
             jlExtra: [("what", .s("JournalStore.compact(purging:) with the chosen entries, mark already raised: rewrite the sealed segments (.cleaned, fsync, .swap, rename), one atomic run"))],
             sqExtra: [("what", .s("the same DELETEs + wal_checkpoint(TRUNCATE) runs as the compaction pair"))],
             goal: "storage step ≥ 1.5 × SQLite's DELETE + checkpoint", met: { ratio, _ in ratio >= 1.5 })

        // SQLite's way to give the space back, once (not part of the pair).
        if let db = keptDB {
            var vacuumed: Int64 = 0
            do {
                let t = try timed {
                    try db.exec("VACUUM")
                    try db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
                } * 1e3
                vacuumed = fileSizes(keptDBPath).size + fileSizes(keptDBPath + "-wal").size
                report.emit(Measurement(name: "vacuum_after_delete", system: "sqlite", unit: "ms", runs: [t],
                                        extra: [("entries_left", .i(n - rowids.count)), ("bytes_before", .i(Int(sqAfter))),
                                                ("bytes_after", .i(Int(vacuumed))), ("mb_after", mb(vacuumed)),
                                                ("what", .s("VACUUM + PRAGMA wal_checkpoint(TRUNCATE) after the DELETEs, one run"))]))
            } catch { fail("sqlite vacuum", error) }
            db.close()
            removeDB(keptDBPath)
        }

        // Opening the zone after compaction: the compactor's snapshot plus 1,000 new entries.
        guard let s = kept else { return }
        memory(of: s, zone: zone, compaction: jlCost, sqlite: sqCost)
        do {
            let (open, m, snap) = try openAfterTail(s, zone: zone, tail: tail)
            report.emit(Measurement(name: "open_with_snapshot_after_compaction", system: "journallog", unit: "ms", runs: open,
                                    extra: [("history_entries", .i(n)), ("entries_purged", .i(chosen.count)),
                                            ("tail_entries", .i(m.replayed)), ("snapshot_sequence", .i(Int(snap.sequence))),
                                            ("snapshot_bytes", .i(Int(fileSizes(snap.path).size))),
                                            ("visible_items", .i(m.state.items.count)), ("snapshot_records", .i(m.reducer.recordCount)),
                                            ("what", .s("ListQuery.materialise after ListCompactor.run and 1,000 more entries of the workload"))],
                                    goal: "< 20 ms", met: medianOf(open) < 20))
            secondRun(s, zone: zone, path: keptPath, now: nowMs + 86_400_000)
            try s.close()
        } catch { fail("open after compaction", error) }
        removeTree(keptPath)
    }

    /// The compaction's peak memory beside that of materialising the list it keeps (the issue's
    /// "compaction ≤ 2× the memory of the list state it keeps"), and SQLite's for its job.
    func memory(of s: JournalStore, zone: String, compaction: [StepCost], sqlite: [StepCost]) {
        var m: MaterialisedList? = nil
        let cost = StepCost.of { do { m = try ListQuery(store: s).materialise(zone) } catch { fail("materialise", error) } }
        let kept = cost.peakAboveStart.map { Double($0) / 1e6 } ?? .nan
        let job = compaction.compactMap(\.peakAboveStart).max().map { Double($0) / 1e6 } ?? .nan
        let ratio = job / kept
        report.emit(Measurement(name: "compaction_memory", system: "journallog", unit: "MB above start", runs: [job],
                                extra: [("materialise_kept_list_mb", .n(kept)), ("ratio", .n(ratio)),
                                        ("visible_items", .i(m?.state.items.count ?? 0)), ("records", .i(m?.reducer.recordCount ?? 0)),
                                        ("sqlite_compaction_mb", sqlite.compactMap(\.peakAboveStart).max().map { .n(Double($0) / 1e6) } ?? .null),
                                        ("what", .s("peak RSS above the start of the step: ListCompactor.run's whole job (the highest run), and ListQuery.materialise of the list it keeps (from its snapshot), in this process after the runs")),
                                        ("peak_rss_note", .s(Self.peakNote))],
                                goal: "compaction ≤ 2 × materialising the list it keeps", met: ratio <= 2))
    }

    static let peakNote = "the highest over the runs, in this process: VmHWM after the job with the high-water mark reset before it (/proc/self/clear_refs); above_start: less the RSS when it began (the process already holds the workload)"

    /// `bytes_written`: the highest of the runs' bytes handed to write calls.
    static func bytesWritten(_ costs: [StepCost]) -> [(String, JSON)] {
        costs.compactMap(\.bytesWritten).max().map { [("bytes_written", .i(Int($0)))] } ?? []
    }

    /// A second compaction of the compacted store a day later, after the tail: what it writes
    /// should follow what it purges, not the history.
    private func secondRun(_ s: JournalStore, zone: String, path: String, now: Int64) {
        let dir = path + "/" + SnapshotDirectory.name
        let histBefore = directorySizes(dir, suffix: ".hist").size
        var second: ListCompactionReport? = nil
        var ms = 0.0
        let cost = StepCost.of {
            ms = timed {
                do { second = try ListCompactor(query: ListQuery(store: s)).run(now: now) } catch { fail("ListCompactor.run, a day later", error) }
            } * 1e3
        }
        guard let st = second?.storage else { return }
        let purged = st.entriesPurged + st.entriesReplaced
        let histAdded = directorySizes(dir, suffix: ".hist").size - histBefore
        var extra: [(String, JSON)] = [
            ("entries_purged", .i(st.entriesPurged)), ("entries_replaced", .i(st.entriesReplaced)),
            ("segments_rewritten", .i(st.segmentsRewritten)),
            ("rewritten_bytes_before", .i(Int(st.bytesBefore))), ("rewritten_bytes_after", .i(Int(st.bytesAfter))),
            ("history_bytes_added", .i(Int(histAdded))),
            // The run's snapshot: a delta against the first run's whole one (renamed `.base`,
            // not rewritten), or a whole `.snap` when the delta would not be small (SNAPSHOT.md §6).
            ("snapshot_bytes", .i(Int(directorySizes(dir, suffix: ".snap").size))),
            ("snapshot_delta_bytes", .i(Int(directorySizes(dir, suffix: ".delta").size))),
            ("snapshot_base_bytes", .i(Int(directorySizes(dir, suffix: ".base").size))),
        ]
        extra += Self.bytesWritten([cost])
        if let written = cost.bytesWritten {
            extra.append(("bytes_written_per_entry_purged", .n(Double(written) / Double(max(1, purged)))))
        }
        extra += StepCost.fields([cost])
        // Opening the list now reads the delta with its base (SNAPSHOT.md §6.2).
        var from = "none"
        let opens = (0..<3).map { _ in
            timed {
                do { from = try ListQuery(store: s).materialise(zone).snapshot?.kind.rawValue ?? "replay" } catch { fail("materialise after the second run", error) }
            } * 1e3
        }
        extra += [("materialise_after_ms", .n(medianOf(opens))), ("materialise_after_from", .s(from))]
        extra.append(("what", .s("ListCompactor.run(now:) again on the compacted store one day later, after the 1,000-entry tail; bytes_written: bytes handed to write calls (/proc/self/io wchar): segments, history pieces and snapshot; materialise_after_ms: ListQuery.materialise of the list after it (median of 3), from the kind of file named")))
        report.emit(Measurement(name: "compaction_second_run", system: "journallog", unit: "ms", runs: [ms], extra: extra))
    }
}

/// A list as a family uses it: items are added (at the top or after another item), bought or
/// deleted within days, occasionally the list is renamed or recoloured; entries arrive about a
/// minute apart, so a million of them span about two years. The state stays small; only the
/// history grows.
struct LifecycleWorkload {
    var entries: [JournalEntry] = []

    static func generate(_ n: Int, seed: UInt64, zone: String) -> LifecycleWorkload {
        var g = SplitMix64(seed: seed)
        var w = LifecycleWorkload()
        w.entries.reserveCapacity(n)
        var open: [CompactID] = []
        var clock = HybridClock()
        var wall: Int64 = 1_735_689_600_000  // 2025-01-01
        func uuid() -> CompactID {
            CompactID(uuidHigh: (g.next() & ~0xF000) | 0x4000, low: (g.next() & ~(0xC000 << 48)) | (0x8000 << 48))
        }
        for i in 0..<n {
            wall += Int64(g.next() % 120_000)
            let roll = g.next() % 100
            let op: JournalCodec.EntryOperation
            if open.count < 20 || (roll < 47 && open.count < 400) {
                let item = uuid()
                let after = open.isEmpty || g.next() % 10 < 6 ? nil : open[Int(g.next() % UInt64(open.count))]
                open.append(item)
                op = .add(item: item, text: EntrySet.texts[Int(g.next() % UInt64(EntrySet.texts.count))], after: after)
            } else if roll < 95 {
                let k = Int(g.next() % UInt64(open.count))
                let item = open.remove(at: k)
                op = roll < 85 ? .markOff(item: item) : .delete(item: item)
            } else if roll < 98 {
                op = .rename(name: "Weekly \(i % 7)")
            } else {
                op = .recolour(colour: ["yellow", "red", "blue"][i % 3])
            }
            w.entries.append(JournalEntry(id: uuid(), zone: zone, author: EntrySet.authors[Int(g.next() % 3)], wallTime: wall,
                                          clock: clock.tick(wallMillis: wall), operation: op))
        }
        return w
    }
}

extension CompareBench {
    /// Appends `tail`, then times `materialise`, which must start from a snapshot and replay
    /// exactly the tail.
    func openAfterTail(_ s: JournalStore, zone: String, tail: [JournalEntry]) throws -> ([Double], MaterialisedList, SnapshotFile) {
        try s.append(batch: tail, durability: .always)
        var open: [Double] = []
        var m: MaterialisedList? = nil
        for _ in 0..<counts.runs {
            open.append(timed {
                do { m = try ListQuery(store: s).materialise(zone) } catch { fail("materialise", error) }
            } * 1e3)
        }
        guard let m, let snap = m.snapshot, m.replayed == tail.count else {
            fail("materialise", SQLiteError(code: 0, message: "did not start from a snapshot plus the \(tail.count)-entry tail"))
        }
        return (open, m, snap)
    }

    /// Opening a list from a snapshot plus 1,000 entries, after a long history, with and without
    /// compaction: the "< 20 ms whatever the history's length" on a list whose items get
    /// bought (the compactor keeps the state to what is open plus the last two weeks).
    func lifecycleOpen() {
        let n = counts.compactionEntries, zone = "List-family", tailCount = 1_000
        log("  lifecycle: generating \(n) + \(tailCount) entries of a family list")
        // The generator is sequential, so every shorter history and its tail are a prefix of this.
        let longest = LifecycleWorkload.generate(n + tailCount, seed: 33, zone: zone).entries
        // Compacted at three history lengths (the goal: the same cost whatever the length), and
        // the longest never compacted.
        var lines: [(String, Int, Bool)] = [("open_with_snapshot_lifecycle_uncompacted", n, false)]
        for size in [n / 20, n / 5, n] { lines.append(("open_with_snapshot_lifecycle_compacted", size, true)) }
        if !jlOn { lines = [] }
        for (name, size, compact) in lines {
            let all = longest[..<(size + tailCount)]
            let history = all[..<size], tail = Array(all[size...])
            let now = all[size - 1].wallTime
            let p = path("lifecycle-\(compact)-\(size).store")
            do {
                let s = buildListStore(p, history, segmentBytes: counts.compactionSegmentBytes)
                let q = ListQuery(store: s)
                var purged = 0
                if compact {
                    purged = try ListCompactor(query: q).run(now: now).storage.entriesPurged
                    // A history shorter than the retention has nothing to purge and gets no snapshot from it.
                    if purged == 0 { _ = try q.writeSnapshot(zone) }
                } else {
                    _ = try q.writeSnapshot(zone)
                }
                let (open, m, snap) = try openAfterTail(s, zone: zone, tail: tail)
                let span = Double(all[size - 1].wallTime - all[0].wallTime) / 86_400_000
                report.emit(Measurement(name: name, system: "journallog", unit: "ms", runs: open,
                                        extra: [("history_entries", .i(size)), ("history_days", .n(span)), ("entries_purged", .i(purged)),
                                                ("tail_entries", .i(m.replayed)), ("snapshot_bytes", .i(Int(fileSizes(snap.path).size))),
                                                ("snapshot_records", .i(m.reducer.recordCount)), ("visible_items", .i(m.state.items.count)),
                                                ("what", .s(compact
                                                    ? "a family list (items bought or deleted within days), compacted as of its last entry (14-day retention), then materialise from the compactor's snapshot + 1,000 entries"
                                                    : "the same list, never compacted: materialise from a snapshot at its last entry + 1,000 entries"))],
                                        goal: compact ? "< 20 ms" : nil, met: compact ? medianOf(open) < 20 : nil))
                try s.close()
            } catch { fail("lifecycle open", error) }
            removeTree(p)
        }
    }
}

/// SQLite's side of the compaction, without its checkpoint: one transaction of prepared
/// single-row DELETEs by rowid, and UPDATEs that turn the replaced rows into placements.
/// `locked` runs once the first DELETE holds the writer's lock (beside another writer, what came
/// before it was a wait).
func deletePurged(_ db: SQLiteDB, _ purge: ListPurge, locked: () -> Void = {}) throws {
    let del = try db.prepare("DELETE FROM journal WHERE seq = ?")
    let upd = try db.prepare("UPDATE journal SET op = 9, item = ?, text = NULL, after = ? WHERE seq = ?")
    let begin = try db.prepare("BEGIN"), commit = try db.prepare("COMMIT")
    defer { sqlite3_finalize(del); sqlite3_finalize(upd); sqlite3_finalize(begin); sqlite3_finalize(commit) }
    func blob(_ i: Int32, _ v: CompactID?) {
        guard let v = v?.uuidHalves else { sqlite3_bind_null(upd, i); return }
        var b = (v.high.bigEndian, v.low.bigEndian)
        withUnsafeBytes(of: &b) { _ = sqlite3_bind_blob(upd, i, $0.baseAddress, 16, sqliteTransient) }
    }
    stepInsertless(db, begin)
    for (k, id) in purge.rowids.enumerated() {
        sqlite3_bind_int64(del, 1, id)
        stepInsertless(db, del)
        if k == 0 { locked() }
    }
    for (id, e) in purge.placeRows {
        guard case .place(let item, let after) = e.operation else { continue }
        blob(1, item)
        blob(2, after)
        sqlite3_bind_int64(upd, 3, id)
        stepInsertless(db, upd)
    }
    stepInsertless(db, commit)
}

/// What `decidePurge` decided on its reference store, and what it measured there.
struct ListPurge: Sendable {
    var chosen: [SequenceNumber]
    var replacing: [SequenceNumber: JournalEntry]
    var mark: SequenceNumber
    /// SQLite's rows of `chosen`, and of the replaced entries with their placements.
    var rowids: [Int64]
    var placeRows: [(Int64, JournalEntry)]
    /// How the reference store lay before the seal.
    var sealedEntries: Int
    var segmentFiles: Int
    var storeCompact: CompactionReport
}

import Foundation
import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// A seeded, deterministic simulation (issue 5): appends (single, batch, unsynced, retried),
/// zone deletions and re-creations, snapshots, compactions and reopens, with I/O faults (EIO/ENOSPC on the
/// Nth call) and power losses (unsynced data dropped, torn or garbled) on the simulated disk.
/// After every recovery and compaction: every acknowledged entry is in the log unless the
/// compactor chose it, each zone's feed is exactly its
/// current incarnation's entries, and its materialised state equals a full replay, with no
/// damaged snapshot ever visible. A failing seed replays exactly.
@Suite struct SimulationTests {
    static let zones = ["List-a", "List-b", "List-c"]

    struct Stats {
        var faults = 0
        var crashes = 0
        var snapshots = 0
        var compactions = 0
        var purged = 0
    }

    static func options(_ fs: MemoryFileSystem, _ rng: inout SplitMix64) -> StoreOptions {
        var o = StoreOptions(durability: .always, segmentSize: 900 + Int(rng.next() % 3_000), preallocate: rng.next() % 2 == 0)
        o.fileSystem = fs
        o.indexCheckpointBytes = 500 + Int(rng.next() % 3_000)
        return o
    }

    /// The log as recovered: per zone, the entries of its current incarnation (or nil if deleted).
    static func expected(_ fs: MemoryFileSystem) throws -> (all: [SequenceNumber: JournalEntry], live: [String: [(SequenceNumber, JournalEntry)]]) {
        var all: [SequenceNumber: JournalEntry] = [:]
        var live: [String: [(SequenceNumber, JournalEntry)]?] = [:]
        _ = try LogReader.read("/d/s.wal", fs: fs) { event, _ in
            switch event {
            case .entry(let s, let e):
                all[s] = e
                if live[e.zone] == nil || live[e.zone]! == nil { live[e.zone] = .some([]) }
                live[e.zone]!!.append((s, e))
            case .zoneCreated(_, let z):
                if live[z] == nil || live[z]! == nil { live[z] = .some([]) }
            case .zoneDeleted(_, let z, _):
                live[z] = .some(nil)
            default: break
            }
        }
        return (all, live.compactMapValues { $0 })
    }

    static func check(_ store: JournalStore, _ fs: MemoryFileSystem, acked: [SequenceNumber: JournalEntry],
                      purgeable: Set<SequenceNumber>, placed: Set<SequenceNumber>, seed: UInt64) throws {
        let (all, live) = try expected(fs)
        for (s, e) in acked where !purgeable.contains(s) {
            if placed.contains(s), let p = all[s], case .place = p.operation {
                #expect(p.id == e.id && p.zone == e.zone && p.clock == e.clock, "seed \(seed): placement at \(s) keeps the entry's id")
                continue
            }
            #expect(all[s] == e, "seed \(seed): acknowledged sequence \(s) lost")
        }
        for s in purgeable { if let e = all[s] { #expect(acked[s] == nil || acked[s] == e || placed.contains(s)) } }
        let q = ListQuery(store: store, fs: fs)
        for (zone, entries) in live {
            let page = try store.changes(in: zone, since: nil, limit: 1_000_000)
            #expect(page.entries.map(\.sequence) == entries.map(\.0), "seed \(seed): feed of \(zone)")
            let m = try q.materialise(zone)
            var r = ListReducer(zone: zone)
            for (_, e) in entries { _ = r.apply(e) }
            #expect(m.state == r.state(), "seed \(seed): state of \(zone)")
            #expect(m.warnings.isEmpty, "seed \(seed): \(m.warnings)")
        }
    }

    static func run(seed: UInt64, steps: Int = 50) throws -> Stats {
        var rng = SplitMix64(seed: seed)
        var stats = Stats()
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        let options = Self.options(fs, &rng)
        var store = try JournalStore.open("/d/s.wal", options: options)
        var acked: [SequenceNumber: JournalEntry] = [:]
        var n = 0
        var lastAcked: [(SequenceNumber, JournalEntry)] = []
        // What a compaction chose (asked a dry run first, since a faulted run reports nothing).
        var purgeable = Set<SequenceNumber>()
        // What a compaction chose to replace by a `place` (same id, same sequence).
        var placed = Set<SequenceNumber>()
        func entry(_ zone: String) -> JournalEntry {
            n += 1
            let ops: [JournalCodec.EntryOperation] = [
                .add(item: CompactID("item-\(n)")!, text: "thing \(n)", after: n > 1 && rng.next() % 2 == 0 ? CompactID("item-\(n - 1)") : nil),
                .markOff(item: CompactID("item-\(max(1, n - 2))")!),
                .delete(item: CompactID("item-\(max(1, n - 3))")!),
                .rename(name: "List \(n)"),
            ]
            // Ten minutes apart: adds form separate sibling runs, so finished items can be purged.
            return JournalEntry(id: CompactID("s\(seed)-e\(n)")!, zone: zone, author: ["alice", "bob"][Int(rng.next() % 2)],
                                wallTime: 1_795_424_400_000 + Int64(n) * 600_000, clock: HybridTime(physicalMillis: 1_795_424_400_000 + UInt64(n) * 600_000, counter: 0),
                                operation: ops[Int(rng.next() % UInt64(ops.count))])
        }
        func crashAndReopen() throws {
            try? store.close()
            let modes: [MemoryFileSystem.CrashMode] = [.dropUnsynced, .tearLastWrite(seed: rng.next()), .garbleLastWrite(seed: rng.next())]
            fs.crash(modes[Int(rng.next() % 3)])
            fs.setFaults(.init())
            stats.crashes += 1
            store = try JournalStore.open("/d/s.wal", options: options)  // the default mode must open it
            try check(store, fs, acked: acked, purgeable: purgeable, placed: placed, seed: seed)
        }
        for _ in 0..<steps {
            if rng.next() % 8 == 0 {
                fs.setFaults(.init(failOnCall: Int(rng.next() % 12) + 1, failErrno: rng.next() % 2 == 0 ? EIO : ENOSPC,
                                   failPersistently: rng.next() % 2 == 0))
                stats.faults += 1
            }
            let zone = zones[Int(rng.next() % UInt64(zones.count))]
            do {
                switch rng.next() % 13 {
                case 0, 1, 2:
                    let e = entry(zone)
                    let s = try store.append(e, durability: .always)
                    acked[s] = e
                    lastAcked.append((s, e))
                case 3, 4:
                    let batch = (0..<Int(2 + rng.next() % 4)).map { _ in entry(zone) }
                    let r = try store.append(batch: batch, durability: .onBatch)
                    for (s, e) in zip(r, batch) { acked[s] = e }
                case 5:
                    try store.append(entry(zone), durability: Durability.none)
                case 6:
                    // A retry of something acknowledged: same sequence, nothing new.
                    if let (s, e) = lastAcked.last, !purgeable.contains(s), store.zone(e.zone)?.isDeleted == false,
                       store.zone(e.zone)?.incarnation ?? .max <= s {
                        #expect(try store.append(e) == s, "seed \(seed): retry of \(s)")
                    }
                case 7:
                    if store.zone(zone)?.isDeleted == false { try store.deleteZone(zone) } else if store.zone(zone) != nil { try store.createZone(zone) }
                case 8, 9:
                    if store.zone(zone)?.isDeleted == false {
                        _ = try ListQuery(store: store, fs: fs).writeSnapshot(zone)
                        stats.snapshots += 1
                    }
                case 11:
                    let compactor = ListCompactor(query: ListQuery(store: store, fs: fs))
                    let now: Int64 = 1_795_424_400_000 + 30 * 86_400_000
                    // The feed serves durable entries; a run that seals syncs, so make the dry run
                    // read what the run will.
                    try store.sync()
                    let dry = try compactor.run(now: now, dryRun: true)
                    purgeable.formUnion(dry.chosen)
                    placed.formUnion(dry.rewritten)
                    // Entries of deleted incarnations go whatever their age.
                    for (s, e) in acked {
                        if let z = store.zone(e.zone), s < z.incarnation || (z.deletedAt.map { s < $0 } ?? false) { purgeable.insert(s) }
                    }
                    let report = try compactor.run(now: now)
                    stats.compactions += 1
                    stats.purged += report.storage.entriesPurged + report.storage.deletedZoneEntriesPurged
                    // The checks compare the feed with the log on disk: serve everything written.
                    try store.sync()
                    try check(store, fs, acked: acked, purgeable: purgeable, placed: placed, seed: seed)
                case 10:
                    try store.close()
                    fs.setFaults(.init())
                    store = try JournalStore.open("/d/s.wal", options: options)
                default:
                    try crashAndReopen()
                }
            } catch let e as JournalError {
                if case .zoneDeleted = e { continue }
                // A fault reached the caller as an error: lose power, recover, check everything.
                try crashAndReopen()
            } catch let e as QueryError {
                if case .storage = e { try crashAndReopen() } else { throw e }
            }
        }
        fs.setFaults(.init())
        try crashAndReopen()
        try store.close()
        try Self.expectBackupRestoresTheSameStore(fs, seed: seed)
        return stats
    }

    /// Issue 17.4: a backup of the store the simulation built (compacted, with deleted and
    /// re-created zones, placements, marks and consumers) restores to the same store.
    static func expectBackupRestoresTheSameStore(_ fs: MemoryFileSystem, seed: UInt64) throws {
        try StoreBackup.copy(from: "/d/s.wal", to: "/d/backup.wal", fs: fs)
        _ = try StoreBackup.restore(from: "/d/backup.wal", to: "/d/restored.wal", fs: fs)
        let a = try StoreReader.open("/d/s.wal", fileSystem: fs), b = try StoreReader.open("/d/restored.wal", fileSystem: fs)
        #expect(a.zones() == b.zones(), "seed \(seed): zones differ after a restore")
        let qa = ListQuery(reader: a), qb = ListQuery(reader: b)
        for z in a.zones() where !z.isDeleted {
            #expect(try qa.materialise(z.name).state == qb.materialise(z.name).state, "seed \(seed): \(z.name) differs after a restore")
            #expect(try qa.history(z.name).log == qb.history(z.name).log, "seed \(seed): \(z.name)'s history differs after a restore")
            #expect(try qa.entries(z.name).entries.map { $0.1 } == qb.entries(z.name).entries.map { $0.1 })
        }
        #expect(JournalStore.consumers(store: "/d/s.wal", fs: fs).consumers == JournalStore.consumers(store: "/d/restored.wal", fs: fs).consumers)
    }

    @Test func seededSimulationsKeepEveryInvariant() throws {
        var total = Stats()
        for seed in UInt64(0)..<300 {
            let s = try Self.run(seed: seed)
            total.faults += s.faults
            total.crashes += s.crashes
            total.snapshots += s.snapshots
            total.compactions += s.compactions
            total.purged += s.purged
        }
        // The simulation must actually exercise faults, crashes, snapshots and compactions.
        #expect(total.faults > 300 && total.crashes > 600 && total.snapshots > 300)
        #expect(total.compactions > 300 && total.purged > 50, "\(total.compactions) compactions purged \(total.purged)")
    }
}

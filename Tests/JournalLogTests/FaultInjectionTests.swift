import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// Seeded fault injection on the simulated disk (issue 5): an I/O call fails with EIO or ENOSPC
/// at a chosen step of append, batch, rollover or segment creation, then power is lost with
/// unsynced data dropped, torn at a sector, or garbled. Every scenario replays from its seed.
@Suite struct FaultInjectionTests {
    static let scenarios: UInt64 = 1500

    struct Outcome {
        var durable: [SequenceNumber: JournalEntry] = [:]
        var faulted = false
    }

    static func entry(_ rng: inout SplitMix64, _ n: Int) -> JournalEntry {
        let ops: [JournalCodec.EntryOperation] = [
            .add(item: CompactID("item-\(n)")!, text: "thing \(n) " + String(repeating: "x", count: Int(rng.next() % 40)), after: n > 0 ? CompactID("item-\(n - 1)") : nil),
            .markOff(item: CompactID("item-\(max(0, n - 2))")!),
            .rename(name: "List \(n)"),
        ]
        return JournalEntry(id: CompactID.random(using: &rng), zone: "List-\(rng.next() % 3)", author: "replica-\(rng.next() % 4)",
                            wallTime: 1_795_424_400_000 + Int64(n), clock: HybridTime(physicalMillis: 1_795_424_400_000 + UInt64(n), counter: 0),
                            operation: ops[Int(rng.next() % 3)])
    }

    /// Runs appends until the planned fault stops the writer. Records what was acknowledged durably.
    static func workload(_ fs: MemoryFileSystem, _ options: StoreOptions, _ rng: inout SplitMix64) -> Outcome {
        var out = Outcome()
        guard let store = try? JournalStore.open("/d/list.wal", options: options) else {
            out.faulted = true
            return out
        }
        var n = Int(store.nextSequence)
        for _ in 0..<40 {
            do {
                switch rng.next() % 4 {
                case 0, 1:
                    let e = entry(&rng, n)
                    let s = try store.append(e, durability: .always)
                    out.durable[s] = e
                    n += 1
                case 2:
                    let batch = (0..<Int(rng.next() % 5 + 2)).map { i in entry(&rng, n + i) }
                    let r = try store.append(batch: batch, durability: .onBatch)
                    for (s, e) in zip(r, batch) { out.durable[s] = e }
                    n += batch.count
                default:
                    try store.append(entry(&rng, n), durability: Durability.none)
                    n += 1
                }
            } catch {
                out.faulted = true
                // The writer refuses further work cleanly instead of guessing what reached the disk.
                #expect(throws: JournalError.self) { try store.append(entry(&rng, n), durability: .always) }
                break
            }
        }
        try? store.close()
        return out
    }

    static func run(seed: UInt64) throws -> Bool {
        var rng = SplitMix64(seed: seed)
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        var options = StoreOptions(durability: .always, segmentSize: 700 + Int(rng.next() % 1500), preallocate: rng.next() % 2 == 0)
        options.fileSystem = fs
        // Checkpoint the zone index often, so faults also land while it is being written.
        options.indexCheckpointBytes = 600 + Int(rng.next() % 2_000)
        // Some history first, without faults, so later faults land on a store with sealed segments.
        if rng.next() % 2 == 0 {
            _ = workload(fs, options, &rng)
        }
        fs.setFaults(.init(failOnCall: Int(rng.next() % 150) + 1, failErrno: rng.next() % 2 == 0 ? EIO : ENOSPC,
                           failPersistently: rng.next() % 2 == 0))
        let before = (try? LogReader.entries("/d/list.wal", fs: fs)) ?? []
        let outcome = workload(fs, options, &rng)
        let modes: [MemoryFileSystem.CrashMode] = [.dropUnsynced, .tearLastWrite(seed: rng.next()), .garbleLastWrite(seed: rng.next())]
        fs.crash(modes[Int(rng.next() % 3)])
        fs.setFaults(.init())  // space returns

        let store = try JournalStore.open("/d/list.wal", options: options)  // the default mode must open it
        let after = try LogReader.entries("/d/list.wal", fs: fs)
        #expect(after.map(\.0) == (0..<after.count).map { SequenceNumber($0 + 1) }, "seed \(seed): gap in sequences")
        for (s, e) in before.filter({ $0.0 <= (after.last?.0 ?? 0) }) {
            #expect(after[Int(s) - 1].1 == e, "seed \(seed): sequence \(s) changed")
        }
        #expect(after.count >= before.count, "seed \(seed): lost entries synced before the fault")
        for (s, e) in outcome.durable {
            #expect(Int(s) <= after.count && after[Int(s) - 1].1 == e, "seed \(seed): acknowledged sequence \(s) lost")
        }
        // The zone index (checkpoint plus replay, or a rebuild) serves exactly what the log holds.
        for zone in Set(after.map(\.1.zone)) {
            let served = try store.changes(in: zone, since: nil, limit: 100_000)
            #expect(served.entries.map(\.sequence) == after.filter { $0.1.zone == zone }.map(\.0), "seed \(seed): feed of \(zone) differs from the log")
        }
        let next = try store.append(entry(&rng, 10_000), durability: .always)
        #expect(next == SequenceNumber(after.count) + 1, "seed \(seed): numbering did not continue")
        try store.close()
        return outcome.faulted
    }

    @Test func acknowledgedEntriesSurviveFaultsAndPowerLoss() throws {
        var faulted = 0
        for seed in 0..<Self.scenarios {
            if try Self.run(seed: seed) { faulted += 1 }
        }
        // Most scenarios must actually hit their fault, or the suite proves little.
        #expect(faulted > Int(Self.scenarios) / 2)
    }

    @Test func writerRefusesAfterDiskFullAndWorksAfterReopen() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        var options = StoreOptions(durability: .always, segmentSize: 4096, preallocate: false)
        options.fileSystem = fs
        var rng = SplitMix64(seed: 1)
        let store = try JournalStore.open("/d/list.wal", options: options)
        try store.append(Self.entry(&rng, 1))
        fs.setFaults(.init(failOnCall: 1, failErrno: ENOSPC, failPersistently: true))
        #expect(throws: JournalError.self) { try store.append(Self.entry(&rng, 2)) }
        #expect(throws: JournalError.self) { try store.append(Self.entry(&rng, 3)) }
        try? store.close()
        fs.setFaults(.init())
        let reopened = try JournalStore.open("/d/list.wal", options: options)
        #expect(try reopened.append(Self.entry(&rng, 4)) == 2)
        try reopened.close()
    }

    @Test func unsyncedDirectoryChangesAreLostOnPowerLoss() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        let f = try fs.openFile("/d/a", create: true, truncate: false)
        try f.write([1, 2, 3], at: 0)
        try f.sync()
        fs.crash()
        #expect(fs.kind(of: "/d/a") == .missing)
        let g = try fs.openFile("/d/b", create: true, truncate: false)
        try g.write([1], at: 0)
        try g.sync()
        try fs.syncDirectory("/d")
        fs.crash()
        #expect(fs.contents("/d/b") == [1])
    }
}

import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// Snapshots and consumer marks from a future the log lost (an older copy restored over the
/// store, a power loss that dropped an unsynced tail): a writer's open sets the snapshots aside
/// and lowers the marks before anything takes their sequences again (SNAPSHOT.md §2.1,
/// COMPACTION.md §3).
@Suite struct PastEndFilesTests {
    typealias Q = ListQueryTests
    static let store = "/d/s.wal"

    static func add(_ name: String, _ i: Int) -> JournalEntry {
        JournalEntry(id: CompactID("\(name)-\(i)")!, zone: Q.zone, author: "alice", wallTime: Int64(Q.t0) + Int64(i) * 1_000,
                     clock: HybridTime(physicalMillis: Q.t0 + UInt64(i) * 1_000, counter: 0),
                     operation: .add(item: CompactID("item-\(name)-\(i)")!, text: "\(name) \(i)", after: nil))
    }

    /// The store on `fs`, in one segment (a roll would leave a segment of the lost future beside
    /// a restored copy, which the chain check refuses on its own).
    static func open(_ fs: MemoryFileSystem, durability: Durability = .always) throws -> JournalStore {
        if fs.kind(of: "/d") == .missing { try fs.createDirectory("/d") }
        var options = StoreOptions(durability: durability, segmentSize: 1 << 20, preallocate: false)
        options.fileSystem = fs
        return try JournalStore.open(store, options: options)
    }

    /// Every file under `path`, by path: what `cp -a` copies.
    static func files(under path: String, _ fs: MemoryFileSystem) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in try fs.listDirectory(path) {
            let p = path + "/" + name
            if fs.kind(of: p) == .directory {
                out.merge(try files(under: p, fs)) { a, _ in a }
            } else if let bytes = fs.contents(p) {
                out[p] = bytes
            }
        }
        return out
    }

    /// Copies an older copy back over the store, as `cp -a S.old/. S/` does: files the copy does
    /// not hold (a newer snapshot, a consumer) stay as they are.
    static func restore(_ copy: [String: [UInt8]], _ fs: MemoryFileSystem) {
        for (path, bytes) in copy { fs.install(path, bytes: bytes) }
    }

    /// The repro: 10 entries, a copy, 20 more with a snapshot and a consumer at 30, the copy
    /// restored. Returns the first 10 entries and the snapshot's file name.
    static func restoredOverANewerSnapshot(_ fs: MemoryFileSystem) throws -> (kept: [JournalEntry], snapshot: String) {
        let kept = (1...10).map { add("kept", $0) }
        let s = try Self.open(fs)
        for e in kept { try s.append(e) }
        try s.close()
        let old = try files(under: store, fs)
        let s2 = try Self.open(fs)
        for i in 1...20 { try s2.append(add("lost", i)) }
        let snapshot = try ListQuery(store: s2, fs: fs).writeSnapshot(Q.zone)
        try #require(snapshot.file.sequence == 30)
        try s2.registerConsumer("uploads", leaseUntil: nil)
        try s2.advanceConsumer("uploads", zone: Q.zone, to: 30)
        try s2.close()
        restore(old, fs)
        return (kept, snapshot.file.name)
    }

    @Test func aRestoredOlderCopyMaterialisesItsOwnListAndKeepsTheNewerSnapshotInTorn() throws {
        let fs = MemoryFileSystem()
        let (kept, name) = try Self.restoredOverANewerSnapshot(fs)

        let s = try Self.open(fs)
        #expect(s.recovery.lastSequence == 10)
        #expect(s.recovery.snapshotsSetAside == [Self.store + "/torn/" + name])
        #expect(fs.contents(Self.store + "/torn/" + name) != nil)
        #expect(fs.kind(of: Self.store + "/snapshots/" + name) == .missing)
        let others = (1...25).map { Self.add("other", $0) }
        for e in others { try s.append(e) }
        let m = try ListQuery(store: s, fs: fs).materialise(Q.zone)
        #expect(m.snapshot == nil)
        #expect(m.state == Q.fullReplay(kept + others))
        try s.close()
    }

    @Test func aReaderNeverUsesASnapshotPastTheLogsEnd() throws {
        let fs = MemoryFileSystem()
        let (kept, name) = try Self.restoredOverANewerSnapshot(fs)

        // Before any writer opened the restored store: the snapshot is still in `snapshots/`.
        #expect(fs.kind(of: Self.store + "/snapshots/" + name) == .file)
        let reader = try StoreReader.open(Self.store, fileSystem: fs)
        let m = try ListQuery(reader: reader, fs: fs).materialise(Q.zone)
        #expect(m.snapshot == nil)
        #expect(m.state == Q.fullReplay(kept))
    }

    /// The machine loses power under a writer: nothing it does from now on reaches the disk
    /// (its close fails), then whatever was not synced is gone.
    static func powerLoss(_ s: JournalStore, _ fs: MemoryFileSystem) {
        fs.setFaults(.init(failOnCall: 1, failPersistently: true))
        try? s.close()
        fs.setFaults(.init())
        fs.crash(.dropUnsynced)
    }

    @Test func aConsumerMarkPastTheEndIsLoweredDurablyAndReported() throws {
        let fs = MemoryFileSystem()
        let s = try Self.open(fs, durability: .none)
        for i in 1...10 { try s.append(Self.add("kept", i)) }
        try s.sync()
        // Unsynced entries the consumer processes, then lost to a power loss.
        for i in 1...20 { try s.append(Self.add("lost", i)) }
        try s.registerConsumer("uploads", leaseUntil: nil)
        try s.advanceConsumer("uploads", zone: Q.zone, to: 30)
        Self.powerLoss(s, fs)

        let reopened = try Self.open(fs, durability: .none)
        #expect(reopened.recovery.lastSequence == 10)
        let lowered = reopened.recovery.consumerMarksLowered
        #expect(lowered.map { "\($0.consumer) \($0.zone) \($0.incarnation) \($0.from)→\($0.to)" } == ["uploads \(Q.zone) 1 30→10"])
        #expect(reopened.recovery.pastEndNotes.count == 1)
        #expect(reopened.consumer("uploads")?.marks.map(\.position) == [10])
        // Durable: after another power loss the file holds the lowered mark, and nothing is left to lower.
        Self.powerLoss(reopened, fs)
        let again = try Self.open(fs, durability: .none)
        #expect(again.recovery.consumerMarksLowered.isEmpty)
        #expect(again.consumer("uploads")?.marks.map(\.position) == [10])
        try again.close()
    }

    @Test func aSnapshotAtOrBelowTheEndIsKept() throws {
        let fs = MemoryFileSystem()
        let entries = (1...15).map { Self.add("kept", $0) }
        let s = try Self.open(fs)
        for e in entries[..<10] { try s.append(e) }
        let snapshot = try ListQuery(store: s, fs: fs).writeSnapshot(Q.zone)
        try #require(snapshot.file.sequence == 10)
        try s.close()

        let reopened = try Self.open(fs)
        #expect(reopened.recovery.snapshotsSetAside.isEmpty)
        #expect(fs.kind(of: snapshot.file.path) == .file)
        for e in entries[10...] { try reopened.append(e) }
        let m = try ListQuery(store: reopened, fs: fs).materialise(Q.zone)
        #expect(m.snapshot?.sequence == 10)
        #expect(m.state == Q.fullReplay(entries))
        try reopened.close()
    }

    @Test func aHistoryPiecePastTheEndStays() throws {
        let fs = MemoryFileSystem()
        let s = try Self.open(fs)
        for i in 1...10 { try s.append(Self.add("kept", i)) }
        let incarnation = try #require(s.zone(Q.zone)?.incarnation)
        try s.close()
        // After a lost unsynced tail a piece may cover past the end, holding purged events.
        let piece = Self.store + "/snapshots/" + SnapshotDirectory.fileName(zone: Q.zone, incarnation: incarnation, sequence: 30, kind: .history)
        fs.install(piece, bytes: [1, 2, 3])

        let reopened = try Self.open(fs)
        #expect(reopened.recovery.snapshotsSetAside.isEmpty)
        #expect(fs.contents(piece) == [1, 2, 3])
        try reopened.close()
    }
}

import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// Regressions found by an independent review of the compactor (at 0b4a57c), one per finding.
@Suite struct CompactionRegressionTests {
    typealias Z = ZoneFeedTests

    /// R1. Open's roll-forward is not itself atomic: it renames in directory order (a `.swap`
    /// before a later segment's `.cleaned`). If open is interrupted after renaming the last `.swap`
    /// but before the `.cleaned` (an I/O error, a kill), no `.swap` is left, so the next open
    /// *discards* the committed run's remaining `.cleaned`: half the run applied.
    @Test func anInterruptedRollForwardIsFinishedByTheNextOpen() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/s")
        for n in ["00000000000000000001.seg", "00000000000000000009.seg"] { fs.install("/s/" + n, bytes: [0]) }
        // A run interrupted in step 3: segment 1 reached `.swap`, segment 9 is still `.cleaned`.
        fs.install("/s/00000000000000000001.seg.swap", bytes: [1])
        fs.install("/s/00000000000000000009.seg.cleaned", bytes: [2])
        fs.setFaults(MemoryFileSystem.FaultPlan(failOnCall: 2))   // the second rename of recover fails
        #expect(throws: JournalError.self) { try CompactionFiles.recover(store: "/s", fs: fs) }
        fs.setFaults(MemoryFileSystem.FaultPlan())
        try CompactionFiles.recover(store: "/s", fs: fs)
        // The run had committed: both rewrites must stand.
        #expect(fs.contents("/s/00000000000000000001.seg") == [1])
        #expect(fs.contents("/s/00000000000000000009.seg") == [2], "the committed rewrite of segment 9 was discarded")
    }

    /// R2. A failed run whose clean-up also fails leaves `.cleaned` files behind (one of them
    /// empty: its write failed). A later run that reaches its commit point and is then interrupted
    /// makes open roll *every* `.cleaned` forward, including the stale, empty one: the store no
    /// longer opens and that segment's entries are gone.
    @Test func aLeftoverCleanedFromAFailedRunIsNeverRolledForward() throws {
        let fs = MemoryFileSystem()
        let (store, options, all) = try CompactionTests.filledStore(fs, count: 90)
        let sealed = store.sealedThrough
        try store.setLowWaterMark("List-a", to: sealed)
        try store.setLowWaterMark("List-b", to: sealed)
        let segs = try fs.listDirectory(store.path).compactMap { SegmentName(fileName: $0)?.base }.sorted()
        #expect(segs.count >= 5)
        // Run 1 purges List-a from the first two segments; the disk fails from its 5th call on
        // (the second `.cleaned` write), so its clean-up fails too.
        let run1 = all.filter { $0.value.zone == "List-a" && $0.key < segs[2] }.map(\.key)
        fs.setFaults(MemoryFileSystem.FaultPlan(failOnCall: 5, failPersistently: true))
        #expect(throws: JournalError.self) { _ = try store.compact(purging: run1) }
        fs.setFaults(MemoryFileSystem.FaultPlan())
        let leftovers = try fs.listDirectory(store.path).filter { $0.hasSuffix(".cleaned") }
        #expect(!leftovers.isEmpty, "precondition: run 1 left .cleaned files")
        // The writer still works (a failure before step 3 leaves the log as it was).
        // Run 2 purges List-b from the last sealed segment only; interrupt it in step 4.
        let lastSealed = segs.filter { $0 <= sealed }.dropLast().last!
        let run2 = all.filter { $0.value.zone == "List-b" && $0.key >= lastSealed && $0.key <= sealed }.map(\.key)
        var interrupted = false
        // Calls of run 2: (open, write, sync) per segment, directory sync, a rename to `.swap`
        // per segment, directory sync (the commit point is durable), then the first rename over
        // a segment, which fails.
        let rewrites = Set(run2.map { s in segs.last { $0 <= s }! }).count
        // Run 2 first removes run 1's leftovers (one call each, then a directory sync).
        fs.setFaults(MemoryFileSystem.FaultPlan(failOnCall: leftovers.count + 1 + 3 * rewrites + 1 + rewrites + 2))
        do { _ = try store.compact(purging: run2) } catch {
            interrupted = try fs.listDirectory(store.path).contains(where: { $0.hasSuffix(".swap") })
        }
        fs.setFaults(MemoryFileSystem.FaultPlan())
        #expect(interrupted, "precondition: run 2 stopped after its commit point")
        fs.crash(.dropUnsynced)
        let reopened = try JournalStore.open(store.path, options: options)
        #expect(reopened.recovery.problem == nil, "\(String(describing: reopened.recovery.problem))")
        let left = try CompactionTests.logEntries(store.path, fs: fs, mode: .salvage)
        for (s, e) in all where !run2.contains(s) && !run1.contains(s) { #expect(left[s] == e, "entry \(s) lost") }
    }

    /// R3. A deleted zone that was created implicitly (by its first entry, TOKENS.md §1) has no
    /// `zoneCreate` record. Once its entries are purged only the `zoneDelete` stays, which a reader
    /// ignores for a zone with no live incarnation: after an index rebuild the zone is unknown
    /// (`zoneNotFound` instead of `zoneDeleted`), and appending to it is accepted again.
    @Test func aDeletedImplicitZoneStaysDeletedAfterCompactionAndARebuild() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Z.memoryStore(fs, segmentSize: 1_024)
        for n in 0..<10 { try store.append(Z.entry(n, zone: "List-x")) }
        try store.deleteZone("List-x")
        var n = 100
        let end = store.nextSequence
        while store.sealedThrough < end { try store.append(Z.entry(n, zone: "List-y")); n += 1 }
        let report = try store.compact(purging: [])
        #expect(report.deletedZoneEntriesPurged == 10)  // the first too: a zoneCreate keeps the identity
        #expect(store.zone("List-x")?.isDeleted == true)
        // A crash before the next checkpoint: the index is rebuilt from the log.
        fs.crash(.dropUnsynced)
        let reopened = try JournalStore.open(store.path, options: options)
        #expect(reopened.zone("List-x")?.isDeleted == true, "the deleted zone is gone from the index")
        #expect(throws: JournalError.self, "an append to a deleted zone must be refused until it is created again") {
            try reopened.append(Z.entry(999, zone: "List-x"))
        }
    }

    /// R4. The same for a live implicit zone whose first entry is purged: its incarnation is the
    /// sequence of that entry. After a rebuild the incarnation becomes the first surviving entry's
    /// sequence, so the zone's `lowWaterMark` record names an incarnation that no longer exists
    /// (ignored: the mark is lost) and every token issued for the zone becomes invalid.
    @Test func theEntryThatStartedAnImplicitZoneIsPurgedAsAZoneCreate() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Z.memoryStore(fs, segmentSize: 1_024)
        let first = try store.append(Z.entry(0, zone: "List-x"))
        for n in 1..<10 { try store.append(Z.entry(n, zone: "List-x")) }
        var n = 100
        let end = store.nextSequence
        while store.sealedThrough < end { try store.append(Z.entry(n, zone: "List-y")); n += 1 }
        let before = try #require(store.zone("List-x"))
        #expect(before.incarnation == first)
        let token = try store.changes(in: "List-x", since: nil).token
        try store.setLowWaterMark("List-x", to: first + 2)
        let report = try store.compact(purging: [first, first + 1])
        #expect(report.entriesPurged == 2 && report.entriesKept == 0)
        var records: [LogEvent] = []
        _ = try LogReader.read(store.path, fs: fs) { event, _ in if event.sequence == first { records.append(event) } }
        #expect(records == [.zoneCreated(first, zone: "List-x")])
        fs.crash(.dropUnsynced)
        let reopened = try JournalStore.open(store.path, options: options)
        let after = try #require(reopened.zone("List-x"))
        #expect(after.incarnation == before.incarnation, "the zone's incarnation changed")
        #expect(after.lowWaterMark == first + 2, "the low-water mark was lost")
        #expect(throws: Never.self) { _ = try reopened.changes(in: "List-x", since: token) }
    }
}

/// A file system that runs a hook once, the first time a path with `suffix` is opened.
final class HookFileSystem: FileSystem, @unchecked Sendable {
    let base: MemoryFileSystem
    let suffix: String
    var hook: (() -> Void)?
    init(_ base: MemoryFileSystem, suffix: String) { self.base = base; self.suffix = suffix }
    func openFile(_ path: String, create: Bool, truncate: Bool) throws(JournalError) -> any StorageFile {
        if path.hasSuffix(suffix), let h = hook { hook = nil; h() }
        return try base.openFile(path, create: create, truncate: truncate)
    }
    var failList: String?
    func listDirectory(_ path: String) throws(JournalError) -> [String] {
        if path == failList { throw JournalError.io(operation: "opendir", path: path, errno: EACCES) }
        return try base.listDirectory(path)
    }
    func createDirectory(_ path: String) throws(JournalError) { try base.createDirectory(path) }
    /// Runs once, at the first rename of a file ending in `suffix`.
    var renameHook: (() -> Void)?
    func rename(_ from: String, _ to: String) throws(JournalError) {
        if from.hasSuffix(suffix), let h = renameHook { renameHook = nil; h() }
        try base.rename(from, to)
    }
    func remove(_ path: String) throws(JournalError) { try base.remove(path) }
    func removeDirectory(_ path: String) throws(JournalError) { try base.removeDirectory(path) }
    func syncDirectory(_ path: String) throws(JournalError) { try base.syncDirectory(path) }
    func kind(of path: String) -> FileKind { base.kind(of: path) }
    func lockDirectory(_ path: String) throws(JournalError) -> any FileLock { try base.lockDirectory(path) }
    func openForReading(_ path: String) throws(JournalError) -> any StorageFile {
        if path.hasSuffix(suffix), let h = hook { hook = nil; h() }
        return try base.openForReading(path)
    }
    func identity(of path: String) -> FileIdentity? { base.identity(of: path) }
}

@Suite struct CompactionCloseRaceTests {
    typealias Z = ZoneFeedTests

    /// R5. `close()` must not release the writer lock while a compaction is running: a second
    /// writer would index the old segments and then see the swap move every frame under it.
    /// Here another thread closes the store in the middle of a compaction and opens a second
    /// writer: close waits, the run is dropped at its commit point, and the second writer's feed
    /// (and the next one's, from its checkpoint) reads every frame.
    @Test func closeWaitsForARunningCompaction() throws {
        let mem = MemoryFileSystem()
        try mem.createDirectory("/d")
        let fs = HookFileSystem(mem, suffix: ".seg.cleaned")
        var o = StoreOptions(durability: .always, segmentSize: 1_024, preallocate: false)
        o.fileSystem = fs
        let options = o
        let store = try JournalStore.open("/d/s.wal", options: options)
        var all: [SequenceNumber: JournalEntry] = [:]
        for n in 0..<60 { let e = Z.entry(n, zone: n % 3 == 0 ? "List-b" : "List-a"); all[try store.append(e)] = e }
        try store.setLowWaterMark("List-b", to: store.sealedThrough)
        let purge = all.filter { $0.value.zone == "List-b" && $0.key <= store.sealedThrough }.map(\.key)
        let second = Box()
        let closer = Thread {
            try? store.close()
            second.store = try? JournalStore.open("/d/s.wal", options: options)
        }
        fs.hook = {
            closer.start()
            Thread.sleep(forTimeInterval: 0.05)  // let close() begin while the run is mid-way
        }
        #expect(throws: JournalError.self) { _ = try store.compact(purging: purge) }
        while !closer.isFinished { Thread.sleep(forTimeInterval: 0.001) }
        let s2 = try #require(second.store, "the second writer opens once the first has closed")
        try s2.append(Z.entry(500, zone: "List-a"))
        #expect(try Z.drain(s2, "List-a", limit: 5).0.count == all.values.filter { $0.zone == "List-a" }.count + 1)
        try s2.close()
        let s3 = try JournalStore.open("/d/s.wal", options: options)
        #expect(try Z.drain(s3, "List-b", limit: 5).0.count == all.values.filter { $0.zone == "List-b" }.count)
    }
}

final class Box: @unchecked Sendable { var store: JournalStore? }

@Suite struct ConsumerRegressionTests {
    /// R7. `consumers()` turns an unreadable `consumers/` directory into "no consumers and no
    /// problems", so `consumerFloor` holds nothing back: the compactor may purge entries a
    /// consumer has not processed (COMPACTION.md §3: damage never lets the compactor purge).
    @Test func anUnreadableConsumersDirectoryHoldsEverythingBack() throws {
        let mem = MemoryFileSystem()
        try mem.createDirectory("/d")
        let fs = HookFileSystem(mem, suffix: ".never")
        var options = StoreOptions(durability: .always, segmentSize: 1_024, preallocate: false)
        options.fileSystem = fs
        let store = try JournalStore.open("/d/s.wal", options: options)
        let inc = try store.append(ZoneFeedTests.entry(0, zone: "List-a"))
        try store.registerConsumer("uploader", leaseUntil: nil)
        #expect(store.consumerFloor(zone: "List-a", incarnation: inc, now: 0) == 0)
        fs.failList = "/d/s.wal/consumers"
        let floor = store.consumerFloor(zone: "List-a", incarnation: inc, now: 0)
        #expect(floor == 0, "an unreadable consumers directory released every hold (floor \(String(describing: floor)))")
        #expect(!store.consumers().problems.isEmpty)
    }
}

@Suite struct FeedPagingRegressionTests {
    /// R8. `changes` reads at most `limit + 9` frames; more frames in a row that hold only zone
    /// records (repeated `zoneCreate`s of a live zone, which any writer's log may hold) give a page
    /// with no entry and `moreComing`, whose token does not advance: paging never ends.
    @Test func pagingPastManyZoneRecordFramesMakesProgress() throws {
        let (store, _) = try ZoneFeedTests.memoryStore()
        try store.append(ZoneFeedTests.entry(0, zone: "List-a"))
        for _ in 0..<15 {
            try store.appendRecord(type: RecordType.zoneCreate.rawValue, payload: ZoneRecordCodec.encodeCreate(zone: "List-a"), consuming: 1)
        }
        try store.append(ZoneFeedTests.entry(1, zone: "List-a"))
        let first = try store.changes(in: "List-a", since: nil, limit: 1)
        let second = try store.changes(in: "List-a", since: first.token, limit: 1)
        #expect(!(second.moreComing && second.entries.isEmpty), "a page with moreComing and no entry")
    }
}

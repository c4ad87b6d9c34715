import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// The query layer (issue 4): state through snapshots and the feed, fallbacks, history.
@Suite struct ListQueryTests {
    static let zone = "List-db6a6e29"
    static let t0: UInt64 = 1_795_424_400_000

    /// A shopping-list workload: adds after earlier items, mark-offs, deletes, renames, recolours.
    static func workload(_ n: Int, seed: UInt64, zone: String = zone) -> [JournalEntry] {
        var rng = SplitMix64(seed: seed)
        var items: [CompactID] = []
        var out: [JournalEntry] = []
        for i in 0..<n {
            let op: JournalCodec.EntryOperation
            switch rng.next() % 10 {
            case 0...4:
                let item = CompactID("item-\(seed)-\(i)")!
                let after = items.isEmpty || rng.next() % 4 == 0 ? nil : items[Int(rng.next() % UInt64(items.count))]
                items.append(item)
                op = .add(item: item, text: "thing \(i)", after: after)
            case 5, 6: op = .markOff(item: items.isEmpty ? CompactID("nothing")! : items[Int(rng.next() % UInt64(items.count))])
            case 7: op = .delete(item: items.isEmpty ? CompactID("nothing")! : items[Int(rng.next() % UInt64(items.count))])
            case 8: op = .rename(name: "List \(i)")
            default: op = .recolour(colour: ["yellow", "red", "blue"][Int(rng.next() % 3)])
            }
            out.append(JournalEntry(id: CompactID("e-\(seed)-\(i)")!, zone: zone, author: ["alice", "bob"][Int(rng.next() % 2)],
                                    wallTime: Int64(t0) + Int64(i) * 1_000,
                                    clock: HybridTime(physicalMillis: t0 + UInt64(i) * 1_000, counter: 0), operation: op))
        }
        return out
    }

    static func store(_ fs: MemoryFileSystem) throws -> JournalStore {
        if fs.kind(of: "/d") == .missing { try fs.createDirectory("/d") }
        var o = StoreOptions(durability: .always, segmentSize: 4_096, preallocate: false)
        o.fileSystem = fs
        return try JournalStore.open("/d/s.wal", options: o)
    }

    /// A store holding `n` workload entries in one batch.
    static func filledStore(_ n: Int, seed: UInt64) throws -> JournalStore {
        let s = try store(MemoryFileSystem())
        _ = try s.append(batch: workload(n, seed: seed))
        return s
    }

    static func fullReplay(_ entries: [JournalEntry]) -> ListState {
        var r = ListReducer(zone: zone)
        for e in entries { _ = r.apply(e) }
        return r.state()
    }

    @Test func theSevenEntryExampleMaterialisesAsTheSpecSays() throws {
        let fs = MemoryFileSystem()
        let s = try Self.store(fs)
        func e(_ id: String, _ op: JournalCodec.EntryOperation, _ i: UInt64) -> JournalEntry {
            JournalEntry(id: CompactID(id)!, zone: Self.zone, author: "alice", wallTime: Int64(Self.t0 + i * 1_000),
                         clock: HybridTime(physicalMillis: Self.t0 + i * 1_000, counter: 0), operation: op)
        }
        let milk = CompactID("milk")!, bread = CompactID("bread")!, eggs = CompactID("eggs")!
        for x in [e("e1", .add(item: milk, text: "Milk", after: nil), 1), e("e2", .add(item: bread, text: "Bread", after: milk), 2),
                  e("e3", .rename(name: "Weekly Shopping"), 3), e("e4", .recolour(colour: "yellow"), 4),
                  e("e5", .add(item: eggs, text: "Eggs", after: bread), 5), e("e6", .delete(item: bread), 6), e("e7", .markOff(item: milk), 7)] {
            try s.append(x)
        }
        let m = try ListQuery(store: s, fs: fs).materialise(Self.zone)
        #expect(m.state.name == "Weekly Shopping")
        #expect(m.state.colour == "yellow")
        #expect(m.state.items.map(\.text) == ["Milk", "Eggs"])
        #expect(m.state.items.map(\.state) == [.markedOff, .active])
    }

    @Test func aSnapshotPlusTheTailEqualsAFullReplay() throws {
        for seed in UInt64(1)...8 {
            let fs = MemoryFileSystem()
            let s = try Self.store(fs)
            let entries = Self.workload(300, seed: seed)
            let cut = 50 + Int(seed * 29) % 200
            for x in entries[..<cut] { try s.append(x) }
            let q = ListQuery(store: s, fs: fs)
            let report = try q.writeSnapshot(Self.zone)
            #expect(report.entries == cut)
            try s.append(batch: Array(entries[cut...]))
            let m = try q.materialise(Self.zone)
            #expect(m.snapshot?.sequence == report.file.sequence)
            #expect(m.replayed == entries.count - cut)
            #expect(m.state == Self.fullReplay(entries), "seed \(seed)")
            #expect(m.state.digest == Self.fullReplay(entries).digest)
        }
    }

    @Test func aDamagedSnapshotFallsBackToAnOlderOneWithAWarning() throws {
        let fs = MemoryFileSystem()
        let s = try Self.store(fs)
        let entries = Self.workload(120, seed: 3)
        let q = ListQuery(store: s, fs: fs)
        for x in entries[..<40] { try s.append(x) }
        let older = try q.writeSnapshot(Self.zone)
        for x in entries[40..<80] { try s.append(x) }
        let newer = try q.writeSnapshot(Self.zone)
        for x in entries[80...] { try s.append(x) }
        var bytes = try #require(fs.contents(newer.file.path))
        bytes[bytes.count - 3] ^= 0x5A
        fs.install(newer.file.path, bytes: bytes)
        let m = try q.materialise(Self.zone)
        #expect(m.snapshot?.sequence == older.file.sequence)
        #expect(m.warnings.count == 1 && m.warnings[0].contains(newer.file.name))
        #expect(m.state == Self.fullReplay(entries))
    }

    @Test func everySnapshotDamagedFallsBackToAFullReplay() throws {
        let fs = MemoryFileSystem()
        let s = try Self.store(fs)
        let entries = Self.workload(60, seed: 4)
        for x in entries { try s.append(x) }
        let q = ListQuery(store: s, fs: fs)
        let r = try q.writeSnapshot(Self.zone)
        fs.install(r.file.path, bytes: Array(try #require(fs.contents(r.file.path)).prefix(30)))
        let m = try q.materialise(Self.zone)
        #expect(m.snapshot == nil)
        #expect(m.replayed == entries.count)
        #expect(!m.warnings.isEmpty)
        #expect(m.state == Self.fullReplay(entries))
    }

    @Test func aSnapshotOfAnEarlierIncarnationIsNeverUsed() throws {
        let fs = MemoryFileSystem()
        let s = try Self.store(fs)
        for x in Self.workload(30, seed: 5) { try s.append(x) }
        let q = ListQuery(store: s, fs: fs)
        _ = try q.writeSnapshot(Self.zone)
        try s.deleteZone(Self.zone)
        try s.createZone(Self.zone)
        let fresh = Self.workload(10, seed: 6)
        for x in fresh { try s.append(x) }
        let m = try q.materialise(Self.zone)
        #expect(m.snapshot == nil)
        #expect(m.state == Self.fullReplay(fresh))
    }

    /// Pages end inside batches and a point in time ends inside a page: each page is applied
    /// at once, and the state is still exactly a full replay's.
    @Test func materialisingPageByPageEqualsAFullReplay() throws {
        let fs = MemoryFileSystem()
        let s = try Self.store(fs)
        let entries = Self.workload(400, seed: 11)
        var k = 0
        while k < entries.count {
            let n = min(13, entries.count - k)
            _ = try s.append(batch: Array(entries[k..<(k + n)]))
            k += n
        }
        var q = ListQuery(store: s, fs: fs)
        q.pageSize = 7
        let m = try q.materialise(Self.zone)
        #expect(m.replayed == entries.count)
        #expect(m.state == Self.fullReplay(entries))
        let cut = try penultimateOfAPage(q, s)
        let through = try q.entries(Self.zone).entries.filter { $0.0 <= cut }.map(\.1)
        let at = try q.materialise(Self.zone, at: .sequence(cut))
        #expect(at.replayed == through.count)
        #expect(through.count < entries.count)
        #expect(at.state == Self.fullReplay(through))
    }

    /// Read ahead on another thread or when asked for, the pages are exactly those read one after another.
    @Test func pagesReadAheadAreThePagesReadInTurn() throws {
        let s = try Self.filledStore(200, seed: 3)
        let first = try s.changes(in: Self.zone, since: nil, limit: 9)
        var inTurn: [[SequenceNumber]] = []
        var token = first.token
        while true {
            let page = try s.changes(in: Self.zone, since: token, limit: 9)
            inTurn.append(page.entries.map(\.sequence))
            token = page.token
            if !page.moreComing { break }
        }
        for readAhead in [true, false] {
            let reader = PageReader(store: s, zone: Self.zone, after: first.token, pageSize: 9, readAhead: readAhead, depth: 1)
            var ahead: [[SequenceNumber]] = []
            while let page = try reader.next() { ahead.append(page.entries.map(\.sequence)) }
            reader.stop()
            #expect(ahead == inTurn, "read ahead: \(readAhead)")
            #expect(try reader.next() == nil)
        }
    }

    /// Pages read ahead on a helper thread (`helperThreads`, off by default) make the same list and
    /// history as pages read in turn.
    @Test func aListReadWithItsPagesReadAheadIsTheSameList() throws {
        let s = try Self.filledStore(500, seed: 6)
        var q = ListQuery(store: s)
        q.pageSize = 16
        let inTurn = try q.materialise(Self.zone)
        q.helperThreads = true
        let ahead = try q.materialise(Self.zone)
        #expect(ahead.state == inTurn.state && ahead.replayed == inTurn.replayed && ahead.sequence == inTurn.sequence)
        #expect(try q.history(Self.zone).log == (try ListQuery(store: s).history(Self.zone).log))
    }

    /// A reader stopped after one page ends its thread and hands out nothing more; stopping twice is harmless.
    @Test func aPageReaderStoppedEarlyHandsOutNothingMore() throws {
        let s = try Self.filledStore(200, seed: 4)
        let token = try s.changes(in: Self.zone, since: nil, limit: 5).token
        let reader = PageReader(store: s, zone: Self.zone, after: token, pageSize: 5)
        #expect(try reader.next()?.entries.count == 5)
        reader.stop()
        reader.stop()
        #expect(try reader.next() == nil)
    }

    /// The feed's error reaches the consumer, in order, as `next()`'s.
    @Test func aPageReaderPassesOnTheFeedsError() throws {
        let s = try Self.filledStore(50, seed: 5)
        let token = try s.changes(in: Self.zone, since: nil, limit: 5).token
        _ = try s.deleteZone(Self.zone)
        let reader = PageReader(store: s, zone: Self.zone, after: token, pageSize: 5)
        defer { reader.stop() }
        #expect(throws: FeedError.self) { _ = try reader.next() }
        #expect(try reader.next() == nil)
    }

    /// A sequence that ends the replay one entry before the end of the tenth page.
    private func penultimateOfAPage(_ q: ListQuery, _ s: JournalStore) throws -> SequenceNumber {
        var token: FeedToken? = nil
        for _ in 0..<9 { token = try s.changes(in: Self.zone, since: token, limit: q.pageSize).token }
        let page = try s.changes(in: Self.zone, since: token, limit: q.pageSize)
        return page.entries[page.entries.count - 2].sequence
    }

    @Test func theStateAtASequenceReplaysOnlyThatFar() throws {
        let fs = MemoryFileSystem()
        let s = try Self.store(fs)
        let entries = Self.workload(80, seed: 7)
        for x in entries { try s.append(x) }
        let q = ListQuery(store: s, fs: fs)
        _ = try q.writeSnapshot(Self.zone)
        let m = try q.materialise(Self.zone, at: .sequence(30))
        #expect(m.snapshot == nil, "the snapshot is past the point asked for")
        #expect(m.state == Self.fullReplay(Array(entries[..<30])))
        let t = try q.materialise(Self.zone, at: .time(Int64(Self.t0) + 19_000))
        #expect(t.state == Self.fullReplay(Array(entries[..<20])))
    }

    @Test func historyFromItsFilePlusTheTailEqualsTheWholeHistory() throws {
        let fs = MemoryFileSystem()
        let s = try Self.store(fs)
        let entries = Self.workload(100, seed: 8)
        for x in entries[..<60] { try s.append(x) }
        let q = ListQuery(store: s, fs: fs)
        _ = try q.writeSnapshot(Self.zone)
        for x in entries[60...] { try s.append(x) }
        var whole = ActivityLog(zone: Self.zone)
        for e in entries { _ = whole.record(e) }
        let (log, warnings) = try q.history(Self.zone)
        #expect(warnings.isEmpty)
        #expect(log == whole)
    }

    @Test func aSnapshotWrittenDuringACrashIsWholeOrAbsent() throws {
        for failOn in 1...10 {
            let fs = MemoryFileSystem()
            let s = try Self.store(fs)
            let entries = Self.workload(50, seed: 9)
            for x in entries { try s.append(x) }
            fs.setFaults(.init(failOnCall: failOn))
            _ = try? ListQuery(store: s, fs: fs).writeSnapshot(Self.zone)
            try? s.close()
            fs.crash(.tearLastWrite(seed: UInt64(failOn)))
            fs.setFaults(.init())
            let reopened = try Self.store(fs)
            let m = try ListQuery(store: reopened, fs: fs).materialise(Self.zone)
            #expect(m.warnings.isEmpty, "fault on call \(failOn): a torn snapshot became visible: \(m.warnings)")
            #expect(m.state == Self.fullReplay(entries))
            try reopened.close()
        }
    }
}

extension ListQueryTests {
    @Test func anExpiredTokenNamesTheNewestSnapshotAtOrAboveTheMark() throws {
        let fs = MemoryFileSystem()
        let s = try Self.store(fs)
        let entries = Self.workload(60, seed: 10)
        for x in entries[..<20] { try s.append(x) }
        let early = try s.changes(in: Self.zone, since: nil, limit: 5).token
        let q = ListQuery(store: s, fs: fs)
        let below = try q.writeSnapshot(Self.zone)
        for x in entries[20...] { try s.append(x) }
        let above = try q.writeSnapshot(Self.zone)
        try s.setLowWaterMark(Self.zone, to: 30)
        do {
            _ = try s.changes(in: Self.zone, since: early)
            Issue.record("expected tokenExpired")
        } catch {
            guard case .tokenExpired(_, 30, let refetch) = error else { Issue.record("unexpected \(error)"); return }
            #expect(refetch.snapshotSequence == above.file.sequence)
        }
        // Materialising skips the snapshot below the mark.
        fs.install(above.file.path, bytes: [1, 2, 3])
        let m = try q.materialise(Self.zone)
        #expect(m.snapshot == nil)
        #expect(m.warnings.contains { $0.contains(below.file.name) && $0.contains("low-water") })
        #expect(m.state == Self.fullReplay(entries))
    }
}

import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// The compactor end to end (Spec/COMPACTION.md): list rules, history, snapshots, marks, consumers.
@Suite struct CompactorTests {
    static let zone = ListQueryTests.zone
    static let t0 = ListQueryTests.t0
    static let day: Int64 = 24 * 60 * 60 * 1000
    /// Long after every entry: everything is older than the 14-day cutoff.
    static let later = Int64(t0) + 30 * day

    static func e(_ id: String, _ op: JournalCodec.EntryOperation, _ i: UInt64, author: String = "alice", zone: String = zone) -> JournalEntry {
        JournalEntry(id: CompactID(id)!, zone: zone, author: author, wallTime: Int64(t0 + i * 1_000),
                     clock: HybridTime(physicalMillis: t0 + i * 1_000, counter: 0), operation: op)
    }

    /// Entries in another zone, enough to seal the segments that hold everything before them.
    static func seal(_ s: JournalStore, from i: Int = 10_000) throws {
        let start = s.nextSequence
        var k = i
        while s.sealedThrough < start {
            try s.append(e("filler-\(k)", .add(item: CompactID("filler-item-\(k)")!, text: "filler", after: nil), UInt64(k), zone: "Filler"))
            k += 1
        }
    }

    static let milk = CompactID("milk")!, bread = CompactID("bread")!, eggs = CompactID("eggs")!, tea = CompactID("tea")!
    static let coffee = CompactID("coffee")!, jam = CompactID("jam")!

    /// The seven-entry example (MERGE.md §1), tea, a second rename, coffee bought and jam deleted; sealed.
    static func sevenEntryStore() throws -> (JournalStore, MemoryFileSystem) {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        for x in [e("e1", .add(item: milk, text: "Milk", after: nil), 1), e("e2", .add(item: bread, text: "Bread", after: milk), 2),
                  e("e3", .rename(name: "Weekly Shopping"), 3), e("e4", .recolour(colour: "yellow"), 4),
                  e("e5", .add(item: eggs, text: "Eggs", after: bread), 5), e("e6", .delete(item: bread), 6),
                  e("e7", .markOff(item: milk), 7), e("e8", .add(item: tea, text: "Tea", after: nil), 8),
                  e("e9", .rename(name: "Weekend Shopping"), 9, author: "bob"),
                  e("e10", .add(item: coffee, text: "Coffee", after: tea), 10), e("e11", .markOff(item: coffee), 11),
                  e("e12", .add(item: jam, text: "Jam", after: nil), 12, author: "bob"), e("e13", .delete(item: jam), 13, author: "bob")] {
            try s.append(x)
        }
        try seal(s)
        return (s, fs)
    }

    static func ids(_ state: ListState) -> [CompactID] { state.items.map(\.id) }

    @Test func finishedLifecyclesOlderThanTheCutoffArePurged() throws {
        let (s, fs) = try Self.sevenEntryStore()
        let q = ListQuery(store: s, fs: fs)
        let report = try ListCompactor(query: q).run(now: Self.later)
        let list = try #require(report.zones.first { $0.zone == Self.zone })
        // COMPACTION.md §2's worked example. Coffee (added, marked off) and jam (added, deleted)
        // go, with the superseded rename e3. Milk (bought) and bread (deleted) leave the list too,
        // but eggs stays after bread, which stays after milk: the chain folds into eggs, whose
        // place is written over milk's add e1. e1 also started the zone: as a place it still does.
        let entries = try q.entries(Self.zone).entries
        #expect(Set(entries.map { $0.1.id.description }) == ["e1", "e4", "e5", "e8", "e9"])
        #expect(entries.first { $0.1.id.description == "e1" }?.1.operation == .place(item: Self.eggs, after: nil))
        #expect(list.chosen == 8 && list.rewritten == 1)
        #expect(report.storage.entriesPurged == 8 && report.storage.entriesReplaced == 1)
        let state = try q.materialise(Self.zone).state
        #expect(Self.ids(state) == [Self.tea, Self.eggs])
        #expect(state.name == "Weekend Shopping" && state.colour == "yellow")
    }

    @Test func lifecyclesNewerThanTheCutoffStay() throws {
        let (s, fs) = try Self.sevenEntryStore()
        let q = ListQuery(store: s, fs: fs)
        let report = try ListCompactor(query: q).run(now: Int64(Self.t0) + 13 * Self.day)
        #expect(report.zones.isEmpty && report.storage.entriesPurged == 0)
        #expect(try q.entries(Self.zone).entries.count == 13)
    }

    /// Zones are compacted a group at a time, so memory follows the group: one zone per group
    /// ends where one group for every zone does.
    @Test func compactingZonesInGroupsEndsWhereOneGroupDoes() throws {
        let zones = ["List-x", "List-y", "List-z"]
        func store() throws -> (JournalStore, MemoryFileSystem) {
            let fs = MemoryFileSystem()
            let s = try ListQueryTests.store(fs)
            for (k, zone) in zones.enumerated() {
                let t = UInt64(k * 100)
                for x in [Self.e("\(zone)-1", .add(item: Self.milk, text: "Milk", after: nil), t + 1, zone: zone),
                          Self.e("\(zone)-2", .add(item: Self.tea, text: "Tea", after: Self.milk), t + 2, zone: zone),
                          Self.e("\(zone)-3", .markOff(item: Self.tea), t + 3, zone: zone),
                          Self.e("\(zone)-4", .add(item: Self.coffee, text: "Coffee", after: nil), t + 4, zone: zone),
                          Self.e("\(zone)-5", .delete(item: Self.coffee), t + 5, zone: zone)] { try s.append(x) }
            }
            try Self.seal(s)
            return (s, fs)
        }
        let (a, fa) = try store(), (b, fb) = try store()
        let one = try ListCompactor(query: ListQuery(store: a, fs: fa)).run(now: Self.later)
        var grouped = ListCompactor(query: ListQuery(store: b, fs: fb))
        grouped.maxEntriesPerGroup = 1
        let many = try grouped.run(now: Self.later)
        #expect(one.chosen == many.chosen && one.rewritten == many.rewritten)
        #expect(one.zones == many.zones && one.zones.count == 3)
        #expect(many.storage.entriesPurged == one.storage.entriesPurged && one.storage.entriesPurged > 0)
        #expect(many.storage.entriesReplaced == one.storage.entriesReplaced)
        #expect(many.storage.segmentsExamined > one.storage.segmentsExamined, "three groups, three rewrites of the shared segments")
        for zone in zones {
            #expect(try ListQuery(store: a, fs: fa).materialise(zone).state == ListQuery(store: b, fs: fb).materialise(zone).state)
            #expect(try ListQuery(store: b, fs: fb).materialise(zone).state.items.map(\.text) == ["Milk"])
        }
    }

    static func skip(_ report: ListCompactionReport, _ zone: String) -> CompactionSkip? {
        report.skipped.first { $0.zone == zone }?.reason
    }

    @Test func aZoneWhoseEntriesAreAllNewerThanTheCutoffIsSkippedAsSuch() throws {
        let (s, fs) = try Self.sevenEntryStore()
        let report = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: Int64(Self.t0) + Self.day)
        #expect(Self.skip(report, Self.zone) == .nothingOlderThanCutoff)
    }

    @Test func aZoneHeldBackByAConsumerIsSkippedWithTheMarkItIsHeldAt() throws {
        let (s, fs) = try Self.sevenEntryStore()
        try s.registerConsumer("uploader", leaseUntil: nil)
        let report = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: Self.later)
        #expect(report.zones.isEmpty)
        #expect(Self.skip(report, Self.zone) == .heldByConsumers(at: 0))
    }

    /// A consumer at 0 holds every zone, but one with nothing finished would keep its entries
    /// anyway: that, not the consumer, is the reason given.
    @Test func aZoneWithNothingFinishedIsNotReportedAsHeldByAConsumer() throws {
        let (s, fs) = try Self.sevenEntryStore()
        try s.registerConsumer("uploader", leaseUntil: nil)
        let report = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: Self.later)
        #expect(Self.skip(report, "Filler") == .nothingFinished)
    }

    @Test func aZoneWithNoFinishedItemIsSkippedAsSuch() throws {
        let (s, fs) = try Self.sevenEntryStore()
        // The filler zone that sealed the segments only ever adds.
        let report = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: Self.later)
        #expect(Self.skip(report, "Filler") == .nothingFinished)
        #expect(Self.skip(report, Self.zone) == nil)
    }

    /// Old entries in a segment that is still being filled would wait for it to fill (a segment
    /// can span months of one family's list): the compactor seals it first.
    @Test func oldEntriesInTheActiveSegmentAreSealedAndCompacted() throws {
        let fs = MemoryFileSystem()
        var o = StoreOptions(durability: .always, segmentSize: 1 << 20, preallocate: false)
        o.fileSystem = fs
        try fs.createDirectory("/big")
        let s = try JournalStore.open("/big/s.wal", options: o)
        try s.createZone(Self.zone)
        try s.append(Self.e("a", .add(item: Self.milk, text: "Milk", after: nil), 1))
        try s.append(Self.e("b", .markOff(item: Self.milk), 2))
        #expect(s.sealedThrough == 0)
        let q = ListQuery(store: s, fs: fs)
        #expect(try ListCompactor(query: q).run(now: Self.later, dryRun: true).chosen.count == 2)
        #expect(s.sealedThrough == 0, "a dry run writes nothing")
        let report = try ListCompactor(query: q).run(now: Self.later)
        #expect(report.storage.entriesPurged == 2)
        #expect(try q.materialise(Self.zone).state.items.isEmpty)
    }

    @Test func newEntriesInTheActiveSegmentLeaveItAsItIs() throws {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        try s.append(Self.e("a", .add(item: Self.milk, text: "Milk", after: nil), 1))
        try s.append(Self.e("b", .markOff(item: Self.milk), 2))
        let report = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: Int64(Self.t0) + Self.day)
        #expect(report.storage.entriesPurged == 0 && s.sealedThrough == 0)
    }

    @Test func theHistorySurvivesCompaction() throws {
        let (s, fs) = try Self.sevenEntryStore()
        let q = ListQuery(store: s, fs: fs)
        let before = try q.history(Self.zone).log
        _ = try ListCompactor(query: q).run(now: Self.later)
        #expect(try q.entries(Self.zone).entries.count == 5)
        let (after, warnings) = try q.history(Self.zone)
        #expect(warnings.isEmpty)
        #expect(after.allEvents() == before.allEvents())
        #expect(after.lastMarkOff(ofItemsMatching: "milk")?.author == "alice")
        #expect(after.deletions(ofItemsMatching: "bread").count == 1)
        // And after a reopen, from the files alone.
        try s.close()
        let reopened = try JournalStore.open(s.path, options: s.options)
        #expect(try ListQuery(store: reopened, fs: fs).history(Self.zone).log.allEvents() == before.allEvents())
    }

    @Test func snapshotPlusTailEqualsAFullReplayOfTheCompactedLog() throws {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        let entries = ListQueryTests.workload(400, seed: 3)
        for x in entries.prefix(300) { try s.append(x) }
        try Self.seal(s)
        let q = ListQuery(store: s, fs: fs)
        let report = try ListCompactor(query: q).run(now: Self.later)
        #expect(report.storage.entriesPurged > 0)
        for x in entries.suffix(100) { try s.append(x) }
        let m = try q.materialise(Self.zone)
        #expect(m.snapshot != nil && m.warnings.isEmpty)
        var r = ListReducer(zone: Self.zone)
        for (_, x) in try q.entries(Self.zone).entries { _ = r.apply(x) }
        #expect(m.state == r.state())
    }

    @Test func anOldTokenIsExpiredAndNamesTheSnapshotToRefetchFrom() throws {
        let (s, fs) = try Self.sevenEntryStore()
        let q = ListQuery(store: s, fs: fs)
        let early = try s.changes(in: Self.zone, since: nil, limit: 2).token
        let report = try ListCompactor(query: q).run(now: Self.later)
        let list = try #require(report.zones.first { $0.zone == Self.zone })
        var answer: FeedError?
        do { _ = try s.changes(in: Self.zone, since: early) } catch { answer = error }
        guard case .tokenExpired(let zone, let mark, let refetch)? = answer else {
            Issue.record("an old token must expire, got \(String(describing: answer))")
            return
        }
        #expect(zone == Self.zone && mark == list.lowWaterMark)
        #expect(refetch.snapshotSequence == list.snapshotSequence)
        // The client loads that snapshot and continues from it: the same list as a full read.
        let file = try #require(SnapshotDirectory.list(store: s.path, zone: zone, incarnation: refetch.incarnation, kind: .state, fs: fs)
            .first { $0.sequence == refetch.snapshotSequence })
        var (_, reducer) = try SnapshotCodec.decode(try SnapshotDirectory.read(file.path, limit: SnapshotCodec.maxStoredBytes, fs: fs))
        let tail = try s.changes(in: zone, since: s.zoneToken(zone, position: file.sequence))
        for x in tail.entries { _ = reducer.apply(x.entry) }
        #expect(reducer.state() == (try q.materialise(Self.zone).state))
        // A client that pages from the start is never expired.
        #expect(try ZoneFeedTests_drain(s, Self.zone).count == q.entries(Self.zone).entries.count)
    }

    @Test func anItemThatAnchorsAnItemThatStaysIsKept() throws {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        try s.append(Self.e("a", .add(item: Self.milk, text: "Milk", after: nil), 1))
        try s.append(Self.e("b", .add(item: Self.eggs, text: "Eggs", after: Self.milk), 2))
        try s.append(Self.e("c", .add(item: Self.tea, text: "Tea", after: nil), 3))
        try s.append(Self.e("d", .markOff(item: Self.milk), 4))
        try Self.seal(s)
        let q = ListQuery(store: s, fs: fs)
        var before = try q.materialise(Self.zone).state
        _ = try ListCompactor(query: q).run(now: Self.later)
        // Milk, bought long ago, leaves the list; eggs keeps its place after it.
        before.items.removeAll { $0.id == Self.milk }
        #expect(try q.materialise(Self.zone).state == before)
    }

    @Test func aConsumerMarkHoldsCompactionBackUntilItsLeaseExpires() throws {
        let (s, fs) = try Self.sevenEntryStore()
        let q = ListQuery(store: s, fs: fs)
        try s.registerConsumer("uploaded", leaseUntil: Self.later + Self.day)
        try s.advanceConsumer("uploaded", zone: Self.zone, to: 11)
        try s.advanceConsumer("uploaded", zone: "Filler", to: s.sealedThrough)
        let held = try ListCompactor(query: q).run(now: Self.later)
        // Coffee (10, 11), milk and bread (2, 6, 7; milk's add e1 becomes eggs' placement) and the
        // rename e3 lie at or below the consumer's mark; jam does not.
        #expect(held.storage.entriesPurged == 6 && held.storage.entriesReplaced == 1)
        #expect(s.zone(Self.zone)?.lowWaterMark == 11)
        let expired = try ListCompactor(query: q).run(now: Self.later + 2 * Self.day)
        #expect(expired.storage.entriesPurged == 2)
    }

    @Test func aDamagedConsumerFileHoldsEverythingBack() throws {
        let (s, fs) = try Self.sevenEntryStore()
        try s.registerConsumer("uploaded", leaseUntil: nil)
        let path = try #require(try fs.listDirectory(s.path + "/consumers").first.map { s.path + "/consumers/" + $0 })
        var bytes = try #require(fs.contents(path))
        bytes[bytes.count - 1] ^= 0xFF
        fs.install(path, bytes: bytes)
        #expect(!s.consumers().problems.isEmpty)
        let report = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: Self.later)
        #expect(report.storage.entriesPurged == 0)
    }

    @Test func aDryRunChangesNothing() throws {
        let (s, fs) = try Self.sevenEntryStore()
        let q = ListQuery(store: s, fs: fs)
        let report = try ListCompactor(query: q).run(now: Self.later, dryRun: true)
        #expect(report.zones.first { $0.zone == Self.zone }?.chosen == 8)
        #expect(report.rewritten.count == 1)
        #expect(try q.entries(Self.zone).entries.count == 13)
        #expect(s.zone(Self.zone)?.lowWaterMark == 0)
        #expect(SnapshotDirectory.list(store: s.path, fs: fs).isEmpty)
    }

    @Test func deletedZonesLoseTheirEntriesAndFiles() throws {
        let (s, fs) = try Self.sevenEntryStore()
        let q = ListQuery(store: s, fs: fs)
        _ = try q.writeSnapshot(Self.zone)
        try s.deleteZone(Self.zone)
        try Self.seal(s, from: 20_000)
        let report = try ListCompactor(query: q).run(now: Self.later)
        // Every entry, e1 included: the zoneCreate written at its sequence keeps the identity.
        #expect(report.storage.deletedZoneEntriesPurged == 13)
        #expect(SnapshotDirectory.list(store: s.path, fs: fs).filter { $0.zoneKey == SnapshotDirectory.zoneKey(Self.zone) }.isEmpty)
    }
}

/// Every entry of a zone's feed from the start, paging.
func ZoneFeedTests_drain(_ s: JournalStore, _ zone: String) throws -> [FeedEntry] {
    var token: FeedToken?
    var all: [FeedEntry] = []
    while true {
        let page = try s.changes(in: zone, since: token, limit: 3)
        all += page.entries
        token = page.token
        if !page.moreComing { return all }
    }
}

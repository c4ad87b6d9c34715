import Foundation
import Testing
@testable import JournalLog
import JournalCodec
import JournalTesting

/// The index journal (Spec/INDEX.md §5): a checkpoint after the first is a record of what
/// changed, and open applies the records that read whole to the checkpoint file.
@Suite struct IndexJournalTests {
    static let file = "/d/s.wal/" + StoreLayout.indexFile
    static let journal = "/d/s.wal/" + StoreLayout.indexJournalFile

    static func entry(_ n: Int, zone: String) -> JournalEntry { ZoneFeedTests.entry(n, zone: zone) }

    /// Everything the index answers: each zone incarnation's facts, and each live zone's feed.
    static func answers(_ store: JournalStore) throws -> ([ZoneInfo], [String: [SequenceNumber]]) {
        (store.zones(), try ZoneFeedTests.feedSnapshot(store))
    }

    /// The store's files as written so far, synced or not, in a new file system: as if the
    /// kernel wrote everything back and the writer then died (records are not synced).
    static func written(_ fs: MemoryFileSystem) throws -> MemoryFileSystem {
        let out = MemoryFileSystem()
        func copy(_ dir: String) throws {
            try out.createDirectory(dir)
            for name in try fs.listDirectory(dir) {
                let p = dir + "/" + name
                switch fs.kind(of: p) {
                case .directory: try copy(p)
                case .file: out.install(p, bytes: try #require(fs.contents(p)))
                default: break
                }
            }
        }
        try copy("/d")
        try asIfTheWriterCrashed("/d/s.wal", fs: out)
        return out
    }

    static func reopen(_ fs: MemoryFileSystem, _ options: StoreOptions) throws -> JournalStore {
        var options = options
        options.fileSystem = fs
        return try JournalStore.open("/d/s.wal", options: options)
    }

    /// A store with a checkpoint file, then changes of every kind checkpointed as records: new
    /// entries, a new zone, a deletion, a low-water mark with a history reach, a zone created again.
    static func storeWithRecords(_ fs: MemoryFileSystem) throws -> (JournalStore, StoreOptions) {
        let (store, options) = try ZoneFeedTests.memoryStore(fs)
        for i in 0..<20 { try store.append(entry(i, zone: "List-\(i % 3)")) }
        try store.checkpointIndex()
        for i in 20..<30 { try store.append(entry(i, zone: "List-\(i % 4)")) }
        try store.checkpointIndex()
        _ = try store.deleteZone("List-1")
        try store.setLowWaterMark("List-0", to: 5, historyThrough: 7)
        try store.checkpointIndex()
        _ = try store.createZone("List-1")
        try store.append(entry(30, zone: "List-1"))
        try store.checkpointIndex()
        return (store, options)
    }

    @Test func aCheckpointAfterTheFirstIsARecordAndLeavesTheFileAsItWas() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try ZoneFeedTests.memoryStore(fs)
        for i in 0..<20 { try store.append(Self.entry(i, zone: "List-\(i % 3)")) }
        try store.checkpointIndex()
        let written = try #require(fs.contents(Self.file))
        for i in 20..<30 { try store.append(Self.entry(i, zone: "List-\(i % 4)")) }
        try store.checkpointIndex()
        #expect(fs.contents(Self.file) == written)
        let journal = try #require(fs.contents(Self.journal))
        let base = try written.withUnsafeBytes { try ZoneIndexCodec.decode($0) }
        let applied = journal.withUnsafeBytes { ZoneIndexJournalCodec.apply($0, to: base, baseCRC: ZoneIndexJournalCodec.fileCRC(written)) }
        #expect(applied.records == 1 && applied.stop == nil)
        #expect(applied.checkpoint.zones.map(\.entryCount) == [10, 10, 8, 2])
        try store.close()
    }

    @Test func openAppliesTheRecordsAndReplaysNothing() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Self.storeWithRecords(fs)
        let expected = try Self.answers(store)
        try store.sync()
        // Not closed: a close would write one more record. The records on disk are the test's.
        let reopened = try Self.reopen(try Self.written(fs), options)
        #expect(reopened.recovery.indexSource == .checkpoint)
        #expect(reopened.recovery.indexJournalRecords == 3)
        #expect(reopened.recovery.indexRecordsReplayed == 0)
        #expect(try Self.answers(reopened) == expected)
        try reopened.close()
    }

    /// A reader says how it got the index, as a writer's open does: from the checkpoint (through
    /// the sequence its records reach) and what it replayed after it, or rebuilt and why.
    @Test func aReaderSaysHowItGotTheIndex() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Self.storeWithRecords(fs)
        try store.sync()
        let covered = try #require(IndexBuilder.loadCheckpoint(store: "/d/s.wal", fs: fs).checkpoint?.coveredSequence)
        try store.append(Self.entry(31, zone: "List-2"))
        try store.sync()
        let reader = try StoreReader.open("/d/s.wal", fileSystem: fs)
        #expect(reader.index.source == .checkpoint)
        #expect(reader.index.checkpointSequence == covered)
        #expect(reader.index.journalRecords == 3)
        #expect(reader.index.recordsReplayed == 1)
        fs.install(Self.file, bytes: Array("not an index".utf8))
        let rebuilt = try StoreReader.open("/d/s.wal", fileSystem: fs).index
        guard case .rebuilt(let reason) = rebuilt.source else { Issue.record("used a damaged checkpoint"); return }
        #expect(reason.contains("damaged"))
        #expect(rebuilt.checkpointSequence == nil && rebuilt.journalRecords == 0)
        try store.close()
    }

    @Test func aTornLastRecordEndsTheJournalAndTheLogSuppliesTheRest() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Self.storeWithRecords(fs)
        let expected = try Self.answers(store)
        try store.sync()
        let after = try Self.written(fs)
        let journal = try #require(after.contents(Self.journal))
        after.install(Self.journal, bytes: Array(journal.dropLast(3)))
        let reopened = try Self.reopen(after, options)
        #expect(reopened.recovery.indexSource == .checkpoint)
        #expect(reopened.recovery.indexJournalRecords == 2)
        #expect(reopened.recovery.indexRecordsReplayed > 0)
        #expect(try Self.answers(reopened) == expected)
        try reopened.close()
    }

    @Test func aCrashLosingUnsyncedRecordsLeavesTheIndexWhole() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Self.storeWithRecords(fs)
        let expected = try Self.answers(store)
        try store.sync()
        fs.crash(.dropUnsynced)
        let reopened = try Self.reopen(fs, options)
        #expect(try Self.answers(reopened) == expected)
        try reopened.close()
    }

    @Test func aJournalOfAnotherCheckpointFileIsIgnored() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try Self.storeWithRecords(fs)
        try store.close()
        let stale = try #require(fs.contents(Self.journal))
        // The next open's first checkpoint is a whole file; the journal on disk names the old one.
        store = try JournalStore.open("/d/s.wal", options: options)
        try store.append(Self.entry(40, zone: "List-9"))
        try store.checkpointIndex()
        let expected = try Self.answers(store)
        try store.sync()
        let after = try Self.written(fs)
        after.install(Self.journal, bytes: stale)
        let reopened = try Self.reopen(after, options)
        #expect(reopened.recovery.indexSource == .checkpoint)
        #expect(reopened.recovery.indexJournalRecords == 0)
        #expect(try Self.answers(reopened) == expected)
        try reopened.close()
    }

    @Test func aFailedRecordWriteMakesTheNextCheckpointWhole() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Self.storeWithRecords(fs)
        let before = try #require(fs.contents(Self.file))
        try store.append(Self.entry(50, zone: "List-2"))
        try store.sync()
        fs.setFaults(.init(failOnCall: 1))
        try store.checkpointIndex()
        fs.setFaults(.init())
        #expect(store.indexCheckpointError != nil)
        try store.append(Self.entry(51, zone: "List-2"))
        try store.checkpointIndex()
        #expect(store.indexCheckpointError == nil)
        #expect(fs.contents(Self.file) != before)
        let expected = try Self.answers(store)
        try store.sync()
        let reopened = try Self.reopen(try Self.written(fs), options)
        #expect(reopened.recovery.indexSource == .checkpoint && reopened.recovery.indexRecordsReplayed == 0)
        #expect(try Self.answers(reopened) == expected)
        try reopened.close()
    }

    @Test func aCompactionRemovesTheJournalWithTheFile() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Self.storeWithRecords(fs)
        #expect(fs.contents(Self.journal) != nil)
        _ = try store.sealActiveSegment()
        _ = try store.compact(purging: [1, 2])
        #expect(fs.contents(Self.journal) == nil)
        let expected = try Self.answers(store)
        try store.close()
        let reopened = try JournalStore.open("/d/s.wal", options: options)
        #expect(try Self.answers(reopened) == expected)
        try reopened.close()
    }

    /// Checkpoints (whole files and records) fail at their n-th I/O call, then the machine loses
    /// power in each way it can: the index that opens answers as the log does.
    @Test(arguments: 1...7)
    func aCrashAtEveryIOCallOfACheckpointLeavesTheIndexWhole(failing n: Int) throws {
        let modes: [MemoryFileSystem.CrashMode] = [.dropUnsynced, .tearLastWrite(seed: UInt64(n)), .garbleLastWrite(seed: UInt64(n))]
        for mode in modes {
            let fs = MemoryFileSystem()
            let (store, options) = try ZoneFeedTests.memoryStore(fs)
            for round in 0..<4 {
                for i in 0..<6 { try store.append(Self.entry(round * 10 + i, zone: "List-\((round + i) % 4)")) }
                if round == 2 {
                    _ = try store.deleteZone("List-1")
                    _ = try store.createZone("List-1")
                }
                fs.setFaults(.init(failOnCall: n, failPersistently: true))
                try store.checkpointIndex()
                fs.setFaults(.init())
            }
            let expected = try Self.answers(store)
            fs.crash(mode)
            let reopened = try Self.reopen(fs, options)
            #expect(try Self.answers(reopened) == expected)
            try reopened.close()
        }
    }

    /// A deletion enqueued but not yet covered when a checkpoint is taken is left out of it; the
    /// next record carries it even though the track did not change again.
    @Test func aDeletionPastTheCoveredSequenceIsInTheNextRecord() throws {
        var table = TrackTable()
        var list = ZoneTrack(name: "List-a", incarnation: 1, isImplicit: true)
        list.frameSequences = [1]
        list.frameLocations = [64]
        list.deletedAt = 3
        table.append(list)
        _ = table.takeTouched()
        func taken(through: SequenceNumber, touched: [Int]) -> TakenCheckpoint {
            TakenCheckpoint(storeID: (1, 2), covered: CoveredFrame(segment: 1, offset: 32 * Int64(through), crc: 7, lastSequence: through),
                            segments: [1], tracks: table, touched: touched)
        }
        let first = taken(through: 2, touched: [0])
        let c = first.index()
        #expect(c.zones[0].deletedAt == nil)
        var marks = c.zones.map(IndexCheckpointFiles.TrackMark.init)
        let hidden = (0..<1).filter { first.hidesPart(of: first.tracks[$0]) }
        #expect(hidden == [0])
        let second = taken(through: 3, touched: [])
        let (record, stillHidden) = try #require(IndexCheckpointFiles.record(from: first.position, marks: &marks, to: second, recheck: hidden))
        #expect(stillHidden.isEmpty)
        let applied = (ZoneIndexJournalCodec.header(extending: c, baseCRC: 9) + record).withUnsafeBytes {
            ZoneIndexJournalCodec.apply($0, to: c, baseCRC: 9)
        }
        #expect(applied.records == 1 && applied.stop == nil)
        #expect(applied.checkpoint == second.index())
    }
}

/// The record codec alone: a record applied to the checkpoint it was made from gives the newer
/// one exactly; damage ends the journal at the last record that reads whole.
@Suite struct IndexJournalCodecTests {
    static func checkpoint(seed: UInt64, zones: Int, covered: SequenceNumber) -> ZoneIndexCheckpoint {
        var rng = SplitMix64(seed: seed)
        var tracks: [ZoneTrack] = []
        for z in 0..<zones {
            var t = ZoneTrack(name: "List-\(z)", incarnation: SequenceNumber(z + 1), isImplicit: z % 2 == 0)
            var seq = t.incarnation
            for _ in 0..<Int(rng.next() % 5) {
                seq += 1 + rng.next() % 3
                guard seq <= covered else { break }
                t.frameSequences.append(seq)
                t.frameLocations.append(UInt64(rng.next() % 2) << 32 | (64 + rng.next() % 10_000))
            }
            t.lastSequence = t.frameSequences.last ?? t.incarnation
            t.entryCount = t.frameSequences.count
            tracks.append(t)
        }
        return ZoneIndexCheckpoint(storeID: (1, 2), coveredSegment: 1 << 10, coveredOffset: 640, coveredCRC: 0xABCD,
                                   coveredSequence: covered, segments: [1, 1 << 10], zones: tracks)
    }

    /// `old` grown: frames appended, a mark raised, a deletion, new zones and a segment.
    static func grown(_ old: ZoneIndexCheckpoint) -> ZoneIndexCheckpoint {
        var new = old
        new.coveredSequence += 100
        new.segments.append(old.segments.last! * 2)
        new.coveredSegment = old.segments.last! * 2
        new.zones[0].frameSequences.append(old.coveredSequence + 1)
        new.zones[0].frameLocations.append(UInt64(old.segments.count) << 32 | 64)
        new.zones[0].lastSequence = old.coveredSequence + 1
        new.zones[0].entryCount += 1
        new.zones[1].lowWaterMark = 2
        new.zones[2].deletedAt = old.coveredSequence + 2
        new.zones[2].frameSequences = []
        new.zones[2].frameLocations = []
        new.zones.append(ZoneTrack(name: "List-new", incarnation: old.coveredSequence + 3, isImplicit: false))
        return new
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func aRecordTakesTheOldCheckpointToTheNewOne(seed: UInt64) throws {
        let old = Self.checkpoint(seed: seed, zones: 6, covered: 40)
        let new = Self.grown(old)
        let record = try #require(ZoneIndexJournalCodec.record(from: old, to: new))
        let bytes = ZoneIndexJournalCodec.header(extending: old, baseCRC: 5) + record
        let applied = bytes.withUnsafeBytes { ZoneIndexJournalCodec.apply($0, to: old, baseCRC: 5) }
        #expect(applied.stop == nil && applied.records == 1 && applied.validBytes == bytes.count)
        #expect(applied.checkpoint == new)
    }

    @Test func aRecordIsNotMadeForACheckpointThatDoesNotExtendTheOld() {
        let old = Self.checkpoint(seed: 4, zones: 4, covered: 40)
        var fewer = old
        fewer.zones.removeLast()
        var otherSegments = old
        otherSegments.segments = [2, 1 << 10]
        #expect(ZoneIndexJournalCodec.record(from: old, to: fewer) == nil)
        #expect(ZoneIndexJournalCodec.record(from: old, to: otherSegments) == nil)
    }

    @Test func everyCutOfTheJournalAppliesTheRecordsBeforeIt() throws {
        let a = Self.checkpoint(seed: 7, zones: 5, covered: 40)
        let b = Self.grown(a)
        let c = Self.grown(b)
        let header = ZoneIndexJournalCodec.header(extending: a, baseCRC: 5)
        let r1 = try #require(ZoneIndexJournalCodec.record(from: a, to: b))
        let r2 = try #require(ZoneIndexJournalCodec.record(from: b, to: c))
        let all = header + r1 + r2
        for cut in header.count...all.count {
            let applied = Array(all.prefix(cut)).withUnsafeBytes { ZoneIndexJournalCodec.apply($0, to: a, baseCRC: 5) }
            let whole = cut >= header.count + r1.count + r2.count ? 2 : cut >= header.count + r1.count ? 1 : 0
            #expect(applied.records == whole)
            #expect(applied.checkpoint == [a, b, c][whole])
        }
    }

    @Test func aFlippedByteEndsTheJournalBeforeItsRecord() throws {
        let a = Self.checkpoint(seed: 8, zones: 5, covered: 40)
        let b = Self.grown(a)
        let header = ZoneIndexJournalCodec.header(extending: a, baseCRC: 5)
        let record = try #require(ZoneIndexJournalCodec.record(from: a, to: b))
        for at in header.count..<(header.count + record.count) {
            var bytes = header + record
            bytes[at] ^= 0x10
            let applied = bytes.withUnsafeBytes { ZoneIndexJournalCodec.apply($0, to: a, baseCRC: 5) }
            #expect(applied.records == 0 && applied.checkpoint == a && applied.stop != nil)
        }
    }

    /// A journal left beside a newer file whose CRC happens to match still applies nothing: its
    /// records cover no frame after the file's.
    @Test func aRecordCoveringNoLaterFrameThanTheFileAppliesNothing() throws {
        let a = Self.checkpoint(seed: 10, zones: 3, covered: 40)
        let b = Self.grown(a)
        let record = try #require(ZoneIndexJournalCodec.record(from: a, to: b))
        let bytes = ZoneIndexJournalCodec.header(extending: b, baseCRC: 5) + record
        let applied = bytes.withUnsafeBytes { ZoneIndexJournalCodec.apply($0, to: b, baseCRC: 5) }
        #expect(applied.records == 0 && applied.checkpoint == b)
    }

    /// A record may change an entry's facts and frames, never which incarnation it is, and a
    /// new one must begin after every other: the table stays in the log's order.
    @Test func aRecordThatChangesAnEntrysIdentityOrOrderEndsTheJournal() throws {
        let a = Self.checkpoint(seed: 11, zones: 3, covered: 40)
        var renamed = a
        renamed.coveredSegment += 1
        renamed.segments.append(a.segments.last! + 1)
        renamed.zones[1].name = "List-other"
        var early = renamed
        early.zones[1].name = a.zones[1].name
        early.zones.append(ZoneTrack(name: "List-early", incarnation: 1, isImplicit: false))
        for bad in [renamed, early] {
            let record = try #require(ZoneIndexJournalCodec.record(from: a, to: bad))
            let applied = (ZoneIndexJournalCodec.header(extending: a, baseCRC: 5) + record).withUnsafeBytes {
                ZoneIndexJournalCodec.apply($0, to: a, baseCRC: 5)
            }
            #expect(applied.records == 0 && applied.checkpoint == a && applied.stop != nil)
        }
    }

    @Test func aCheckpointWhoseIncarnationsAreOutOfOrderIsInconsistent() {
        var c = Self.checkpoint(seed: 12, zones: 3, covered: 40)
        c.zones.swapAt(0, 2)
        #expect(c.inconsistency()?.contains("out of order") == true)
    }

    @Test func aHeaderNamingAnotherFileAppliesNothing() throws {
        let a = Self.checkpoint(seed: 9, zones: 3, covered: 40)
        let b = Self.grown(a)
        let bytes = ZoneIndexJournalCodec.header(extending: a, baseCRC: 5) + (try #require(ZoneIndexJournalCodec.record(from: a, to: b)))
        let applied = bytes.withUnsafeBytes { ZoneIndexJournalCodec.apply($0, to: a, baseCRC: 6) }
        #expect(applied.records == 0 && applied.checkpoint == a)
        #expect(applied.stop?.contains("another checkpoint") == true)
    }
}

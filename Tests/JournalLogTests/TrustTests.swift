import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// Regressions for issue 17 ("found by trying to break it"): each test failed before its fix.

/// Appends one frame with a valid chained CRC to the end of a (not pre-zeroed) segment file.
func appendRawFrame(_ segment: String, type: UInt8, sequence: SequenceNumber, payload: [UInt8]) throws {
    var bytes = try readFile(segment)
    let chain: UInt32 = bytes.count > SegmentHeader.size
        ? bytes.suffix(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
        : bytes.withUnsafeBytes { try! SegmentHeader.decode($0) }.previousChain
    _ = Frame.append(type: type, sequence: sequence, payload: payload, chain: chain, to: &bytes)
    try writeFile(segment, bytes)
}

@Suite struct WriterLockTests {
    /// 17.1: the exclusion is the directory's flock, so removing `LOCK` lets no second writer in,
    /// and the error names the holder without suggesting that anything be removed.
    @Test func removingTheLockFileDoesNotLetASecondWriterIn() throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("s.wal")
            let first = try JournalStore.open(path, options: storeOptions())
            try first.append(ZoneFeedTests.entry(1))
            try FileManager.default.removeItem(atPath: path + "/LOCK")
            let error = thrownError { try JournalStore.open(path, options: storeOptions()) }
            guard case .locked(_, let holder)? = error as? JournalError else {
                Issue.record("expected locked, got \(String(describing: error))")
                return
            }
            #expect(holder == nil, "the holder file was removed, so the holder is unnamed")
            let text = (error as! JournalError).description
            #expect(!text.contains("remove") && !text.contains("delete"), "the message must never invite removing a file: \(text)")
            #expect(try first.append(ZoneFeedTests.entry(2)) == 2)
            try first.close()
        }
    }

    @Test func theLockedErrorNamesTheHolder() throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("s.wal")
            let first = try JournalStore.open(path, options: storeOptions())
            defer { try? first.close() }
            let error = thrownError { try JournalStore.open(path, options: storeOptions()) }
            guard case .locked(_, let holder)? = error as? JournalError else {
                Issue.record("expected locked, got \(String(describing: error))")
                return
            }
            #expect(holder?.contains("pid \(getpid())") == true)
        }
    }

    /// 18.2: a second writer waits for the lock up to its timeout.
    @Test func aWriterWaitsForTheLockWhileItsHolderFinishes() throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("s.wal")
            let first = try JournalStore.open(path, options: storeOptions())
            try first.append(ZoneFeedTests.entry(1))
            let closer = Thread { Thread.sleep(forTimeInterval: 0.1); try? first.close() }
            closer.start()
            var options = storeOptions()
            options.lockWait = .seconds(30)
            let second = try JournalStore.open(path, options: options)
            #expect(second.recovery.lastSequence == 1)
            options.lockWait = .milliseconds(20)
            let error = thrownError { try JournalStore.open(path, options: options) }
            if case .locked? = error as? JournalError {} else { Issue.record("expected locked, got \(String(describing: error))") }
            try second.close()
        }
    }
}

@Suite struct HybridClockBoundaryTests {
    /// 17.6: the clock saturates at its maximum instead of wrapping to 0:0.
    @Test func theClockSaturatesAtItsMaximum() {
        var clock = HybridClock(last: HybridTime(rawValue: .max - 1))
        #expect(clock.tick(wallMillis: 0) == .max)
        #expect(clock.tick(wallMillis: 0) == .max)
        #expect(clock.tick(wallMillis: .max) == .max)
    }

    @Test func theCounterCarriesIntoThePhysicalPart() {
        var clock = HybridClock(last: HybridTime(physicalMillis: 5, counter: .max))
        #expect(clock.tick(wallMillis: 0) == HybridTime(physicalMillis: 6, counter: 0))
    }

    /// 17.8: a derived hlc and a derived id depend on the line alone.
    @Test func derivedClocksAndIdsDependOnTheLineAlone() throws {
        let lines = [
            #"{"zone":"L","op":"add","item":"apples","text":"Apples","after":null,"by":"alice","at":"2026-11-22T09:00:00Z"}"#,
            #"{"zone":"L","op":"markOff","item":"apples","by":"alice","at":"2026-11-22T09:00:00Z"}"#,
            #"{"zone":"L","op":"unmark","item":"apples","by":"alice","at":"2026-11-22T09:00:00Z"}"#,
        ]
        let forward = try lines.map { try EntryJSON.parse(line: $0).entry() }
        let backward = try lines.reversed().map { try EntryJSON.parse(line: $0).entry() }
        #expect(Set(forward) == Set(backward))
        #expect(forward[0].clock == HybridTime(physicalMillis: 1_795_338_000_000, counter: 0))
        let negative = try EntryJSON.parse(line: #"{"zone":"L","op":"rename","text":"x","by":"a","at":"1969-12-31T00:00:00Z"}"#).entry()
        #expect(negative.clock == HybridTime(rawValue: 0))
    }
}

@Suite struct IDConflictTests {
    static func other(_ e: JournalEntry) -> JournalEntry {
        var o = e
        o.operation = .rename(name: "something else")
        return o
    }

    /// 17.7: the same id with other content is refused, as a single append and in a batch; a
    /// retry of the same entry is acknowledged, before and after a reopen.
    @Test func theSameIdWithOtherContentIsAConflict() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try ZoneFeedTests.memoryStore(fs)
        let e = ZoneFeedTests.entry(1)
        #expect(try store.append(e) == 1)
        #expect(try store.append(e) == 1)
        let error = thrownError { try store.append(Self.other(e)) }
        guard case .idConflict(let zone, let id, let at)? = error as? JournalError else {
            Issue.record("expected idConflict, got \(String(describing: error))")
            return
        }
        #expect(zone == e.zone && id == e.id && at == 1)
        let before = store.nextSequence
        let batchError = thrownError { try store.append(batch: [ZoneFeedTests.entry(2), Self.other(e)]) }
        if case .idConflict? = batchError as? JournalError {} else { Issue.record("expected idConflict, got \(String(describing: batchError))") }
        #expect(store.nextSequence == before, "nothing of a refused batch is stored")
        try store.close()
        store = try JournalStore.open("/d/s.wal", options: options)
        #expect(try store.append(e) == 1, "ids and fingerprints are loaded from the log")
        #expect(throws: JournalError.self) { try store.append(Self.other(e)) }
        try store.close()
        options.fileSystem = fs
    }

    @Test func twoEntriesWithOneIdInOneBatchConflict() throws {
        let (store, _) = try ZoneFeedTests.memoryStore()
        let e = ZoneFeedTests.entry(1, zone: "New")
        let error = thrownError { try store.append(batch: [e, ZoneFeedTests.entry(2, zone: "New"), Self.other(e)]) }
        guard case .idConflict(_, _, let at)? = error as? JournalError else {
            Issue.record("expected idConflict, got \(String(describing: error))")
            return
        }
        #expect(at == nil)
        #expect(store.zone("New") == nil, "the zone the refused batch would have started does not exist")
        #expect(try store.append(batch: [e, ZoneFeedTests.entry(2, zone: "New"), e]) == 1...2, "an exact repeat is stored once")
        try store.close()
    }

    /// A `place` written over an add by the compactor still acknowledges a late retry of that add.
    @Test func aRetryOfAnAddThatAPlaceReplacedIsAcknowledged() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try ZoneFeedTests.memoryStore(fs, segmentSize: 256)
        let a = ZoneFeedTests.entry(1)
        var b = ZoneFeedTests.entry(2)
        b.operation = .add(item: CompactID("item-2")!, text: "thing 2", after: CompactID("item-1")!)
        try store.append(a)
        try store.append(b)
        try store.sealActiveSegment()
        try store.setLowWaterMark("List-a", to: 2)
        var place = b
        place.operation = .place(item: CompactID("item-2")!, after: nil)
        let report = try store.compact(purging: [], replacing: [2: place])
        #expect(report.entriesReplaced == 1)
        try store.close()
        store = try JournalStore.open("/d/s.wal", options: options)
        #expect(try store.append(b) == 2)
        try store.close()
        options.fileSystem = fs
    }
}

@Suite struct PayloadDamageTests {
    /// 17.12: a frame whose CRC holds but whose payload does not decode is corruption, and
    /// `pointInTime` keeps the prefix before it, as FORMAT.md §9.2 says.
    @Test func pointInTimeKeepsThePrefixBeforeAPayloadThatDoesNotDecode() throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("s.wal")
            let entries = (1...5).map { ZoneFeedTests.entry($0) }
            try makeStore(path, entries: entries)
            let trailing = EntryCodec.encode(ZoneFeedTests.entry(6)) + [0]
            try appendRawFrame(try segmentFiles(path).last!, type: RecordType.entry.rawValue, sequence: 6, payload: trailing)
            // Read-only, every mode but salvage stops there; pointInTime keeps the five before it.
            let c = thrownCorruption { try LogReader.entries(path, mode: .tolerateTail) }
            if case .badPayload? = c?.problem {} else { Issue.record("expected badPayload, got \(String(describing: c))") }
            #expect(c?.isTornTail == false)
            var seen: [SequenceNumber] = []
            let report = try LogReader.read(path, mode: .pointInTime) { event, _ in seen.append(event.sequence) }
            #expect(seen == [1, 2, 3, 4, 5])
            #expect(report.problems.count == 1)
            // A writer refuses it by default, and keeps the prefix in pointInTime.
            _ = thrownCorruption { try JournalStore.open(path, options: storeOptions()) }
            let store = try JournalStore.open(path, options: storeOptions(recovery: .pointInTime))
            #expect(store.recovery.lastSequence == 5)
            #expect(!store.recovery.setAside.isEmpty)
            #expect(try store.append(ZoneFeedTests.entry(7)) == 6)
            try store.close()
        }
    }
}

/// 17.2: a log whose end moves back never lets an old token skip entries silently.
@Suite struct EpochTests {
    typealias Z = ZoneFeedTests

    static func filled(_ path: String, count: Int = 300) throws -> FeedToken {
        let store = try JournalStore.open(path, options: storeOptions(segmentSize: 1_024))
        for n in 0..<count { try store.append(Z.entry(n, zone: "L-1")) }
        let token = try store.zoneToken("L-1")
        try store.close()
        return token
    }

    static func expectInvalid(_ store: JournalStore, _ token: FeedToken, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let page = try store.changes(in: "L-1", since: token)
            Issue.record("an old token past the recovered end was answered with \(page.entries.count) entries", sourceLocation: sourceLocation)
        } catch {
            guard case .invalidToken = error else {
                Issue.record("expected invalidToken, got \(error)", sourceLocation: sourceLocation)
                return
            }
        }
    }

    /// `jlog verify` beside a live writer: a scan taken before a roll, checked against EPOCHS
    /// read after it, looks like a lost segment; checked against EPOCHS read before the scan, it
    /// is whole (the writer names a segment in EPOCHS only after creating it).
    @Test func epochsReadBeforeTheScanNeverClaimMoreThanALiveWriterWrote() throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("s.wal")
            let store = try JournalStore.open(path, options: storeOptions(segmentSize: 1_024))
            for n in 0..<5 { try store.append(Z.entry(n, zone: "L-1")) }
            let before = EpochCheck.read(store: path)
            let report = try LogReader.scanRecords(path) { _ in }
            let segments = try segmentFiles(path).count
            var n = 5
            while try segmentFiles(path).count == segments {
                try store.append(Z.entry(n, zone: "L-1"))
                n += 1
            }
            #expect(EpochCheck.check(store: path, report: report).missing != nil, "EPOCHS read after the scan runs ahead of it")
            #expect(EpochCheck.check(before, report: report).missing == nil)
            try store.close()
        }
    }

    @Test func removingTheNewestSegmentIsRefusedThenItsTokensAreInvalid() throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("s.wal")
            let token = try Self.filled(path)
            let newest = try segmentFiles(path).last!
            try FileManager.default.removeItem(atPath: newest)
            let error = thrownError { try JournalStore.open(path, options: storeOptions(segmentSize: 1_024)) }
            guard case .acknowledgedEntriesMissing? = error as? JournalError else {
                Issue.record("expected acknowledgedEntriesMissing, got \(String(describing: error))")
                return
            }
            // A reader's verify-style check says the same.
            let report = try LogReader.scanRecords(path) { _ in }
            #expect(EpochCheck.check(store: path, report: report).missing != nil)
            var options = storeOptions(segmentSize: 1_024)
            options.acceptLoss = true
            let store = try JournalStore.open(path, options: options)
            #expect(store.recovery.epochNote != nil)
            for n in 1_000..<1_100 { try store.append(Z.entry(n, zone: "L-1")) }
            Self.expectInvalid(store, token)
            try store.close()
        }
    }

    @Test func aDamagedLastFrameOfACleanlyClosedStoreIsNotTakenForATornWrite() throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("s.wal")
            let token = try Self.filled(path, count: 30)
            let last = try recordLocations(path).last!
            try flipByte(dir.path("s.wal/" + last.segment), at: last.offset + Frame.headerSize + 2)
            let error = thrownError { try JournalStore.open(path, options: storeOptions(segmentSize: 1_024)) }
            guard case .acknowledgedEntriesMissing? = error as? JournalError else {
                Issue.record("expected acknowledgedEntriesMissing, got \(String(describing: error))")
                return
            }
            #expect(tornFiles(path).isEmpty, "nothing was changed before refusing")
            var options = storeOptions(segmentSize: 1_024)
            options.acceptLoss = true
            let store = try JournalStore.open(path, options: options)
            #expect(store.recovery.lastSequence == 29)
            try store.append(Z.entry(500, zone: "L-1"))
            Self.expectInvalid(store, token)
            try store.close()
        }
    }

    @Test func tokensIssuedAfterACopyAreInvalidOnceTheCopyIsRestored() throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("s.wal")
            _ = try Self.filled(path, count: 50)
            try FileManager.default.copyItem(atPath: path, toPath: dir.path("copy.wal"))
            // The store goes on; a client takes a token; then the old copy is restored.
            var store = try JournalStore.open(path, options: storeOptions(segmentSize: 1_024))
            for n in 50..<80 { try store.append(Z.entry(n, zone: "L-1")) }
            let later = try store.zoneToken("L-1")
            let earlier = try store.zoneToken("L-1", position: 40)
            try store.close()
            try FileManager.default.removeItem(atPath: path)
            try FileManager.default.copyItem(atPath: dir.path("copy.wal"), toPath: path)
            store = try JournalStore.open(path, options: storeOptions(segmentSize: 1_024))
            for n in 200..<240 { try store.append(Z.entry(n, zone: "L-1")) }
            Self.expectInvalid(store, later)
            // A token from an epoch the copy does not know is refused even at a position it holds.
            Self.expectInvalid(store, earlier)
            try store.close()
        }
    }

    @Test func tokensAtPositionsTheLogStillHoldsStayValidAcrossOpens() throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("s.wal")
            let token = try Self.filled(path, count: 20)
            let store = try JournalStore.open(path, options: storeOptions(segmentSize: 1_024))
            for n in 20..<25 { try store.append(Z.entry(n, zone: "L-1")) }
            #expect(try store.changes(in: "L-1", since: token).entries.count == 5)
            try store.close()
        }
    }

    @Test func aLostEpochsFileMakesEveryEarlierTokenInvalid() throws {
        try withTemporaryDirectory { dir in
            let path = dir.path("s.wal")
            let token = try Self.filled(path, count: 20)
            try FileManager.default.removeItem(atPath: path + "/EPOCHS")
            let store = try JournalStore.open(path, options: storeOptions(segmentSize: 1_024))
            #expect(store.recovery.epochNote != nil)
            Self.expectInvalid(store, token)
            try store.close()
        }
    }
}

/// 17.4: `jlog backup` copies a store, live or not, to one that restores to exactly the same.
@Suite struct BackupTests {
    typealias Z = ZoneFeedTests

    @Test func aBackupOfALiveStoreIsAWholePrefixAndRestores() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs, segmentSize: 1_024)
        for n in 0..<100 { try store.append(Z.entry(n, zone: n % 2 == 0 ? "A" : "B")) }
        try store.deleteZone("B")
        try store.registerConsumer("uploaded", leaseUntil: nil)
        try store.advanceConsumer("uploaded", zone: "A", to: 40)
        final class Flag: @unchecked Sendable { var stop = false; let lock = NSLock() }
        let flag = Flag()
        let writer = Thread {
            var n = 1_000
            while true {
                flag.lock.lock(); let stop = flag.stop; flag.lock.unlock()
                if stop { break }
                _ = try? store.append(Z.entry(n, zone: "A"), durability: Durability.none)
                n += 1
            }
        }
        writer.start()
        let report = try StoreBackup.copy(from: "/d/s.wal", to: "/d/backup.wal", fs: fs)
        flag.lock.lock(); flag.stop = true; flag.lock.unlock()
        while !writer.isFinished { Thread.sleep(forTimeInterval: 0.001) }
        for n in 5_000..<5_005 { try store.append(Z.entry(n, zone: "A")) }
        let original = try LogReader.entries("/d/s.wal", fs: fs)
        let copied = try LogReader.entries("/d/backup.wal", fs: fs)
        #expect(copied.count >= 100 && copied.last!.0 <= report.lastSequence)
        #expect(copied.map(\.0) == original.prefix(copied.count).map(\.0))
        #expect(copied.map(\.1) == original.prefix(copied.count).map(\.1))
        // Restored, it opens as a writer (a new epoch), with the deletion and the consumer.
        let (_, recovery) = try StoreBackup.restore(from: "/d/backup.wal", to: "/d/restored.wal", fs: fs)
        #expect(recovery.lastSequence == report.lastSequence)
        let r = try StoreReader.open("/d/restored.wal", fileSystem: fs)
        #expect(r.zone("B")?.isDeleted == true)
        #expect(JournalStore.consumers(store: "/d/restored.wal", fs: fs).consumers.first?.marks.first?.position == 40)
        // A token the live store issued past the copy's end is refused by the restored one.
        let token = try store.zoneToken("A")
        var o = store.options
        o.fileSystem = fs
        let restored = try JournalStore.open("/d/restored.wal", options: o)
        try restored.append(Z.entry(99_999, zone: "A"))
        #expect(throws: FeedError.self) { _ = try restored.changes(in: "A", since: token) }
        try restored.close()
        try store.close()
    }

    /// What an application keeps in its store's own directories (a sync server's accounts and
    /// invitation key under `service/`) is carried; `torn/` (this store's forensics) is not.
    @Test func aBackupCarriesTheApplicationsDirectoriesButNotTorn() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs)
        try store.append(Z.entry(1))
        try fs.createDirectory("/d/s.wal/service")
        try AtomicFile.write(Array("accounts".utf8), to: "/d/s.wal/service/accounts", fs: fs)
        try fs.createDirectory("/d/s.wal/torn")
        try AtomicFile.write([1, 2, 3], to: "/d/s.wal/torn/x", fs: fs)
        try StoreBackup.copy(from: "/d/s.wal", to: "/d/backup.wal", fs: fs)
        #expect(try AtomicFile.read("/d/backup.wal/service/accounts", fs: fs, limit: 100) == Array("accounts".utf8))
        #expect(fs.kind(of: "/d/backup.wal/torn") == .missing)
        try store.close()
    }

    @Test func aBackupRefusesAnExistingDestination() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs)
        try store.append(Z.entry(1))
        try fs.createDirectory("/d/there")
        #expect(throws: JournalError.self) { try StoreBackup.copy(from: "/d/s.wal", to: "/d/there", fs: fs) }
        try store.close()
    }
}

import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// The storage half of compaction (Spec/FORMAT.md §5.5 and §9.4): sealed segments rewritten
/// without purged entries and with replaced ones, crash-safely, with sequences unchanged.
@Suite struct CompactionTests {
    typealias Z = ZoneFeedTests

    /// A store of `count` entries in zones List-a and List-b (every third), in small segments.
    static func filledStore(_ fs: MemoryFileSystem = MemoryFileSystem(), count: Int = 60, batches: Bool = false)
        throws -> (JournalStore, StoreOptions, [SequenceNumber: JournalEntry]) {
        let (store, options) = try Z.memoryStore(fs, segmentSize: 1_024)
        // Created explicitly: an implicit zone's first entry is never purged (its identity), which
        // CompactionRegressionTests covers on its own.
        try store.createZone("List-a")
        try store.createZone("List-b")
        var all: [SequenceNumber: JournalEntry] = [:]
        var n = 0
        while n < count {
            if batches && n % 10 == 0 {
                let batch = (0..<5).map { Z.entry(n + $0, zone: ($0 + n) % 3 == 0 ? "List-b" : "List-a") }
                for (s, e) in zip(try store.append(batch: batch), batch) { all[s] = e }
                n += 5
            } else {
                let e = Z.entry(n, zone: n % 3 == 0 ? "List-b" : "List-a")
                all[try store.append(e)] = e
                n += 1
            }
        }
        return (store, options, all)
    }

    static func logEntries(_ path: String, fs: any FileSystem, mode: RecoveryMode = .strict) throws -> [SequenceNumber: JournalEntry] {
        var found: [SequenceNumber: JournalEntry] = [:]
        _ = try LogReader.scanRecords(path, mode: mode, fs: fs) { r in
            for case .entry(let s, let e) in try LogReader.decode(r) { found[s] = e }
        }
        return found
    }

    @Test func purgesOnlyRequestedEntriesAtOrBelowTheMarkInSealedSegments() throws {
        let (store, _, all) = try Self.filledStore()
        let sealed = store.sealedThrough
        #expect(sealed > 10)
        try store.setLowWaterMark("List-a", to: 20)
        let asked = all.filter { $0.value.zone == "List-a" && $0.key % 2 == 0 }.map(\.key)
        let report = try store.compact(purging: asked)
        let expectedGone = Set(asked.filter { $0 <= 20 })
        #expect(report.entriesPurged == expectedGone.count)
        #expect(report.entriesKept == asked.count - expectedGone.count)
        let (feed, _) = try Z.drain(store, "List-a", limit: 7)
        #expect(feed.map(\.sequence) == all.filter { $0.value.zone == "List-a" && !expectedGone.contains($0.key) }.keys.sorted())
        #expect(try Self.logEntries(store.path, fs: store.options.fileSystem).keys.sorted()
                == all.keys.filter { !expectedGone.contains($0) }.sorted())
    }

    /// A caller decides what to purge from entries read through some sequence: an entry the zone
    /// gains after that (an unmark of a chosen item) is refused at the commit point, and the log
    /// is left exactly as it was.
    @Test func aRewriteIsRefusedWhenItsZoneGainedAnEntryAfterTheRead() throws {
        let (store, _, all) = try Self.filledStore()
        try store.setLowWaterMark("List-a", to: 20)
        let asked = all.filter { $0.value.zone == "List-a" && $0.key <= 20 }.map(\.key)
        let readThrough = try #require(store.zone("List-a")).lastChange
        let late = try store.append(Z.entry(900, zone: "List-a"))
        let before = try Self.logEntries(store.path, fs: store.options.fileSystem)
        var refused: JournalError?
        do { _ = try store.compact(purging: asked, unchangedAfter: ["List-a": readThrough]) } catch { refused = error }
        guard case .compactionConflict(let zone, let appended, let through)? = refused else {
            Issue.record("expected compactionConflict, got \(String(describing: refused))")
            return
        }
        #expect(zone == "List-a" && appended == late && through == readThrough)
        #expect(refused!.description.contains("run the compaction again"))
        #expect(try Self.logEntries(store.path, fs: store.options.fileSystem) == before)
        #expect(store.options.fileSystem.kind(of: store.path + "/" + SegmentName(base: 1).fileName + CompactionFiles.cleaned) == .missing)
    }

    /// Only the zones named are checked: another zone's appends do not refuse the rewrite.
    @Test func anEntryInAnotherZoneDoesNotRefuseTheRewrite() throws {
        let (store, _, all) = try Self.filledStore()
        try store.setLowWaterMark("List-a", to: 20)
        let asked = all.filter { $0.value.zone == "List-a" && $0.key <= 20 }.map(\.key)
        let readThrough = try #require(store.zone("List-a")).lastChange
        try store.append(Z.entry(900, zone: "List-b"))
        let report = try store.compact(purging: asked, unchangedAfter: ["List-a": readThrough])
        #expect(report.entriesPurged == asked.count)
    }

    @Test func aBatchWhoseEntriesAllGoIsDroppedAndTheRestOfTheSegmentKept() throws {
        let (store, _, all) = try Self.filledStore(batches: true)
        let sealed = store.sealedThrough
        try store.setLowWaterMark("List-a", to: sealed)
        try store.setLowWaterMark("List-b", to: sealed)
        // Every entry of both zones in the sealed log: whole batches go, the frames after them stay readable.
        let gone = Set(all.keys.filter { $0 <= sealed })
        let report = try store.compact(purging: gone)
        #expect(report.entriesPurged == gone.count)
        #expect(try Self.logEntries(store.path, fs: store.options.fileSystem).keys.sorted() == all.keys.filter { !gone.contains($0) }.sorted())
    }

    @Test func sequencesAreNeverRenumberedAndAppendsContinue() throws {
        let (store, options, all) = try Self.filledStore()
        try store.setLowWaterMark("List-b", to: store.sealedThrough)
        let gone = all.filter { $0.value.zone == "List-b" && $0.key <= store.sealedThrough }.map(\.key)
        _ = try store.compact(purging: gone)
        let next = store.nextSequence
        try store.close()
        let reopened = try JournalStore.open(store.path, options: options)
        #expect(reopened.nextSequence == next)
        let s = try reopened.append(Z.entry(999))
        #expect(s == next)
        var kept = all.filter { !gone.contains($0.key) }
        kept[s] = Z.entry(999)
        #expect(try Self.logEntries(store.path, fs: options.fileSystem) == kept)
    }

    @Test func rewrittenSegmentsAreFlaggedSealedAndVerifyStrictly() throws {
        let (store, _, all) = try Self.filledStore(batches: true)
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        _ = try store.compact(purging: all.filter { $0.value.zone == "List-a" }.map(\.key))
        let report = try LogReader.scanRecords(store.path, mode: .strict, fs: store.options.fileSystem) { _ in }
        #expect(report.isClean)
        let compacted = report.segments.filter { $0.header?.flags.contains(.compacted) == true }
        #expect(!compacted.isEmpty)
        #expect(compacted.allSatisfy { $0.sealed })
    }

    @Test func batchesKeepTheirSurvivorsWithSequenceGaps() throws {
        let (store, _, all) = try Self.filledStore(batches: true)
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let gone = Set(all.filter { $0.value.zone == "List-a" && $0.key % 2 == 1 }.map(\.key))
        _ = try store.compact(purging: gone)
        let left = try Self.logEntries(store.path, fs: store.options.fileSystem)
        for (s, e) in all where !(gone.contains(s) && s <= store.sealedThrough) { #expect(left[s] == e, "entry \(s) lost") }
        #expect(left.count == all.count - gone.filter { $0 <= store.sealedThrough }.count)
    }

    @Test func entriesOfADeletedZoneArePurgedButItsRecordsStay() throws {
        let (store, options, all) = try Self.filledStore()
        try store.deleteZone("List-b")
        // Fill past a roll so the deletion's segment is sealed.
        for i in 0..<30 { try store.append(Z.entry(500 + i, zone: "List-a")) }
        let report = try store.compact(purging: [])
        #expect(report.deletedZoneEntriesPurged == all.values.filter { $0.zone == "List-b" }.count)
        #expect(try Self.logEntries(store.path, fs: options.fileSystem).values.allSatisfy { $0.zone == "List-a" })
        Z.expectFeedError({ _ = try store.changes(in: "List-b", since: nil) }) {
            if case .zoneDeleted = $0 { true } else { false }
        }
        try store.close()
        let reopened = try JournalStore.open(store.path, options: options)
        #expect(reopened.zone("List-b")?.isDeleted == true)
    }

    @Test func theActiveSegmentIsNeverRewritten() throws {
        let (store, _) = try Z.memoryStore()
        let s = try store.append(Z.entry(1))
        try store.setLowWaterMark("List-a", to: s)
        let report = try store.compact(purging: [s])
        #expect(report.segmentsRewritten == 0)
        #expect(report.entriesKept == 1)
        #expect(try Z.drain(store, "List-a", limit: 10).0.map(\.sequence) == [s])
    }

    @Test func compactingTwiceKeepsTheOriginalEndOfEachSegment() throws {
        let (store, options, all) = try Self.filledStore()
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let listA = all.filter { $0.value.zone == "List-a" && $0.key <= store.sealedThrough }.map(\.key).sorted()
        _ = try store.compact(purging: listA.prefix(listA.count / 2))
        _ = try store.compact(purging: listA.suffix(from: listA.count / 2))
        try store.close()
        let reopened = try JournalStore.open(store.path, options: StoreOptions(recovery: .strict).with(fs: options.fileSystem, preallocate: false))
        #expect(reopened.nextSequence == all.keys.max()! + 1)
        #expect(Set(try Self.logEntries(store.path, fs: options.fileSystem).keys) == Set(all.keys).subtracting(listA))
    }

    @Test func theIndexCheckpointAfterCompactionHasTheNewOffsets() throws {
        let (store, options, all) = try Self.filledStore()
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let gone = Set(all.filter { $0.value.zone == "List-a" && $0.key <= store.sealedThrough && $0.key % 4 == 0 }.map(\.key))
        _ = try store.compact(purging: gone)
        try store.close()
        let reopened = try JournalStore.open(store.path, options: options)
        #expect(reopened.recovery.indexSource == .checkpoint)
        for zone in ["List-a", "List-b"] {
            let (feed, _) = try Z.drain(reopened, zone, limit: 5)
            #expect(feed.map(\.sequence) == all.filter { $0.value.zone == zone && !gone.contains($0.key) }.keys.sorted())
        }
    }

    @Test func feedReadsDuringCompactionNeverSeeHalfASwap() throws {
        let (store, _, all) = try Self.filledStore(count: 200, batches: true)
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let candidates = all.filter { $0.value.zone == "List-a" && $0.key <= store.sealedThrough }.map(\.key).sorted()
        let done = ManagedAtomicFlag()
        let failures = ManagedErrors()
        let reader = Thread {
            while !done.isSet {
                do {
                    let (feed, _) = try Z.drain(store, "List-b", limit: 3)
                    if feed.count != all.values.filter({ $0.zone == "List-b" }).count { failures.add("List-b lost entries") }
                } catch { failures.add("\(error)") }
            }
        }
        reader.start()
        for k in stride(from: 0, to: candidates.count, by: 10) {
            _ = try store.compact(purging: candidates[k..<min(k + 10, candidates.count)])
        }
        done.set()
        while !reader.isFinished { Thread.sleep(forTimeInterval: 0.001) }
        #expect(failures.all.isEmpty, "\(failures.all.prefix(3))")
    }

    /// A run whose swap fails at any I/O call leaves the writer reading its log whole (before
    /// or after the run) or refusing to read with a clear error, never frames at offsets the swap
    /// moved; reopened, the store reads the log before or after the run.
    @Test func aSwapThatFailsPartWayReadsNothingUntilTheStoreIsReopened() throws {
        var refusedReads = 0
        for call in 1... {
            let fs = MemoryFileSystem()
            let (store, options, all) = try Self.filledStore(fs, count: 90)
            let sealed = store.sealedThrough
            try store.setLowWaterMark("List-a", to: sealed)
            let purge = all.filter { $0.value.zone == "List-a" && $0.key <= sealed }.map(\.key)
            let before = all.filter { $0.value.zone == "List-a" }.keys.sorted()
            let after = before.filter { !purge.contains($0) }
            fs.setFaults(MemoryFileSystem.FaultPlan(failOnCall: call))
            let failed: Bool
            do { _ = try store.compact(purging: purge); failed = false } catch { failed = true }
            fs.setFaults(MemoryFileSystem.FaultPlan())
            guard failed else { break }
            do {
                let read = try Z.drain(store, "List-a", limit: 7).0.map(\.sequence)
                #expect(read == before || read == after, "call \(call): \(read.count) entries read")
            } catch {
                guard case .storage(.writerFailed) = error as? FeedError else {
                    Issue.record("call \(call): \(error)")
                    continue
                }
                refusedReads += 1
            }
            try? store.close()
            let reopened = try JournalStore.open("/d/s.wal", options: options)
            let read = try Z.drain(reopened, "List-a", limit: 7).0.map(\.sequence)
            #expect(read == before || read == after, "call \(call), reopened: \(read.count) entries read")
            try reopened.close()
        }
        #expect(refusedReads > 0, "no fault point fell in the swap")
    }

    @Test func openRollsARunForwardOnceAnySwapExists() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/s")
        for n in ["00000000000000000001.seg", "00000000000000000009.seg"] { fs.install("/s/" + n, bytes: [0]) }
        fs.install("/s/00000000000000000001.seg.swap", bytes: [1])
        fs.install("/s/00000000000000000009.seg.cleaned", bytes: [2])
        try CompactionFiles.recover(store: "/s", fs: fs)
        #expect(try fs.listDirectory("/s") == ["00000000000000000001.seg", "00000000000000000009.seg"])
        #expect(fs.contents("/s/00000000000000000001.seg") == [1] && fs.contents("/s/00000000000000000009.seg") == [2])
    }

    @Test func openDiscardsARunThatNeverReachedASwap() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/s")
        fs.install("/s/00000000000000000001.seg", bytes: [0])
        fs.install("/s/00000000000000000001.seg.cleaned", bytes: [1])
        try CompactionFiles.recover(store: "/s", fs: fs)
        #expect(try fs.listDirectory("/s") == ["00000000000000000001.seg"])
        #expect(fs.contents("/s/00000000000000000001.seg") == [0])
    }

    /// Only the compactor writes `place` (FORMAT.md §6): appended, it would sit in a minor-1
    /// segment that a 1.1 reader calls corrupt.
    @Test func appendingAPlaceEntryIsRefused() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs, segmentSize: 1 << 20)
        let place = Self.place(Z.entry(0, zone: "List-a"))
        #expect(throws: JournalError.self) { try store.append(place) }
        #expect(throws: JournalError.self) { try store.append(batch: [Z.entry(1, zone: "List-a"), place]) }
        #expect(throws: JournalError.self) {
            try store.appendRecord(type: RecordType.entry.rawValue, payload: EntryCodec.encode(place), consuming: 1)
        }
        #expect(store.nextSequence == 1)
        try store.close()
    }

    // MARK: Sealing the active segment (FORMAT.md §3.2)

    @Test func sealingTheActiveSegmentPutsEverythingAppendedInSealedSegments() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Z.memoryStore(fs, segmentSize: 1 << 20)
        for n in 0..<5 { try store.append(Z.entry(n, zone: "List-a")) }
        #expect(store.sealedThrough == 0)
        #expect(try store.sealActiveSegment() == 5)
        #expect(store.sealedThrough == 5)
        // Appends go on in the new segment, numbering unchanged.
        #expect(try store.append(Z.entry(5, zone: "List-a")) == 6)
        try store.close()
        let reopened = try JournalStore.open(store.path, options: options)
        #expect(reopened.recovery.problem == nil && reopened.sealedThrough == 5 && reopened.nextSequence == 7)
        #expect(try Self.logEntries(store.path, fs: fs).keys.sorted() == Array(1...6))
        try reopened.close()
    }

    @Test func sealingAnActiveSegmentThatHoldsNoSequenceDoesNothing() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs, segmentSize: 1 << 20)
        try store.append(Z.entry(0, zone: "List-a"))
        try store.sealActiveSegment()
        let segments = try fs.listDirectory(store.path).filter { $0.hasSuffix(".seg") }
        #expect(try store.sealActiveSegment() == 1)
        #expect(try fs.listDirectory(store.path).filter { $0.hasSuffix(".seg") } == segments)
        try store.close()
    }

    @Test func aPowerLossRightAfterSealingLosesNothing() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Z.memoryStore(fs, segmentSize: 1 << 20)
        for n in 0..<3 { try store.append(Z.entry(n, zone: "List-a")) }
        try store.sealActiveSegment()
        fs.crash(.dropUnsynced)
        let reopened = try JournalStore.open(store.path, options: options)
        #expect(reopened.recovery.problem == nil && reopened.nextSequence == 4)
        #expect(try reopened.append(Z.entry(3, zone: "List-a")) == 4)
        try reopened.close()
    }

    // MARK: Replacements (FORMAT.md §9.4 step 2)

    /// `e` rewritten as the compactor's `place` for its item: same id, zone, author and clocks.
    static func place(_ e: JournalEntry, after: String? = "anchor") -> JournalEntry {
        var p = e
        p.operation = .place(item: e.operation.item!, after: after.map { CompactID($0)! })
        return p
    }

    /// The sequences of each multi-entry `batch` frame in the log, in order.
    static func batchFrames(_ path: String, fs: any FileSystem) throws -> [[SequenceNumber]] {
        var batches: [[SequenceNumber]] = []
        _ = try LogReader.scanRecords(path, mode: .strict, fs: fs) { r in
            var seqs: [SequenceNumber] = []
            for case .entry(let s, _) in try LogReader.decode(r) { seqs.append(s) }
            if seqs.count > 1 { batches.append(seqs) }
        }
        return batches
    }

    /// Every file of the store and its bytes: "changes nothing" means this is equal.
    static func files(_ path: String, fs: MemoryFileSystem) throws -> [String: [UInt8]] {
        var all: [String: [UInt8]] = [:]
        for name in try fs.listDirectory(path) where fs.kind(of: path + "/" + name) == .file { all[name] = fs.contents(path + "/" + name) }
        return all
    }

    @Test func aReplacedEntryReadsBackAsTheReplacementAtTheSameSequenceAfterReopen() throws {
        let (store, options, all) = try Self.filledStore()
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let target = try #require(all.filter { $0.value.zone == "List-a" && $0.key <= store.sealedThrough }.keys.sorted().dropFirst(3).first)
        let replacement = Self.place(all[target]!)
        let before = try ["List-a", "List-b"].map { try Z.drain(store, $0, limit: 7).0 }
        let report = try store.compact(purging: [], replacing: [target: replacement])
        #expect(report.entriesReplaced == 1 && report.entriesPurged == 0 && report.entriesKept == 0)
        let next = store.nextSequence
        try store.close()
        let reopened = try JournalStore.open(store.path, options: options)
        #expect(reopened.nextSequence == next)
        var expected = all
        expected[target] = replacement
        #expect(try Self.logEntries(store.path, fs: options.fileSystem) == expected)
        // The change feed: the same sequences, only the replaced entry differs.
        let feedA = try Z.drain(reopened, "List-a", limit: 7).0
        #expect(feedA.map(\.sequence) == before[0].map(\.sequence))
        #expect(feedA.map(\.entry) == before[0].map { $0.sequence == target ? replacement : $0.entry })
        #expect(try Z.drain(reopened, "List-b", limit: 7).0 == before[1])
    }

    @Test func aSegmentThatNeedsOnlyAReplacementIsStillRewritten() throws {
        let (store, _, all) = try Self.filledStore()
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let target = try #require(all.filter { $0.value.zone == "List-a" && $0.key <= store.sealedThrough }.keys.min())
        let report = try store.compact(purging: [], replacing: [target: Self.place(all[target]!)])
        #expect(report.segmentsExamined == 1 && report.segmentsRewritten == 1)
        #expect(report.entriesReplaced == 1 && report.entriesPurged == 0 && report.deletedZoneEntriesPurged == 0)
        let scan = try LogReader.scanRecords(store.path, mode: .strict, fs: store.options.fileSystem) { _ in }
        let rewritten = scan.segments.filter { $0.header?.flags.contains(.compacted) == true }
        #expect(rewritten.count == 1 && rewritten[0].sealed)
        #expect(try #require(rewritten[0].firstSequence) <= target && target <= rewritten[0].lastSequence)
    }

    @Test func aReplacementInsideABatchKeepsTheBatchsOtherEntries() throws {
        let (store, options, all) = try Self.filledStore(batches: true)
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let batchesBefore = try Self.batchFrames(store.path, fs: options.fileSystem)
        let batch = try #require(batchesBefore.first { $0.last! <= store.sealedThrough && $0.count >= 3 })
        // One in the middle of the batch, so entries on both sides must survive the re-encoding.
        let target = try #require(batch.dropFirst().dropLast().first { all[$0]!.zone == "List-a" })
        let replacement = Self.place(all[target]!, after: nil)
        let report = try store.compact(purging: [], replacing: [target: replacement])
        #expect(report.entriesReplaced == 1)
        let left = try Self.logEntries(store.path, fs: options.fileSystem)
        #expect(left[target] == replacement)
        for s in batch where s != target { #expect(left[s] == all[s], "batch entry \(s) changed") }
        #expect(left.count == all.count)
        // Still one batch frame with the same sequences.
        #expect(try Self.batchFrames(store.path, fs: options.fileSystem) == batchesBefore)
    }

    @Test func aReplacementAboveTheLowWaterMarkIsKeptLikeAPurgeAboveIt() throws {
        let fs = MemoryFileSystem()
        let (store, _, all) = try Self.filledStore(fs)
        let mark: SequenceNumber = 20
        try store.setLowWaterMark("List-a", to: mark)
        let above = all.filter { $0.value.zone == "List-a" && $0.key > mark && $0.key <= store.sealedThrough }.keys.sorted()
        #expect(above.count >= 2)
        let filesBefore = try Self.files(store.path, fs: fs)
        let report = try store.compact(purging: [above[0]], replacing: [above[1]: Self.place(all[above[1]]!)])
        // Both are counted as kept, and nothing is rewritten.
        #expect(report.entriesKept == 2)
        #expect(report.entriesReplaced == 0 && report.entriesPurged == 0 && report.segmentsRewritten == 0)
        #expect(try Self.logEntries(store.path, fs: fs) == all)
        #expect(try Self.files(store.path, fs: fs) == filesBefore)
    }

    @Test func aReplacementInTheActiveSegmentIsKept() throws {
        let (store, _) = try Z.memoryStore()
        let s = try store.append(Z.entry(1))
        try store.setLowWaterMark("List-a", to: s)
        let report = try store.compact(purging: [], replacing: [s: Self.place(Z.entry(1))])
        #expect(report.entriesKept == 1 && report.entriesReplaced == 0 && report.segmentsRewritten == 0)
        #expect(try Z.drain(store, "List-a", limit: 10).0.map(\.entry) == [Z.entry(1)])
    }

    /// A place written over the entry that started an implicit zone is still an entry of the zone:
    /// it starts the incarnation at the same sequence.
    @Test func theEntryThatStartedAnImplicitZoneMayBeReplaced() throws {
        let (store, _) = try Z.memoryStore(segmentSize: 1_024)
        let first = try store.append(Z.entry(0, zone: "List-x"))
        let second = try store.append(Z.entry(1, zone: "List-x"))
        var n = 100
        while store.sealedThrough < second { try store.append(Z.entry(n, zone: "List-y")); n += 1 }
        try store.setLowWaterMark("List-x", to: second)
        let report = try store.compact(purging: [], replacing: [first: Self.place(Z.entry(0, zone: "List-x")),
                                                                second: Self.place(Z.entry(1, zone: "List-x"))])
        #expect(report.entriesKept == 0 && report.entriesReplaced == 2)
        let left = try Self.logEntries(store.path, fs: store.options.fileSystem)
        #expect(left[first] == Self.place(Z.entry(0, zone: "List-x")))
        #expect(left[second] == Self.place(Z.entry(1, zone: "List-x")))
        try store.close()
        try store.options.fileSystem.remove(store.path + "/" + StoreLayout.indexFile)
        let rebuilt = try JournalStore.open(store.path, options: store.options)
        #expect(rebuilt.zone("List-x")?.incarnation == first)
        try rebuilt.close()
    }

    @Test func aReplacementWithAnotherIdOrZoneIsRejectedAndChangesNothing() throws {
        let fs = MemoryFileSystem()
        let (store, _, all) = try Self.filledStore(fs)
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        try store.setLowWaterMark("List-b", to: store.sealedThrough)
        let sealedA = all.filter { $0.value.zone == "List-a" && $0.key <= store.sealedThrough }.keys.sorted()
        // A valid replacement in the first segment and a bad one in a later segment: the valid
        // one's staged rewrite must not survive the refusal.
        let good = sealedA.first!, bad = sealedA.last!
        var wrongID = Self.place(all[bad]!)
        wrongID.id = CompactID("someone-else")!
        var wrongZone = Self.place(all[bad]!)
        wrongZone.zone = "List-b"
        let filesBefore = try Self.files(store.path, fs: fs)
        for wrong in [wrongID, wrongZone] {
            let error = #expect(throws: JournalError.self) {
                _ = try store.compact(purging: [], replacing: [good: Self.place(all[good]!), bad: wrong])
            }
            guard case .invalidEntry(let why) = error else { Issue.record("expected invalidEntry, got \(String(describing: error))"); continue }
            #expect(why.contains("sequence \(bad)") && why.contains("keeps the id and zone"), "\(why)")
            #expect(try Self.logEntries(store.path, fs: fs) == all)
            #expect(try Self.files(store.path, fs: fs) == filesBefore)
        }
        // The store is still usable: the refusal did not stop the writer.
        #expect(try store.compact(purging: [], replacing: [good: Self.place(all[good]!)]).entriesReplaced == 1)
    }

    @Test func aSequenceBothPurgedAndReplacedIsRejected() throws {
        let fs = MemoryFileSystem()
        let (store, _, all) = try Self.filledStore(fs)
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let s = try #require(all.filter { $0.value.zone == "List-a" && $0.key <= store.sealedThrough }.keys.min())
        let filesBefore = try Self.files(store.path, fs: fs)
        let error = #expect(throws: JournalError.self) { _ = try store.compact(purging: [s], replacing: [s: Self.place(all[s]!)]) }
        guard case .invalidEntry(let why) = error else { Issue.record("expected invalidEntry, got \(String(describing: error))"); return }
        #expect(why.contains("both purged and replaced"))
        #expect(try Self.files(store.path, fs: fs) == filesBefore)
    }

    @Test func aReplacementWithNoStoredEntryToReplaceIsRejected() throws {
        let fs = MemoryFileSystem()
        let (store, _, all) = try Self.filledStore(fs)
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let sealedA = all.filter { $0.value.zone == "List-a" && $0.key <= store.sealedThrough }.keys.sorted()
        _ = try store.compact(purging: [sealedA[0]])
        let filesBefore = try Self.files(store.path, fs: fs)
        // A purged entry, and the sequence of a `zoneCreate` record (1: List-a's creation).
        for s in [sealedA[0], 1] {
            let error = #expect(throws: JournalError.self) {
                _ = try store.compact(purging: [], replacing: [s: Self.place(all[sealedA[1]]!), sealedA[1]: Self.place(all[sealedA[1]]!)])
            }
            guard case .invalidEntry(let why) = error else { Issue.record("expected invalidEntry, got \(String(describing: error))"); continue }
            #expect(why.contains("no stored entry at sequence \(s)"), "\(why)")
            #expect(try Self.files(store.path, fs: fs) == filesBefore)
        }
    }

    @Test func aSegmentRewrittenWithAPlaceEntryIsStampedMinorTwoAndTheStoreReopensAndVerifies() throws {
        let fs = MemoryFileSystem()
        let (store, options, all) = try Self.filledStore(fs)
        try store.close()
        // Stamp every segment minor 1, as a store written before `place` existed.
        let segments = try StoreLayout.segmentPaths(store.path, fs: fs)
        for p in segments {
            var bytes = try #require(fs.contents(p))
            var header = try bytes.withUnsafeBytes { try SegmentHeader.decode($0) }
            header.minor = 1
            bytes.replaceSubrange(0..<SegmentHeader.size, with: header.encoded())
            fs.install(p, bytes: bytes)
        }
        let reopened = try JournalStore.open(store.path, options: options)
        try reopened.setLowWaterMark("List-a", to: reopened.sealedThrough)
        let target = try #require(all.filter { $0.value.zone == "List-a" && $0.key <= reopened.sealedThrough }.keys.min())
        let replacement = Self.place(all[target]!)
        #expect(try reopened.compact(purging: [], replacing: [target: replacement]).segmentsRewritten == 1)
        try reopened.close()
        let scan = try LogReader.scanRecords(store.path, mode: .strict, fs: fs) { _ in }
        #expect(scan.isClean)
        let stamped = Set(segments.map { String($0.split(separator: "/").last!) })
        for s in scan.segments {
            let holdsTarget = s.firstSequence.map { $0 <= target && target <= s.lastSequence } ?? false
            // A writer starts a segment of its own minor rather than append to an older one
            // (FORMAT.md §1); a rewrite that writes a `place` stamps minor 2.
            let new = !stamped.contains(s.name) || (s.name == stamped.max() && s.records == 0)
            #expect(s.header?.minor == (new ? SegmentHeader.currentMinor : holdsTarget ? 2 : 1), "\(s.name)")
        }
        let again = try JournalStore.open(store.path, options: StoreOptions(recovery: .strict).with(fs: fs, preallocate: false))
        #expect(again.recovery.problem == nil)
        #expect(try Z.drain(again, "List-a", limit: 50).0.first { $0.sequence == target }?.entry == replacement)
    }

    @Test func theIndexCheckpointAfterAReplacementHasTheNewOffsets() throws {
        let (store, options, all) = try Self.filledStore()
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        // Replacements shorter than the adds they replace: every later frame of their segments moves.
        let targets = all.filter { $0.value.zone == "List-a" && $0.key <= store.sealedThrough && $0.key % 4 == 0 }
        _ = try store.compact(purging: [], replacing: targets.mapValues { Self.place($0) })
        try store.close()
        let reopened = try JournalStore.open(store.path, options: options)
        #expect(reopened.recovery.indexSource == .checkpoint)
        for zone in ["List-a", "List-b"] {
            let (feed, _) = try Z.drain(reopened, zone, limit: 5)
            #expect(feed.map(\.sequence) == all.filter { $0.value.zone == zone }.keys.sorted())
            for f in feed { #expect(f.entry == (targets[f.sequence].map { Self.place($0) } ?? all[f.sequence]!)) }
        }
    }

    /// Faults every I/O call a compaction makes, one per scenario, then loses power: the store
    /// reopens, no leftover `.cleaned` or `.swap` remains, every entry not asked to be purged or
    /// replaced is there, every replaced sequence holds the old entry or the new one, and the run
    /// (purges and replacements alike) took effect whole or not at all. Without replacements the
    /// run purges every sealed entry of the zone; with them, it purges some and replaces others,
    /// in entry and batch frames.
    @Test(arguments: [false, true])
    func aCrashAtAnyStepOfACompactionAppliesAllOrNothing(replacing: Bool) throws {
        func plan(_ store: JournalStore, _ all: [SequenceNumber: JournalEntry]) -> (Set<SequenceNumber>, [SequenceNumber: JournalEntry]) {
            let sealedA = all.filter { $0.value.zone == "List-a" && $0.key <= store.sealedThrough }.keys.sorted()
            guard replacing else { return (Set(sealedA), [:]) }
            let purge = Set(sealedA.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
            let replace = Dictionary(uniqueKeysWithValues: sealedA.enumerated().filter { $0.offset % 3 == 1 }.map { ($0.element, Self.place(all[$0.element]!)) })
            return (purge, replace)
        }
        var calls = 0
        do {
            let fs = MemoryFileSystem()
            let (store, _, all) = try Self.filledStore(fs, batches: true)
            try store.setLowWaterMark("List-a", to: store.sealedThrough)
            let (purge, replace) = plan(store, all)
            fs.setFaults(MemoryFileSystem.FaultPlan())
            let report = try store.compact(purging: purge, replacing: replace)
            #expect(report.entriesReplaced == replace.count && report.entriesPurged == purge.count)
            calls = fs.mutatingCalls
        }
        #expect(calls > 10)
        let modes: [MemoryFileSystem.CrashMode] = [.dropUnsynced, .tearLastWrite(seed: 7), .garbleLastWrite(seed: 9)]
        for call in 1...calls {
            for mode in modes {
                let fs = MemoryFileSystem()
                let (store, options, all) = try Self.filledStore(fs, batches: true)
                try store.setLowWaterMark("List-a", to: store.sealedThrough)
                let (purge, replace) = plan(store, all)
                fs.setFaults(MemoryFileSystem.FaultPlan(failOnCall: call))
                _ = try? store.compact(purging: purge, replacing: replace)
                fs.crash(mode)
                fs.setFaults(MemoryFileSystem.FaultPlan())
                let reopened = try JournalStore.open(store.path, options: options)
                #expect(reopened.recovery.problem == nil, "call \(call): \(String(describing: reopened.recovery.problem))")
                let names = try fs.listDirectory(store.path)
                #expect(!names.contains { $0.hasSuffix(".cleaned") || $0.hasSuffix(".swap") }, "call \(call): \(names)")
                let left = try Self.logEntries(store.path, fs: fs)
                for (s, e) in all where purge.contains(s) == false && replace[s] == nil { #expect(left[s] == e, "call \(call): entry \(s) changed") }
                for (s, new) in replace { #expect(left[s] == all[s] || left[s] == new, "call \(call): entry \(s) is neither old nor new") }
                for s in left.keys { #expect(all[s] != nil) }
                // All or nothing, across purges and replacements alike.
                let gone = purge.filter { left[$0] == nil }.count
                let replaced = replace.filter { left[$0.key] == $0.value }.count
                #expect((gone == 0 && replaced == 0) || (gone == purge.count && replaced == replace.count),
                        "call \(call): \(gone) of \(purge.count) purged, \(replaced) of \(replace.count) replaced")
                let (feed, _) = try Z.drain(reopened, "List-a", limit: 4)
                #expect(feed.map(\.sequence) == left.filter { $0.value.zone == "List-a" }.keys.sorted(), "call \(call): feed differs from log")
                #expect(feed.allSatisfy { left[$0.sequence] == $0.entry }, "call \(call): feed entries differ from log")
                try reopened.close()
            }
        }
    }
}

extension StoreOptions {
    func with(fs: any FileSystem, preallocate: Bool) -> StoreOptions {
        var o = self
        o.fileSystem = fs
        o.preallocate = preallocate
        return o
    }
}

final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

final class ManagedErrors: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    var all: [String] { lock.withLock { items } }
    func add(_ s: String) { lock.withLock { items.append(s) } }
}

/// Spec/vectors/compaction.txt: a consumer file and a segment before and after a rewrite.
@Suite struct CompactionVectorTests {
    typealias V = SpecVectorTests

    static func sample(_ i: Int) -> JournalEntry {
        JournalEntry(id: CompactID("e\(i)")!, zone: "List-db6a6e29", author: "alice", wallTime: 1_795_338_000_000 + Int64(i),
                     clock: HybridTime(physicalMillis: 1_795_338_000_000 + UInt64(i), counter: 0),
                     operation: i % 2 == 0 ? .markOff(item: CompactID("milk")!) : .add(item: CompactID("milk")!, text: "Milk", after: nil))
    }

    /// A segment: entry 1, a batch of 2–4, a low-water mark (zone incarnation 1, mark 3). Minor 1,
    /// pinned so the vector does not move with `currentMinor`; a rewrite that only purges keeps it.
    static func segment() -> [UInt8] {
        let storeID: (UInt64, UInt64) = (1, 2)
        var bytes = SegmentHeader(storeID: storeID, baseSequence: 1, previousChain: SegmentHeader.firstChain(storeID: storeID), createdAt: 0,
                                  minor: 1).encoded()
        var chain = SegmentHeader.firstChain(storeID: storeID)
        chain = Frame.append(type: RecordType.entry.rawValue, sequence: 1, payload: EntryCodec.encode(sample(1)), chain: chain, to: &bytes)
        chain = Frame.append(type: RecordType.batch.rawValue, sequence: 2, payload: BatchCodec.encode(journalEntries: (2...4).map(sample), compress: false),
                             chain: chain, to: &bytes)
        _ = Frame.append(type: SkippableRecordType.lowWaterMark, sequence: 4, payload: LowWaterCodec.encode(zone: "List-db6a6e29", incarnation: 1, mark: 3),
                         chain: chain, to: &bytes)
        return bytes
    }

    @Test func consumerFileVectorMatches() throws {
        let c = ConsumerState(name: "uploaded", leaseUntil: 1_795_338_000_000,
                              marks: [ConsumerState.Mark(zone: "List-db6a6e29", incarnation: 1, position: 42)])
        let bytes = ConsumerCodec.encode(c)
        let before = Self.segment()
        let after = try SegmentRewriter(name: "00000000000000000001.seg", trackOf: { _, _ in 0 }, compress: false)
            .rewrite(before) { s, _, _ in s == 1 || s == 3 ? .purge : .keep }
        if V.writing {
            try V.write("compaction.txt", header: """
                Compaction vectors (COMPACTION.md §3, FORMAT.md §9.4).
                1. A consumer file: "uploaded", lease until 1795338000000, List-db6a6e29 incarnation 1 at 42.
                2. A segment (store ID 1, 2; base 1; created at 0) holding entry 1, a batch of 2-4 and a
                   lowWaterMark record, before and after a rewrite that purges sequences 1 and 3.
                """, blocks: [[("consumer", V.hex(bytes))], [("before", V.hex(before)), ("after", V.hex(after.bytes))]])
        }
        let b = try V.blocks("compaction.txt")
        #expect(b[0]["consumer"] == V.hex(bytes))
        #expect(try V.bytes(b[0]["consumer"]!).withUnsafeBytes { try ConsumerCodec.decode($0) } == c)
        #expect(b[1]["before"] == V.hex(before))
        #expect(b[1]["after"] == V.hex(after.bytes))
    }

    @Test func theRewrittenVectorSegmentReadsAsSealedWithTheOriginalEnd() throws {
        let fs = MemoryFileSystem()
        let before = Self.segment()
        let after = try SegmentRewriter(name: "00000000000000000001.seg", trackOf: { _, _ in 0 }, compress: false)
            .rewrite(before) { s, _, _ in s == 1 || s == 3 ? .purge : .keep }
        fs.install("/one.seg", bytes: before)
        fs.install("/two.seg", bytes: after.bytes)
        let old = try LogReader.scanRecords("/one.seg", mode: .strict, fs: fs) { _ in }
        var seqs: [SequenceNumber] = []
        let new = try LogReader.scanRecords("/two.seg", mode: .strict, fs: fs) { r in
            for case .entry(let s, _) in try LogReader.decode(r) { seqs.append(s) }
        }
        #expect(seqs == [2, 4])
        #expect(new.segments[0].sealed && new.segments[0].header?.flags.contains(.compacted) == true)
        #expect(new.segments[0].endChain == old.segments[0].endChain)
        #expect(new.lastSequence == old.lastSequence)
    }

    @Test func aConsumerFileWithAnyByteFlippedIsRejected() throws {
        let bytes = ConsumerCodec.encode(ConsumerState(name: "n", leaseUntil: nil, marks: [ConsumerState.Mark(zone: "z", incarnation: 1, position: 2)]))
        for i in bytes.indices {
            var b = bytes
            b[i] ^= 0x5A
            #expect(throws: CodecError.self) { try b.withUnsafeBytes { try ConsumerCodec.decode($0) } }
        }
    }
}

import Foundation
import Testing
@testable import JournalLog

/// The bytes recovery keeps aside for a cut at `from`: up to the last non-zero byte.
private func expectedTornBytes(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
    guard let last = bytes.lastIndex(where: { $0 != 0 }) else { return [] }
    return Array(bytes[bytes.startIndex...last])
}

/// A fresh store directory holding one segment file with `bytes`.
private func installSegment(_ store: String, name: String, bytes: [UInt8]) throws {
    try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
    try writeFile(store + "/" + name, bytes)
}

/// Collects results from many threads.
private final class Collector: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var acknowledged: [Int: [(SequenceNumber, JournalEntry)]] = [:]
    private(set) var errors: [String] = []

    func finish(thread: Int, _ results: [(SequenceNumber, JournalEntry)], errors: [String]) {
        lock.lock()
        defer { lock.unlock() }
        acknowledged[thread] = results
        self.errors += errors
    }
}

@Suite struct RecoveryTests {
    // MARK: Torn tails

    @Test func truncatingAnywhereInsideTheLastRecordRecoversThePrefixAndKeepsTheTornBytes() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 20)
            let entries = g.entries(4)
            let extra = g.next()
            let original = dir.path("original.wal")
            try makeStore(original, entries: entries, options: storeOptions(durability: .none, preallocate: false))
            let segment = try #require(try segmentFiles(original).first)
            let name = fileName(segment)
            let bytes = try readFile(segment)
            let last = try #require(try recordLocations(original).last)
            #expect(last.end == bytes.count)
            #expect(last.sequence == 4)

            for cut in (last.offset + 1)..<last.end {
                let store = dir.path("cut-\(cut).wal")
                try installSegment(store, name: name, bytes: Array(bytes.prefix(cut)))
                let s = try JournalStore.open(store, options: storeOptions(durability: .none, preallocate: false))
                let report = s.recovery
                #expect(report.lastSequence == 3, "cut at \(cut)")
                #expect(report.problem?.isTornTail == true, "cut at \(cut)")
                #expect(report.problem?.segment == name)
                #expect(report.problem?.offset == Int64(last.offset))
                #expect(report.problem?.lastGoodSequence == 3)
                #expect(try fileSize(store + "/" + name) == last.offset)

                let torn = tornFiles(store)
                #expect(torn.count == 1, "cut at \(cut)")
                #expect(report.setAside == torn)
                if let t = torn.first {
                    let kept = expectedTornBytes(bytes[last.offset..<cut])
                    #expect(fileName(t).hasPrefix("\(name).\(last.offset)."))
                    #expect(fileName(t).hasSuffix(".torn"))
                    #expect(try readFile(t) == kept, "cut at \(cut)")
                    #expect(report.removedBytes == Int64(kept.count))
                }

                #expect(try s.append(extra) == 4)
                try s.close()
                let read = try readEntries(store)
                #expect(read.map(\.0) == [1, 2, 3, 4], "cut at \(cut)")
                #expect(read.map(\.1) == Array(entries.prefix(3)) + [extra])
                try FileManager.default.removeItem(atPath: store)
            }
        }
    }

    @Test func zeroingAnyTailOfTheLastRecordInAPreallocatedSegmentRecoversThePrefix() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 21)
            let entries = g.entries(4)
            let extra = g.next()
            let options = storeOptions(durability: .none, segmentSize: 4096, preallocate: true)
            let original = dir.path("original.wal")
            try makeStore(original, entries: entries, options: options)
            let segment = try #require(try segmentFiles(original).first)
            let name = fileName(segment)
            let bytes = try readFile(segment)
            #expect(bytes.count == 4096)
            let last = try #require(try recordLocations(original).last)
            #expect(bytes[last.end...].allSatisfy { $0 == 0 })

            for cut in (last.offset + 1)..<last.end {
                var damaged = bytes
                for i in cut..<last.end { damaged[i] = 0 }
                let store = dir.path("zero-\(cut).wal")
                try installSegment(store, name: name, bytes: damaged)
                let s = try JournalStore.open(store, options: options)
                let report = s.recovery
                #expect(report.lastSequence == 3, "zeroed from \(cut)")
                #expect(report.problem?.isTornTail == true, "zeroed from \(cut)")
                #expect(report.problem?.offset == Int64(last.offset))
                let torn = tornFiles(store)
                #expect(torn.count == 1, "zeroed from \(cut)")
                if let t = torn.first {
                    #expect(try readFile(t) == expectedTornBytes(bytes[last.offset..<cut]), "zeroed from \(cut)")
                }
                #expect(try s.append(extra) == 4)
                try s.close()
                let read = try readEntries(store)
                #expect(read.map(\.0) == [1, 2, 3, 4], "zeroed from \(cut)")
                #expect(read.map(\.1) == Array(entries.prefix(3)) + [extra])
                try FileManager.default.removeItem(atPath: store)
            }
        }
    }

    /// A store released without `close()` closes itself: what was appended is there at the next
    /// open (its deinit once trapped on the writer's unowned reference to it).
    @Test func aStoreReleasedWithoutClosingKeepsItsEntries() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 23)
            let path = dir.path("released.wal")
            do {
                let s = try JournalStore.open(path, options: storeOptions(durability: .none))
                for e in g.entries(50) { _ = try s.append(e) }
                _ = try s.append(batch: g.entries(20))
            }
            let s = try JournalStore.open(path, options: storeOptions())
            #expect(s.recovery.problem == nil)
            #expect(s.recovery.lastSequence == 70)
            try s.close()
        }
    }

    @Test func cleanStoreReopensWithoutSettingAnythingAside() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 22)
            let store = dir.path("clean.wal")
            try makeStore(store, entries: g.entries(5))
            let s = try JournalStore.open(store, options: storeOptions())
            #expect(s.recovery.problem == nil)
            #expect(s.recovery.lastSequence == 5)
            #expect(s.recovery.setAside.isEmpty)
            #expect(!s.recovery.created)
            try s.close()
            #expect(tornFiles(store).isEmpty)
        }
    }

    @Test func strictOpenRefusesATornTailAndLeavesTheFilesAlone() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 23)
            let store = dir.path("s.wal")
            try makeStore(store, entries: g.entries(3), options: storeOptions(preallocate: false))
            let segment = try #require(try segmentFiles(store).first)
            let size = try fileSize(segment)
            try truncateFile(segment, to: size - 3)
            let before = try readFile(segment)
            let c = thrownCorruption { try JournalStore.open(store, options: storeOptions(recovery: .strict)) }
            #expect(c?.isTornTail == true)
            #expect(c?.lastGoodSequence == 2)
            #expect(try readFile(segment) == before)
            #expect(tornFiles(store).isEmpty)
        }
    }

    @Test func cutOffHeaderOfTheLastSegmentIsSetAsideAndAppendingContinues() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 24)
            let options = storeOptions(durability: .none, segmentSize: 4096, preallocate: false)
            let store = dir.path("s.wal")
            let entries = g.entries(60)
            try makeStore(store, entries: entries, options: options)
            let segments = try segmentFiles(store)
            try #require(segments.count >= 2)
            let locations = try recordLocations(store)
            let lastName = fileName(segments[segments.count - 1])
            let keptThrough = try #require(locations.last { $0.segment != lastName }?.lastSequence)
            try truncateFile(segments[segments.count - 1], to: 30)
            try asIfTheWriterCrashed(store)

            let s = try JournalStore.open(store, options: options)
            #expect(s.recovery.lastSequence == keptThrough)
            #expect(s.recovery.problem?.isTornTail == true)
            #expect(tornFiles(store).count == 1)
            #expect(try segmentFiles(store) == Array(segments.dropLast()))
            let next = g.next()
            #expect(try s.append(next) == keptThrough + 1)
            try s.close()
            let read = try readEntries(store)
            #expect(read.map(\.0) == Array(1...(keptThrough + 1)))
            #expect(read.map(\.1) == Array(entries.prefix(Int(keptThrough))) + [next])
        }
    }

    // MARK: Single-byte damage

    @Test func everySingleByteFlipIsReportedByAStrictScanWithSegmentOffsetAndLastGoodSequence() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 30)
            let store = dir.path("flip.wal")
            try makeStore(store, entries: g.entries(3), options: storeOptions(durability: .none, preallocate: false))
            let segment = try #require(try segmentFiles(store).first)
            let name = fileName(segment)
            let locations = try recordLocations(store)
            #expect(locations.map(\.sequence) == [1, 2, 3])
            let bytes = try readFile(segment)

            for i in 0..<bytes.count {
                var damaged = bytes
                damaged[i] ^= 0xFF
                try writeFile(segment, damaged)
                // The record holding the byte (nil: the segment header).
                let k = locations.firstIndex { $0.offset <= i && i < $0.end }
                var visited = 0
                let c = thrownCorruption {
                    try LogReader.scanRecords(store, mode: .strict) { _ in visited += 1 }
                }
                #expect(c != nil, "flip of byte \(i) went unnoticed")
                #expect(c?.segment == name, "byte \(i)")
                #expect(c?.offset == Int64(k.map { locations[$0].offset } ?? 0), "byte \(i)")
                #expect(c?.lastGoodSequence == SequenceNumber(k ?? 0), "byte \(i)")
                #expect(visited == (k ?? 0), "byte \(i)")
                // No other mode may crash on it either.
                for mode in RecoveryMode.allCases {
                    _ = try? LogReader.read(store, mode: mode) { _, _ in }
                }
            }
            try writeFile(segment, bytes)
            #expect(try LogReader.scanRecords(store, mode: .strict) { _ in }.isClean)
        }
    }

    @Test func corruptNonTailRecordFailsTheDefaultOpenWithSegmentOffsetAndSequence() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 31)
            let store = dir.path("c.wal")
            try makeStore(store, entries: g.entries(5), options: storeOptions(preallocate: false))
            let segment = try #require(try segmentFiles(store).first)
            let name = fileName(segment)
            let third = try recordLocations(store)[2]
            try flipByte(segment, at: third.offset + Frame.headerSize + 3)
            let before = try readFile(segment)

            let error = thrownError { try JournalStore.open(store, options: storeOptions(preallocate: false)) }
            let c = try #require(error.flatMap(corruption(in:)))
            #expect(!c.isTornTail)
            #expect(c.segment == name)
            #expect(c.offset == Int64(third.offset))
            #expect(c.lastGoodSequence == 2)
            if case .crcMismatch = c.problem {} else { Issue.record("expected a CRC mismatch, got \(c.problem)") }
            let text = String(describing: error!)
            #expect(text.contains(name), "\(text)")
            #expect(text.contains("byte \(third.offset)"), "\(text)")
            #expect(text.contains("sequence 2"), "\(text)")
            // A refused open changes nothing on disk.
            #expect(try readFile(segment) == before)
            #expect(tornFiles(store).isEmpty)
        }
    }

    // MARK: Record types

    @Test func skippableRecordIsSkippedByReadersAndRecovery() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 40)
            let e = g.entries(4)
            let store = dir.path("skip.wal")
            let s = try JournalStore.open(store, options: storeOptions(durability: .none))
            #expect(try s.append(e[0]) == 1)
            #expect(try s.append(e[1]) == 2)
            #expect(try s.appendRecord(type: 0x85, payload: [9, 8, 7], consuming: 0) == 2)
            #expect(try s.append(e[2]) == 3)
            #expect(try s.appendRecord(type: 0xFF, payload: [], consuming: 0) == 3)
            try s.close()

            let read = try readEntries(store)
            #expect(read.map(\.0) == [1, 2, 3])
            #expect(read.map(\.1) == Array(e.prefix(3)))
            var events: [LogEvent] = []
            _ = try LogReader.read(store, mode: .strict) { event, _ in events.append(event) }
            #expect(events.contains(.skipped(type: 0x85, sequence: 2)))
            #expect(events.contains(.skipped(type: 0xFF, sequence: 3)))

            let again = try JournalStore.open(store, options: storeOptions(recovery: .strict))
            #expect(again.recovery.problem == nil)
            #expect(again.recovery.lastSequence == 3)
            #expect(try again.append(e[3]) == 4)
            try again.close()
            #expect(try readEntries(store).map(\.0) == [1, 2, 3, 4])
        }
    }

    /// A store with entries 1 and 2, a record of unknown non-skippable type 0x07 (sequence 3), then entry 4.
    private func storeWithUnknownType(_ path: String, _ g: inout EntryGenerator) throws -> [JournalEntry] {
        let e = g.entries(3)
        let s = try JournalStore.open(path, options: storeOptions(durability: .none, preallocate: false))
        try s.append(e[0])
        try s.append(e[1])
        #expect(try s.appendRecord(type: 0x07, payload: [1, 2, 3], consuming: 1) == 3)
        #expect(try s.append(e[2]) == 4)
        try s.close()
        return e
    }

    @Test(arguments: [RecoveryMode.strict, .tolerateTail])
    func unknownNonSkippableRecordTypeFailsTheOpen(mode: RecoveryMode) throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 41)
            let store = dir.path("unknown.wal")
            _ = try storeWithUnknownType(store, &g)
            let before = try readFile(try segmentFiles(store)[0])
            let c = thrownCorruption { try JournalStore.open(store, options: storeOptions(recovery: mode)) }
            #expect(c?.problem == .unknownType(0x07))
            #expect(c?.lastGoodSequence == 2)
            #expect(c?.isTornTail == false)
            #expect(try readFile(try segmentFiles(store)[0]) == before)
            // Readers refuse it the same way.
            let r = thrownCorruption { try readEntries(store, mode: mode) }
            #expect(r?.problem == .unknownType(0x07))
        }
    }

    @Test func pointInTimeKeepsThePrefixBeforeAnUnknownRecordType() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 42)
            let store = dir.path("unknown.wal")
            let e = try storeWithUnknownType(store, &g)
            let s = try JournalStore.open(store, options: storeOptions(recovery: .pointInTime))
            #expect(s.recovery.lastSequence == 2)
            #expect(s.recovery.problem?.problem == .unknownType(0x07))
            #expect(tornFiles(store).count == 1)
            let next = g.next()
            #expect(try s.append(next) == 3)
            try s.close()
            let read = try readEntries(store)
            #expect(read.map(\.0) == [1, 2, 3])
            #expect(read.map(\.1) == [e[0], e[1], next])
        }
    }

    /// A record that takes no sequence must not name a new segment after the sequence before it:
    /// that segment's base would repeat the previous one's last sequence (or even its file name).
    @Test(arguments: [1, 3])
    func skippableRecordThatStartsANewSegmentKeepsTheStoreReadable(entriesBefore: Int) throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 43)
            let e = g.entries(entriesBefore + 1)
            let options = storeOptions(durability: .none, segmentSize: 4096, preallocate: false)
            let store = dir.path("skip-roll.wal")
            let s = try JournalStore.open(store, options: options)
            for entry in e.dropLast() { try s.append(entry) }
            // Does not fit beside the entries: the writer rolls to a new segment for it.
            let n = SequenceNumber(entriesBefore)
            #expect(try s.appendRecord(type: 0x80, payload: [UInt8](repeating: 0x5A, count: 3_990), consuming: 0) == n)
            #expect(try s.append(e[entriesBefore]) == n + 1)
            try s.close()
            #expect(try segmentFiles(store).count >= 2)

            let read = try readEntries(store, mode: .strict)
            #expect(read.map(\.0) == Array(1...(n + 1)))
            #expect(read.map(\.1) == e)
            let again = try JournalStore.open(store, options: options)
            #expect(again.recovery.lastSequence == n + 1)
            try again.close()
        }
    }

    // MARK: Segments

    @Test(arguments: [false, true])
    func rolloverAcrossManySegmentsKeepsSequencesContinuousAfterReopen(preallocate: Bool) throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: preallocate ? 51 : 50)
            let options = storeOptions(durability: .none, segmentSize: 4096, preallocate: preallocate)
            let store = dir.path("roll.wal")
            var appended: [JournalEntry] = []

            let s = try JournalStore.open(store, options: options)
            var i = 0
            while appended.count < 2_000 {
                i += 1
                if i % 25 == 0 {
                    let batch = g.entries(4)
                    let range = try appendBatchRecord(s, batch)
                    #expect(range == SequenceNumber(appended.count + 1)...SequenceNumber(appended.count + 4))
                    appended += batch
                } else {
                    let e = g.next()
                    #expect(try s.append(e) == SequenceNumber(appended.count + 1))
                    appended.append(e)
                }
            }
            try s.close()
            let firstRun = try segmentFiles(store).count
            #expect(firstRun > 20)

            let again = try JournalStore.open(store, options: options)
            #expect(again.recovery.problem == nil)
            #expect(again.recovery.lastSequence == SequenceNumber(appended.count))
            #expect(again.recovery.segments == firstRun)
            for e in g.entries(300) {
                #expect(try again.append(e) == SequenceNumber(appended.count + 1))
                appended.append(e)
            }
            try again.close()

            let read = try readEntries(store, mode: .strict)
            #expect(read.map(\.0) == Array(1...SequenceNumber(appended.count)))
            #expect(read.map(\.1) == appended)

            // Every segment continues the chain and the numbering of the one before it.
            let report = try LogReader.scanRecords(store, mode: .strict) { _ in }
            #expect(report.isClean)
            #expect(report.segments.count == (try segmentFiles(store)).count)
            for (a, b) in zip(report.segments, report.segments.dropFirst()) {
                #expect(b.header?.previousChain == a.endChain, "\(b.name)")
                #expect(b.header?.baseSequence == a.lastSequence + 1, "\(b.name)")
                #expect(b.header?.storeID.0 == report.segments[0].header?.storeID.0)
                #expect(b.header?.storeID.1 == report.segments[0].header?.storeID.1)
            }
            for path in try segmentFiles(store).dropLast() {
                #expect(try fileSize(path) <= 4096, "\(path)")
            }
        }
    }

    @Test func deletingAMiddleSegmentIsDetectedAsAChainBreak() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 52)
            let options = storeOptions(durability: .none, segmentSize: 4096, preallocate: false)
            let store = dir.path("gap.wal")
            try makeStore(store, entries: g.entries(300), options: options)
            let segments = try segmentFiles(store)
            try #require(segments.count >= 5)
            let before = try LogReader.scanRecords(store, mode: .strict) { _ in }
            try FileManager.default.removeItem(atPath: segments[2])

            let c = thrownCorruption { try LogReader.scanRecords(store, mode: .strict) { _ in } }
            #expect(c?.segment == fileName(segments[3]))
            #expect(c?.offset == 0)
            #expect(c?.lastGoodSequence == before.segments[1].lastSequence)
            if case .chainBreak? = c?.problem {} else { Issue.record("expected a chain break, got \(String(describing: c))") }
            // Not a torn tail: the default open refuses it too.
            let o = thrownCorruption { try JournalStore.open(store, options: options) }
            if case .chainBreak? = o?.problem {} else { Issue.record("expected a chain break, got \(String(describing: o))") }
        }
    }

    // MARK: Locking

    @Test func secondWriterIsLockedOutUntilTheFirstCloses() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 60)
            let store = dir.path("lock.wal")
            let options = storeOptions(segmentSize: 8192, preallocate: true)
            let first = try JournalStore.open(store, options: options)
            try first.append(g.next())
            for _ in 0..<2 {
                let error = thrownError { try JournalStore.open(store, options: options) }
                if case .locked? = error as? JournalError {} else { Issue.record("expected locked, got \(String(describing: error))") }
            }
            // The refused opens did not take the first writer's lock away.
            #expect(try first.append(g.next()) == 2)
            try first.close()
            let second = try JournalStore.open(store, options: options)
            #expect(second.recovery.lastSequence == 2)
            #expect(try second.append(g.next()) == 3)
            try second.close()
        }
    }

    @Test func readersWorkWhileTheWriterHoldsTheLock() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 61)
            let store = dir.path("read.wal")
            let writer = try JournalStore.open(store, options: storeOptions(segmentSize: 8192, preallocate: true))
            let e = g.entries(3)
            try writer.append(e[0])
            #expect(try readEntries(store).map(\.1) == [e[0]])
            try appendBatchRecord(writer, [e[1], e[2]])
            #expect(try readEntries(store, mode: .strict).map(\.1) == e)
            #expect(try LogReader.scanRecords(store) { _ in }.lastSequence == 3)
            try writer.close()
        }
    }

    @Test func salvageModeCannotOpenAWriter() throws {
        try withTemporaryDirectory { dir in
            let error = thrownError { try JournalStore.open(dir.path("x.wal"), options: storeOptions(recovery: .salvage)) }
            if case .readOnly? = error as? JournalError {} else { Issue.record("expected readOnly, got \(String(describing: error))") }
        }
    }

    // MARK: Atomic batches

    @Test(arguments: [1, 4, 2, 3])
    func batchCutOffPartWayIsDroppedWhole(quarters: Int) throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 70)
            let singles = g.entries(3)
            let batch = g.entries(12)
            let options = storeOptions(durability: .none, preallocate: false)
            let store = dir.path("batch.wal")
            let s = try JournalStore.open(store, options: options)
            for e in singles { try s.append(e) }
            #expect(try appendBatchRecord(s, batch) == 4...15)
            try s.close()
            let segment = try #require(try segmentFiles(store).first)
            let frame = try #require(try recordLocations(store).last)
            #expect(frame.type == RecordType.batch.rawValue)
            #expect(frame.lastSequence == 15)
            // quarters == 4 cuts just the last byte.
            let cut = quarters == 4 ? frame.end - 1 : frame.offset + frame.size * quarters / 4
            try truncateFile(segment, to: cut)
            try asIfTheWriterCrashed(store)

            let again = try JournalStore.open(store, options: options)
            #expect(again.recovery.lastSequence == 3)
            #expect(again.recovery.problem?.isTornTail == true)
            let next = g.next()
            #expect(try again.append(next) == 4)
            try again.close()
            let read = try readEntries(store)
            #expect(read.map(\.0) == [1, 2, 3, 4])
            #expect(read.map(\.1) == singles + [next])
        }
    }

    @Test(arguments: [false, true])
    func batchWhoseSecondHalfIsZeroedIsDroppedWhole(compress: Bool) throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: compress ? 72 : 71)
            let singles = g.entries(3)
            let batch = g.entries(12)
            var options = storeOptions(durability: .none, segmentSize: 8192, preallocate: true)
            options.compressBatches = compress
            let store = dir.path("batch.wal")
            let s = try JournalStore.open(store, options: options)
            for e in singles { try s.append(e) }
            #expect(try appendBatchRecord(s, batch) == 4...15)
            try s.close()
            let segment = try #require(try segmentFiles(store).first)
            let frame = try #require(try recordLocations(store).last)
            #expect(frame.type == RecordType.batch.rawValue)
            #expect(frame.lastSequence == 15)
            try zeroBytes(segment, (frame.offset + frame.size / 2)..<frame.end)
            try asIfTheWriterCrashed(store)

            #expect(try readEntries(store, mode: .tolerateTail).map(\.0) == [1, 2, 3])
            let again = try JournalStore.open(store, options: options)
            #expect(again.recovery.lastSequence == 3)
            #expect(again.recovery.problem?.isTornTail == true)
            #expect(try appendBatchRecord(again, Array(batch.prefix(2))) == 4...5)
            try again.close()
            let read = try readEntries(store)
            #expect(read.map(\.0) == [1, 2, 3, 4, 5])
            #expect(read.map(\.1) == singles + batch.prefix(2))
        }
    }

    // MARK: Point in time and salvage

    @Test func pointInTimeKeepsThePrefixBeforeDamageInAMiddleSegmentAndSetsTheRestAside() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 80)
            let options = storeOptions(durability: .none, segmentSize: 4096, preallocate: false)
            let store = dir.path("pit.wal")
            let entries = g.entries(300)
            try makeStore(store, entries: entries, options: options)
            let segments = try segmentFiles(store)
            try #require(segments.count >= 5)
            let middle = fileName(segments[2])
            let damaged = try #require(try recordLocations(store).filter { $0.segment == middle }.dropFirst(2).first)
            try flipByte(segments[2], at: damaged.offset + Frame.headerSize + 5)

            // The default mode refuses: the damage is not a torn tail.
            let refused = thrownCorruption { try JournalStore.open(store, options: options) }
            #expect(refused?.segment == middle)

            var pit = options
            pit.recovery = .pointInTime
            let s = try JournalStore.open(store, options: pit)
            let kept = damaged.sequence - 1
            #expect(s.recovery.lastSequence == kept)
            #expect(s.recovery.problem?.segment == middle)
            #expect(s.recovery.problem?.offset == Int64(damaged.offset))
            #expect(s.recovery.problem?.lastGoodSequence == kept)
            #expect(try segmentFiles(store) == Array(segments.prefix(3)))
            let torn = tornFiles(store).map(fileName)
            #expect(torn.count == segments.count - 2)
            #expect(torn.contains { $0.hasPrefix("\(middle).\(damaged.offset).") })
            for later in segments.dropFirst(3).map(fileName) {
                #expect(torn.contains { $0.hasPrefix(later + ".") }, "\(later) not set aside")
            }

            let more = g.entries(100)
            for (i, e) in more.enumerated() {
                #expect(try s.append(e) == kept + 1 + SequenceNumber(i))
            }
            try s.close()
            let read = try readEntries(store, mode: .strict)
            #expect(read.map(\.0) == Array(1...(kept + 100)))
            #expect(read.map(\.1) == Array(entries.prefix(Int(kept))) + more)
        }
    }

    @Test func pointInTimeSetsAsideEverythingFromASegmentWithADamagedHeader() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 83)
            let options = storeOptions(durability: .none, segmentSize: 4096, preallocate: false)
            let store = dir.path("pit-header.wal")
            let entries = g.entries(250)
            try makeStore(store, entries: entries, options: options)
            let segments = try segmentFiles(store)
            try #require(segments.count >= 5)
            let before = try LogReader.scanRecords(store, mode: .strict) { _ in }
            let kept = before.segments[1].lastSequence
            try flipByte(segments[2], at: 20)

            var pit = options
            pit.recovery = .pointInTime
            let s = try JournalStore.open(store, options: pit)
            #expect(s.recovery.lastSequence == kept)
            #expect(s.recovery.problem?.segment == fileName(segments[2]))
            #expect(s.recovery.problem?.offset == 0)
            if case .badSegmentHeader? = s.recovery.problem?.problem {} else {
                Issue.record("expected a bad segment header, got \(String(describing: s.recovery.problem))")
            }
            #expect(try segmentFiles(store) == Array(segments.prefix(2)))
            #expect(tornFiles(store).count == segments.count - 2)
            let more = g.entries(80)
            for (i, e) in more.enumerated() { #expect(try s.append(e) == kept + 1 + SequenceNumber(i)) }
            try s.close()
            let read = try readEntries(store, mode: .strict)
            #expect(read.map(\.0) == Array(1...(kept + 80)))
            #expect(read.map(\.1) == Array(entries.prefix(Int(kept))) + more)
        }
    }

    @Test func salvageReadsTheRecordsAfterADamagedOne() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 81)
            let entries = g.entries(10)
            let store = dir.path("salvage.wal")
            try makeStore(store, entries: entries, options: storeOptions(durability: .none, preallocate: false))
            let segment = try #require(try segmentFiles(store).first)
            let fifth = try recordLocations(store)[4]
            try flipByte(segment, at: fifth.offset + Frame.headerSize + 2)

            var got: [(SequenceNumber, JournalEntry)] = []
            let report = try LogReader.read(store, mode: .salvage) { event, _ in
                if case .entry(let s, let e) = event { got.append((s, e)) }
            }
            #expect(got.map(\.0) == [1, 2, 3, 4, 6, 7, 8, 9, 10])
            #expect(got.map(\.1) == Array(entries[0..<4]) + Array(entries[5...]))
            #expect(report.problems.count == 1)
            #expect(report.problems.first?.offset == Int64(fifth.offset))
            #expect(report.problems.first?.lastGoodSequence == 4)
        }
    }

    @Test func salvageReadsPastDamageInAMiddleSegment() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 82)
            let entries = g.entries(200)
            let store = dir.path("salvage.wal")
            try makeStore(store, entries: entries, options: storeOptions(durability: .none, segmentSize: 4096, preallocate: false))
            let segments = try segmentFiles(store)
            try #require(segments.count >= 3)
            let damaged = try #require(try recordLocations(store).first { $0.segment == fileName(segments[1]) })
            try flipByte(segments[1], at: damaged.offset + Frame.headerSize + 1)

            let read = try readEntries(store, mode: .salvage)
            let expected = (1...200).filter { $0 != damaged.sequence }
            #expect(read.map(\.0) == expected.map { SequenceNumber($0) })
            #expect(read.map(\.1) == expected.map { entries[Int($0) - 1] })
        }
    }

    // MARK: Concurrency and durability

    @Test func concurrentAppendersGetDistinctSequencesAndEveryAcknowledgedEntrySurvivesReopen() throws {
        try withTemporaryDirectory { dir in
            let store = dir.path("concurrent.wal")
            let options = storeOptions(durability: .always, segmentSize: 64 << 10, preallocate: true)
            let writer = try JournalStore.open(store, options: options)
            let threads = 16, perThread = 200
            let collector = Collector()
            let group = DispatchGroup()
            for t in 0..<threads {
                group.enter()
                let thread = Thread {
                    var g = EntryGenerator(seed: 1_000 + UInt64(t))
                    var mine: [(SequenceNumber, JournalEntry)] = []
                    var errors: [String] = []
                    for _ in 0..<perThread {
                        let e = g.next()
                        do { mine.append((try writer.append(e, durability: .always), e)) } catch { errors.append("\(error)") }
                    }
                    collector.finish(thread: t, mine, errors: errors)
                    group.leave()
                }
                thread.start()
            }
            group.wait()
            #expect(collector.errors.isEmpty, "\(collector.errors.prefix(3))")

            let all = collector.acknowledged.values.flatMap { $0 }
            #expect(all.count == threads * perThread)
            let sequences = all.map(\.0)
            #expect(Set(sequences).count == sequences.count, "duplicate sequences")
            #expect(Set(sequences) == Set(1...SequenceNumber(threads * perThread)))
            for (t, results) in collector.acknowledged {
                #expect(zip(results, results.dropFirst()).allSatisfy { $0.0 < $1.0 }, "thread \(t) saw sequences go backwards")
            }
            #expect(writer.durableSequence == SequenceNumber(threads * perThread))
            try writer.close()

            let again = try JournalStore.open(store, options: options)
            #expect(again.recovery.problem == nil)
            #expect(again.recovery.lastSequence == SequenceNumber(threads * perThread))
            try again.close()
            let stored = Dictionary(uniqueKeysWithValues: try readEntries(store, mode: .strict).map { ($0.0, $0.1) })
            #expect(stored.count == threads * perThread)
            for (seq, e) in all {
                #expect(stored[seq] == e, "sequence \(seq)")
            }
        }
    }

    @Test(arguments: [Durability.none, .onBatch])
    func appendsUnderRelaxedDurabilityAreReadableAfterClose(durability: Durability) throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: durability == .none ? 90 : 91)
            let store = dir.path("relaxed.wal")
            let s = try JournalStore.open(store, options: storeOptions(durability: durability, segmentSize: 8192, preallocate: true))
            var appended: [JournalEntry] = []
            for round in 0..<5 {
                for e in g.entries(6) {
                    #expect(try s.append(e) == SequenceNumber(appended.count + 1))
                    appended.append(e)
                }
                let batch = g.entries(round + 2)
                let range = try appendBatchRecord(s, batch, durability: durability)
                appended += batch
                #expect(range.upperBound == SequenceNumber(appended.count))
            }
            try s.close()
            let read = try readEntries(store, mode: .strict)
            #expect(read.map(\.0) == Array(1...SequenceNumber(appended.count)))
            #expect(read.map(\.1) == appended)
            let again = try JournalStore.open(store, options: storeOptions(durability: durability, segmentSize: 8192))
            #expect(again.recovery.lastSequence == SequenceNumber(appended.count))
            #expect(again.recovery.problem == nil)
            try again.close()
        }
    }

    @Test(arguments: Durability.allCases)
    func appendingABatchReturnsItsSequenceRangeAndTheEntriesAreReadable(durability: Durability) throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 92)
            let store = dir.path("batch-api.wal")
            let options = storeOptions(durability: durability, segmentSize: 8192, preallocate: true)
            let s = try JournalStore.open(store, options: options)
            let first = g.entries(2)
            for e in first { try s.append(e) }
            let batch = g.entries(5)
            guard let range = try appendBatchGuarded(s, batch, durability: durability) else {
                // The hang is recorded; what follows would only repeat it.
                try s.close()
                return
            }
            #expect(range == 3...7)
            if durability != .none {
                // Under onBatch and always a batch is acknowledged only once it is synced.
                #expect(s.durableSequence >= 7)
            }
            #expect(s.nextSequence == 8)
            try s.close()
            let read = try readEntries(store, mode: .strict)
            #expect(read.map(\.0) == Array(1...7))
            #expect(read.map(\.1) == first + batch)
        }
    }

    @Test func oneEntryBatchTakesOneSequence() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 93)
            let store = dir.path("one.wal")
            let s = try JournalStore.open(store, options: storeOptions(durability: .onBatch, preallocate: false))
            let e = g.next()
            #expect(try s.append(batch: [e]) == 1...1)
            #expect(s.durableSequence == 1)
            try s.close()
            #expect(try readEntries(store).map(\.1) == [e])
        }
    }

    @Test func emptyBatchIsRejected() throws {
        try withTemporaryDirectory { dir in
            let s = try JournalStore.open(dir.path("empty.wal"), options: storeOptions(preallocate: false))
            let error = thrownError { try s.append(batch: []) }
            if case .invalidEntry? = error as? JournalError {} else { Issue.record("expected invalidEntry, got \(String(describing: error))") }
            #expect(s.nextSequence == 1)
            try s.close()
        }
    }

    // MARK: Appending

    @Test func appendAfterCloseIsRefused() throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 94)
            let s = try JournalStore.open(dir.path("closed.wal"), options: storeOptions(preallocate: false))
            try s.append(g.next())
            try s.close()
            try s.close()
            let error = thrownError { try s.append(g.next()) }
            if case .closed? = error as? JournalError {} else { Issue.record("expected closed, got \(String(describing: error))") }
        }
    }

    /// Whatever `append` accepts, the readers must read back.
    @Test(arguments: [Int64.min, Int64.max])
    func entryWithExtremeWallTimeIsEitherRejectedOrReadable(wallTime: Int64) throws {
        try withTemporaryDirectory { dir in
            var g = EntryGenerator(seed: 95)
            let store = dir.path("wall.wal")
            let s = try JournalStore.open(store, options: storeOptions(preallocate: false))
            var e = g.next()
            e.wallTime = wallTime
            do throws(JournalError) {
                try s.append(e)
            } catch {
                guard case JournalError.invalidEntry = error else { throw error }
                try s.close()
                return
            }
            try s.close()
            #expect(try readEntries(store).map(\.1) == [e])
        }
    }
}

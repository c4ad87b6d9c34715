import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// An operator who deletes the oldest segment (and the index cache that would have noticed) must
/// not get a store that opens cleanly with its first entries gone: the oldest segment of a store
/// begins the store's chain (FORMAT.md §3.3).
@Suite struct MissingFirstSegmentTests {
    typealias Z = ZoneFeedTests

    /// A closed store of several segments; returns its segment files.
    static func multiSegmentStore(_ path: String, options: StoreOptions) throws -> [String] {
        var g = EntryGenerator(seed: 71)
        try makeStore(path, entries: g.entries(300), options: options)
        let segments = try segmentFiles(path)
        try #require(segments.count >= 4)
        return segments
    }

    /// Removes the first segment and the zone index, as `rm 0…1.seg; rm -r index` would.
    static func removeFirstSegment(_ path: String, _ segments: [String]) throws {
        try FileManager.default.removeItem(atPath: segments[0])
        let index = path + "/" + StoreLayout.indexDirectory
        if fileExists(index) { try FileManager.default.removeItem(atPath: index) }
    }

    static let options = storeOptions(durability: .none, segmentSize: 4096, preallocate: false)

    @Test func deletingTheFirstSegmentIsRefusedByTheDefaultOpenNamingTheSegment() throws {
        try withTemporaryDirectory { dir in
            let store = dir.path("first.wal")
            let segments = try Self.multiSegmentStore(store, options: Self.options)
            let header = try #require(try LogReader.scanRecords(store, mode: .strict) { _ in }.segments[1].header)
            try Self.removeFirstSegment(store, segments)

            let c = thrownCorruption { try JournalStore.open(store, options: Self.options) }
            #expect(c?.segment == fileName(segments[1]))
            #expect(c?.offset == 0)
            #expect(c?.isTornTail == false)
            #expect(c?.problem == .missingEarlierSegment(expected: SegmentHeader.firstChain(storeID: header.storeID),
                                                          found: header.previousChain))
            #expect(c?.description.contains("a segment before it is missing") == true, "\(String(describing: c))")
            #expect(tornFiles(store).isEmpty, "nothing may be set aside: the refusal changes nothing")
        }
    }

    @Test func pointInTimeRefusesAStoreWhoseFirstSegmentIsMissingInsteadOfStartingAfresh() throws {
        try withTemporaryDirectory { dir in
            let store = dir.path("first.wal")
            let segments = try Self.multiSegmentStore(store, options: Self.options)
            try Self.removeFirstSegment(store, segments)

            var options = Self.options
            options.recovery = .pointInTime
            let c = thrownCorruption { try JournalStore.open(store, options: options) }
            if case .missingEarlierSegment? = c?.problem {} else { Issue.record("expected a missing segment, got \(String(describing: c))") }
            #expect(try segmentFiles(store) == Array(segments.dropFirst()), "every remaining segment stays where it is")
            #expect(tornFiles(store).isEmpty)
        }
    }

    @Test func salvageReadsWhatIsLeftAndReportsTheMissingSegment() throws {
        try withTemporaryDirectory { dir in
            let store = dir.path("first.wal")
            let segments = try Self.multiSegmentStore(store, options: Self.options)
            let before = try readEntries(store)
            let firstKept = try #require(try LogReader.scanRecords(store, mode: .strict) { _ in }.segments[1].firstSequence)
            try Self.removeFirstSegment(store, segments)

            var kept: [(SequenceNumber, JournalEntry)] = []
            let report = try LogReader.read(store, mode: .salvage) { event, _ in
                if case .entry(let s, let e) = event { kept.append((s, e)) }
            }
            #expect(report.problems.count == 1)
            #expect(report.problems.first?.segment == fileName(segments[1]))
            if case .missingEarlierSegment? = report.problems.first?.problem {} else {
                Issue.record("expected a missing segment, got \(report.problems)")
            }
            let expected = before.filter { $0.0 >= firstKept }
            #expect(kept.map(\.0) == expected.map(\.0))
            #expect(kept.map(\.1) == expected.map(\.1))
        }
    }

    @Test func aReaderBesideTheWriterRefusesAStoreWhoseFirstSegmentIsMissing() throws {
        try withTemporaryDirectory { dir in
            let store = dir.path("first.wal")
            let segments = try Self.multiSegmentStore(store, options: Self.options)
            try Self.removeFirstSegment(store, segments)

            let c = thrownCorruption { try StoreReader.open(store) }
            #expect(c?.segment == fileName(segments[1]))
            if case .missingEarlierSegment? = c?.problem {} else { Issue.record("expected a missing segment, got \(String(describing: c))") }
        }
    }

    @Test func aLaterSegmentReadOnItsOwnIsNotCheckedAgainstTheStoresStart() throws {
        try withTemporaryDirectory { dir in
            let store = dir.path("first.wal")
            let segments = try Self.multiSegmentStore(store, options: Self.options)
            // `jlog inspect` / `verify` of one file: it may be a copy of any segment.
            let report = try LogReader.scanRecords(segments[2], mode: .strict) { _ in }
            #expect(report.isClean)
        }
    }

    @Test func aStoreWhoseFirstSegmentWasCompactedStillOpens() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Z.memoryStore(fs, segmentSize: 1 << 20)
        let first = try store.append(Z.entry(0, zone: "List-x"))
        for n in 1..<10 { try store.append(Z.entry(n, zone: "List-x")) }
        try store.sealActiveSegment()
        try store.setLowWaterMark("List-x", to: first + 3)
        let report = try store.compact(purging: [first + 1, first + 2])
        #expect(report.entriesPurged == 2)
        try store.close()
        let firstSegment = "/d/s.wal/" + SegmentName(base: 1).fileName
        let header = try #require(fs.contents(firstSegment)?.withUnsafeBytes { try? SegmentHeader.decode($0) })
        #expect(header.flags.contains(.compacted), "precondition: the first segment was rewritten")
        #expect(header.previousChain == SegmentHeader.firstChain(storeID: header.storeID))

        try fs.remove("/d/s.wal/" + StoreLayout.indexFile)
        let reopened = try JournalStore.open("/d/s.wal", options: options)
        #expect(reopened.recovery.problem == nil)
        try reopened.close()
        let left = try LogReader.entries("/d/s.wal", mode: .strict, fs: fs).filter { $0.1.zone == "List-x" }
        #expect(left.map(\.0) == [first] + Array(first + 3 ... first + 9))
    }
}

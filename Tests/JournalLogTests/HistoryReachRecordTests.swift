import Foundation
import Testing
@testable import JournalLog
import JournalCodec
import JournalTesting

/// The `history` field of a `lowWaterMark` record (FORMAT.md §5.6) and the history reach the
/// zone index keeps of it (INDEX.md §1, §4): the log's word on how far a zone's history pieces
/// reach, which the index cache must never forget.
@Suite struct HistoryReachRecordTests {
    static let zone = "List-db6a6e29"

    static func decode(_ bytes: [UInt8]) throws -> (zone: String, incarnation: SequenceNumber, mark: SequenceNumber, history: SequenceNumber) {
        try bytes.withUnsafeBytes { try LowWaterCodec.decode($0) }
    }

    @Test func aMarkRecordWrittenBeforeTheFieldReadsAsHistoryZero() throws {
        // The old form, byte for byte: zone, incarnation, mark, and nothing after.
        var old = ByteWriter()
        old.string(Self.zone)
        old.u64(7)
        old.u64(1_000)
        #expect(LowWaterCodec.encode(zone: Self.zone, incarnation: 7, mark: 1_000) == old.bytes, "a mark alone keeps its old bytes")
        let m = try Self.decode(old.bytes)
        #expect(m.mark == 1_000 && m.history == 0)
    }

    @Test func bytesAfterTheMarkOtherThanOneHistoryFieldAreRejected() {
        let mark = LowWaterCodec.encode(zone: Self.zone, incarnation: 7, mark: 1_000)
        for extra in [1, 4, 7, 9, 16] {
            #expect(throws: CodecError.self, "\(extra) bytes after the mark") { _ = try Self.decode(mark + [UInt8](repeating: 1, count: extra)) }
        }
        var tooFar = ByteWriter()
        tooFar.u64(1 << 62)
        #expect(throws: CodecError.self, "a history at 2^62") { _ = try Self.decode(mark + tooFar.bytes) }
    }

    @Test func aRecordWithAnEqualMarkStillRaisesTheHistoryReach() throws {
        let (store, _) = try ZoneFeedTests.memoryStore()
        for i in 0..<10 { try store.append(ZoneFeedTests.entry(i, zone: Self.zone)) }
        try store.setLowWaterMark(Self.zone, to: 4, historyThrough: 6)
        try store.setLowWaterMark(Self.zone, to: 4, historyThrough: 9)
        try store.setLowWaterMark(Self.zone, to: 4, historyThrough: 7)
        #expect(store.zone(Self.zone)?.lowWaterMark == 4)
        #expect(store.zone(Self.zone)?.historyThrough == 9, "it only rises")
        #expect(throws: JournalError.self, "past the log") { try store.setLowWaterMark(Self.zone, to: 4, historyThrough: 11) }
        try store.close()
    }

    @Test func aCheckpointOfTheOlderIndexVersionIsRebuiltAndStillKnowsTheReach() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try ZoneFeedTests.memoryStore(fs)
        for i in 0..<10 { try store.append(ZoneFeedTests.entry(i, zone: Self.zone)) }
        try store.setLowWaterMark(Self.zone, to: 4, historyThrough: 9)
        try store.close()
        // What a writer before major 2 left: the same bytes stamped major 1, its CRC made right.
        let file = "/d/s.wal/" + StoreLayout.indexFile
        var bytes = try #require(fs.contents(file))
        bytes[8] = 1
        bytes[9] = 0
        let crc = CRC32C.extend(0, Array(bytes[0..<bytes.count - 4]))
        withUnsafeBytes(of: crc.littleEndian) { for (k, b) in $0.enumerated() { bytes[bytes.count - 4 + k] = b } }
        fs.install(file, bytes: bytes)
        let reopened = try JournalStore.open("/d/s.wal", options: options)
        guard case .rebuilt(let reason) = reopened.recovery.indexSource else {
            Issue.record("expected a rebuild, got \(reopened.recovery.indexSource)")
            return
        }
        #expect(reason.contains("major version 1"), "\(reason)")
        #expect(reopened.zone(Self.zone)?.historyThrough == 9)
        #expect(reopened.zone(Self.zone)?.lowWaterMark == 4)
        try reopened.close()
        // The next checkpoint is of the current version and keeps it.
        let again = try JournalStore.open("/d/s.wal", options: options)
        #expect(again.recovery.indexSource == .checkpoint)
        #expect(again.zone(Self.zone)?.historyThrough == 9)
        try again.close()
    }
}

import Foundation
import Testing
import JournalCodec
@testable import ListModel

/// The compaction record's body (Spec/SYNC.md §6.7): its vector, and bad bodies refused with a
/// typed error.
@Suite struct CompactionRecordTests {
    static let vector = CompactionRecord(
        from: 7, to: 12, followFrom: 0, followPosition: 9, digest: 0x0123_4567_89ab_cdef,
        purged: [CompactID("00000000-0000-4000-8000-000000000001")!, CompactID("e3")!, CompactID("compaction.7")!],
        placed: [.init(entry: CompactID("e1")!, item: CompactID("eggs")!, anchor: nil)])

    static func vectorHex() throws -> String {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("Spec/vectors/compaction-record.txt"), encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("body: ") })
        return String(line.dropFirst("body: ".count))
    }

    @Test func theVectorEncodesAndDecodes() throws {
        let hex = Self.vector.encoded().map { String(format: "%02x", $0) }.joined()
        #expect(hex == (try Self.vectorHex()))
        #expect(try CompactionRecord.decode(Self.vector.encoded()) == Self.vector)
    }

    @Test func theRecordsIDNamesItsMark() {
        #expect(CompactionRecord.id(to: 12) == CompactID("compaction.12")!)
        #expect(CompactionRecord.mark(ofID: CompactID("compaction.12")!) == 12)
        #expect(CompactionRecord.mark(ofID: CompactID("e3")!) == nil)
    }

    @Test func everyTruncationIsATypedError() {
        let bytes = Self.vector.encoded()
        for n in 0..<bytes.count {
            #expect(throws: CodecError.self) { try CompactionRecord.decode(Array(bytes[..<n])) }
        }
        #expect(throws: CodecError.self) { try CompactionRecord.decode(bytes + [0]) }
    }

    @Test func marksThatCannotBeAreRefused() {
        var r = Self.vector
        r.to = r.from
        #expect(throws: CodecError.self) { try CompactionRecord.decode(r.encoded()) }
        r = Self.vector
        r.followPosition = r.to + 1
        #expect(throws: CodecError.self) { try CompactionRecord.decode(r.encoded()) }
    }

    @Test func aCountPastTheBytesLeftIsRefusedBeforeAllocating() {
        var w = ByteWriter()
        w.u8(1); w.varint(1); w.varint(2); w.varint(0); w.varint(0); w.u64(0)
        w.varint(UInt64(Int32.max))
        #expect(throws: CodecError.self) { try CompactionRecord.decode(w.bytes) }
    }
}

import Foundation
import JournalCodec
import Testing
@testable import ListModel
import JournalTesting

/// History pieces (Spec/SNAPSHOT.md §5): the files a compacted zone's history lives in.
@Suite struct HistoryPieceTests {
    static let header = HistoryPieceHeader(zone: zone, incarnation: 3, sequence: 7, complete: false)

    static func piece(_ entries: [JournalEntry], header: HistoryPieceHeader = header) -> [UInt8] {
        var e = HistoryPieceEncoder(header)
        for x in entries { e.add(x) }
        e.finish()
        return e.takeChunk()
    }

    @Test func aPieceDecodesToTheHistoryOfItsEntries() throws {
        let (h, log) = try HistoryPieceCodec.decode(Self.piece(HistoryTests.entries))
        #expect(h == Self.header)
        #expect(log == HistoryTests.log())
        #expect(log.allEvents() == HistoryTests.log().allEvents())
    }

    @Test func piecesDecodedIntoOneLogAreTheHistoryOfAllTheirEntries() throws {
        let entries = randomEntries(seed: 3, count: 120)
        var log = ActivityLog(zone: zone)
        for part in [Array(entries[..<50]), Array(entries[40..<90]), Array(entries[90...])] {
            _ = try HistoryPieceCodec.decode(Self.piece(part), into: &log)
        }
        #expect(log == HistoryTests.log(entries))
    }

    @Test func aWholeHistoryEncodedAsAPieceDecodesToItself() throws {
        for seed in 0..<20 as Range<UInt64> {
            let log = HistoryTests.log(randomEntries(seed: seed, count: 80))
            let h = HistoryPieceHeader(zone: zone, incarnation: 1, sequence: 90, complete: true)
            let bytes = HistoryPieceCodec.encode(log, header: h)
            let back = try HistoryPieceCodec.decode(bytes)
            #expect(back.log == log && back.header == h)
            #expect(HistoryPieceCodec.encode(back.log, header: h) == bytes)
        }
    }

    @Test func aPieceWrittenInChunksIsTheSameBytes() {
        let entries = randomEntries(seed: 5, count: 3_000)
        var e = HistoryPieceEncoder(Self.header)
        var chunked: [UInt8] = []
        for (k, x) in entries.enumerated() {
            e.add(x)
            if k % 97 == 0 { chunked += e.takeChunk() }
        }
        e.finish()
        chunked += e.takeChunk()
        #expect(chunked == Self.piece(entries))
    }

    @Test func entriesOfAnotherZoneAreNotKeptEvenTheEmptyName() {
        var e = HistoryPieceEncoder(Self.header)
        for other in ["", "z-other"] {
            var x = HistoryTests.entries[0]
            x.zone = other
            let kept = e.add(x)
            #expect(!kept)
        }
        #expect(e.events == 0)
        let kept = e.add(HistoryTests.entries[0])
        #expect(kept && e.events == 1)
    }

    @Test func anOlderWritersWholeHistoryReadsAsACompletePiece() throws {
        let (h, log) = try HistoryPieceCodec.decode(ActivityLogCodec.encode(HistoryTests.log()))
        #expect(h.complete && h.major == 1 && h.previous == 0)
        #expect(log == HistoryTests.log())
    }

    @Test func theHeaderReadsFromTheFirstBytesAlone() throws {
        let bytes = Self.piece(HistoryTests.entries, header: HistoryPieceHeader(zone: zone, incarnation: 3, sequence: 90, previous: 7,
                                                                                 previousCRC: 0xDEAD_BEEF, complete: false))
        let h = try bytes.prefix(40 + zone.utf8.count).withUnsafeBytes { try HistoryPieceCodec.decodeHeader($0) }
        #expect(h?.previous == 7 && h?.previousCRC == 0xDEAD_BEEF && h?.sequence == 90)
    }

    @Test func damageIsRefused() {
        let bytes = Self.piece(HistoryTests.entries)
        for k in [0, 4, 6, 9, 30, bytes.count / 2, bytes.count - 1] {
            var b = bytes
            b[k] ^= 0x04
            #expect(throws: ActivityLogError.self) { try HistoryPieceCodec.decode(b) }
        }
        for n in 0..<bytes.count {
            #expect(throws: ActivityLogError.self) { try HistoryPieceCodec.decode(Array(bytes.prefix(n))) }
        }
    }

    @Test func aHeaderNoWriterMakesIsRefused() {
        // A first piece naming a previous one, and a piece following a newer one.
        for h in [HistoryPieceHeader(zone: zone, incarnation: 1, sequence: 9, previous: 0, previousCRC: 5, complete: false),
                  HistoryPieceHeader(zone: zone, incarnation: 1, sequence: 9, previous: 12, previousCRC: 5, complete: false),
                  HistoryPieceHeader(zone: zone, incarnation: 1, sequence: 9, previous: 4, previousCRC: 5, complete: true)] {
            #expect(throws: ActivityLogError.self) { try HistoryPieceCodec.decode(Self.piece([], header: h)) }
        }
    }

    /// Spec/vectors/history.txt: the seven-entry example as a first history piece. Regenerate with
    /// JOURNALLOG_WRITE_VECTORS=1 after a deliberate format change (and update Spec/SNAPSHOT.md).
    @Test func historyVectorMatches() throws {
        let url = packageRoot.appendingPathComponent("Spec/vectors/history.txt")
        let hex = Self.piece(sevenEntryExample).map { String(format: "%02x", $0) }.joined()
        let movesHex = Self.piece(moveExample).map { String(format: "%02x", $0) }.joined()
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" {
            let text = """
            # History piece (SNAPSHOT.md §5): the seven entries of MERGE.md §1 (in order) as the first
            # piece (previous 0, not complete) of zone List-db6a6e29, incarnation 3, sequence 7.

            piece: \(hex)

            # The nine entries of MERGE.md §3.5's example (the seven, a move of milk by carol, an
            # add of jam), the same header: the move is an event of kind 0x40 with its item.

            moves-piece: \(movesHex)

            """
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        let text = try String(contentsOf: url, encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("piece:") })
        #expect(line.dropFirst(6).trimmingCharacters(in: .whitespaces) == hex)
        var expected = ActivityLog(zone: zone)
        expected.record(contentsOf: sevenEntryExample)
        #expect(try HistoryPieceCodec.decode(Self.piece(sevenEntryExample)).log == expected)
        let moves = try #require(text.split(separator: "\n").first { $0.hasPrefix("moves-piece:") })
        #expect(moves.dropFirst(12).trimmingCharacters(in: .whitespaces) == movesHex)
        var withMoves = ActivityLog(zone: zone)
        withMoves.record(contentsOf: moveExample)
        #expect(try HistoryPieceCodec.decode(hexBytes(movesHex)).log == withMoves)
    }

    static let seeds: [(String, [UInt8])] = [
        ("seven-entry-piece", piece(sevenEntryExample)),
        ("random-80-piece", piece(randomEntries(seed: 11, count: 80))),
        ("moves-piece", piece(moveExample)),
        ("sealed-piece", piece(SealedTextTests.example)),
        ("complete-piece", HistoryPieceCodec.encode(HistoryTests.log(), header: HistoryPieceHeader(zone: zone, incarnation: 2, sequence: 40, complete: true))),
        ("chained-piece", piece(HistoryTests.entries, header: HistoryPieceHeader(zone: zone, incarnation: 2, sequence: 50, previous: 40, previousCRC: 77, complete: false))),
        ("empty-piece", piece([])),
        ("older-whole-history", ActivityLogCodec.encode(HistoryTests.log())),
    ]

    /// Writes the seed corpus when JOURNALLOG_WRITE_VECTORS=1.
    @Test func seedCorpusDecodes() throws {
        let url = packageRoot.appendingPathComponent("Fuzz/corpus/FuzzHistory")
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            for (name, bytes) in Self.seeds { try Data(bytes).write(to: url.appendingPathComponent(name)) }
        }
        for (_, bytes) in Self.seeds { #expect(throws: Never.self) { try HistoryPieceCodec.decode(bytes) } }
    }

    /// Replays Fuzz/corpus/FuzzHistory and Fuzz/regressions/FuzzHistory through the fuzz check.
    @Test func fuzzCorpusPassesTheHistoryCheck() throws {
        #expect(try replayFuzzCorpus("FuzzHistory", ListFuzzChecks.history) >= Self.seeds.count)
    }
}

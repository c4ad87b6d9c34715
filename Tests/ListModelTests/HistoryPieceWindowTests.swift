import Foundation
import JournalCodec
import Testing
@testable import ListModel
import JournalTesting

/// A piece's events read from windows (a service's history pages, Spec/SYNC.md §3.12): the same
/// events, in the same order, as the whole piece, whatever the window's size.
@Suite struct HistoryPieceWindowTests {
    /// Reads `bytes` in windows of `size` (at least `maxEventBytes` past the start of each).
    static func windowed(_ bytes: [UInt8], size: Int) throws -> [HistoryPieceEvent] {
        guard let (_, start) = try HistoryPieceCodec.startOfEvents(bytes) else { return [] }
        var out: [HistoryPieceEvent] = [], at = start
        let end = bytes.count - 4
        while true {
            let stop = min(end, at.offset + size)
            let window = Array(bytes[at.offset..<stop])
            let (next, ended) = try window.withUnsafeBytes { w in
                try HistoryPieceCodec.events(in: w, from: at, reachesEnd: stop == end) { out.append($0); return true }
            }
            at = next
            if ended { return out }
        }
    }

    @Test func windowsOfAnySizeReadTheEventsOfTheWholePiece() throws {
        var entries = randomEntries(seed: 5, count: 300)
        // Long texts, so that events straddle window edges.
        for i in stride(from: 0, to: entries.count, by: 7) {
            if case .add(let item, _, let after) = entries[i].operation {
                entries[i].operation = .add(item: item, text: String(repeating: "x", count: 3_000 + i), after: after)
            }
        }
        let bytes = HistoryPieceTests.piece(entries)
        var whole: [HistoryPieceEvent] = []
        let (_, start) = try #require(try HistoryPieceCodec.startOfEvents(bytes))
        #expect(try HistoryPieceCodec.events(bytes, from: start) { whole.append($0); return true } == nil)
        #expect(!whole.isEmpty)
        for size in [HistoryPieceCodec.maxEventBytes + 1, HistoryPieceCodec.maxEventBytes * 2 + 3, 1 << 16, bytes.count] {
            #expect(try Self.windowed(bytes, size: size) == whole, "window \(size)")
        }
    }

    @Test func aStopResumesWhereItStopped() throws {
        let bytes = HistoryPieceTests.piece(randomEntries(seed: 9, count: 100))
        let (_, start) = try #require(try HistoryPieceCodec.startOfEvents(bytes))
        var whole: [HistoryPieceEvent] = []
        _ = try HistoryPieceCodec.events(bytes, from: start) { whole.append($0); return true }
        var pages: [HistoryPieceEvent] = [], at: HistoryPieceResume? = start
        while let from = at {
            var n = 0
            at = try HistoryPieceCodec.events(bytes, from: from) { pages.append($0); n += 1; return n < 7 }
        }
        #expect(pages == whole)
    }

    @Test func aDamagedEventIsAnErrorNeverACrash() throws {
        var bytes = HistoryPieceTests.piece(randomEntries(seed: 2, count: 40))
        let (_, start) = try #require(try HistoryPieceCodec.startOfEvents(bytes))
        bytes[start.offset] = 0xEE  // no such event kind
        #expect(throws: ActivityLogError.self) {
            try bytes.withUnsafeBytes { p in
                try HistoryPieceCodec.events(in: UnsafeRawBufferPointer(rebasing: p[start.offset..<(p.count - 4)]), from: start, reachesEnd: true) { _ in true }
            }
        }
    }
}

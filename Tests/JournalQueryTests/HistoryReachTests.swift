import Foundation
import Testing
import JournalCodec
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// The log says how far a zone's history pieces reach (FORMAT.md §5.6, COMPACTION.md §4): a run
/// that purges more below an unchanged mark writes a newer piece, and losing that piece (deleted,
/// or an older copy of `snapshots/` restored) is `historyIncomplete`, never a shorter history.
@Suite struct HistoryReachTests {
    typealias C = CompactorTests
    typealias H = HistoryChainTests

    /// An entry of the zone at `days` after t0.
    static func at(_ id: String, _ op: JournalCodec.EntryOperation, days: Int64) -> JournalEntry {
        let ms = Int64(C.t0) + days * C.day
        return JournalEntry(id: CompactID(id)!, zone: C.zone, author: "alice", wallTime: ms,
                            clock: HybridTime(physicalMillis: UInt64(ms), counter: 0), operation: op)
    }

    /// Coffee finished on day 0 and tea on day 10, all sealed (the seal ends at the list's last
    /// entry); a run on day 15 purges coffee (piece P1 at the mark). Then fresh entries, unsealed and recent, so the mark cannot rise; a
    /// run on day 30 purges tea, below the unchanged mark, into piece P2 past it.
    static func purgedBelowAnUnchangedMark() throws -> (store: JournalStore, fs: MemoryFileSystem, appended: [JournalEntry], mark: SequenceNumber) {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        let q = ListQuery(store: s, fs: fs)
        let sealed = [at("c1", .add(item: C.coffee, text: "Coffee", after: nil), days: 0), at("c2", .markOff(item: C.coffee), days: 0),
                      at("t1", .add(item: C.tea, text: "Tea", after: nil), days: 0), at("t2", .markOff(item: C.tea), days: 10)]
        for e in sealed { try s.append(e) }
        try s.sealActiveSegment()
        _ = try ListCompactor(query: q).run(now: Int64(C.t0) + 15 * C.day)
        let mark = try #require(s.zone(C.zone)).lowWaterMark
        let fresh = (0..<10).map { at("f\($0)", .add(item: CompactID("fresh-\($0)")!, text: "Fresh", after: nil), days: 29) }
        for e in fresh { try s.append(e) }
        _ = try ListCompactor(query: q).run(now: Int64(C.t0) + 30 * C.day)
        return (s, fs, sealed + fresh, mark)
    }

    @Test func aRunBelowAnUnchangedMarkRecordsItsPiecesReachInTheLog() throws {
        let (s, fs, _, mark) = try Self.purgedBelowAnUnchangedMark()
        let pieces = H.pieces(s, fs)
        #expect(pieces.count == 2)
        let info = try #require(s.zone(C.zone))
        #expect(info.lowWaterMark == mark, "nothing new was sealed: the mark stays")
        #expect(pieces[0].sequence > mark && info.historyThrough == pieces[0].sequence)
        #expect(try H.decode(pieces[0], fs).log.allEvents().map(\.entryID) == [CompactID("t1")!, CompactID("t2")!])
    }

    @Test func withTheNewerPiecePresentTheHistoryReadsWhole() throws {
        let (s, fs, appended, _) = try Self.purgedBelowAnUnchangedMark()
        let (log, warnings) = try ListQuery(store: s, fs: fs).history(C.zone)
        #expect(warnings.isEmpty)
        #expect(log == H.whole(appended))
        #expect(StoreFileCheck.run(s, fs: fs).problems.isEmpty)
    }

    @Test func losingTheNewestPieceIsHistoryIncompleteNamingTheMissingReach() throws {
        let (s, fs, _, _) = try Self.purgedBelowAnUnchangedMark()
        let pieces = H.pieces(s, fs)
        try fs.remove(pieces[0].path)
        let error = #expect(throws: QueryError.self) { _ = try ListQuery(store: s, fs: fs).history(C.zone) }
        guard case .historyIncomplete(_, let reason) = error else { Issue.record("expected historyIncomplete, got \(String(describing: error))"); return }
        #expect(reason == "the newest history piece runs through \(pieces[1].sequence), but the log says the history reaches \(pieces[0].sequence): a newer piece is missing (restore it from a backup)")
    }

    @Test func theFileCheckOfJlogVerifyReportsTheMissingNewerPiece() throws {
        let (s, fs, _, _) = try Self.purgedBelowAnUnchangedMark()
        let pieces = H.pieces(s, fs)
        try fs.remove(pieces[0].path)
        let check = StoreFileCheck.run(s, fs: fs)
        #expect(check.problems.count == 1)
        #expect(check.problems.first?.contains("the log says the history reaches \(pieces[0].sequence)") == true, "\(check.problems)")
    }

    @Test func aCompactionAfterTheNewestPieceWasLostStopsAndAddsNoPiece() throws {
        let (s, fs, _, _) = try Self.purgedBelowAnUnchangedMark()
        let lost = H.pieces(s, fs)[0]
        try fs.remove(lost.path)
        // Bread finished and sealed: something for a run to purge after the lost piece.
        for e in [Self.at("b1", .add(item: C.bread, text: "Bread", after: nil), days: 29), Self.at("b2", .delete(item: C.bread), days: 29)] {
            try s.append(e)
        }
        try C.seal(s, from: 20_000)
        #expect(throws: QueryError.self) { _ = try ListCompactor(store: s, fs: fs).run(now: Int64(C.t0) + 60 * C.day) }
        #expect(H.pieces(s, fs).count == 1)
    }

    @Test func theReachOutlivesAReopenThroughTheIndexCheckpoint() throws {
        let (s, _, _, _) = try Self.purgedBelowAnUnchangedMark()
        let reach = try #require(s.zone(C.zone)).historyThrough
        try s.close()
        let reopened = try JournalStore.open(s.path, options: s.options)
        #expect(reopened.recovery.indexSource == .checkpoint)
        #expect(reopened.zone(C.zone)?.historyThrough == reach)
        try reopened.close()
    }
}

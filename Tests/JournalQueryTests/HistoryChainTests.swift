import Foundation
import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// The history grows by pieces (Spec/SNAPSHOT.md §5, COMPACTION.md §1): each compaction appends
/// the events of what it removes, after the piece before it; the pieces and the log together are
/// the whole history.
@Suite struct HistoryChainTests {
    typealias C = CompactorTests

    /// The seven-entry store compacted once, then butter bought and compacted again a day later.
    static func twiceCompacted() throws -> (JournalStore, MemoryFileSystem, [JournalEntry]) {
        let (s, fs) = try C.sevenEntryStore()
        var appended = try ListQuery(store: s, fs: fs).entries(C.zone).entries.map(\.1)
        _ = try ListCompactor(store: s, fs: fs).run(now: C.later)
        let butter = CompactID("butter")!
        let more = [C.e("x1", .add(item: butter, text: "Butter", after: nil), 50), C.e("x2", .markOff(item: butter), 51)]
        for e in more { try s.append(e) }
        appended += more
        try C.seal(s, from: 30_000)
        _ = try ListCompactor(store: s, fs: fs).run(now: C.later + C.day)
        return (s, fs, appended)
    }

    static func pieces(_ s: JournalStore, _ fs: MemoryFileSystem) -> [SnapshotFile] {
        SnapshotDirectory.list(store: s.path, zone: C.zone, incarnation: s.zone(C.zone)!.incarnation, kind: .history, fs: fs)
    }

    static func decode(_ f: SnapshotFile, _ fs: MemoryFileSystem) throws -> (header: HistoryPieceHeader, log: ActivityLog) {
        try HistoryPieceCodec.decode(try #require(fs.contents(f.path)))
    }

    static func whole(_ entries: [JournalEntry]) -> ActivityLog {
        var log = ActivityLog(zone: C.zone)
        log.record(contentsOf: entries)
        return log
    }

    @Test func aSecondCompactionAppendsAPieceOfWhatItPurgesAfterTheFirst() throws {
        let (s, fs, appended) = try Self.twiceCompacted()
        let files = Self.pieces(s, fs)
        #expect(files.count == 2)
        let newest = try Self.decode(files[0], fs), first = try Self.decode(files[1], fs)
        // Only butter's two events: the first run's are not written again.
        #expect(newest.log.allEvents().map(\.entryID) == [CompactID("x1")!, CompactID("x2")!])
        #expect(newest.header.previous == files[1].sequence && !newest.header.complete)
        #expect(newest.header.previousCRC == fs.contents(files[1].path)!.withUnsafeBytes { HistoryPieceCodec.storedCRC($0) })
        #expect(first.header.previous == 0)
        let (log, warnings) = try ListQuery(store: s, fs: fs).history(C.zone)
        #expect(warnings.isEmpty)
        #expect(log == Self.whole(appended))
    }

    @Test func aDamagedNewestPieceIsAnErrorAndTheOlderPiecesStayWhole() throws {
        let (s, fs, _) = try Self.twiceCompacted()
        let files = Self.pieces(s, fs)
        var bytes = try #require(fs.contents(files[0].path))
        bytes[bytes.count - 8] ^= 0x20
        fs.install(files[0].path, bytes: bytes)
        HistoryCompletenessTests.expectIncomplete(ListQuery(store: s, fs: fs))
        // The first run's events are where they were, whole; verify names the damaged piece.
        let first = try Self.decode(files[1], fs)
        #expect(first.log.lastMarkOff(ofItemsMatching: "coffee") != nil)
        let check = StoreFileCheck.run(s, fs: fs)
        #expect(check.problems.count == 1 && check.notes.count == 1 && check.notes[0].contains(files[0].name))
        // And no compaction adds to a chain it cannot vouch for.
        try s.append(C.e("y1", .add(item: CompactID("cheese")!, text: "Cheese", after: nil), 60))
        try s.append(C.e("y2", .delete(item: CompactID("cheese")!), 61))
        try C.seal(s, from: 40_000)
        #expect(throws: QueryError.self) { _ = try ListCompactor(store: s, fs: fs).run(now: C.later + 2 * C.day) }
        #expect(Self.pieces(s, fs).count == 2)
    }

    @Test func aMissingPieceInTheChainIsAnError() throws {
        let (s, fs, _) = try Self.twiceCompacted()
        try fs.remove(Self.pieces(s, fs)[1].path)
        HistoryCompletenessTests.expectIncomplete(ListQuery(store: s, fs: fs))
        #expect(StoreFileCheck.run(s, fs: fs).problems.count == 1)
    }

    @Test func anotherFileUnderAPiecesNameIsAnError() throws {
        let (s, fs, _) = try Self.twiceCompacted()
        let older = Self.pieces(s, fs)[1]
        // A valid piece, but not the one its successor names.
        let stranger = HistoryPieceCodec.encode(Self.whole([C.e("z1", .rename(name: "Other"), 1)]),
                                                header: HistoryPieceHeader(zone: C.zone, incarnation: older.incarnation, sequence: older.sequence, complete: false))
        fs.install(older.path, bytes: stranger)
        HistoryCompletenessTests.expectIncomplete(ListQuery(store: s, fs: fs))
    }

    @Test func aWholeHistoryInstalledAtASequenceIsFollowedByPieces() throws {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        let q = ListQuery(store: s, fs: fs)
        // What a device does after a re-fetch: the service's history, installed at its sequence.
        let service = [C.e("old1", .add(item: CompactID("jam")!, text: "Jam", after: nil), 1), C.e("old2", .delete(item: CompactID("jam")!), 2)]
        let join = C.e("j1", .join(participant: "bob"), 2)
        try s.append(join)
        let installed = s.zone(C.zone)!.lastChange
        try q.writeHistory(C.zone, history: Self.whole(service + [join]), incarnation: s.zone(C.zone)!.incarnation, sequence: installed)
        try s.setLowWaterMark(C.zone, to: installed)
        let milk = [C.e("m1", .add(item: C.milk, text: "Milk", after: nil), 3), C.e("m2", .markOff(item: C.milk), 4)]
        for e in milk { try s.append(e) }
        try C.seal(s)
        _ = try ListCompactor(query: q).run(now: C.later)
        let files = Self.pieces(s, fs)
        #expect(files.count == 2)
        #expect(try Self.decode(files[1], fs).header.complete)
        #expect(try q.history(C.zone).log == Self.whole(service + [join] + milk))
        // A whole history older than the newest piece would not be the history: refused.
        #expect(throws: QueryError.self) {
            try q.writeHistory(C.zone, history: Self.whole(service), incarnation: s.zone(C.zone)!.incarnation, sequence: installed)
        }
    }

    @Test func twoRunsAtOneSequenceShareOnePiece() throws {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        let q = ListQuery(store: s, fs: fs)
        // Coffee finished on day 0, tea on day 10; nothing is appended to the list after that.
        let entries = [C.e("c1", .add(item: C.coffee, text: "Coffee", after: nil), 1), C.e("c2", .markOff(item: C.coffee), 2),
                       C.e("t1", .add(item: C.tea, text: "Tea", after: nil), 3),
                       JournalEntry(id: CompactID("t2")!, zone: C.zone, author: "alice", wallTime: Int64(C.t0) + 10 * C.day,
                                    clock: HybridTime(physicalMillis: C.t0 + 10 * UInt64(C.day), counter: 0), operation: .markOff(item: C.tea))]
        for e in entries { try s.append(e) }
        try C.seal(s)
        _ = try ListCompactor(query: q).run(now: Int64(C.t0) + 15 * C.day)   // coffee only
        _ = try ListCompactor(query: q).run(now: Int64(C.t0) + 30 * C.day)   // tea, at the same sequence
        let files = Self.pieces(s, fs)
        #expect(files.count == 1)
        #expect(try Self.decode(files[0], fs).log == Self.whole(entries))
        #expect(try q.entries(C.zone).entries.isEmpty)
        #expect(try q.history(C.zone).log == Self.whole(entries))
    }

    @Test func anOlderWritersWholeHistoryFileStillAnswersAndIsFollowed() throws {
        let (s, fs) = try C.sevenEntryStore()
        let q = ListQuery(store: s, fs: fs)
        let all = try q.entries(C.zone).entries.map(\.1)
        let info = s.zone(C.zone)!
        // What an older writer left: its whole history at the zone's last sequence, and the mark.
        let name = SnapshotDirectory.fileName(zone: C.zone, incarnation: info.incarnation, sequence: info.lastChange, kind: .history)
        fs.install(s.path + "/snapshots/" + name, bytes: ActivityLogCodec.encode(Self.whole(all)))
        #expect(try q.history(C.zone).log == Self.whole(all))
        _ = try ListCompactor(query: q).run(now: C.later)
        #expect(try q.history(C.zone).log == Self.whole(all))
        #expect(StoreFileCheck.run(s, fs: fs).problems.isEmpty)
    }

    /// A crash (three kinds of power loss) at every I/O call of a compaction run leaves the
    /// history whole: every event of every entry ever appended, from the pieces and the log;
    /// and, after a second run, the reach the log records is the newest piece's.
    @Test func aCrashAtEveryIOCallOfACompactionRunLeavesTheHistoryWhole() throws {
        func setUp() throws -> (JournalStore, MemoryFileSystem, ActivityLog) {
            let (s, fs, appended) = try Self.twiceCompacted()
            // Something more to purge for the run under test.
            let cheese = CompactID("cheese")!
            let more = [C.e("y1", .add(item: cheese, text: "Cheese", after: C.eggs), 60), C.e("y2", .delete(item: cheese), 61),
                        C.e("y3", .rename(name: "Party"), 62)]
            for e in more { try s.append(e) }
            try C.seal(s, from: 40_000)
            return (s, fs, Self.whole(appended + more))
        }
        var calls = 0
        do {
            let (s, fs, expected) = try setUp()
            fs.setFaults(MemoryFileSystem.FaultPlan())
            let report = try ListCompactor(store: s, fs: fs).run(now: C.later + 2 * C.day)
            #expect(report.storage.entriesPurged > 0)
            calls = fs.mutatingCalls
            #expect(try ListQuery(store: s, fs: fs).history(C.zone).log == expected)
        }
        #expect(calls > 10)
        for call in 1...calls {
            for mode in [MemoryFileSystem.CrashMode.dropUnsynced, .tearLastWrite(seed: 3), .garbleLastWrite(seed: 5)] {
                let (s, fs, expected) = try setUp()
                fs.setFaults(MemoryFileSystem.FaultPlan(failOnCall: call))
                _ = try? ListCompactor(store: s, fs: fs).run(now: C.later + 2 * C.day)
                fs.crash(mode)
                fs.setFaults(MemoryFileSystem.FaultPlan())
                let reopened = try JournalStore.open(s.path, options: s.options)
                let q = ListQuery(store: reopened, fs: fs)
                #expect(try q.history(C.zone).log == expected, "call \(call), \(mode)")
                let replay = try q.entries(C.zone).entries.map(\.1)
                #expect(try q.materialise(C.zone).state == ListReducer.replay(zone: C.zone, replay).state(), "call \(call), \(mode)")
                // Running again finishes the job and the history stays whole.
                _ = try ListCompactor(store: reopened, fs: fs).run(now: C.later + 2 * C.day)
                #expect(try q.history(C.zone).log == expected, "call \(call), \(mode), after a second run")
                #expect(StoreFileCheck.run(reopened, fs: fs).problems.isEmpty, "call \(call), \(mode)")
                // The log says how far the pieces reach, and the newest piece is that far: losing
                // it would be an error, not a shorter history (COMPACTION.md §4).
                #expect(reopened.zone(C.zone)?.historyThrough == Self.pieces(reopened, fs).first?.sequence, "call \(call), \(mode)")
                try reopened.close()
            }
        }
    }
}

extension ListReducer {
    static func replay(zone: String, _ entries: [JournalEntry]) -> ListReducer {
        var r = ListReducer(zone: zone)
        r.apply(contentsOf: entries)
        return r
    }
}

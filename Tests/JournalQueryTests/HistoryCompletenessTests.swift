import Foundation
import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// Issue 17.3: after compaction the history files hold the only copy of purged events, so a
/// history that cannot be read whole is an error, never a shorter answer.
@Suite struct HistoryCompletenessTests {
    typealias C = CompactorTests

    static func compacted() throws -> (JournalStore, MemoryFileSystem, [SnapshotFile]) {
        let (s, fs) = try C.sevenEntryStore()
        _ = try ListCompactor(store: s, fs: fs).run(now: C.later)
        let hist = SnapshotDirectory.list(store: s.path, zone: C.zone, incarnation: s.zone(C.zone)!.incarnation, kind: .history, fs: fs)
        #expect(!hist.isEmpty)
        #expect(s.zone(C.zone)!.lowWaterMark > 0)
        return (s, fs, hist)
    }

    static func expectIncomplete(_ q: ListQuery, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let (log, _) = try q.history(C.zone)
            Issue.record("a partial history was answered (\(log.count) events)", sourceLocation: sourceLocation)
        } catch {
            guard case .historyIncomplete = error else { Issue.record("expected historyIncomplete, got \(error)", sourceLocation: sourceLocation); return }
        }
    }

    @Test func aLostHistoryFileIsAnErrorNotAShorterHistory() throws {
        let (s, fs, hist) = try Self.compacted()
        for f in hist { try fs.remove(f.path) }
        let q = ListQuery(store: s, fs: fs)
        Self.expectIncomplete(q)
        #expect(StoreFileCheck.run(s, fs: fs).problems.count == 1)
        // Nor may a compaction write a new history that lacks them.
        try s.append(C.e("x1", .add(item: CompactID("x")!, text: "Butter", after: nil), 50))
        try s.append(C.e("x2", .markOff(item: CompactID("x")!), 51))
        try C.seal(s, from: 30_000)
        #expect(throws: QueryError.self) { _ = try ListCompactor(store: s, fs: fs).run(now: C.later + C.day) }
    }

    @Test func aDamagedHistoryFileIsAnErrorNotAShorterHistory() throws {
        let (s, fs, hist) = try Self.compacted()
        for f in hist {
            var bytes = try #require(fs.contents(f.path))
            bytes[bytes.count / 2] ^= 0x10
            fs.install(f.path, bytes: bytes)
        }
        Self.expectIncomplete(ListQuery(store: s, fs: fs))
        let check = StoreFileCheck.run(s, fs: fs)
        #expect(check.problems.count == 1 && !check.notes.isEmpty)
    }

    @Test func aWholeHistoryIsAnswered() throws {
        let (s, fs, _) = try Self.compacted()
        let (log, warnings) = try ListQuery(store: s, fs: fs).history(C.zone)
        #expect(warnings.isEmpty)
        #expect(log.lastMarkOff(ofItemsMatching: "coffee") != nil)
        #expect(StoreFileCheck.run(s, fs: fs).problems.isEmpty)
    }
}

import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// A list its reader refuses is left whole by compaction (COMPACTION.md §1.1, issue 46 item 9).
/// The tea example: tea added, then a base (MERGE.md §10) that is not the list's first entry, so
/// its reader answers `baseUnreadable`, then tea marked off. Purging tea would leave the base
/// first: one whose body does not decode then fails the run's snapshot after its commit (the
/// issue: every later run failed too), and one that decodes is adopted, so the list would read as
/// the base's state where it was refused before. Beside it, another list whose bought milk goes.
@Suite struct CompactorRefusalTests {
    typealias C = CompactorTests

    /// The refused list.
    static let refused = "Refused"
    /// The list compacted beside it.
    static let other = C.zone

    /// The base's body: why the reader refuses the list either way (a base after tea's add).
    enum Base: CaseIterable, CustomTestStringConvertible {
        case undecodable, wellFormed

        var testDescription: String { self == .undecodable ? "a base that does not decode" : "a base that decodes" }

        /// The base entry, dated like the entries around it (older than the cutoff at `C.later`).
        var entry: JournalEntry {
            let body: [UInt8]
            switch self {
            case .undecodable:
                body = Array("not a snapshot".utf8)
            case .wellFormed:
                var r = ListReducer(zone: CompactorRefusalTests.refused)
                r.apply(C.e("b1", .add(item: C.coffee, text: "Coffee", after: nil), 0, zone: CompactorRefusalTests.refused))
                body = SnapshotCodec.encode(reducer: r, incarnation: 1, sequence: 1)
            }
            return C.e("r2", .opaque(kind: ListBase.kind, body: body), 2, author: ListBase.author, zone: CompactorRefusalTests.refused)
        }
    }

    /// The refused list's entries, in order.
    static func refusedEntries(_ base: Base) -> [JournalEntry] {
        [C.e("r1", .add(item: C.tea, text: "Tea", after: nil), 1, zone: refused), base.entry,
         C.e("r3", .markOff(item: C.tea), 3, zone: refused)]
    }

    /// Appends both lists to `s` and seals them. (Bob's eggs are in no run with alice's milk,
    /// which then goes whole.)
    static func fill(_ s: JournalStore, base: Base) throws {
        for x in refusedEntries(base) + [C.e("o1", .add(item: C.milk, text: "Milk", after: nil), 4), C.e("o2", .markOff(item: C.milk), 5),
                                         C.e("o3", .add(item: C.eggs, text: "Eggs", after: nil), 6, author: "bob")] {
            try s.append(x)
        }
        try C.seal(s)
    }

    /// Both lists in a store in memory, and a query over its writer.
    static func store(_ base: Base) throws -> (JournalStore, ListQuery, MemoryFileSystem) {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        try fill(s, base: base)
        return (s, ListQuery(store: s, fs: fs), fs)
    }

    /// The reason the report gives for skipping the refused list, if it gives `baseUnreadable`.
    static func refusal(_ report: ListCompactionReport) -> String? {
        guard case .baseUnreadable(let why)? = C.skip(report, refused) else { return nil }
        return why
    }

    static func ids(_ q: ListQuery, _ zone: String) throws -> [String] {
        try q.entries(zone).entries.map { $0.1.id.description }
    }

    @Test(arguments: Base.allCases)
    func aRefusedListKeepsEveryEntryAndIsReportedWhileTheOthersAreCompacted(base: Base) throws {
        let (_, q, _) = try Self.store(base)
        let report = try ListCompactor(query: q).run(now: C.later)
        #expect(try Self.ids(q, Self.refused) == ["r1", "r2", "r3"])
        #expect(Self.refusal(report) != nil, "\(report.skipped)")
        #expect(report.zones.map(\.zone) == [Self.other])
        #expect(try Self.ids(q, Self.other) == ["o3"])
    }

    /// Nothing of it is written: no snapshot, no history piece, no mark raised.
    @Test(arguments: Base.allCases)
    func nothingOfARefusedListIsWritten(base: Base) throws {
        let (s, q, fs) = try Self.store(base)
        _ = try ListCompactor(query: q).run(now: C.later)
        let info = try #require(s.zone(Self.refused))
        #expect(info.lowWaterMark == 0 && info.historyThrough == 0)
        #expect(SnapshotDirectory.list(store: s.path, zone: Self.refused, incarnation: info.incarnation,
                                       kinds: SnapshotFile.Kind.allCases, fs: fs).isEmpty)
    }

    /// The reason is the reader's own: what `materialise` refuses the list with.
    @Test func theReportGivesTheReadersReason() throws {
        let (_, q, _) = try Self.store(.undecodable)
        let report = try ListCompactor(query: q).run(now: C.later)
        var answer: String?
        do { _ = try q.materialise(Self.refused) } catch { if case .baseUnreadable(_, let why) = error { answer = why } }
        #expect(answer != nil && Self.refusal(report) == answer)
    }

    @Test(arguments: Base.allCases)
    func aSecondRunSkipsItAgain(base: Base) throws {
        let (_, q, _) = try Self.store(base)
        let first = try ListCompactor(query: q).run(now: C.later)
        let second = try ListCompactor(query: q).run(now: C.later)
        #expect(Self.refusal(second) != nil && Self.refusal(second) == Self.refusal(first), "\(second.skipped)")
        #expect(try Self.ids(q, Self.refused) == ["r1", "r2", "r3"])
    }

    /// A dry run decides the same, and says so.
    @Test func aDryRunReportsItTheSame() throws {
        let (_, q, _) = try Self.store(.undecodable)
        let report = try ListCompactor(query: q).run(now: C.later, dryRun: true)
        #expect(Self.refusal(report) != nil)
        #expect(report.zones.map(\.zone) == [Self.other])
    }

    /// What the first run left (fixed since): a compacted list with no snapshot at its
    /// mark, whose only entry is a base its reader cannot read. A run does not fail on it: the
    /// list gets no snapshot, and is reported once.
    @Test func aRefusedListLeftWithoutItsSnapshotGetsNoneAndIsReportedOnce() throws {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        let q = ListQuery(store: s, fs: fs)
        let entries = Self.refusedEntries(.undecodable)
        try s.append(entries[0])
        try s.append(entries[2])
        try C.seal(s)
        _ = try ListCompactor(query: q).run(now: C.later)
        let info = try #require(s.zone(Self.refused))
        #expect(info.lowWaterMark > 0)
        for f in SnapshotDirectory.list(store: s.path, zone: Self.refused, incarnation: info.incarnation, kinds: SnapshotFile.Kind.states, fs: fs) {
            try fs.remove(f.path)
        }
        try s.append(entries[1])
        let report = try ListCompactor(query: q).run(now: C.later)
        #expect(report.skipped.filter { $0.zone == Self.refused }.count == 1 && Self.refusal(report) != nil, "\(report.skipped)")
        #expect(SnapshotDirectory.list(store: s.path, zone: Self.refused, incarnation: info.incarnation, kinds: SnapshotFile.Kind.states, fs: fs).isEmpty)
    }
}

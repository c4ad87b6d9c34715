import JournalLog
import JournalQuery
import ListModel
import Testing
@testable import JournalPostgres

/// What the database's compactor decides for one zone before it writes anything (COMPACTION.md
/// §1.1): a list its reader refuses is skipped whole, as the engine's compactor skips it. Pure
/// (`PostgresStorage.decide` over rows already read): no database needed.
@Suite struct PostgresCompactionDecisionTests {
    static let zone = "alice/weekly"
    static let t0: Int64 = 1_795_424_400_000
    /// A month after the entries: all older than the 14-day cutoff.
    static let cutoff = t0 + 16 * 86_400_000

    static func entry(_ id: String, _ op: EntryOperation, _ i: Int64, author: String = "alice:phone") -> JournalEntry {
        JournalEntry(id: CompactID(id)!, zone: zone, author: author, wallTime: t0 + i * 1_000,
                     clock: HybridTime(physicalMillis: UInt64(t0 + i * 1_000), counter: 0), operation: op)
    }

    /// The zone's rows from position 1, as `compactZone` reads them.
    static func decide(_ entries: [JournalEntry]) -> PostgresStorage.Decided {
        let rows = entries.enumerated().map { FeedEntry(sequence: SequenceNumber($0.offset + 1), entry: $0.element) }
        let last = SequenceNumber(rows.count)
        let info = ZoneInfo(name: zone, incarnation: 1, deletedAt: nil, deletionReason: nil, entryCount: rows.count, lastChange: last, lowWaterMark: 0)
        return PostgresStorage.decide(rows, info: info, horizon: last, cutoff: cutoff, arrivedThrough: last)
    }

    static let tea = CompactID("tea")!
    static let addTea = entry("r1", .add(item: tea, text: "Tea", after: nil), 1)
    static let markOffTea = entry("r3", .markOff(item: tea), 3)

    /// Tea added, a base its reader cannot apply (not the list's first entry), tea marked off.
    @Test func aListItsReaderRefusesIsSkippedBeforeAnythingIsDecided() {
        let base = Self.entry("r2", .opaque(kind: ListBase.kind, body: Array("not a snapshot".utf8)), 2, author: ListBase.author)
        guard case .skip(.baseUnreadable) = Self.decide([Self.addTea, base, Self.markOffTea]) else {
            Issue.record("a list its reader refuses should be skipped as baseUnreadable")
            return
        }
    }

    /// Without the base, tea's lifecycle goes: the skip above is the refusal's.
    @Test func withoutTheBaseTheFinishedItemGoes() {
        guard case .decisions(let d) = Self.decide([Self.addTea, Self.markOffTea]) else {
            Issue.record("tea's finished lifecycle should be decided")
            return
        }
        #expect(d.first?.purgeCount == 2)
    }
}

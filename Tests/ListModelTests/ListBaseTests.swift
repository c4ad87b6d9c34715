import Foundation
import Testing
import JournalCodec
@testable import ListModel

/// A list's base (MERGE.md §10): another store's snapshot as the first entry of a list.
@Suite struct ListBaseTests {
    static let zone = sevenEntryExample[0].zone
    static var snapshot: [UInt8] { SnapshotCodec.encode(reducer: replay(sevenEntryExample), incarnation: 3, sequence: 7, compress: false) }
    static var base: JournalEntry {
        let bytes = snapshot
        let header = try! SnapshotCodec.decode(bytes).header
        return ListBase.entry(snapshot: bytes, header: header, zone: zone, wallTime: 1_767_225_600_000)
    }

    @Test func anEmptyReducerAdoptsABaseAsTheStateItHoldsWithoutCountingIt() {
        var r = ListReducer(zone: Self.zone)
        let counted = r.apply(Self.base)
        #expect(!counted, "a base is not an entry of the list")
        #expect(r.baseProblem == nil)
        #expect(r.state() == replay(sevenEntryExample).state())
        #expect(r.state().digest == replay(sevenEntryExample).state().digest)
        #expect(r.entryCount == sevenEntryExample.count)
    }

    @Test func entriesAfterABaseGiveWhatAFullReplayGives() {
        let later = JournalEntry(id: CompactID("later")!, zone: Self.zone, author: "carol", wallTime: 1_767_225_700_000,
                                 clock: HybridTime(physicalMillis: 1_767_225_700_000, counter: 0),
                                 operation: .add(item: CompactID("tea")!, text: "Tea", after: nil))
        var r = ListReducer(zone: Self.zone)
        r.apply(Self.base)
        r.apply(later)
        #expect(r.state() == replay(sevenEntryExample + [later]).state())
    }

    @Test func aBaseAfterAnEntryChangesNothingAndIsReported() {
        var r = ListReducer(zone: Self.zone)
        r.apply(sevenEntryExample[0])
        let before = r.state()
        r.apply(Self.base)
        #expect(r.baseProblem != nil)
        #expect(r.state() == before)
    }

    @Test func aBaseAppliedTwiceIsADuplicate() {
        var r = ListReducer(zone: Self.zone)
        r.apply(Self.base)
        r.apply(Self.base)
        #expect(r.baseProblem == nil)
        #expect(r.entryCount == sevenEntryExample.count)
    }

    @Test func aBaseOfAnotherZoneIsReported() {
        var r = ListReducer(zone: "another")
        var e = Self.base
        e.zone = "another"
        r.apply(e)
        #expect(r.baseProblem != nil)
        #expect(r.state().items.isEmpty)
    }

    @Test func aBaseIsNoEventOfTheHistory() {
        var log = ActivityLog(zone: Self.zone)
        let recorded = log.record(Self.base)
        #expect(!recorded)
    }

    /// Spec/vectors/base.txt: the seven-entry example's snapshot (vectors/snapshot.txt) as a base
    /// entry (FORMAT.md §6). Regenerate with JOURNALLOG_WRITE_VECTORS=1 after a deliberate change.
    @Test func baseVectorMatches() throws {
        let url = packageRoot.appendingPathComponent("Spec/vectors/base.txt")
        let hex = EntryCodec.encode(Self.base).map { String(format: "%02x", $0) }.joined()
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" {
            let text = """
            # A list's base (MERGE.md §10): the snapshot of vectors/snapshot.txt carried as an entry
            # (FORMAT.md §6): opaque kind 0x83, author _service, id base.7.cd931236e778f492 (the
            # snapshot's sequence and digest), zone List-db6a6e29, wall time 1767225600000 with the
            # hlc derived from it. A reducer that adopts it holds the seven-entry example's state:
            # the digest below, entry count 7.

            digest: \(String(format: "%016llx", replay(sevenEntryExample).state().digest))
            entryCount: \(sevenEntryExample.count)
            entry: \(hex)

            """
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        let fields = try vectorFields(url)
        #expect(fields["entry"] == hex)
        let raw = hexBytes(fields["entry"] ?? "")
        var r = ListReducer(zone: Self.zone)
        r.apply(try EntryCodec.decode(raw))
        #expect(String(format: "%016llx", r.state().digest) == fields["digest"])
        #expect(String(r.entryCount) == fields["entryCount"])
    }
}

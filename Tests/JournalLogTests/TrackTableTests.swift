import Testing
@testable import JournalLog
import JournalCodec

/// The zone index's chunked track table: a value, like the array it replaces, whose copies share
/// chunks until one side changes.
@Suite struct TrackTableTests {
    static func track(_ n: Int) -> ZoneTrack { ZoneTrack(name: "List-\(n)", incarnation: SequenceNumber(n + 1), isImplicit: true) }

    @Test func aCopyKeepsWhatItWasWhenTheTableChanges() {
        var table = TrackTable()
        for n in 0..<700 { table.append(Self.track(n)) }
        let taken = table
        table[3].lowWaterMark = 99
        table[600].frameSequences.append(5)
        table.append(Self.track(700))
        #expect(taken.count == 700 && table.count == 701)
        #expect(taken[3].lowWaterMark == 0 && table[3].lowWaterMark == 99)
        #expect(taken[600].frameSequences.isEmpty && table[600].frameSequences == [5])
        #expect(Array(taken.map(\.name)) == (0..<700).map { "List-\($0)" })
    }
}

import Foundation
import Testing
import JournalCodec
import JournalSeal

/// Sealed changes as entries (Spec/SEALING.md §5): an add, a rename and a recolour travel as
/// their reserved kinds, read back from the entry's encoding, and open only in the entry they
/// were sealed for.
@Suite struct SealedChangeTests {
    static let zone = SealingTests.zone
    static let sealer = SealingTests.sealer

    static func entry(_ change: SealedChange, id: String = "00000000-0000-4000-8000-000000000001", author: String = "alice:phone") -> JournalEntry {
        JournalEntry(id: CompactID(id)!, zone: zone, author: author, wallTime: 1_764_000_000_123,
                     clock: HybridTime(physicalMillis: 1_764_000_000_000, counter: 3), operation: change.operation)
    }

    static func made(_ kind: UInt8) throws -> SealedChange {
        let id = CompactID("00000000-0000-4000-8000-000000000001")!, clock = HybridTime(physicalMillis: 1_764_000_000_000, counter: 3)
        switch kind {
        case SealedChange.addKind:
            return try sealer.add("Milk", item: CompactID("00000000-0000-4000-8000-0000000000aa")!, after: CompactID("00000000-0000-4000-8000-0000000000bb")!,
                                  entry: id, author: "alice:phone", clock: clock, wallTime: 1_764_000_000_123)
        case SealedChange.renameKind:
            return try sealer.rename(to: "Weekly", entry: id, author: "alice:phone", clock: clock, wallTime: 1_764_000_000_123)
        default:
            return try sealer.rename(to: "yellow", colour: true, entry: id, author: "alice:phone", clock: clock, wallTime: 1_764_000_000_123)
        }
    }

    @Test(arguments: [SealedChange.addKind, SealedChange.renameKind, SealedChange.recolourKind])
    func aSealedChangeTravelsInItsEntryAndOpensThere(kind: UInt8) throws {
        let change = try Self.made(kind)
        let entry = Self.entry(change)
        let decoded = try EntryCodec.decode(EntryCodec.encode(entry))
        #expect(decoded == entry)
        let read = try #require(try SealedChange(decoded.operation))
        #expect(read == change)
        #expect(try Self.sealer.open(read, in: decoded) == ["Milk", "Weekly", "yellow"][Int(kind - SealedChange.addKind)])
    }

    @Test func aSealedChangeCopiedIntoAnotherEntryDoesNotOpen() throws {
        let change = try Self.made(SealedChange.addKind)
        #expect(throws: SealError.cannotOpen) { try Self.sealer.open(change, in: Self.entry(change, author: "bob:phone")) }
        #expect(throws: SealError.cannotOpen) { try Self.sealer.open(change, in: Self.entry(change, id: "00000000-0000-4000-8000-000000000002")) }
    }

    @Test func otherOperationsAreNoSealedChange() throws {
        #expect(try SealedChange(.markOff(item: CompactID("x")!)) == nil)
        #expect(try SealedChange(.opaque(kind: 0x44, body: [])) == nil)
    }

    @Test(arguments: [[UInt8](), [1], [5, 1, 2, 3]])
    func aBodyThatIsNoSealedChangeIsRefused(body: [UInt8]) {
        #expect(throws: CodecError.self) { try SealedChange(.opaque(kind: SealedChange.renameKind, body: body)) }
    }
}

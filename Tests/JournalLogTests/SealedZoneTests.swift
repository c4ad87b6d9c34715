import Foundation
import Testing
@testable import JournalCodec

/// Sealed zones' names and fixed ids (Spec/SEALING.md §5.1), and `Spec/vectors/sealing-ids.txt`.
@Suite struct SealedZoneTests {
    static let zone = "alice/~000102030405060708090a0b0c0d0e0f"
    static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Spec/vectors/sealing-ids.txt").standardized

    static var vectors: String {
        func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
        return """
        # Fixed ids of sealed zone \(zone) (SEALING.md §5.1): the key records of epochs 1 and 2,
        # the rotation-due markers of epochs 1 and 300, and a marker's body (epoch 300).

        keyRecord1: \(SealedZone.keyRecordID(zone: zone, epoch: 1))
        keyRecord2: \(SealedZone.keyRecordID(zone: zone, epoch: 2))
        rotationDue1: \(SealedZone.rotationDueID(zone: zone, epoch: 1))
        rotationDue300: \(SealedZone.rotationDueID(zone: zone, epoch: 300))
        rotationDueBody300: \(hex(SealedZone.rotationDueBody(epoch: 300)))

        """
    }

    @Test func theSpecsIDVectorsHold() throws {
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" { try Self.vectors.write(to: Self.url, atomically: true, encoding: .utf8) }
        #expect(try String(contentsOf: Self.url, encoding: .utf8) == Self.vectors)
    }

    @Test func fixedIDsAreVersionEightUUIDsDistinctByKindZoneAndEpoch() {
        let ids = [SealedZone.keyRecordID(zone: Self.zone, epoch: 1), SealedZone.keyRecordID(zone: Self.zone, epoch: 2),
                   SealedZone.rotationDueID(zone: Self.zone, epoch: 1), SealedZone.keyRecordID(zone: "bob/~000102030405060708090a0b0c0d0e0f", epoch: 1)]
        #expect(Set(ids).count == ids.count)
        for id in ids {
            let (high, low) = id.uuidHalves!
            #expect((high >> 12) & 0xF == 8 && low >> 62 == 0b10)
        }
    }

    @Test func aRotationDueBodyReadsInItsOneFormOnly() {
        #expect(SealedZone.rotationDueEpoch(SealedZone.rotationDueBody(epoch: 300)) == 300)
        for bad: [UInt8] in [[], [1], [2, 1], [1, 0], [1, 0x81, 0x00], [1, 1, 0]] { #expect(SealedZone.rotationDueEpoch(bad) == nil, "\(bad)") }
    }

    @Test func aSealedNameIsTildeAndThirtyTwoLowercaseHexDigits() {
        #expect(SealedZone.nameRefusal(SealedZone.name(random: Array(0..<16))) == nil)
        #expect(SealedZone.nameRefusal("groceries") == nil)
        for bad in ["~", "~groceries", "~" + String(repeating: "A", count: 32), "~" + String(repeating: "0", count: 31)] {
            #expect(SealedZone.nameRefusal(bad) != nil, "\(bad)")
        }
        #expect(SealedZone.isSealed(storeName: Self.zone) && !SealedZone.isSealed(storeName: "alice/groceries") && !SealedZone.isSealed(storeName: "~x"))
    }
}

import Foundation
import Testing
import JournalCodec
import JournalSeal

/// A sealed list's key records (Spec/SEALING.md §4): members open every epoch they were wrapped
/// to and, through the back links, every epoch before it; one removed holds nothing after; a
/// record not signed by a member, or an epoch skipped, is refused.
@Suite struct KeyRecordTests {
    static let zone = "alice/Qm9vbXMtMTIzNDU"
    let alice = AccountKeys(account: "alice"), bob = AccountKeys(account: "bob"), carol = AccountKeys(account: "carol")

    func directory(_ extra: [AccountKeys] = []) -> (String) -> AccountPublicKeys? {
        let all = Dictionary(uniqueKeysWithValues: ([alice, bob, carol] + extra).map { ($0.account, $0.publicKeys) })
        return { all[$0] }
    }

    /// Epoch 1 for alice and bob; epoch 2, bob removed, carol in.
    func twoEpochs() throws -> (ListKey, ListKey, [EpochKeyRecord]) {
        let k1 = ListKey.random(epoch: 1), k2 = ListKey.random(epoch: 2)
        let r1 = try EpochKeys.record(for: k1, previous: nil, reason: .creation, zone: Self.zone,
                                      members: [alice.publicKeys, bob.publicKeys], creator: alice)
        let r2 = try EpochKeys.record(for: k2, previous: k1, reason: .removal, zone: Self.zone,
                                      members: [carol.publicKeys, alice.publicKeys], creator: alice)
        return (k1, k2, [r1, r2])
    }

    @Test func aMemberOpensItsEpochAndEveryOneBefore() throws {
        let (k1, k2, records) = try twoEpochs()
        let ring = try ListKeyring(zone: Self.zone, records: records, account: carol, publicKeys: directory())
        #expect(ring.keys == [1: k1, 2: k2])
        #expect(ring.isMember)
        let binding = SealBinding(zone: Self.zone, entry: CompactID("e1")!, kind: 0x41, item: CompactID("i1")!, author: "alice:phone",
                                  clock: HybridTime(rawValue: 1 << 20), wallTime: 16, epoch: 1)
        let before = try TextSealer(key: k1, zone: Self.zone).seal("Milk", for: binding)
        #expect(try ring.sealer(epoch: 1)?.open(before, for: binding) == "Milk", "carol reads what was written before she joined")
    }

    @Test func oneRemovedHoldsNothingAfterItsRemoval() throws {
        let (k1, _, records) = try twoEpochs()
        let ring = try ListKeyring(zone: Self.zone, records: records, account: bob, publicKeys: directory())
        #expect(ring.keys == [1: k1])
        #expect(!ring.isMember)
        #expect(ring.sealer() == nil)
        #expect(throws: SealError.notAMember(epoch: 2)) { try EpochKeys.open(records[1], zone: Self.zone, with: bob) }
    }

    @Test func aRecordCodecRoundTrips() throws {
        let (_, _, records) = try twoEpochs()
        for r in records { #expect(try EpochKeyRecord(decoding: r.encoded) == r) }
        #expect(records[1].encoded.count < 400, "two wraps and a back link: \(records[1].encoded.count) bytes")
    }

    @Test func aRecordSignedByAnotherKeyIsRefused() throws {
        var (_, _, records) = try twoEpochs()
        let mallory = AccountKeys(account: "alice")   // claims to be alice, with other keys
        records[1] = try EpochKeys.record(for: ListKey.random(epoch: 2), previous: ListKey.random(epoch: 1), reason: .removal, zone: Self.zone,
                                          members: [alice.publicKeys], creator: mallory)
        #expect(throws: SealError.badSignature(epoch: 2)) { try ListKeyring(zone: Self.zone, records: records, account: alice, publicKeys: directory()) }
    }

    @Test func aRecordBySomeoneNotAMemberIsRefused() throws {
        let (k1, _, records) = try twoEpochs()
        // carol was not a member of epoch 1 and cannot begin epoch 2.
        let byCarol = try EpochKeys.record(for: ListKey.random(epoch: 2), previous: k1, reason: .removal, zone: Self.zone,
                                           members: [carol.publicKeys], creator: carol)
        #expect(throws: SealError.badSignature(epoch: 2)) {
            try ListKeyring(zone: Self.zone, records: [records[0], byCarol], account: carol, publicKeys: directory())
        }
    }

    @Test func aSkippedEpochIsRefused() throws {
        let (_, _, records) = try twoEpochs()
        #expect(throws: SealError.brokenChain("record 1 is of epoch 2")) {
            try ListKeyring(zone: Self.zone, records: [records[1]], account: alice, publicKeys: directory())
        }
    }

    @Test func aWrapDoesNotOpenForAnotherList() throws {
        let (_, _, records) = try twoEpochs()
        #expect(throws: SealError.cannotOpen) { try EpochKeys.open(records[0], zone: "alice/other", with: bob) }
    }

    @Test(arguments: [[], [1], [1, 0], [2, 1, 0]])
    func bytesThatAreNoRecordAreRefused(bytes: [UInt8]) {
        #expect(throws: CodecError.self) { try EpochKeyRecord(decoding: bytes) }
    }

    @Test func wrapsOutOfOrderAreRefused() throws {
        var (_, _, records) = try twoEpochs()
        records[0].wraps.reverse()
        #expect(throws: CodecError.self) { try EpochKeyRecord(decoding: records[0].encoded) }
    }

    /// Spec/vectors/sealing-keys.txt: alice's and bob's account keys from fixed bytes, and a record
    /// of epoch 1 (key1 of sealing.txt) that alice's device made for both. HPKE draws its
    /// ephemeral key at random, so the record's bytes are the ones written once: the test checks
    /// that they verify and open as SEALING.md §4 says. JOURNALLOG_WRITE_VECTORS=1 writes new ones.
    @Test func theSpecsKeyVectorsVerifyAndOpen() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Spec/vectors/sealing-keys.txt").standardized
        func hex(_ b: some Sequence<UInt8>) -> String { b.map { String(format: "%02x", $0) }.joined() }
        func bytes(_ h: String) -> [UInt8] { stride(from: 0, to: h.count, by: 2).map { UInt8(h.dropFirst($0).prefix(2), radix: 16)! } }
        let a = AccountKeys(account: "alice", raw: Array(64..<128))!, b = AccountKeys(account: "bob", raw: Array(128..<192))!
        let key1 = ListKey(epoch: 1, material: Array(0..<32))!
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" {
            let record = try EpochKeys.record(for: key1, previous: nil, reason: .creation, zone: Self.zone,
                                              members: [a.publicKeys, b.publicKeys], creator: a)
            let text = """
            # Key records (SEALING.md §4) of zone \(Self.zone). aliceSecret and bobSecret are each
            # account's Ed25519 identity seed then X25519 wrap secret (bytes 40..7f and 80..bf); the
            # public keys and key ids follow from them. record1 is the body of alice's record of
            # epoch 1 (reason creation), wrapping key1 of sealing.txt (bytes 00..1f) to alice and bob.
            # Its HPKE ephemeral keys were random when it was written: check that it verifies under
            # aliceIdentity and that each wrap opens to key1.

            aliceSecret: \(hex(a.raw))
            aliceIdentity: \(hex(a.publicKeys.identity))
            aliceWrap: \(hex(a.publicKeys.wrap))
            aliceKeyID: \(hex(a.publicKeys.keyID))
            bobSecret: \(hex(b.raw))
            bobWrap: \(hex(b.publicKeys.wrap))
            bobKeyID: \(hex(b.publicKeys.keyID))
            key1: \(hex(key1.material))
            record1: \(hex(record.encoded))

            """
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        var fields: [String: String] = [:]
        for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        #expect(fields["aliceIdentity"] == hex(a.publicKeys.identity))
        #expect(fields["aliceWrap"] == hex(a.publicKeys.wrap))
        #expect(fields["aliceKeyID"] == hex(a.publicKeys.keyID))
        #expect(fields["bobKeyID"] == hex(b.publicKeys.keyID))
        let record = try EpochKeyRecord(decoding: bytes(fields["record1"] ?? ""))
        #expect(EpochKeys.isSigned(record, zone: Self.zone, by: a.publicKeys))
        #expect(try EpochKeys.open(record, zone: Self.zone, with: b) == key1)
        #expect(try EpochKeys.open(record, zone: Self.zone, with: a) == key1)
    }
}

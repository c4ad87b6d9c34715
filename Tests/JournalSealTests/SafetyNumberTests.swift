import Foundation
import Testing
import JournalCodec
import JournalSeal
import JournalSync

/// Safety numbers, key pins and the owner's fingerprint in an invitation (Spec/SEALING.md §4.4),
/// and `Spec/vectors/sealing-safety.txt`.
@Suite struct SafetyNumberTests {
    static let alice = AccountKeys(account: "alice", raw: Array(64..<128))!.publicKeys
    static let bob = AccountKeys(account: "bob", raw: Array(128..<192))!.publicKeys
    static let bobNext = AccountKeys(account: "bob", raw: Array(192...255))!
    static let vouched = try! AccountKeys(account: "bob", raw: Array(128..<192))!.vouching(for: bobNext)
    static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Spec/vectors/sealing-safety.txt").standardized

    static var vectors: String {
        func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
        return """
        # Key fingerprints and the safety number (SEALING.md §4.4) of alice's and bob's keys of
        # sealing-keys.txt (aliceSecret, bobSecret).

        aliceFingerprint: \(hex(alice.fingerprint))
        bobFingerprint: \(hex(bob.fingerprint))
        safetyNumber: \(SafetyNumber(alice, bob).digits)

        # bob's keys vouching for his next keys (SEALING.md §4.7): the next keys' secret is bytes
        # c0..ff; vouchedBytes is what bob's identity key signs, vouch a signature over it that
        # verifies under bob's identity key (Ed25519 signers may randomise: check, don't compare).

        bobNextIdentity: \(hex(bobNext.publicKeys.identity))
        bobNextWrap: \(hex(bobNext.publicKeys.wrap))
        vouchedBytes: \(hex(vouched.vouchedBytes))
        vouch: \(hex(vouched.vouch!))

        """
    }

    @Test func theSpecsSafetyVectorsHold() throws {
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" { try Self.vectors.write(to: Self.url, atomically: true, encoding: .utf8) }
        #expect(try String(contentsOf: Self.url, encoding: .utf8) == Self.vectors)
        #expect(Self.bob.vouches(for: Self.vouched))
    }

    @Test func bothPeopleSeeOneNumberAndAChangedKeyChangesIt() {
        let n = SafetyNumber(Self.alice, Self.bob)
        #expect(n == SafetyNumber(Self.bob, Self.alice))
        #expect(n.digits.count == 60 && n.digits.allSatisfy(\.isNumber))
        #expect(n.description.split(separator: " ").count == 12)
        #expect(SafetyNumber(Self.alice, AccountKeys(account: "bob").publicKeys) != n)
    }

    @Test func aPinStaysUntilItIsReplacedOnPurpose() throws {
        var pins = KeyPins()
        #expect(pins.pin(Self.alice) == .pinned)
        #expect(pins.pin(Self.alice) == .same)
        let other = AccountKeys(account: "alice").publicKeys
        #expect(pins.pin(other) == .changed(pinned: Self.alice))
        #expect(pins.pinned("alice") == Self.alice)
        _ = pins.pin(Self.bob)
        #expect(KeyPins(decoding: pins.encoded) == pins)
        #expect(KeyPins(decoding: pins.encoded + [0]) == nil && KeyPins(decoding: [5]) == nil)
        pins.repin(other)
        #expect(pins.pinned("alice") == other)
    }

    @Test func anInvitationsFingerprintVouchesForTheOwnersKeysOnly() {
        let preview = InvitationPreview(owner: "alice", listName: "Weekly", ownerKeys: Self.alice.fingerprint)
        var pins = KeyPins()
        #expect(pins.pin(AccountKeys(account: "alice").publicKeys, vouchedBy: preview) == nil, "keys the owner does not hold")
        #expect(pins.pinned("alice") == nil)
        #expect(pins.pin(Self.alice, vouchedBy: preview) == .pinned)
    }

    @Test func aDeviceWrapsOnlyToTheKeysItPinned() throws {
        let owner = AccountKeys(account: "alice")
        let zone = ZoneID(owner: "alice", name: SealedZone.name(random: Array(0..<16)))!
        var pins = KeyPins()
        _ = pins.pin(owner.publicKeys)
        _ = pins.pin(Self.bob)
        let frozen = pins
        let sealing = SealedListKeys(account: owner, pinned: { frozen.pinned($0) })
        let key = ListKey.random(epoch: 1)
        let first = try EpochKeys.record(for: key, previous: nil, reason: .creation, zone: zone.storeName, members: [owner.publicKeys], creator: owner)
        func published(_ k: AccountPublicKeys) -> PublishedAccountKeys { PublishedAccountKeys(account: k.account, identity: k.identity, wrap: k.wrap) }
        #expect(sealing.nextEpoch(after: [first], in: zone, members: [published(owner.publicKeys), published(Self.bob)], reason: .joined) != nil)
        // Keys the pinned ones did not vouch for (a reset, or the service's own): never wrapped to.
        let impostor = AccountKeys(account: "bob").publicKeys
        let leftOut = try #require(sealing.nextEpoch(after: [first], in: zone, members: [published(owner.publicKeys), published(impostor)], reason: .joined))
        #expect(leftOut.wraps.map(\.account) == ["alice"])
        // Keys vouched for by keys other than the pinned ones: no record at all.
        var vouched = try AccountKeys(account: "bob").vouching(for: AccountKeys(account: "bob"))
        #expect(sealing.nextEpoch(after: [first], in: zone, members: [published(owner.publicKeys), vouched], reason: .joined) == nil)
        vouched.vouch = nil
        #expect(sealing.nextEpoch(after: [first], in: zone, members: [published(impostor), vouched], reason: .joined) == nil,
                "its own account's keys are its own")
    }

    @Test func pinsFollowKeysThePinnedOnesVouchedForAndKeepTheFormerOnes() throws {
        let bob = AccountKeys(account: "bob", raw: Array(128..<192))!, next = AccountKeys(account: "bob")
        var pins = KeyPins()
        #expect(pins.follow(bob.published) == .pinned)
        #expect(pins.follow(try bob.vouching(for: next)) == .followed(from: bob.publicKeys))
        #expect(pins.pinned("bob") == next.publicKeys)
        #expect(pins.keys(of: "bob", keyID: bob.publicKeys.keyID) == bob.publicKeys, "records bob signed before still verify")
        #expect(pins.follow(AccountKeys(account: "bob").published) == .changed(pinned: next.publicKeys), "a reset is not followed")
        #expect(KeyPins(decoding: pins.encoded) == pins)
    }
}

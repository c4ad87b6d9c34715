import Foundation
import Testing
import JournalCodec
@testable import JournalSeal

/// A sealed list's link invitation (Spec/SEALING.md §4.8): the link key opens for the secret's
/// holder only, and only for its list and epoch; a proof vouches for the keys it names under the
/// secret only. `Spec/vectors/sealing-invite.txt`.
@Suite struct LinkSecretTests {
    static let zone = "alice/~00112233445566778899aabbccddeeff"
    static let secret = LinkSecret(bytes: Array(0x40...0x5F))!
    static let key = ListKey(epoch: 3, material: Array(repeating: 7, count: 32))!
    static let bob = AccountKeys(account: "bob", raw: Array(128..<192))!.publicKeys
    static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Spec/vectors/sealing-invite.txt").standardized

    static var vectors: String {
        get throws {
            func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
            guard case .opaque(_, let keyBody) = try secret.keyEntry(key, zone: zone, nonce: Array(repeating: 0x0C, count: 12)),
                  case .opaque(_, let proofBody) = secret.proof(bob, zone: zone) else { return "" }
            return """
            # A link invitation (SEALING.md §4.8) of zone \(zone). The secret is bytes 40..5f; the
            # epoch key is epoch 3 of 32 bytes 07; the link key's nonce is 12 bytes 0c; the proof is
            # of bob's keys of sealing-keys.txt (bobSecret).

            secret: \(hex(secret.bytes))
            linkID: \(hex(secret.linkID))
            sealingKey: \(secret.sealingKey(zone: zone).withUnsafeBytes { hex(Array($0)) })
            linkKeyBody: \(hex(keyBody))
            proofBody: \(hex(proofBody))

            """
        }
    }

    @Test func theSpecsInviteVectorsHold() throws {
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" { try Self.vectors.write(to: Self.url, atomically: true, encoding: .utf8) }
        #expect(try String(contentsOf: Self.url, encoding: .utf8) == Self.vectors)
    }

    @Test func theLinkKeyOpensForTheSecretsListAndEpochOnly() throws {
        guard case .opaque(let kind, let body) = try Self.secret.keyEntry(Self.key, zone: Self.zone) else { Issue.record("not opaque"); return }
        #expect(kind == LinkEntries.keyKind)
        #expect(try Self.secret.openKey(body, zone: Self.zone).material == Self.key.material)
        #expect(throws: SealError.cannotOpen) { try LinkSecret.random().openKey(body, zone: Self.zone) }
        #expect(throws: SealError.cannotOpen) { try Self.secret.openKey(body, zone: "alice/~ffeeddccbbaa99887766554433221100") }
        var moved = try #require(LinkEntries.Key(body: body))
        moved.epoch = 4
        #expect(throws: SealError.cannotOpen) { try Self.secret.openKey(moved.body, zone: Self.zone) }
    }

    @Test func aProofVouchesForItsKeysUnderTheSecretOnly() throws {
        guard case .opaque(let kind, let body) = Self.secret.proof(Self.bob, zone: Self.zone) else { Issue.record("not opaque"); return }
        #expect(kind == LinkEntries.proofKind)
        #expect(Self.secret.verifiedKeys(body, zone: Self.zone) == Self.bob)
        #expect(LinkSecret.random().verifiedKeys(body, zone: Self.zone) == nil, "another link's secret")
        #expect(Self.secret.verifiedKeys(body, zone: "alice/~ffeeddccbbaa99887766554433221100") == nil, "another list")
        var swapped = try #require(LinkEntries.Proof(body: body))
        swapped.wrap = AccountKeys(account: "bob").publicKeys.wrap
        #expect(Self.secret.verifiedKeys(swapped.body, zone: Self.zone) == nil, "keys the service swapped in")
    }

    @Test func aLinkedKeyOpensItsEpochAndEveryOneBefore() throws {
        let owner = AccountKeys(account: "alice"), bob = AccountKeys(account: "bob")
        let k1 = ListKey.random(epoch: 1), k2 = ListKey.random(epoch: 2)
        let r1 = try EpochKeys.record(for: k1, previous: nil, reason: .creation, zone: Self.zone, members: [owner.publicKeys], creator: owner)
        let r2 = try EpochKeys.record(for: k2, previous: k1, reason: .joined, zone: Self.zone, members: [owner.publicKeys], creator: owner)
        let keys = { (a: String) in a == "alice" ? owner.publicKeys : nil }
        #expect(try ListKeyring(zone: Self.zone, records: [r1, r2], account: bob, publicKeys: keys).standing == .never)
        let ring = try ListKeyring(zone: Self.zone, records: [r1, r2], account: bob, publicKeys: keys, linked: k2)
        #expect(ring.standing == .member && ring.keys[1]?.material == k1.material)
    }

    @Test func linkEntriesReadInTheirOneFormOnly() throws {
        guard case .opaque(_, let body) = try Self.secret.keyEntry(Self.key, zone: Self.zone),
              case .opaque(_, let proof) = Self.secret.proof(Self.bob, zone: Self.zone) else { return }
        #expect(LinkEntries.Key(body: body + [0]) == nil && LinkEntries.Key(body: Array(body.dropLast())) == nil)
        #expect(LinkEntries.Proof(body: proof + [0]) == nil && LinkEntries.Proof(body: [2] + proof.dropFirst()) == nil)
    }
}

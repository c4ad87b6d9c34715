import Foundation
import Testing
import JournalCodec
import JournalSeal

/// Recovery codes and kits (Spec/SEALING.md §4.5).
@Suite struct RecoveryKitTests {
    @Test func aKitOpensWithItsCodeForItsAccountOnly() throws {
        let keys = AccountKeys(account: "alice"), code = RecoveryCode.random()
        let kit = try RecoveryKit.seal(keys, under: code)
        #expect(kit.count == 93)
        #expect(try RecoveryKit.open(kit, account: "alice", code: code).raw == keys.raw)
        #expect(throws: SealError.cannotOpen) { try RecoveryKit.open(kit, account: "alice", code: RecoveryCode.random()) }
        #expect(throws: SealError.cannotOpen) { try RecoveryKit.open(kit, account: "bob", code: code) }
        #expect(throws: SealError.cannotOpen) { try RecoveryKit.open(Array(kit.dropLast()), account: "alice", code: code) }
    }

    @Test func aCodeReadsBackAsAPersonTypesIt() throws {
        let code = RecoveryCode.random()
        let text = code.description
        #expect(text.split(separator: "-").count == 13 && text.replacingOccurrences(of: "-", with: "").count == 52)
        #expect(RecoveryCode(text) == code)
        #expect(RecoveryCode(text.lowercased().replacingOccurrences(of: "-", with: " ")) == code)
        let zeros = try #require(RecoveryCode(bytes: [UInt8](repeating: 0, count: 32)))
        #expect(RecoveryCode(zeros.description.replacingOccurrences(of: "0", with: "O")) == zeros)
        for bad in ["", "ABCD", String(repeating: "U", count: 52), String(repeating: "0", count: 51) + "1"] { #expect(RecoveryCode(bad) == nil, "\(bad)") }
    }
}

/// A keyring says where its account stands (SEALING.md §4.5): never silently "nothing opens".
@Suite struct KeyringStandingTests {
    @Test func aKeyringSaysMemberFormerKeysLostOrNever() throws {
        let alice = AccountKeys(account: "alice"), bob = AccountKeys(account: "bob"), zone = "alice/~" + String(repeating: "0", count: 32)
        let one = ListKey.random(epoch: 1), two = ListKey.random(epoch: 2)
        let records = [try EpochKeys.record(for: one, previous: nil, reason: .creation, zone: zone, members: [alice.publicKeys, bob.publicKeys], creator: alice),
                       try EpochKeys.record(for: two, previous: one, reason: .removal, zone: zone, members: [alice.publicKeys], creator: alice)]
        let pins: [String: AccountPublicKeys] = ["alice": alice.publicKeys, "bob": bob.publicKeys]
        func standing(_ keys: AccountKeys) throws -> ListKeyring.Standing {
            try ListKeyring(zone: zone, records: records, account: keys, publicKeys: { pins[$0] }).standing
        }
        #expect(try standing(alice) == .member)
        #expect(try standing(bob) == .former(lastEpoch: 1))
        #expect(try standing(AccountKeys(account: "alice")) == .keysLost)
        #expect(try standing(AccountKeys(account: "carol")) == .never)
    }
}

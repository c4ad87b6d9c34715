import Foundation
import Testing
import JournalLog
import JournalSeal
import JournalService
import ListModel
@testable import JournalSync

/// An account replaces its keys (Spec/SEALING.md §4.7, SYNC.md §5.6): vouched for by its keys
/// before, which every device follows by itself, or reset after losing them, which a person
/// re-verifies. Either way every sealed list the account belongs to owes a rotation away from
/// the keys it wrapped to before; a reset account may be left out of that rotation, and a member
/// who verified its new keys re-shares the list with them, opening its whole history again.
@Suite struct AccountKeyChangeTests {
    typealias Fixture = SealedEpochTests.Fixture

    static func published(_ k: AccountKeys) -> PublishedAccountKeys { k.published }

    static func isInvalid(_ f: EntryFailure?) -> Bool { if case .invalid = f { true } else { false } }

    @Test func keysVouchedForByTheAccountsCurrentKeysReplaceThem() throws {
        let f = try Fixture()
        let next = AccountKeys(account: "bob")
        let vouched = try f.keys["bob"]!.vouching(for: next)
        _ = try f.core.perform(caller: "bob", .publishAccountKeys(vouched))
        #expect(try f.core.perform(caller: "carol", .fetchAccountKeys("bob")).publishedAccountKeys() == vouched)
        _ = try f.core.perform(caller: "bob", .publishAccountKeys(vouched))
        try f.world.restartService()
        #expect(try f.world.core.perform(caller: "carol", .fetchAccountKeys("bob")).publishedAccountKeys() == vouched, "kept across a restart")
    }

    @Test func aVouchNotOfTheCurrentKeysIsRefused() throws {
        let f = try Fixture()
        let next = AccountKeys(account: "bob")
        var forged = try f.keys["bob"]!.vouching(for: next)
        forged.vouch![5] ^= 1
        #expect(throws: SyncError.self) { _ = try f.core.perform(caller: "bob", .publishAccountKeys(forged)) }
        let byOthersKeys = try AccountKeys(account: "bob").vouching(for: next)
        #expect(throws: SyncError.self) { _ = try f.core.perform(caller: "bob", .publishAccountKeys(byOthersKeys)) }
        #expect(try f.core.perform(caller: "carol", .fetchAccountKeys("bob")).publishedAccountKeys() == f.keys["bob"]!.published)
    }

    @Test func aResetReplacesTheKeysWithoutAVouch() throws {
        let f = try Fixture()
        let reset = AccountKeys(account: "bob").published
        _ = try f.core.perform(caller: "bob", .publishAccountKeys(reset))
        #expect(try f.core.perform(caller: "carol", .fetchAccountKeys("bob")).publishedAccountKeys() == reset)
    }

    @Test func aMembersChangedKeysOweTheListARotationAwayFromThem() throws {
        let f = try Fixture()
        let key = try f.begin()
        let next = AccountKeys(account: "bob")
        _ = try f.core.perform(caller: "bob", .publishAccountKeys(try f.keys["bob"]!.vouching(for: next)))
        let text = try f.add("Milk", under: key, author: "alice:phone")
        #expect(try f.upload([text], as: "alice").failed[text.id] == .rotationDue(epoch: 1))
        let second = ListKey.random(epoch: 2)
        let toOldKeys = try f.record(second, previous: key, by: "alice", for: ["alice", "bob"], reason: .accountKeysChanged)
        #expect(Self.isInvalid(try f.upload([f.entry(toOldKeys, author: "alice:phone")], as: "alice").failed.values.first),
                "a record may not wrap to keys the member replaced")
        let leavingOut = try EpochKeys.record(for: second, previous: key, reason: .accountKeysChanged, zone: f.zone.storeName,
                                              members: [f.keys["alice"]!.publicKeys], creator: f.keys["alice"]!)
        #expect(Self.isInvalid(try f.upload([f.entry(leavingOut, author: "alice:phone")], as: "alice").failed.values.first),
                "nor leave out a member whose keys its own keys vouched for")
        let toNewKeys = try EpochKeys.record(for: second, previous: key, reason: .accountKeysChanged, zone: f.zone.storeName,
                                             members: [f.keys["alice"]!.publicKeys, next.publicKeys], creator: f.keys["alice"]!)
        #expect(try f.upload([f.entry(toNewKeys, author: "alice:phone")], as: "alice").failed.isEmpty)
        let after = try f.add("Eggs", under: second, author: "alice:phone")
        #expect(try f.upload([after], as: "alice").saved == [after.id])
    }

    @Test func aRotationMayLeaveOutAMemberWhoseKeysWereResetWhoStaysAMember() throws {
        let f = try Fixture()
        let key = try f.begin()
        _ = try f.core.perform(caller: "bob", .publishAccountKeys(AccountKeys(account: "bob").published))
        let second = ListKey.random(epoch: 2)
        let leavingOut = try EpochKeys.record(for: second, previous: key, reason: .accountKeysChanged, zone: f.zone.storeName,
                                              members: [f.keys["alice"]!.publicKeys], creator: f.keys["alice"]!)
        #expect(try f.upload([f.entry(leavingOut, author: "alice:phone")], as: "alice").failed.isEmpty)
        #expect(f.world.core.members(of: f.zone) == ["bob"], "left out of the keys, not removed")
        let after = try f.add("Eggs", under: second, author: "alice:phone")
        #expect(try f.upload([after], as: "alice").saved == [after.id])
    }
}

/// The engine's part (SEALING.md §4.7): a member's device rotates by itself when a member's keys
/// changed, following keys the pinned ones vouched for and leaving a reset account out; then,
/// once a person re-verified the reset account's keys, `rotateKeys` re-shares the list with them.
@Suite struct AccountKeyChangeEngineTests {
    typealias Pins = PinBox

    struct Fixture {
        let world: World
        var keys: [String: AccountKeys]
        let devices: [String: Device]
        let pins: [String: Pins]
        let zone: ZoneID
        var epochs: [ListKey] = []

        init() async throws {
            world = try World()
            keys = Dictionary(uniqueKeysWithValues: ["alice", "bob"].map { ($0, AccountKeys(account: $0)) })
            var devices: [String: Device] = [:], pins: [String: Pins] = [:]
            for (account, k) in keys { _ = try world.core.perform(caller: account, .publishAccountKeys(k.published)) }
            for (account, k) in keys {
                let box = Pins()
                for other in keys.values { box.update { _ = $0.pin(other.publicKeys) } }
                let device = try world.device(account + ":phone")
                await device.engine.useSealing(SealedListKeys(account: k, pins: { box.value }))
                devices[account] = device
                pins[account] = box
            }
            self.devices = devices
            self.pins = pins
            zone = try await devices["alice"]!.engine.createList(SealedZone.name(random: (0..<16).map { _ in UInt8.random(in: 0...255) }))
            _ = try await devices["bob"]!.engine.accept(try await devices["alice"]!.engine.share(zone, with: "bob"))
            let key = ListKey.random(epoch: 1)
            try await devices["alice"]!.engine.recordKeys(try EpochKeys.record(for: key, previous: nil, reason: .creation, zone: zone.storeName,
                                                                               members: [keys["alice"]!.publicKeys, keys["bob"]!.publicKeys],
                                                                               creator: keys["alice"]!), in: zone)
            epochs = [key]
            await settle(Array(devices.values), rounds: 3)
        }

        /// A sealed add on `account`'s device under the newest key its engine was told of.
        func add(_ text: String, on account: String, under key: ListKey) async throws {
            let sealer = TextSealer(key: key, zone: zone.storeName)
            try await devices[account]!.engine.record(in: zone) { s in
                try sealer.add(text, item: .random(), after: nil, entry: s.id, author: s.author, clock: s.clock, wallTime: s.wallTime).operation
            }
        }

        /// `account`'s keyring over the list its device holds, with `keys` (its account's keys now).
        func ring(on account: String, with keys: AccountKeys) throws -> ListKeyring {
            let pins = self.pins[account]!.value
            let state = try devices[account]!.list(zone)
            return try ListKeyring(zone: zone.storeName, records: state.keyRecords, account: keys,
                                   publicKeys: { $0 == account ? keys.publicKeys : pins.pinned($0) },
                                   formerKeys: { pins.keys(of: $0, keyID: $1) })
        }

        func texts(on account: String, with keys: AccountKeys) throws -> [String] {
            let ring = try ring(on: account, with: keys)
            return try devices[account]!.list(zone).items.map { try ring.open($0.sealedText!.value, for: $0.sealedText!.binding) }.sorted()
        }
    }

    @Test func aVouchedKeyChangeIsFollowedAndTheListRotatesToTheNewKeys() async throws {
        let f = try await Fixture()
        try await f.add("Milk", on: "bob", under: f.epochs[0])
        await settle(Array(f.devices.values), rounds: 3)
        let next = AccountKeys(account: "bob")
        let vouched = try f.keys["bob"]!.vouching(for: next)
        _ = try f.world.core.perform(caller: "bob", .publishAccountKeys(vouched))
        f.pins["alice"]!.update { #expect($0.follow(vouched) == .followed(from: f.keys["bob"]!.publicKeys)) }
        try await f.add("Eggs", on: "alice", under: f.epochs[0])
        let report = await f.devices["alice"]!.sync()
        #expect(report.rotations == 1 && report.reissued == 1, "\(report.problems)")
        await settle(Array(f.devices.values), rounds: 4)
        #expect(try f.devices["alice"]!.list(f.zone).keyRecords.last!.wraps.first { $0.account == "bob" }!.keyID == next.publicKeys.keyID)
        #expect(try f.texts(on: "bob", with: next) == ["Eggs", "Milk"], "bob's new keys open the whole list")
    }

    @Test func anAccountAloneInItsListRotatesItAwayFromItsOldKeysItself() async throws {
        let world = try World()
        let old = AccountKeys(account: "alice"), next = AccountKeys(account: "alice")
        _ = try world.core.perform(caller: "alice", .publishAccountKeys(old.published))
        let phone = try world.device("alice:phone")
        let zone = try await phone.engine.createList(SealedZone.name(random: (0..<16).map { _ in UInt8.random(in: 0...255) }))
        let first = ListKey.random(epoch: 1)
        try await phone.engine.recordKeys(try EpochKeys.record(for: first, previous: nil, reason: .creation, zone: zone.storeName,
                                                               members: [old.publicKeys], creator: old), in: zone)
        await phone.sync()
        // The phone retires its keys (another device was lost): new keys, vouched for by the old.
        _ = try world.core.perform(caller: "alice", .publishAccountKeys(try old.vouching(for: next)))
        await phone.engine.useSealing(SealedListKeys(account: next, pins: { KeyPins() }, formerAccountKeys: [old]))
        let sealer = TextSealer(key: first, zone: zone.storeName)
        try await phone.engine.record(in: zone) { s in
            try sealer.add("Milk", item: .random(), after: nil, entry: s.id, author: s.author, clock: s.clock, wallTime: s.wallTime).operation
        }
        let report = await phone.sync()
        #expect(report.rotations == 1 && report.reissued == 1, "\(report.problems)")
        await settle([phone], rounds: 3)
        let state = try phone.list(zone)
        let ring = try ListKeyring(zone: zone.storeName, records: state.keyRecords, account: next,
                                   publicKeys: { _ in next.publicKeys }, formerKeys: { _, id in id == old.publicKeys.keyID ? old.publicKeys : nil })
        #expect(ring.standing == .member, "the new keys alone open the list")
        #expect(try state.items.map { try ring.open($0.sealedText!.value, for: $0.sealedText!.binding) } == ["Milk"])
        #expect(state.digest == (try world.serviceList(zone)).digest)
    }

    @Test func aResetAccountIsLeftOutUntilAMemberReSharesWithItsVerifiedKeys() async throws {
        var f = try await Fixture()
        try await f.add("Milk", on: "bob", under: f.epochs[0])
        await settle(Array(f.devices.values), rounds: 3)
        // bob lost his keys: new ones, published without a vouch.
        let reset = AccountKeys(account: "bob")
        _ = try f.world.core.perform(caller: "bob", .publishAccountKeys(reset.published))
        f.pins["alice"]!.update { if case .changed = $0.follow(reset.published) {} else { Issue.record("a reset is not followed") } }
        try await f.add("Eggs", on: "alice", under: f.epochs[0])
        let report = await f.devices["alice"]!.sync()
        #expect(report.rotations == 1 && report.reissued == 1, "alice's device rotates, leaving bob's unverified keys out: \(report.problems)")
        await settle(Array(f.devices.values), rounds: 4)
        #expect(try f.ring(on: "bob", with: reset).standing == .keysLost)
        #expect(f.world.core.members(of: f.zone) == ["bob"])

        // alice and bob compare their safety number; alice re-pins and re-shares.
        f.pins["alice"]!.update { $0.repin(reset.publicKeys) }
        f.keys["bob"] = reset
        let record = try await f.devices["alice"]!.engine.rotateKeys(of: f.zone)
        #expect(record?.reason == .accountKeysChanged)
        await settle(Array(f.devices.values), rounds: 4)
        f.pins["bob"]!.update { _ = $0 }
        #expect(try f.ring(on: "bob", with: reset).standing == .member)
        #expect(try f.texts(on: "bob", with: reset) == ["Eggs", "Milk"], "the back links open what came before the reset")
    }
}

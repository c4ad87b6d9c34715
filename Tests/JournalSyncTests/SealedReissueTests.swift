import Foundation
import Testing
import JournalLog
import JournalSeal
import JournalService
import ListModel
@testable import JournalSync

/// A device's engine makes a sealed change the service refused for its epoch again by itself
/// (Spec/SEALING.md §5.2, `SyncEngine.useSealing`): offline across a rotation, its change comes
/// back `staleEpoch` and is re-sealed under the new key; after a member left, its change comes
/// back `rotationDue`, and it rotates first. Either way every device ends with the change once,
/// its text opening, and the account that left opens nothing written after it left.
@Suite struct SealedReissueTests {
    /// Three accounts' keys, pinned by every device, and a sealed list of alice's.
    struct Fixture {
        let world: World
        let keys: [String: AccountKeys]
        let devices: [String: Device]
        let zone: ZoneID
        var epochs: [ListKey] = []

        init(members: [String]) async throws {
            world = try World()
            let keys = Dictionary(uniqueKeysWithValues: ["alice", "bob", "carol"].map { ($0, AccountKeys(account: $0)) })
            self.keys = keys
            var devices: [String: Device] = [:]
            for (account, k) in keys {
                let p = k.publicKeys
                _ = try world.core.perform(caller: account, .publishAccountKeys(PublishedAccountKeys(account: account, identity: p.identity, wrap: p.wrap)))
                let device = try world.device(account + ":phone")
                await device.engine.useSealing(SealedListKeys(account: k, pinned: { keys[$0]?.publicKeys }))
                devices[account] = device
            }
            self.devices = devices
            zone = try await devices["alice"]!.engine.createList(SealedZone.name(random: (0..<16).map { _ in UInt8.random(in: 0...255) }))
            for m in members where m != "alice" {
                _ = try await devices[m]!.engine.accept(try await devices["alice"]!.engine.share(zone, with: m))
            }
            try await rotate(on: "alice", for: members, reason: .creation)
            await settle(Array(devices.values), rounds: 3)
        }

        mutating func rotate(on account: String, for members: [String], reason: EpochKeyRecord.Reason) async throws {
            let key = ListKey.random(epoch: UInt64(epochs.count + 1))
            let record = try EpochKeys.record(for: key, previous: epochs.last, reason: reason, zone: zone.storeName,
                                              members: members.map { keys[$0]!.publicKeys }, creator: keys[account]!)
            try await devices[account]!.engine.recordKeys(record, in: zone)
            epochs.append(key)
        }

        /// A sealed add of `text` on `account`'s device, under `key`.
        func add(_ text: String, on account: String, under key: ListKey) async throws {
            let sealer = TextSealer(key: key, zone: zone.storeName)
            try await devices[account]!.engine.record(in: zone) { s in
                try sealer.add(text, item: .random(), after: nil, entry: s.id, author: s.author, clock: s.clock, wallTime: s.wallTime).operation
            }
        }

        /// The texts `account`'s device shows, opened with its keys.
        func texts(on account: String) throws -> [String] {
            let state = try devices[account]!.list(zone)
            let ring = try ListKeyring(zone: zone.storeName, records: state.keyRecords, account: keys[account]!, publicKeys: { keys[$0]?.publicKeys })
            return try state.items.map { try ring.open($0.sealedText!.value, for: $0.sealedText!.binding) }.sorted()
        }
    }

    @Test func aChangeMadeOfflineAcrossARotationIsResealedUnderTheNewKey() async throws {
        var f = try await Fixture(members: ["alice", "bob"])
        try await f.add("Milk", on: "bob", under: f.epochs[0])
        try await f.rotate(on: "alice", for: ["alice", "bob"], reason: .accountKeysChanged)
        await f.devices["alice"]!.sync()
        let refused = await f.devices["bob"]!.sync()
        #expect(refused.rejected.isEmpty && refused.reissued == 1, "kept queued, then made again: \(refused.rejected) \(refused.problems)")
        await settle(Array(f.devices.values), rounds: 4)
        #expect(try f.texts(on: "alice") == ["Milk"])
        #expect(try f.texts(on: "bob") == ["Milk"])
        #expect(try f.devices["bob"]!.list(f.zone).digest == (try f.world.serviceList(f.zone)).digest)
    }

    @Test func aChangeRefusedForAnOwedRotationRotatesAndIsResealed() async throws {
        let f = try await Fixture(members: ["alice", "bob", "carol"])
        try await f.devices["carol"]!.engine.deleteList(f.zone)
        await f.devices["carol"]!.sync()
        try await f.add("Eggs", on: "bob", under: f.epochs[0])
        let refused = await f.devices["bob"]!.sync()
        #expect(refused.rotations == 1 && refused.reissued == 1, "\(refused.rejected) \(refused.problems)")
        await settle(Array(f.devices.values), rounds: 4)
        #expect(try f.texts(on: "alice") == ["Eggs"])
        let state = try f.world.serviceList(f.zone)
        #expect(state.keyRecords.map(\.epoch) == [1, 2])
        #expect(state.keyRecords.last?.wraps.map(\.account) == ["alice", "bob"])
        // Carol's keys open nothing stored after she left.
        let ring = try ListKeyring(zone: f.zone.storeName, records: state.keyRecords, account: f.keys["carol"]!,
                                   publicKeys: { f.keys[$0]?.publicKeys })
        for item in state.items { #expect(throws: SealError.self) { try ring.open(item.sealedText!.value, for: item.sealedText!.binding) } }
    }
}

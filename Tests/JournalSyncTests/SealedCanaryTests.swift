import Foundation
import Testing
import JournalLog
import JournalSeal
import JournalService
import ListModel
@testable import JournalSync

/// No plaintext anywhere on the service (Spec/SEALING.md §6). Three accounts, two devices each,
/// share a sealed list and a plain one (the control), every text, name and colour a random
/// canary; they edit, the owner removes a participant with a rotation, another leaves and the
/// owner rotates, the service compacts twice (a snapshot, then a delta), a new device re-fetches,
/// the history is paged, and sharing of the control list stops. Then every byte the service holds
/// is scanned, raw (its store's files, or a `pg_dump` of its schema, where a record body shows as
/// hex) and decoded (every entry it serves, its snapshot and history decoded), as UTF-8, UTF-16,
/// hex and base64: no canary of the sealed list, every canary of the control list. Over the
/// engine's store, and over PostgreSQL when the suite runs there.
@Suite struct SealedCanaryTests {
    /// The app's part in the test: the account keys, each epoch's key, and sealing for a device.
    final class Keys: @unchecked Sendable {
        let zone: ZoneID
        let accounts: [String: AccountKeys]
        var epochs: [ListKey] = []

        init(zone: ZoneID, accounts: [String]) {
            self.zone = zone
            self.accounts = Dictionary(uniqueKeysWithValues: accounts.map { ($0, AccountKeys(account: $0)) })
        }

        /// `device` begins the next epoch for `members`.
        func rotate(on device: Device, for members: [String], reason: EpochKeyRecord.Reason) async throws {
            let key = ListKey.random(epoch: UInt64(epochs.count + 1))
            let record = try EpochKeys.record(for: key, previous: epochs.last, reason: reason, zone: zone.storeName,
                                              members: members.map { accounts[$0]!.publicKeys }, creator: accounts[device.account]!)
            try await device.engine.recordKeys(record, in: zone)
            epochs.append(key)
        }

        /// A sealed add of `text` on `device`, under the current epoch.
        @discardableResult
        func add(_ text: String, on device: Device) async throws -> CompactID {
            let sealer = TextSealer(key: epochs.last!, zone: zone.storeName), item = CompactID.random()
            try await device.engine.record(in: zone) { s in
                try sealer.add(text, item: item, after: nil, entry: s.id, author: s.author, clock: s.clock, wallTime: s.wallTime).operation
            }
            return item
        }

        func rename(_ text: String, on device: Device) async throws {
            let sealer = TextSealer(key: epochs.last!, zone: zone.storeName)
            try await device.engine.record(in: zone) { s in
                try sealer.rename(to: text, entry: s.id, author: s.author, clock: s.clock, wallTime: s.wallTime).operation
            }
        }

        func recolour(_ text: String, on device: Device) async throws {
            let sealer = TextSealer(key: epochs.last!, zone: zone.storeName)
            try await device.engine.record(in: zone) { s in
                try sealer.rename(to: text, colour: true, entry: s.id, author: s.author, clock: s.clock, wallTime: s.wallTime).operation
            }
        }
    }

    /// Every byte the service holds, raw and decoded, for these zones.
    static func serviceBytes(_ world: World, _ zones: [ZoneID], as caller: String) throws -> [[UInt8]] {
        var blobs: [[UInt8]] = []
        if let url = world.databaseURL { blobs.append(try pgDump(url)) } else { blobs += world.serverFS.everyFile().map(\.bytes) }
        for zone in zones {
            blobs += try world.serviceEntries(zone).map { EntryCodec.encode($0) }
            if let snapshot = try world.core.perform(caller: caller, .fetchZoneSnapshot(zone: zone)).zoneSnapshot() {
                blobs.append(snapshot.bytes)
                blobs.append(Array(String(reflecting: try SnapshotCodec.decode(snapshot.bytes).reducer.state()).utf8))
            }
            let history = try world.core.perform(caller: caller, .fetchZoneHistory(zone: zone)).historyBytes()
            blobs.append(history)
            if !history.isEmpty { blobs.append(Array(String(reflecting: try ActivityLogCodec.decode(history)).utf8)) }
            var cursor: HistoryCursor? = nil
            repeat {
                let page = try world.core.perform(caller: caller, .fetchZoneHistoryPage(zone: zone, after: cursor)).zoneHistoryPage()
                blobs.append(Array(String(reflecting: page).utf8))
                cursor = page.next
            } while cursor != nil
        }
        return blobs
    }

    /// `pg_dump` of the world's schema: every table, as text (a `bytea` as `\x` and hex).
    static func pgDump(_ url: String) throws -> [UInt8] {
        let schema = try #require(url.components(separatedBy: "schema=").last)
        let plain = url.replacingOccurrences(of: "&schema=" + schema, with: "")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let dump = try #require((versions.sorted().reversed().map { "/usr/lib/postgresql/\($0)/bin/pg_dump" } + ["/usr/bin/pg_dump"])
            .first { FileManager.default.isExecutableFile(atPath: $0) }, "pg_dump")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: dump)
        p.arguments = ["--dbname=" + plain, "--schema=" + schema, "--data-only", "--no-owner"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let bytes = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "pg_dump failed")
        return Array(bytes)
    }

    @Test func noTextOfASealedListIsAnywhereOnTheService() async throws {
        let world = try World(retentionMillis: 86_400_000)
        let accounts = ["alice", "bob", "carol"]
        let phones = try accounts.map { try world.device($0 + ":phone") }, tablets = try accounts.map { try world.device($0 + ":tablet") }
        let (alice, bob, carol) = (phones[0], phones[1], phones[2])
        let sealed = try await alice.engine.createList(SealedZone.name(random: (0..<16).map { _ in UInt8.random(in: 0...255) }))
        let plain = try await alice.engine.createList("control")
        let keys = Keys(zone: sealed, accounts: accounts)
        for (account, k) in keys.accounts {
            let p = k.publicKeys
            _ = try world.core.perform(caller: account, .publishAccountKeys(PublishedAccountKeys(account: account, identity: p.identity, wrap: p.wrap)))
        }
        var secret: [String] = [], control: [String] = []
        func canary(_ into: inout [String]) -> String {
            let c = SealedListTests.canary()
            into.append(c)
            return c
        }

        // Alice alone, then the three of them.
        try await keys.rotate(on: alice, for: ["alice"], reason: .creation)
        var alicesItems: [CompactID] = []
        for _ in 0..<3 { alicesItems.append(try await keys.add(canary(&secret), on: alice)) }
        try await keys.rename(canary(&secret), on: alice)
        try await keys.recolour(canary(&secret), on: alice)
        for _ in 0..<3 { try await alice.add(canary(&control), plain) }
        try await alice.engine.record(.rename(name: canary(&control)), in: plain)
        for other in [bob, carol] {
            for list in [sealed, plain] { _ = try await other.engine.accept(try await alice.engine.share(list, with: other.account)) }
        }
        try await keys.rotate(on: alice, for: accounts, reason: .joined)
        await settle(phones + tablets, rounds: 3)
        let bobsMilk = try await keys.add(canary(&secret), on: bob)
        try await keys.add(canary(&secret), on: tablets[2])
        try await bob.add(canary(&control), plain)
        try await keys.rename(canary(&secret), on: tablets[1])
        await settle(phones + tablets, rounds: 3)
        try await bob.engine.record(.markOff(item: bobsMilk), in: sealed)
        await settle(phones + tablets, rounds: 3)

        // The owner removes carol with a rotation; bob leaves, and the owner rotates again.
        try await keys.rotate(on: alice, for: ["alice", "bob"], reason: .removal)
        await settle(phones + tablets, rounds: 3)
        #expect(world.core.members(of: sealed) == ["bob"])
        try await keys.add(canary(&secret), on: tablets[0])
        try await bob.engine.deleteList(sealed)
        await settle(phones + tablets, rounds: 3)
        try await keys.rotate(on: alice, for: ["alice"], reason: .leave)
        try await keys.add(canary(&secret), on: alice)
        await settle(phones + tablets, rounds: 3)

        // Two compactions (a snapshot, then a delta), a re-fetch, history, stop sharing.
        _ = try world.compact(after: 2 * 86_400_000)
        await settle(phones + tablets, rounds: 2)
        try await keys.add(canary(&secret), on: alice)
        try await alice.engine.record(.delete(item: alicesItems[0]), in: sealed)
        await settle(phones + tablets, rounds: 2)
        _ = try world.compact(after: 2 * 86_400_000)
        let laptop = try world.device("alice:laptop")
        await settle(phones + tablets + [laptop], rounds: 3)
        _ = try world.core.perform(caller: "alice", .stopSharing(plain))

        // The laptop installed the list and opens every text it shows.
        let onLaptop = try laptop.list(sealed)
        let ring = try ListKeyring(zone: sealed.storeName, records: onLaptop.keyRecords, account: keys.accounts["alice"]!,
                                   publicKeys: { keys.accounts[$0]?.publicKeys })
        #expect(onLaptop.keyRecords.map(\.epoch) == [1, 2, 3, 4])
        #expect(!onLaptop.items.isEmpty)
        for item in onLaptop.items { #expect(secret.contains(try ring.open(item.sealedText!.value, for: item.sealedText!.binding))) }
        #expect(onLaptop.digest == (try world.serviceList(sealed)).digest)

        let bytes = try Self.serviceBytes(world, [sealed, plain], as: "alice")
        #expect(SealedListTests.found(secret, in: bytes).isEmpty, "sealed texts found on the service")
        #expect(SealedListTests.found(control, in: bytes) == Set(control), "the scan finds the control list's texts (positive control)")
    }
}

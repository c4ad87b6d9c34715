import Foundation
import Testing
import JournalLog
import JournalSeal
import JournalService
import JournalTesting
import ListModel
@testable import JournalSync

/// A sealed list end to end as far as it is built (Spec/SEALING.md): the owner's device writes
/// the epoch's key record and sealed changes through its engine, the service stores and serves
/// them, and a member's device opens every text with its own account keys. The service holds
/// none of the texts: every file it wrote and every entry it serves, decoded, is scanned for
/// them, while the same scan finds every text of a plain list (the control).
@Suite struct SealedListTests {
    /// A text no other byte sequence is likely to hold.
    static func canary() -> String { CanaryScan.canary() }

    static func found(_ canaries: [String], in blobs: [[UInt8]]) -> Set<String> { CanaryScan.found(canaries, in: blobs) }

    /// Everything the service holds: every file of its store, raw, and every entry it serves
    /// for `zones`, decoded (a compressed batch hides nothing from the second).
    static func serviceBytes(_ world: World, _ zones: [ZoneID]) throws -> [[UInt8]] {
        try world.serverFS.everyFile().map(\.bytes) + zones.flatMap { try world.serviceEntries($0).map { EntryCodec.encode($0) } }
    }

    @Test func aMemberOpensEveryTextAndTheServiceHoldsNone() async throws {
        let world = try World()
        let alice = try world.device("alice:phone"), bob = try world.device("bob:phone")
        let keys = ["alice": AccountKeys(account: "alice"), "bob": AccountKeys(account: "bob")]
        let directory: @Sendable (String) -> AccountPublicKeys? = { keys[$0]?.publicKeys }

        // A sealed list (a random zone name) and a plain one, the control.
        let sealed = try await alice.engine.createList("Qm9vbXMtMTIzNDU"), plain = try await alice.engine.createList("weekly")
        let key = ListKey.random(epoch: 1)
        let record = try EpochKeys.record(for: key, previous: nil, reason: .creation, zone: sealed.storeName,
                                          members: [keys["alice"]!.publicKeys, keys["bob"]!.publicKeys], creator: keys["alice"]!)
        try await alice.engine.record(.opaque(kind: EpochKeyRecord.kind, body: record.encoded), in: sealed)
        let sealer = TextSealer(key: key, zone: sealed.storeName)
        let texts = (0..<6).map { _ in Self.canary() }, controls = (0..<6).map { _ in Self.canary() }
        for text in texts.dropLast() {
            try await alice.engine.record(in: sealed) { stamp in
                try sealer.add(text, item: CompactID.random(), after: nil, entry: stamp.id, author: stamp.author,
                               clock: stamp.clock, wallTime: stamp.wallTime).operation
            }
        }
        try await alice.engine.record(in: sealed) { stamp in
            try sealer.rename(to: texts.last!, entry: stamp.id, author: stamp.author, clock: stamp.clock, wallTime: stamp.wallTime).operation
        }
        for text in controls { try await alice.add(text, plain) }
        _ = try await bob.engine.accept(try await alice.engine.share(sealed, with: "bob"))
        await settle([alice, bob], rounds: 3)

        // Bob's device: the key record from the list itself, opened with his keys; every text.
        let entries = try bob.store.changes(in: sealed.storeName, since: nil, limit: 1_000).entries.map(\.entry)
        let records = try entries.compactMap { e -> EpochKeyRecord? in
            guard case .opaque(EpochKeyRecord.kind, let body) = e.operation else { return nil }
            return try EpochKeyRecord(decoding: body)
        }
        let ring = try ListKeyring(zone: sealed.storeName, records: records, account: keys["bob"]!, publicKeys: directory)
        let opened = try entries.compactMap { e -> String? in
            guard let change = try SealedChange(e.operation) else { return nil }
            return try ring.sealer(epoch: change.text.epoch)!.open(change, in: e)
        }
        #expect(opened.sorted() == texts.sorted())

        // The service: none of the sealed list's texts, every one of the plain list's.
        let bytes = try Self.serviceBytes(world, [sealed, plain])
        #expect(Self.found(texts, in: bytes).isEmpty)
        #expect(Self.found(controls, in: bytes) == Set(controls), "the scan finds plain text (positive control)")
    }

    /// The service refuses a sealed change whose ids could give its text away, or whose body
    /// does not read, and a key record that does not read (SEALING.md §5, §4.2); a well-formed
    /// sealed change is stored.
    @Test func theServiceRefusesSealedChangesWithTextOrDerivedIDsAndBodiesThatDoNotRead() throws {
        let world = try World()
        let list = ZoneID(owner: "alice", name: "Qm9vbXMtMTIzNDU")!
        try world.core.createZone(caller: "alice", zone: list)
        let sealer = TextSealer(key: ListKey.random(epoch: 1), zone: list.storeName)
        let clock = HybridTime(physicalMillis: UInt64(world.clock.now()), counter: 0)
        func entry(_ id: CompactID, _ operation: EntryOperation) -> JournalEntry {
            JournalEntry(id: id, zone: list.storeName, author: "alice:phone", wallTime: world.clock.now(), clock: clock, operation: operation)
        }
        func add(id: CompactID, item: CompactID) throws -> JournalEntry {
            entry(id, try sealer.add("Milk", item: item, after: nil, entry: id, author: "alice:phone", clock: clock, wallTime: world.clock.now()).operation)
        }
        let good = try add(id: .random(), item: .random())
        let textID = try add(id: CompactID("milk-add")!, item: .random())
        let textItem = try add(id: .random(), item: CompactID("milk")!)
        // A version-8 id, as FORMAT.md §7.5 derives one from the entry.
        let derived = try add(id: CompactID(uuidHigh: 0x1234_5678_9abc_8def, low: 0x8000_0000_0000_0001), item: .random())
        let garbled = entry(.random(), .opaque(kind: SealedChange.renameKind, body: [3, 1, 2, 3]))
        let badRecord = entry(.random(), .opaque(kind: EpochKeyRecord.kind, body: [1, 0]))
        var result = UploadResult()
        do { _ = try world.core.upload(caller: "alice", entries: [good, textID, textItem, derived, garbled, badRecord], to: list) } catch {
            guard case .partialFailure(let partial) = error else { throw error }
            result = partial
        }
        #expect(result.saved == [good.id])
        for refused in [textID, textItem, derived, garbled, badRecord] {
            guard case .invalid = result.failed[refused.id] else { Issue.record("\(refused.id) was not refused: \(String(describing: result.failed[refused.id]))"); continue }
        }
    }

    /// The service's work over ciphertext (SEALING.md §5, MERGE.md §11): it orders, compacts and
    /// snapshots a sealed list from its ids, clocks and anchors alone. A member's device shows the
    /// items in their order, each text opening to what was written; after two days the service
    /// compacts the bought items away, a caught-up device follows, a new device installs the
    /// snapshot with the key records, and all three hold the same list (equal digests) whose texts
    /// open, while nothing
    /// the service holds, its snapshots and history pieces included, contains a text.
    @Test func theServiceCompactsAndSnapshotsASealedListItCannotRead() async throws {
        let world = try World(retentionMillis: 86_400_000)
        let alice = try world.device("alice:phone"), bob = try world.device("bob:phone")
        let keys = ["alice": AccountKeys(account: "alice"), "bob": AccountKeys(account: "bob")]
        let directory: @Sendable (String) -> AccountPublicKeys? = { keys[$0]?.publicKeys }
        let list = try await alice.engine.createList("c2VhbGVkLWxpc3Q")
        let key = ListKey.random(epoch: 1)
        let record = try EpochKeys.record(for: key, previous: nil, reason: .creation, zone: list.storeName,
                                          members: [keys["alice"]!.publicKeys, keys["bob"]!.publicKeys], creator: keys["alice"]!)
        try await alice.engine.record(.opaque(kind: EpochKeyRecord.kind, body: record.encoded), in: list)
        let sealer = TextSealer(key: key, zone: list.storeName)
        let texts = (0..<5).map { _ in Self.canary() }, name = Self.canary()
        var items: [CompactID] = []
        for text in texts {
            let item = CompactID.random(), after = items.last
            try await alice.engine.record(in: list) { stamp in
                try sealer.add(text, item: item, after: after, entry: stamp.id, author: stamp.author,
                               clock: stamp.clock, wallTime: stamp.wallTime).operation
            }
            items.append(item)
        }
        try await alice.engine.record(in: list) { stamp in
            try sealer.rename(to: name, entry: stamp.id, author: stamp.author, clock: stamp.clock, wallTime: stamp.wallTime).operation
        }
        try await alice.engine.record(.markOff(item: items[0]), in: list)
        try await alice.engine.record(.delete(item: items[2]), in: list)
        _ = try await bob.engine.accept(try await alice.engine.share(list, with: "bob"))
        await settle([alice, bob], rounds: 3)

        // The key records as the list hands them over (ListState.keyRecords), from its entries or
        // from the snapshot it was installed from.
        func ring(_ device: Device) throws -> ListKeyring {
            try ListKeyring(zone: list.storeName, records: try device.list(list).keyRecords, account: keys["bob"]!, publicKeys: directory)
        }
        func opened(_ state: ListState, _ ring: ListKeyring) throws -> [String] {
            try state.items.map { item in
                let sealed = try #require(item.sealedText)
                #expect(item.text.isEmpty)
                return try ring.open(sealed.value, for: sealed.binding)
            }
        }
        let before = try bob.list(list)
        #expect(try opened(before, ring(bob)) == [texts[0], texts[1], texts[3], texts[4]])
        #expect(before.items.first?.state == .markedOff)
        #expect(before.sealedName != nil && before.name.isEmpty)
        #expect(before.digest == (try world.serviceList(list)).digest)

        #expect(try world.compact(after: 2 * 86_400_000).zones.map(\.zone) == [list.storeName])
        let followed = await bob.sync()
        #expect(followed.compactionsFollowed == 1, "\(followed.errors)")
        let tablet = try world.device("bob:tablet")
        await tablet.sync()
        let service = try world.serviceList(list), onBob = try bob.list(list), onTablet = try tablet.list(list)
        #expect(try opened(onBob, ring(bob)) == [texts[1], texts[3], texts[4]])
        #expect(onBob == service && onTablet == service)
        #expect(onBob.digest == service.digest && onTablet.digest == service.digest)
        // The snapshot carried every sealed text with its binding, and the key records: the
        // tablet opens every item from what it installed.
        #expect(onTablet.keyRecords.map(\.epoch) == [1])
        #expect(try opened(onTablet, ring(tablet)) == [texts[1], texts[3], texts[4]])

        let bytes = try Self.serviceBytes(world, [list])
        #expect(Self.found(texts + [name], in: bytes).isEmpty)
    }
}

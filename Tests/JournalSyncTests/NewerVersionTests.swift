import Foundation
import Testing
import JournalLog
import JournalQuery
import ListModel
@testable import JournalSync

/// A newer app's change on an older device (Spec/FORMAT.md §6, SYNC.md §7.9): a list change of a
/// kind this version does not read (0x40–0x7F) is stored, synced and handed on byte for byte,
/// not shown; the list says "update the app", and nothing is retried or refused for it.
@Suite struct NewerVersionTests {
    /// A change of kind 0x50, as a newer version (a `move`, say) writes it (0x41–0x43 are the
    /// sealed lists', whose form a service checks).
    static let newer = EntryOperation.opaque(kind: 0x50, body: [0x01, 0x02, 0x03])

    /// Alice's newer phone writes one into the list her older iPad holds.
    static func newerChangeOnAnOlderDevice() async throws -> (World, phone: Device, ipad: Device, ZoneID, JournalEntry) {
        let world = try World()
        let phone = try world.device("alice:phone"), ipad = try world.device("alice:ipad")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        await ipad.sync()
        let entry = try await phone.engine.recordUnchecked(newer, in: list)
        await phone.sync()
        return (world, phone, ipad, list, entry)
    }

    @Test func theOlderDeviceKeepsItSyncsItAndSaysUpdate() async throws {
        let (world, _, ipad, list, entry) = try await Self.newerChangeOnAnOlderDevice()
        let r = await ipad.sync()
        #expect(r.isComplete, "in sync all the same: \(r.errors)")
        #expect(r.problems.map(\.reason) == [.newerVersion])
        #expect(r.problems.first?.zone == list)
        #expect(!r.throttled && !r.offline, "never serviceBusy")
        let stored = try ListQuery(store: ipad.store, fs: ipad.fs).entries(list.storeName).entries.map(\.1)
        #expect(stored.contains(entry), "kept byte for byte")
        #expect(try world.serviceEntries(list).contains(entry))
        #expect(try ipad.list(list).items.map(\.text) == ["Milk"], "not shown; the rest is")
        #expect(await ipad.sync().problems.map(\.reason) == [.newerVersion], "said at every sync until updated")
    }

    /// The service cannot tell what the change does to an item's lifecycle or place: it keeps
    /// the whole list until it reads that kind.
    @Test func theServiceDoesNotCompactAListHoldingOne() async throws {
        let world = try World(retentionMillis: day)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        try await phone.engine.record(.markOff(item: milk), in: list)
        try await phone.engine.recordUnchecked(Self.newer, in: list)
        await phone.sync()
        let before = try world.serviceIDs(list)
        _ = try world.compact(after: 2 * day)
        #expect(try world.serviceIDs(list) == before)
    }

    /// A device that got a list's moves while it was older kept the flag that says so; once it
    /// reads moves (this version), its first sync finds no kind it does not read and stops saying
    /// "update the app".
    @Test func aListWhoseNewerKindsThisVersionReadsStopsSayingUpdate() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        try await phone.engine.record(.move(item: milk, after: nil), in: list)
        await phone.engine.flagNewerChanges(list.storeName)
        try phone.restart()
        #expect(await phone.engine.status().lists.first?.holdsNewerChanges == true, "as the older version left it")
        #expect(await phone.sync().problems.map(\.reason).contains(.newerVersion) == false)
        #expect(await phone.engine.status().lists.first?.holdsNewerChanges == false)
    }
}

extension SyncEngine {
    /// As an older version left it: the list flagged as holding a newer version's changes.
    func flagNewerChanges(_ name: String) {
        state.zones[name]?.holdsNewerChanges = true
        try? save()
    }
}

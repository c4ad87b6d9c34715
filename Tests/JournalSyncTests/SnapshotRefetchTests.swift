import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync
import JournalTesting

/// A device that has no token, or whose token expired, installs the service's snapshot as its
/// list's base and fetches only what follows it (Spec/SYNC.md §3.10, §7.5); the history comes
/// after, or when asked for.
@Suite struct SnapshotRefetchTests {
    /// alice's list with Milk (bought long ago), Bread and Eggs, compacted by the service.
    static func compactedList(_ world: World) async throws -> (phone: Device, list: ZoneID) {
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        let bread = try await phone.add("Bread", list, after: milk)
        try await phone.add("Eggs", list, after: bread)
        try await phone.engine.record(.markOff(item: milk), in: list)
        try await phone.engine.record(.rename(name: "Weekly"), in: list)
        await phone.sync()
        #expect(try world.compact(after: 2 * day).zones.map(\.zone) == [list.storeName])
        return (phone, list)
    }

    static var onDemand: SyncEngineOptions {
        var o = SyncEngineOptions()
        o.fetchesHistoryAfterRefetch = false
        return o
    }

    @Test func aNewDeviceShowsTheServicesListFromItsSnapshot() async throws {
        let world = try World(retentionMillis: day)
        let (_, list) = try await Self.compactedList(world)
        let ipad = try world.device("alice:ipad", options: Self.onDemand)
        let report = await ipad.sync()
        #expect(report.isComplete, "\(report.errors)")
        #expect(report.firstFetched == [list], "a first fetch")
        #expect(report.refetched.isEmpty, "nothing this device held was replaced")
        let mine = try ipad.list(list), service = try world.serviceList(list)
        #expect(mine == service)
        #expect(mine.digest == service.digest)
        // The log holds the base and nothing the snapshot folded in, then the compaction record.
        let entries = try ListQuery(store: ipad.store, fs: ipad.fs).entries(list.storeName).entries
        #expect(entries.count == 2)
        #expect(entries.first.map { ListBase.isBase($0.1) } == true)
        #expect(entries.last.map { CompactionRecord.isRecord($0.1) } == true)
    }

    @Test func aKeptBaseStateThatIsNotTheListsFirstEntryIsNotUsed() async throws {
        let world = try World(retentionMillis: day)
        let (_, list) = try await Self.compactedList(world)
        let ipad = try world.device("alice:ipad", options: Self.onDemand)
        await ipad.sync()
        let info = try #require(ipad.store.zone(list.storeName))
        let first = try #require(try ipad.store.changes(in: list.storeName, since: nil, limit: 1).entries.first)
        // Another base's state under this list's incarnation and sequence: its id gives it away.
        BaseCache.shared.put(store: ipad.store.path, zone: list.storeName, incarnation: info.incarnation, sequence: first.sequence,
                             id: CompactID("base.1.0")!, reducer: ListReducer(zone: list.storeName))
        #expect(try ipad.list(list) == world.serviceList(list))
    }

    @Test func theHistoryIsNotFetchedUntilAskedForAndThenWhole() async throws {
        let world = try World(retentionMillis: day)
        let (_, list) = try await Self.compactedList(world)
        let ipad = try world.device("alice:ipad", options: Self.onDemand)
        await ipad.sync()
        #expect(throws: QueryError.self) { try ipad.history(list) }
        do {
            _ = try ipad.history(list)
        } catch let error as QueryError {
            guard case .historyNotFetched(let zone) = error else { Issue.record("\(error)"); return }
            #expect(zone == list.storeName)
        }
        try await ipad.engine.fetchHistory(list)
        #expect(try ipad.history(list) == world.serviceHistory(list))
    }

    @Test func aSyncFetchesTheHistoryOnceTheListsAreUsableByDefault() async throws {
        let world = try World(retentionMillis: day)
        let (phone, list) = try await Self.compactedList(world)
        let ipad = try world.device("alice:ipad")
        await ipad.sync()
        await phone.sync()
        try expectConverged(world, [phone, ipad], list)
    }

    @Test func changesAfterTheBaseMergeAsEverywhere() async throws {
        let world = try World(retentionMillis: day)
        let (phone, list) = try await Self.compactedList(world)
        let ipad = try world.device("alice:ipad")
        await ipad.sync()
        let eggs = CompactID("eggs")!
        try await ipad.add("Tea", list, after: eggs)
        try await ipad.engine.record(.markOff(item: eggs), in: list)
        try await phone.add("Jam", list, after: eggs)
        await settle([phone, ipad])
        try expectConverged(world, [phone, ipad], list)
        #expect(try ipad.list(list).items.map(\.text).sorted() == ["Bread", "Eggs", "Jam", "Tea"])
    }

    @Test func aDeviceWhoseTokenExpiredReinstallsFromTheNewSnapshot() async throws {
        let world = try World(retentionMillis: day)
        let (phone, list) = try await Self.compactedList(world)
        let ipad = try world.device("alice:ipad")
        await ipad.sync()
        // Bread is bought and compacted away; the ipad comes back to an expired token.
        try await phone.engine.record(.markOff(item: CompactID("bread")!), in: list)
        await phone.sync()
        world.clock.advance(by: 3 * day)
        _ = try world.compact(after: 0)
        let report = await ipad.sync()
        #expect(report.refetched == [list])
        await settle([phone, ipad])
        try expectConverged(world, [phone, ipad], list)
    }

    /// Flips a byte of every snapshot the service sends.
    struct DamagingSnapshots: ForwardingSyncService {
        let inner: LocalService
        var account: String { inner.account }
        func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
            let answer = try await inner.forward(call)
            guard case .snapshot(var s?) = answer else { return answer }
            s.bytes[s.bytes.count / 2] ^= 0x40
            return .snapshot(s)
        }
    }

    @Test func aSnapshotThatDoesNotDecodeIsReportedAndTheEntriesAreFetchedInstead() async throws {
        let world = try World(retentionMillis: day)
        let (phone, list) = try await Self.compactedList(world)
        let ipad = try world.device("alice:ipad") { DamagingSnapshots(inner: $0) }
        let report = await ipad.sync()
        #expect(report.problems.contains { $0.message.contains("snapshot cannot be installed") })
        await phone.sync()
        try expectConverged(world, [phone, ipad], list)
        let entries = try ListQuery(store: ipad.store, fs: ipad.fs).entries(list.storeName).entries
        #expect(!entries.contains { ListBase.isBase($0.1) })
    }

    @Test func aNeverCompactedListHasNoSnapshotToGive() async throws {
        let world = try World(retentionMillis: day)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        #expect(try world.core.fetchZoneSnapshot(caller: "alice", zone: list) == nil)
    }

    @Test func aZoneSomeoneElseOwnsLooksLikeOneThatDoesNotExist() async throws {
        let world = try World(retentionMillis: day)
        let (_, list) = try await Self.compactedList(world)
        #expect(throws: SyncError.zoneNotFound) { try world.core.fetchZoneSnapshot(caller: "mallory", zone: list) }
        let missing = ZoneID(owner: "alice", name: "nothing")!
        #expect(throws: SyncError.zoneNotFound) { try world.core.fetchZoneSnapshot(caller: "mallory", zone: missing) }
    }
}

import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync
import JournalTesting

/// A device that synced within the retention follows each service compaction in place (Spec/SYNC.md
/// §6.7): the compaction record in the zone's feed tells it what went, it drops the same entries,
/// writes the same places and keeps its history, and never fetches the list or its history again.
@Suite struct CompactionFollowTests {
    /// alice's list on her phone and her iPad, both caught up: Milk (bought), Bread, Eggs.
    static func twoDevices(_ world: World, phoneCalls: CallLog? = nil) async throws -> (phone: Device, ipad: Device, list: ZoneID, milk: CompactID) {
        let phone = try world.device("alice:phone", service: phoneCalls.map { calls in { CountingService($0, calls) } })
        let ipad = try world.device("alice:ipad")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        let bread = try await phone.add("Bread", list, after: milk)
        try await phone.add("Eggs", list, after: bread)
        try await phone.engine.record(.markOff(item: milk), in: list)
        try await phone.engine.record(.rename(name: "Weekly"), in: list)
        await phone.sync()
        await ipad.sync()
        return (phone, ipad, list, milk)
    }

    /// The ids the device's log holds for the list, and the service's.
    static func ids(_ device: Device, _ list: ZoneID) throws -> Set<CompactID> {
        Set(try ListQuery(store: device.store, fs: device.fs).entries(list.storeName).entries.map(\.1.id))
    }

    @Test func aCaughtUpDeviceFollowsWithoutFetchingAnew() async throws {
        let world = try World(retentionMillis: day)
        let (_, ipad, list, _) = try await Self.twoDevices(world)
        #expect(try world.compact(after: 2 * day).zones.map(\.zone) == [list.storeName])
        let report = await ipad.sync()
        #expect(report.isComplete, "\(report.errors)")
        #expect(report.refetched.isEmpty, "followed, not fetched anew")
        #expect(report.compactionsFollowed == 1)
        let mine = try ipad.list(list), service = try world.serviceList(list)
        #expect(mine == service)
        #expect(mine.digest == service.digest)
        #expect(try Self.ids(ipad, list) == world.serviceIDs(list))
    }

    /// `twoDevices` under a day's retention over a storage that can fail, two days on, and Tea
    /// added since: it arrived after the cutoff, so a run's mark stops below it and its raise
    /// goes on to `S`. Both devices are caught up.
    static func teaAfterTheCutoff() async throws -> (World, phone: Device, ipad: Device, list: ZoneID) {
        var limits = ServiceLimits()
        limits.retentionMillis = day
        let world = try World(limits: limits, storageFaults: true)
        let (phone, ipad, list, _) = try await Self.twoDevices(world)
        world.clock.advance(by: 2 * day)
        try await phone.add("Tea", list)
        await phone.sync()
        await ipad.sync()
        return (world, phone, ipad, list)
    }

    /// The record is written before the raise: a run whose raises fail (its own and its retry at
    /// the end) leaves the record in place, and the raise that follows (a restart's, or the next
    /// run's, SYNC.md §6.2 rule 8) finds it: the iPad follows.
    /// (The engine's store: PostgreSQL raises the mark in the purge's own transaction.)
    @Test(.enabled(if: World.isEngine, "the engine raises the mark after its rewrite"), arguments: [true, false])
    func aRaiseThatFailsAfterTheRecordStillLetsTheDeviceFollow(restart: Bool) async throws {
        let (world, phone, ipad, list) = try await Self.teaAfterTheCutoff()
        try #require(world.faulty).failingRaises = 2
        #expect(throws: SyncError.self) { try world.compact(after: 0) }
        if restart {
            try world.restartService()
            try ipad.restart()   // its session now reaches the restarted service
        } else {
            _ = try world.compact(after: 0)
        }
        let report = await ipad.sync()
        #expect(report.refetched.isEmpty, "followed, not fetched anew: \(report.refetchCauses)")
        #expect(report.compactionsFollowed == 1)
        #expect(try ipad.list(list) == world.serviceList(list))
    }

    /// A run that failed before its record was written leaves what the record needs in memory;
    /// uploads the list takes meanwhile come before the record the next run writes, and the iPad
    /// follows, its digest taken over them too.
    @Test(.enabled(if: World.isEngine, "the engine raises the mark after its rewrite"))
    func aRecordWrittenLateAfterUploadsStillLetsTheDeviceFollow() async throws {
        let (world, phone, ipad, list) = try await Self.teaAfterTheCutoff()
        // The record's append fails, and so does the run's retry of it at its end.
        try #require(world.faulty).failingRecordAppends = 2
        #expect(throws: SyncError.self) { try world.compact(after: 0) }
        try await phone.add("Jam", list)
        #expect(await phone.sync().uploaded == 1)
        _ = try world.compact(after: 0)
        let report = await ipad.sync()
        #expect(report.refetched.isEmpty, "followed, not fetched anew: \(report.refetchCauses)")
        #expect(report.compactionsFollowed == 1)
        #expect(try ipad.list(list) == world.serviceList(list))
    }

    /// The phone uploads right after a compaction: the upload's answer carries the record, which
    /// the phone follows, and the database page then names the head it holds (SYNC.md §3.11):
    /// two requests, no fetch of the list.
    @Test func anUploadRightAfterACompactionBringsTheRecordWithIt() async throws {
        let world = try World(retentionMillis: day)
        let calls = CallLog()
        let (phone, _, list, _) = try await Self.twoDevices(world, phoneCalls: calls)
        _ = try world.compact(after: 2 * day)
        try await phone.add("Tea", list)
        calls.forget()
        let report = await phone.sync()
        #expect(report.isComplete, "\(report.errors)")
        #expect(report.compactionsFollowed == 1)
        #expect(report.refetched.isEmpty)
        #expect(calls.names == ["upload", "fetchBothDatabases"])
        #expect(try phone.list(list) == world.serviceList(list))
        #expect(try Self.ids(phone, list) == world.serviceIDs(list))
    }

    /// More others' entries than the upload may carry: the answer carries none, and the phone
    /// fetches the list as before.
    @Test func moreThanTheUploadCarriesAreFetched() async throws {
        let world = try World(retentionMillis: day)
        let calls = CallLog()
        let (phone, ipad, list, _) = try await Self.twoDevices(world, phoneCalls: calls)
        for i in 0..<3 { try await ipad.add("Item \(i)", list) }
        await ipad.sync()
        var options = SyncEngineOptions()
        options.uploadCarries = 2
        try phone.restart(options: options)
        try await phone.add("Tea", list)
        calls.forget()
        await phone.sync()
        #expect(calls.names == ["upload", "fetchBothDatabases", "fetchZoneChanges"])
        #expect(try phone.list(list) == world.serviceList(list))
    }

    @Test func theFollowingDeviceKeepsTheWholeHistory() async throws {
        let world = try World(retentionMillis: day)
        let (_, ipad, list, _) = try await Self.twoDevices(world)
        _ = try world.compact(after: 2 * day)
        await ipad.sync()
        #expect(try ipad.history(list) == world.serviceHistory(list))
    }

    @Test func aDeviceThatMissedEntriesNewerThanTheRetentionFollowsToo() async throws {
        let world = try World(retentionMillis: day)
        let (phone, ipad, list, _) = try await Self.twoDevices(world)
        world.clock.advance(by: 2 * day)
        // Entries the iPad never fetched, too new to go: the compaction keeps them.
        let tea = try await phone.add("Tea", list)
        try await phone.engine.record(.markOff(item: tea), in: list)
        try await phone.add("Jam", list)
        await phone.sync()
        _ = try world.compact(after: 60_000)
        let report = await ipad.sync()
        #expect(report.refetched.isEmpty, "\(report.errors)")
        #expect(try ipad.list(list) == world.serviceList(list))
        #expect(try Self.ids(ipad, list) == world.serviceIDs(list))
    }

    @Test func twoCompactionsInARowAreFollowedInOrder() async throws {
        let world = try World(retentionMillis: day)
        let (phone, ipad, list, _) = try await Self.twoDevices(world)
        _ = try world.compact(after: 2 * day)
        await phone.sync()
        let tea = try await phone.add("Tea", list)
        try await phone.engine.record(.markOff(item: tea), in: list)
        await phone.sync()
        await ipad.sync()
        // The iPad holds Tea; the second compaction purges it, and the first record is not old yet.
        _ = try world.compact(after: day + 60_000)
        let report = await ipad.sync()
        #expect(report.refetched.isEmpty, "\(report.errors)")
        #expect(report.compactionsFollowed == 1)
        #expect(try ipad.list(list) == world.serviceList(list))
        #expect(try Self.ids(ipad, list) == world.serviceIDs(list))
        let mine = try ipad.history(list), service = try world.serviceHistory(list)
        #expect(mine == service, "\(mine.allEvents().map { "\($0.kind) \($0.entryID) \($0.text ?? "")" }.joined(separator: "\n"))\n---\n\(service.allEvents().map { "\($0.kind) \($0.entryID) \($0.text ?? "")" }.joined(separator: "\n"))")
    }

    @Test func aLateUnmarkAfterAFollowedCompactionDanglesEverywhere() async throws {
        let world = try World(retentionMillis: day)
        let (phone, ipad, list, milk) = try await Self.twoDevices(world)
        // Made offline before the compaction, uploaded after it purged Milk (rule 7).
        try await ipad.engine.record(.unmark(item: milk), in: list)
        _ = try world.compact(after: 2 * day)
        let report = await ipad.sync()
        #expect(report.refetched.isEmpty, "\(report.errors)")
        await phone.sync()
        let service = try world.serviceList(list)
        #expect(try ipad.list(list) == service)
        #expect(try phone.list(list) == service)
        #expect(!service.items.contains { $0.id == milk }, "the unmark dangles: Milk was purged")
    }

    @Test func aDeviceThatNeverHeldWhatWasPurgedFetchesAnew() async throws {
        let world = try World(retentionMillis: day)
        let (phone, ipad, list, _) = try await Self.twoDevices(world)
        // Tea comes and goes while the iPad is away longer than the retention.
        let tea = try await phone.add("Tea", list)
        try await phone.engine.record(.markOff(item: tea), in: list)
        await phone.sync()
        _ = try world.compact(after: 2 * day)
        let report = await ipad.sync()
        #expect(report.refetched == [list])
        #expect(try ipad.list(list) == world.serviceList(list))
        #expect(try ipad.history(list) == world.serviceHistory(list))
    }

    @Test func aDeviceAwayLongerThanTheRecordsAreKeptFetchesAnew() async throws {
        let world = try World(retentionMillis: day)
        let (phone, ipad, list, _) = try await Self.twoDevices(world)
        _ = try world.compact(after: 2 * day)
        await phone.sync()
        // A later compaction, past the retention, purges the first record.
        let tea = try await phone.add("Tea", list)
        try await phone.engine.record(.markOff(item: tea), in: list)
        await phone.sync()
        _ = try world.compact(after: 4 * day)
        let report = await ipad.sync()
        #expect(report.refetched == [list])
        #expect(report.refetchCauses[.tokenExpired] == 1)
        #expect(try ipad.list(list) == world.serviceList(list))
    }

    @Test func aDeviceThatInstalledABaseFollowsToo() async throws {
        let world = try World(retentionMillis: day)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        let bread = try await phone.add("Bread", list, after: milk)
        try await phone.add("Eggs", list, after: bread)
        try await phone.engine.record(.markOff(item: milk), in: list)
        await phone.sync()
        _ = try world.compact(after: 2 * day)
        // The iPad starts from the service's snapshot: Bread's add is folded into its base.
        let ipad = try world.device("alice:ipad")
        await ipad.sync()
        await phone.sync()
        try await phone.engine.record(.markOff(item: bread), in: list)
        await phone.sync()
        await ipad.sync()
        _ = try world.compact(after: 2 * day)
        let report = await ipad.sync()
        #expect(report.refetched.isEmpty, "\(report.errors)")
        #expect(report.compactionsFollowed == 1)
        let mine = try ipad.list(list), service = try world.serviceList(list)
        #expect(mine == service)
        #expect(mine.digest == service.digest)
        #expect(!mine.items.contains { $0.id == bread })
    }

    /// The follow floor is carried from record to record: once the first record is purged, a
    /// token from before it expires at every later compaction too, not only the next one.
    @Test func theFollowFloorIsCarriedAcrossLaterCompactions() async throws {
        let world = try World(retentionMillis: day)
        let (phone, ipad, list, _) = try await Self.twoDevices(world)
        _ = try world.compact(after: 2 * day)                     // record 1
        await phone.sync()
        world.clock.advance(by: day + 2 * hour)
        let tea = try await phone.add("Tea", list)
        try await phone.engine.record(.markOff(item: tea), in: list)
        await phone.sync()
        _ = try world.compact(after: day - 2 * hour)              // purges record 1; keeps Tea
        _ = try world.compact(after: 3 * hour)                    // purges Tea; record 2 stays
        let report = await ipad.sync()
        #expect(report.refetched == [list])
        #expect(report.refetchCauses[.tokenExpired] == 1)
        #expect(try ipad.list(list) == world.serviceList(list))
        #expect(try ipad.list(list).digest == world.serviceList(list).digest)
    }
}


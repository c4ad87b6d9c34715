import Foundation
import Testing
import JournalLog
import JournalService
import JournalSimulation
import JournalPostgres
@testable import JournalSync

/// A storage that does not answer is never read as an answer (SYNC.md §11.6): every call the
/// service makes while its database (or store) is down is busy, never "no such list", "no such
/// account", "token expired" or an empty page; and once it answers again, everything goes on
/// as if nothing happened. On both backends, through `FaultyStorage`'s outage.
@Suite struct StorageFailureTests {
    /// Alice's list, shared with bob, with Milk on it, synced; the storage under the service can fail.
    static func sharedMilk() async throws -> (World, Device, Device, ZoneID) {
        let world = try World(storageFaults: true)
        let phone = try world.device("alice:phone")
        let tablet = try world.device("bob:tablet")
        let list = try await sharedList(phone, with: [tablet])
        try await phone.add("Milk", list)
        await phone.sync()
        await tablet.sync()
        return (world, phone, tablet, list)
    }

    @Test func everyCallDuringAnOutageIsBusy() async throws {
        let (world, _, _, list) = try await Self.sharedMilk()
        let faulty = try #require(world.faulty)
        faulty.isDown = true
        let calls: [SyncCall] = [
            .fetchZoneChanges(zone: list, since: nil, limit: 10), .fetchZoneSnapshot(zone: list), .fetchZoneHistory(zone: list),
            .fetchZoneHistoryPage(zone: list, after: nil),
            .fetchDatabaseChanges(scope: .shared, since: nil, limit: 10), .fetchDatabaseChanges(scope: .private, since: nil, limit: 10),
            .createZone(ZoneID(owner: "bob", name: "other")!), .shareZone(list, participant: "carol"),
        ]
        for call in calls {
            let caller = call.isShareZone ? "alice" : "bob"
            #expect(throws: SyncError.serviceBusy(retryAfter: .seconds(1)), "\(call)") { try world.core.perform(caller: caller, call) }
        }
    }

    @Test func aDeviceSyncingThroughAnOutageLosesNothingAndIsNotSentBack() async throws {
        let (world, phone, tablet, list) = try await Self.sharedMilk()
        let faulty = try #require(world.faulty)
        try await phone.add("Eggs", list)
        faulty.isDown = true
        let during = await phone.sync()
        #expect(!during.signedOut && during.refetched.isEmpty && during.gone.isEmpty)
        #expect(!(await tablet.sync()).signedOut)
        faulty.isDown = false
        await phone.sync()
        let after = await tablet.sync()
        #expect(after.refetched.isEmpty, "an outage sends no device back to the snapshot")
        #expect(try Set(tablet.list(list).items.map(\.text)) == ["Milk", "Eggs"])
        try expectConverged(world, [phone, tablet], list)
    }

    @Test func aRemovalWhoseAnswerWasLostStillTakesAccessAway() async throws {
        let (world, _, _, list) = try await Self.sharedMilk()
        try #require(world.faulty).losingAnswers = 1
        #expect(throws: SyncError.serviceBusy(retryAfter: .seconds(1))) {
            try world.core.removeParticipant(caller: "alice", participant: "bob", from: list)
        }
        // The removal landed: bob reads the list no more, with no restart and no retry.
        #expect(throws: SyncError.zoneDeleted(reason: .removed)) { try world.core.perform(caller: "bob", .fetchZoneChanges(zone: list, since: nil, limit: 10)) }
    }

    @Test func aCompactionWhoseStorageIsDownFailsInsteadOfReportingNothingDone() async throws {
        let (world, _, _, _) = try await Self.sharedMilk()
        try #require(world.faulty).isDown = true
        #expect(throws: SyncError.self) { try world.compact(after: 30 * day) }
    }

    @Test func aServiceDoesNotStartOverAStorageThatDoesNotAnswer() async throws {
        let (world, _, _, _) = try await Self.sharedMilk()
        let faulty = try #require(world.faulty)
        faulty.isDown = true
        let clock = world.clock
        #expect(throws: (any Error).self) { try ServiceCore(storage: faulty, limits: world.limits, now: { clock.now() }) }
    }

    @Test func aShareWhoseAccountLookupFailsIsBusyNotNoSuchAccount() async throws {
        let (world, _, _, list) = try await Self.sharedMilk()
        let clock = world.clock
        let core = try ServiceCore(storage: world.core.storage, limits: world.limits, now: { clock.now() },
                                   accountExists: { _ throws(StorageError) in throw .unavailable("the accounts did not answer") })
        #expect(throws: SyncError.serviceBusy(retryAfter: .seconds(1))) { try core.shareZone(caller: "alice", zone: list, with: "carol") }
    }

    @Test func aSeededStorageFaultRunConvergesWithNobodySignedOut() async {
        var o = SimulationOptions()
        o.replicas = 4
        o.ops = 150
        o.seed = 7
        o.storageFaults = .all
        if let url = World.postgres {
            let located = url + "&schema=sf\(UInt64.random(in: 0...UInt64.max))"
            o.storage = { now in try PostgresServiceStorage.openWaiting(located, now: now) }
        }
        let r = await SyncSimulation.run(o)
        #expect(r.converged, "\(r.problems)")
        #expect(r.storageFaultsInjected > 0)
        #expect(r.signedOut == 0 && r.lost == 0 && r.duplicated == 0)
    }
}

extension SyncCall {
    var isShareZone: Bool { if case .shareZone = self { true } else { false } }
}

import Foundation
import Testing
import JournalLog
import JournalService
@testable import JournalSync
import JournalTesting

/// The service knows where each device last caught up with each list, and so how many a
/// compaction sends back to the snapshot (Spec/SYNC.md §6.6).
@Suite struct DeviceFetchesTests {
    /// A session that names its device to the core, as `jlog serve` names a credential's.
    struct NamedDevice: ForwardingSyncService {
        let core: ServiceCore
        let account: String
        let device: String
        func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
            try core.perform(ServiceCaller(account: account, device: device), call)
        }
    }

    static func named(_ device: String) -> (LocalService) -> any SyncService {
        { NamedDevice(core: $0.core, account: $0.account, device: device) }
    }

    @Test func aCompactionSendsBackEveryDeviceThatCaughtUpUnderTheOldMark() async throws {
        let world = try World(retentionMillis: day)
        let phone = try world.device("alice:phone", service: Self.named("phone"))
        let ipad = try world.device("alice:ipad", service: Self.named("ipad"))
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        try await phone.engine.record(.markOff(item: milk), in: list)
        await settle([phone, ipad])
        #expect(world.core.devices.all.map(\.device) == ["ipad", "phone"])
        #expect(world.core.devices.all.allSatisfy { $0.mark == 0 && $0.zone == list.storeName })

        let report = try world.compact(after: 2 * day)
        // Both caught up under mark 0, the first compaction's follow floor: they follow it.
        #expect(try world.core.devicesSentBack(by: report) == 0)
        await settle([phone, ipad])
        let mark = try #require(try world.core.storage.zoneInfo(list.storeName)?.lowWaterMark)
        #expect(world.core.devices.all.allSatisfy { $0.mark == mark }, "both caught up under the new mark")
        #expect(try world.core.devicesSentBack(by: try world.compact(after: 2 * day)) == 0, "nothing new to compact: nobody goes back")
    }

    @Test func theRowsSurviveARestartOfTheService() async throws {
        let world = try World(retentionMillis: day)
        let phone = try world.device("alice:phone", service: Self.named("phone"))
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        try world.core.saveDevices()
        let before = world.core.devices.all
        try world.restartService()
        #expect(world.core.devices.all == before)
        #expect(before.count == 1)
    }

    @Test func aDeviceTheTransportCannotNameIsNotNoted() async throws {
        let world = try World(retentionMillis: day)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        #expect(world.core.devices.all.isEmpty)
    }
}

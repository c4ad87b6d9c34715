import Foundation
import Testing
import JournalLog
import JournalSeal
import JournalService
import ListModel
@testable import JournalSync

/// A device's rotation whose upload fails or whose answer is lost (Spec/SEALING.md §5.2): the
/// device never begins the epoch twice (one epoch, one record, one id), and the change waiting
/// behind the record is made again under it once the service took it, even while that change
/// still sits before the record in the device's log.
@Suite struct SealedRotationRetryTests {
    /// bob's tablet, its calls scripted, in a list carol left: its change comes back
    /// `rotationDue`, and the rotation's upload meets `fault`.
    static func rotate(meeting fault: Script.Action) async throws -> (SealedReissueTests.Fixture, Device) {
        let f = try await SealedReissueTests.Fixture(members: ["alice", "bob", "carol"])
        let script = Script()
        let tablet = try f.world.device("bob:tablet", script: script)
        let keys = f.keys
        await tablet.engine.useSealing(SealedListKeys(account: keys["bob"]!, pinned: { keys[$0]?.publicKeys }))
        await settle([tablet], rounds: 3)
        try await f.devices["carol"]!.engine.deleteList(f.zone)
        await f.devices["carol"]!.sync()
        let sealer = TextSealer(key: f.epochs[0], zone: f.zone.storeName)
        try await tablet.engine.record(in: f.zone) { s in
            try sealer.add("Eggs", item: .random(), after: nil, entry: s.id, author: s.author, clock: s.clock, wallTime: s.wallTime).operation
        }
        script.on(.upload, .takeFirst(100))   // the change: refused, rotationDue
        script.on(.upload, fault)              // the rotation's record
        for _ in 0..<4 { await tablet.sync() }
        await settle(Array(f.devices.values) + [tablet], rounds: 4)
        return (f, tablet)
    }

    @Test func aRotationWhoseUploadFailedIsNotBegunAgain() async throws {
        let (f, tablet) = try await Self.rotate(meeting: .fail(.networkUnavailable()))
        #expect(try f.world.serviceList(f.zone).keyRecords.map(\.epoch) == [1, 2])
        #expect(try tablet.list(f.zone).keyRecords.map(\.epoch) == [1, 2])
        #expect(try f.texts(on: "alice") == ["Eggs"])
    }

    @Test func aChangeBehindARecordWhoseAnswerWasLostIsMadeAgainUnderIt() async throws {
        let (f, tablet) = try await Self.rotate(meeting: .dropResponse)
        #expect(try f.world.serviceList(f.zone).keyRecords.map(\.epoch) == [1, 2])
        #expect(try tablet.list(f.zone).digest == (try f.world.serviceList(f.zone)).digest)
        #expect(try f.texts(on: "alice") == ["Eggs"])
    }
}

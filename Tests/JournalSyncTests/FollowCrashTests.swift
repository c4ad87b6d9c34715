import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync
import JournalTesting

/// Power lost at any write of a device following a compaction (Spec/SYNC.md §6.7, §7.10): the
/// copy is left before the compaction or after it, never between, and the next sync finishes
/// the job without fetching the list anew.
@Suite struct FollowCrashTests {
    /// Two caught-up devices of a list the service then compacts: the iPad's next sync follows.
    static func world() async throws -> (World, Device, Device, ZoneID) {
        let world = try World(retentionMillis: day)
        let (phone, ipad, list, _) = try await CompactionFollowTests.twoDevices(world)
        _ = try world.compact(after: 2 * day)
        return (world, phone, ipad, list)
    }

    /// The iPad's sync with a disk that fails from its `n`th write on, then a power loss and a
    /// recovered disk: what is wrong right after the restart, and after two more syncs.
    static func crash(at n: Int) async throws -> [String] {
        let (world, phone, ipad, list) = try await world()
        let before = Set(try ipad.entryIDs(list))
        let service = try world.serviceIDs(list)
        ipad.fs.setFaults(.init(failOnCall: n, failPersistently: true))
        await ipad.sync()
        ipad.fs.setFaults(.init())
        try ipad.powerLoss()
        var problems: [String] = []
        let now = Set(try ipad.entryIDs(list))
        let record = try #require(service.first { CompactionRecord.mark(ofID: $0) != nil })
        if now != before && now != service && now != service.subtracting([record]) {
            problems.append("left between: \(now.subtracting(service).count) entries the service purged, \(service.subtracting(now).count) it holds missing")
        }
        var refetched = 0
        var why: [String] = []
        for _ in 0..<2 {
            let r = await ipad.sync()
            refetched += r.refetched.count
            why += r.errors
        }
        if refetched > 0 { problems.append("fetched anew: \(why)") }
        _ = phone
        problems += try convergenceProblems(world, [ipad], list)
        if try Set(ipad.entryIDs(list)) != service { problems.append("holds other entries than the service") }
        if try ipad.history(list) != world.serviceHistory(list) { problems.append("its history differs") }
        return problems.map { "write \(n): \($0)" }
    }

    @Test func aPowerLossAtAnyWriteOfAFollowLeavesBeforeOrAfter() async throws {
        let (_, _, ipad, _) = try await Self.world()
        ipad.fs.setFaults(.init())
        await ipad.sync()
        let total = ipad.fs.mutatingCalls
        #expect(total > 5)
        var problems: [String] = []
        for n in 1...total { problems += try await Self.crash(at: n) }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
    }
}

import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync
import JournalTesting

/// Devices that missed a compaction (Spec/SYNC.md §6): compaction is the service's decision
/// alone, and a device adopts the service's compacted copy (tokenExpired → re-fetch).
@Suite struct StaleDeviceTests {
    static func world() throws -> World {
        var limits = ServiceLimits()
        limits.retentionMillis = day
        return try World(limits: limits)
    }

    /// The start of the lost-answer stories: a phone (scripted) and an iPad on a list holding
    /// Milk, and Bread added on the phone, stored by the service, its answer lost.
    struct LostAnswer {
        let world: World, script: Script, phone: Device, ipad: Device, list: ZoneID, bread: JournalEntry
    }

    static func breadWithALostAnswer() async throws -> LostAnswer {
        let world = try Self.world()
        let script = Script()
        let phone = try world.device("alice:phone", script: script)
        let ipad = try world.device("alice:ipad")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        await phone.sync()

        script.on(.upload, .dropResponse)
        let bread = try await phone.engine.record(.add(item: CompactID("bread")!, text: "Bread", after: milk), in: list)
        #expect(await phone.sync().offline)
        #expect(try world.serviceEntryIDs(list).contains(bread.id), "the service stored it; the phone never learned")
        return LostAnswer(world: world, script: script, phone: phone, ipad: ipad, list: list, bread: bread)
    }

    /// The fork: replica A holds the compacted copy, replica B has not compacted and
    /// unmarks Milk and re-adds Coffee, both purged on A (B's edits made after the compaction,
    /// or before it while B was offline). Once both sync and the service compacts again, every
    /// replica shows the same list, with equal digests.
    @Test(arguments: [false, true])
    func aReplicaThatMissedACompactionConvergesWithOneThatAdoptedIt(editsBeforeCompaction: Bool) async throws {
        let world = try Self.world()
        let a = try world.device("alice:phone"), b = try world.device("bob:phone")
        let list = try await sharedList(a, with: [b])
        let milk = try await a.add("Milk", list)
        let coffee = try await a.add("Coffee", list, after: milk)
        let eggs = try await a.add("Eggs", list, after: coffee)
        try await a.engine.record(.markOff(item: milk), in: list)
        try await a.engine.record(.markOff(item: coffee), in: list)
        await a.sync()
        await b.sync()
        #expect(try b.list(list).items.map(\.id) == [milk, coffee, eggs])

        func edit() async throws {
            try await b.engine.record(.unmark(item: milk), in: list)
            try await b.engine.record(.add(item: coffee, text: "Coffee", after: nil), in: list)
        }
        if editsBeforeCompaction { try await edit() }
        // The service compacts (Milk and Coffee were bought long ago); A adopts its copy.
        let report = try world.compact(after: 2 * day)
        #expect(report.zones.map(\.zone) == [list.storeName])
        let ra = await a.sync()
        #expect(ra.refetched.isEmpty && ra.compactionsFollowed == 1, "A follows the compaction (SYNC.md §6.7)")
        #expect(try a.list(list).items.map(\.id) == [eggs], "A holds the compacted copy")
        // B has not synced since: it still holds both.
        #expect(try b.list(list).items.map(\.id) == [milk, coffee, eggs])
        if !editsBeforeCompaction { try await edit() }

        await settle([a, b])
        try expectConverged(world, [a, b], list)
        try world.compact(after: 2 * day)
        await settle([a, b])
        try expectConverged(world, [a, b], list)
        let s = try world.serviceList(list)
        #expect(try a.list(list).digest == b.list(list).digest)
        #expect(!s.items.contains { $0.id == milk }, "an unmark of a purged item dangles: Milk stays gone")
        #expect(s.items.first { $0.id == coffee }?.state == .active, "the re-add of a purged item is a new item")
        #expect(s.items.contains { $0.id == eggs })
    }

    enum LateRetry: String, CaseIterable, Sendable {
        /// Bread went whole (nothing after it).
        case purgedWhole
        /// Eggs sits after Bread: Bread's add was overwritten by a `place`.
        case overwrittenByAPlace
        /// The service restarted between the compaction and the retry (what it knows of purged
        /// ids is rebuilt from its history).
        case afterAServiceRestart
        /// Further compactions came between (histories are rotated).
        case afterMoreCompactions
    }

    /// An add whose original was stored, bought, and purged by compaction comes again late (its
    /// device lost the answer and was away past the retention): the bought item never comes back.
    @Test(arguments: LateRetry.allCases)
    func aLateRetryOfAPurgedAddDoesNotBringTheBoughtItemBack(_ scenario: LateRetry) async throws {
        let start = try await Self.breadWithALostAnswer()
        let (world, script, phone, ipad, list, bread) = (start.world, start.script, start.phone, start.ipad, start.list, start.bread)
        script.offline = true

        await ipad.sync()
        #expect(try ipad.list(list).items.map(\.text) == ["Milk", "Bread"])
        try await ipad.engine.record(.markOff(item: CompactID("bread")!), in: list)
        if scenario == .overwrittenByAPlace { try await ipad.add("Eggs", list, after: CompactID("bread")!) }
        await ipad.sync()

        try world.compact(after: 2 * day)
        if scenario == .overwrittenByAPlace {
            let stored = try world.serviceEntries(list).first { $0.id == bread.id }
            #expect(stored?.operation.isPlace == true, "the compactor wrote a place over Bread's add")
        } else {
            #expect(try !world.serviceEntryIDs(list).contains(bread.id), "Bread's add was purged")
        }
        switch scenario {
        case .afterAServiceRestart:
            try world.restartService()
            try phone.restart()
            try ipad.restart()
        case .afterMoreCompactions:
            for round in 0..<2 {
                let jam = try await ipad.add("Jam \(round)", list)
                try await ipad.engine.record(.markOff(item: jam), in: list)
                await ipad.sync()
                try world.compact(after: 2 * day)
            }
        default: break
        }

        script.offline = false
        let r = await phone.sync()
        #expect(r.rejected.isEmpty, "the late retry is acknowledged, not refused: \(r.rejected)")
        #expect(r.uploaded == 1)
        await settle([phone, ipad])
        try expectConverged(world, [phone, ipad], list)
        for state in [try world.serviceList(list), try phone.list(list), try ipad.list(list)] {
            #expect(!state.items.contains { $0.id == CompactID("bread")! && $0.state == .active }, "Bread came back: \(describe(state))")
        }
        if scenario != .overwrittenByAPlace {
            #expect(try !world.serviceEntryIDs(list).contains(bread.id), "the late add was stored again")
        }
        let watch = try world.device("alice:watch")   // a new device sees the same
        await watch.sync()
        try expectConverged(world, [watch], list)
    }

    /// A device offline longer than the retention still delivers what it did offline: it gets
    /// tokenExpired, re-fetches, and its edits reach the service and every device.
    @Test func aDeviceOfflinePastTheRetentionDeliversItsOfflineEdits() async throws {
        let world = try Self.world()
        let script = Script()
        let phone = try world.device("alice:phone", script: script)
        let ipad = try world.device("alice:ipad"), bob = try world.device("bob:phone")
        let list = try await sharedList(phone, with: [bob])
        let milk = try await phone.add("Milk", list)
        await phone.sync()
        await ipad.sync()
        let jam = try await ipad.add("Jam", list)
        await ipad.sync()
        await bob.sync()

        script.offline = true
        let tea = try await phone.add("Tea", list, after: milk)
        try await phone.engine.record(.markOff(item: milk), in: list)
        #expect(await phone.sync().offline)

        try await ipad.engine.record(.markOff(item: jam), in: list)
        let bread = try await ipad.add("Bread", list)
        await ipad.sync()
        let report = try world.compact(after: 2 * day)
        #expect(report.zones.map(\.zone) == [list.storeName], "Jam was purged: older tokens expire")

        script.offline = false
        let r = await phone.sync()
        #expect(r.uploaded == 2)
        #expect(r.refetched == [list], "the stale token expired: the phone re-fetched")
        await settle([phone, ipad, bob])
        try expectConverged(world, [phone, ipad, bob], list)
        let s = try world.serviceList(list)
        #expect(s.items.first { $0.id == tea }?.state == .active)
        #expect(s.items.first { $0.id == milk }?.state == .markedOff)
        #expect(s.items.contains { $0.id == bread })
        #expect(!s.items.contains { $0.id == jam })
    }

    /// Power lost at any write of a device's catch-up after a compaction (its offline edits
    /// pushed, the compaction followed, SYNC.md §6.7): after the restart nothing is lost or
    /// stored twice.
    @Test func aPowerLossAtAnyWriteOfAStaleDevicesCatchUpLosesNothing() async throws {
        func run(failingAt n: Int?) async throws -> (writes: Int, problems: [String]) {
            let world = try Self.world()
            let phone = try world.device("alice:phone"), ipad = try world.device("alice:ipad")
            let list = try await phone.engine.createList("weekly")
            let milk = try await phone.add("Milk", list)
            let jam = try await phone.add("Jam", list, after: milk)
            await phone.sync()
            try await phone.engine.record(.markOff(item: jam), in: list)
            await phone.sync()
            let tea = try await phone.engine.record(.add(item: CompactID("tea")!, text: "Tea", after: nil), in: list)
            let bought = try await phone.engine.record(.markOff(item: milk), in: list)
            await ipad.sync()
            try await ipad.add("Bread", list)
            await ipad.sync()
            try world.compact(after: 2 * day)
            phone.fs.setFaults(.init(failOnCall: n, failPersistently: true))
            let r = await phone.sync()
            let writes = phone.fs.mutatingCalls
            // It holds everything the compaction purged (it synced before it): it follows it.
            guard let n else { return (writes, r.refetched.isEmpty && r.compactionsFollowed == 1 ? [] : ["did not follow: \(r.errors)"]) }
            phone.fs.setFaults(.init())
            try phone.powerLoss()
            await settle([phone, ipad], rounds: 2)
            var problems = try convergenceProblems(world, [phone, ipad], list).map { "write \(n): \($0)" }
            let stored = Set(try world.serviceEntryIDs(list))
            if !stored.contains(tea.id) || !stored.contains(bought.id) { problems.append("write \(n): an offline edit was lost") }
            return (writes, problems)
        }
        let probe = try await run(failingAt: nil)
        #expect(probe.problems.isEmpty, "\(probe.problems)")
        var problems: [String] = []
        for n in 1...max(1, probe.writes) { problems += try await run(failingAt: n).problems }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
    }
}

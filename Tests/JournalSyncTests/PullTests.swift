import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync

/// Pull through the durable to-apply queue (Spec/SYNC.md §7): a crash or a disk error at any
/// write of a pull loses and duplicates nothing.
@Suite struct PullTests {
    /// The phone made a list of four items (five entries); the iPad (pages of two) synced it when
    /// `primed`, and the phone then added three more and bought one (four entries): what the
    /// iPad's next pull brings, in pages.
    static func world(primed: Bool) async throws -> (World, Device, Device, ZoneID) {
        let world = try World()
        let phone = try world.device("alice:phone")
        var options = SyncEngineOptions()
        options.pageLimit = 2
        let ipad = try world.device("alice:ipad", options: options)
        let list = try await phone.engine.createList("weekly")
        var last: CompactID? = nil
        for i in 0..<4 { last = try await phone.add("Item \(i)", list, after: last) }
        try await phone.engine.record(.markOff(item: CompactID("item-2")!), in: list)
        await phone.sync()
        if primed {
            await ipad.sync()
            for i in 4..<7 { last = try await phone.add("Item \(i)", list, after: last) }
            try await phone.engine.record(.markOff(item: CompactID("item-5")!), in: list)
            await phone.sync()
        }
        return (world, phone, ipad, list)
    }

    /// The iPad's pull, with a disk that fails at its `n`th write (and every one after it when
    /// `persistent`); then power is lost, the faults cleared, and the iPad syncs again. Returns
    /// what differs from the service, and whether the restart found a saved to-apply queue or a
    /// re-fetch in progress.
    static func crash(at n: Int, primed: Bool, persistent: Bool, restartFirst: Bool = true) async throws -> (problems: [String], resumed: Bool) {
        let (world, phone, ipad, list) = try await world(primed: primed)
        ipad.fs.setFaults(.init(failOnCall: n, failPersistently: persistent))
        await ipad.sync()
        if !restartFirst {
            ipad.fs.setFaults(.init())
            await ipad.sync()   // the same process goes on after the disk recovered
        }
        ipad.fs.setFaults(.init())
        try ipad.powerLoss()
        let z = await ipad.engine.syncState.zones[list.storeName]
        let resumed = z.map { !$0.toApply.isEmpty || $0.replacing != nil } ?? false
        await settle([ipad], rounds: 3)
        var problems = try convergenceProblems(world, [phone, ipad], list)
        let serviceIDs = Set(try world.serviceEntryIDs(list))
        let mine = Set(try ipad.entryIDs(list))
        if !serviceIDs.isSubset(of: mine) { problems.append("lost \(serviceIDs.subtracting(mine).count) entries") }
        return (problems.map { "write \(n): \($0)" }, resumed)
    }

    /// How many writes the iPad's pull makes, undisturbed.
    static func writes(primed: Bool) async throws -> Int {
        let (_, _, ipad, _) = try await world(primed: primed)
        ipad.fs.setFaults(.init())
        await ipad.sync()
        return ipad.fs.mutatingCalls
    }

    /// Power lost at any write of a pull in pages (the to-apply queue saved and not yet appended,
    /// or between pages): after the restart every entry is there exactly once.
    @Test func aPowerLossAtAnyWriteOfAPagedPullLosesAndDuplicatesNothing() async throws {
        let total = try await Self.writes(primed: true)
        #expect(total > 10)
        var problems: [String] = []
        var resumed = 0
        for n in 1...total {
            let r = try await Self.crash(at: n, primed: true, persistent: true)
            problems += r.problems
            if r.resumed { resumed += 1 }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(resumed > 0, "no crash point left a saved to-apply queue behind: the test missed the window")
    }

    /// Power lost at any write of a first fetch (a re-fetch into a new incarnation, page by
    /// page): after the restart it resumes, and every entry is there exactly once.
    @Test func aPowerLossAtAnyWriteOfAFirstFetchLosesAndDuplicatesNothing() async throws {
        let total = try await Self.writes(primed: false)
        #expect(total > 10)
        var problems: [String] = []
        var resumed = 0
        for n in 1...total {
            let r = try await Self.crash(at: n, primed: false, persistent: true)
            problems += r.problems
            if r.resumed { resumed += 1 }
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(resumed > 0, "no crash point left a re-fetch in progress behind: the test missed the window")
    }

    /// One failed write during a paged pull (a full disk, freed again), the device syncing on
    /// until it restarts: no page is skipped.
    @Test func aTransientDiskErrorDuringAPagedPullSkipsNoPage() async throws {
        let total = try await Self.writes(primed: true)
        var problems: [String] = []
        for n in 1...total {
            problems += try await Self.crash(at: n, primed: true, persistent: false, restartFirst: false).problems
        }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
    }
}

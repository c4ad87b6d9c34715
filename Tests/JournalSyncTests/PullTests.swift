import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync
import JournalTesting

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

    /// A crash at every write of a sync, each from the same start: the problems found after
    /// every restart, and how many crash points left work to resume.
    static func crashAtEveryWrite(primed: Bool) async throws -> (total: Int, problems: [String], resumed: Int) {
        let total = try await writes(primed: primed)
        var problems: [String] = []
        var resumed = 0
        for n in 1...total {
            let r = try await crash(at: n, primed: primed, persistent: true)
            problems += r.problems
            if r.resumed { resumed += 1 }
        }
        return (total, problems, resumed)
    }

    /// Power lost at any write of a pull in pages (the to-apply queue saved and not yet appended,
    /// or between pages): after the restart every entry is there exactly once.
    @Test func aPowerLossAtAnyWriteOfAPagedPullLosesAndDuplicatesNothing() async throws {
        let r = try await Self.crashAtEveryWrite(primed: true)
        #expect(r.total > 10)
        #expect(r.problems.isEmpty, "\(r.problems.prefix(10))")
        #expect(r.resumed > 0, "no crash point left a saved to-apply queue behind: the test missed the window")
    }

    /// Power lost at any write of a first fetch (a re-fetch into a new incarnation, page by
    /// page): after the restart it resumes, and every entry is there exactly once.
    @Test func aPowerLossAtAnyWriteOfAFirstFetchLosesAndDuplicatesNothing() async throws {
        let r = try await Self.crashAtEveryWrite(primed: false)
        #expect(r.total > 10)
        #expect(r.problems.isEmpty, "\(r.problems.prefix(10))")
        #expect(r.resumed > 0, "no crash point left a re-fetch in progress behind: the test missed the window")
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

/// Fetches under a throttling service (Spec/SYNC.md §4.1): like uploads, they wait.
extension PullTests {
    /// The service says when to come back from a fetch: the engine waits that long, tries again,
    /// and the sync completes.
    @Test(arguments: [ServiceCall.fetchDatabaseChanges, .fetchZoneChanges, .fetchZoneHistory])
    func aThrottledFetchWaitsTheServicesRetryAfterThenRetries(_ call: ServiceCall) async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        let script = Script()
        let ipad = try world.device("alice:ipad", script: script)
        script.on(call, .fail(.serviceBusy(retryAfter: .seconds(30))))
        let r = await ipad.sync()
        #expect(r.isComplete, "\(r.errors)")
        let tries = script.calls(call)
        #expect(tries.count >= 2)
        if tries.count >= 2 { #expect(tries[1].at - tries[0].at >= 30_000, "the retry came before the service's retryAfter") }
        try expectConverged(world, [phone, ipad], list)
    }

    /// A fetch the service keeps refusing is left after maxAttempts tries: the sync stops there
    /// (no other call is made) and the next one catches up.
    @Test func aFetchThatStaysThrottledStopsTheSyncAfterMaxAttempts() async throws {
        var options = SyncEngineOptions()
        options.maxAttempts = 3
        let world = try World()
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        let script = Script()
        let ipad = try world.device("alice:ipad", options: options, script: script)
        script.on(.fetchDatabaseChanges, .fail(.rateLimited(retryAfter: .seconds(1))), times: 1_000)
        let r = await ipad.sync()
        #expect(r.throttled && !r.isComplete)
        #expect(script.log.map(\.call) == Array(repeating: .fetchDatabaseChanges, count: 3))
        script.clearRules()
        #expect(await ipad.sync().isComplete)
        try expectConverged(world, [phone, ipad], list)
    }

    /// A service whose history of a list cannot be assembled does not hold the list back: the
    /// re-fetch finishes without it and says why.
    @Test func aHistoryTheServiceCannotAssembleIsReportedAndTheListStillSyncs() async throws {
        let (world, list) = try await ServiceCoreTests.compactedListWithoutItsHistory()
        let ipad = try world.device("alice:ipad")
        let r = await ipad.sync()
        #expect(r.firstFetched == [list])
        #expect(r.errors.contains { $0.contains("history") }, "\(r.errors)")
        #expect(try ipad.list(list) == world.serviceList(list))
        #expect(await ipad.status(list)?.refetching == false)
        #expect(await ipad.status(list)?.lastError?.contains("history") == true)
    }

    /// A token longer than the state file keeps is the service's error: nothing of that answer
    /// is kept, and the state file stays readable.
    @Test func aTokenOverTheStatesBoundIsRefused() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        let ipad = try world.device("alice:ipad") { LongTokens($0) }
        let r = await ipad.sync()
        #expect(r.errors.contains { $0.contains("1–1,024 bytes") }, "\(r.errors)")
        #expect(await ipad.engine.syncState.databaseTokens.isEmpty)
        try ipad.restart()   // the state file still decodes
    }
}

/// A service that answers database tokens of 2,000 bytes.
struct LongTokens: SyncService {
    let inner: any SyncService
    init(_ inner: any SyncService) { self.inner = inner }
    var account: String { inner.account }
    func upload(_ entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult { try await inner.upload(entries, to: zone) }
    func fetchDatabaseChanges(_ scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage {
        var page = try await inner.fetchDatabaseChanges(scope, since: token, limit: limit)
        page.token = ServiceToken(String(repeating: "t", count: 2_000))
        return page
    }
    func fetchZoneChanges(_ zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage {
        try await inner.fetchZoneChanges(zone, since: token, limit: limit)
    }
    func fetchZoneHistory(_ zone: ZoneID) async throws(SyncError) -> [UInt8] { try await inner.fetchZoneHistory(zone) }
    func createZone(_ zone: ZoneID) async throws(SyncError) { try await inner.createZone(zone) }
    func deleteZone(_ zone: ZoneID) async throws(SyncError) { try await inner.deleteZone(zone) }
    func shareZone(_ zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation { try await inner.shareZone(zone, with: participant) }
    func acceptShare(_ invitation: ShareInvitation) async throws(SyncError) -> ZoneID { try await inner.acceptShare(invitation) }
    func removeParticipant(_ participant: String, from zone: ZoneID) async throws(SyncError) { try await inner.removeParticipant(participant, from: zone) }
    func stopSharing(_ zone: ZoneID) async throws(SyncError) { try await inner.stopSharing(zone) }
}

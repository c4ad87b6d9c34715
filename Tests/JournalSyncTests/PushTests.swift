import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync
import JournalTesting

/// Push under the service's refusals (Spec/SYNC.md §4, §7): every local change reaches the
/// service exactly once, whatever answer comes back first.
@Suite struct PushTests {
    /// A device with a list the service already holds, its calls scripted.
    static func device(_ world: World, options: SyncEngineOptions = SyncEngineOptions()) async throws -> (Device, Script, ZoneID) {
        let script = Script()
        let phone = try world.device("alice:phone", options: options, script: script)
        let list = try await phone.engine.createList("weekly")
        let r = await phone.sync()
        #expect(r.isComplete, "\(r.errors)")
        script.forgetLog()
        return (phone, script, list)
    }

    /// Records `n` adds (items i0, i1, …) and returns their entry ids.
    static func adds(_ d: Device, _ n: Int, in list: ZoneID, from: Int = 0) async throws -> [CompactID] {
        var ids: [CompactID] = []
        for i in from..<(from + n) {
            ids.append(try await d.engine.record(.add(item: CompactID("i\(i)")!, text: "Item \(i)", after: nil), in: list).id)
        }
        return ids
    }

    // MARK: limitExceeded

    /// A batch over the service's entry limit must still arrive: halved, and halved again, down to
    /// single entries, each stored once.
    @Test func aBatchOverTheEntryLimitIsHalvedDownToSingleEntriesAndArrivesOnce() async throws {
        var limits = ServiceLimits()
        limits.maxUploadEntries = 1
        let world = try World(limits: limits)
        let (phone, script, list) = try await Self.device(world)
        let ids = try await Self.adds(phone, 8, in: list)
        let r = await phone.sync()
        #expect(r.isComplete, "\(r.errors)")
        #expect(r.uploaded == 8 && r.rejected.isEmpty)
        // Depth first: 8 → 4 → 2 → 1, 1; 2 → 1, 1; 4 → …
        #expect(script.calls(.upload).map(\.ids.count) == [8, 4, 2, 1, 1, 2, 1, 1, 4, 2, 1, 1, 2, 1, 1])
        let singles = script.calls(.upload).filter { $0.ids.count == 1 }.flatMap(\.ids)
        #expect(singles == ids, "each entry went through alone, once, in order")
        #expect(try world.serviceEntryIDs(list) == ids)
        #expect(world.core.counters.entriesStored == 8)
        #expect(await phone.sync().sent == 0, "nothing is left to send")
    }

    /// A single entry larger than the service takes cannot be split: it is refused for good and
    /// reported, and the entries beside it still arrive.
    @Test func aSingleEntryOverTheByteLimitIsRejectedAndTheRestArrive() async throws {
        var limits = ServiceLimits()
        limits.maxUploadBytes = 400
        let world = try World(limits: limits)
        let (phone, _, list) = try await Self.device(world)
        let small1 = try await phone.engine.record(.add(item: CompactID("a")!, text: "Milk", after: nil), in: list).id
        let big = try await phone.engine.record(.add(item: CompactID("b")!, text: String(repeating: "x", count: 600), after: nil), in: list).id
        let small2 = try await phone.engine.record(.add(item: CompactID("c")!, text: "Eggs", after: nil), in: list).id
        let r = await phone.sync()
        #expect(r.uploaded == 2)
        #expect(r.rejected.map(\.id) == [big])
        #expect(try world.serviceEntryIDs(list) == [small1, small2])
        // Reported once; the re-fetch in the same sync left it out of the list, and its record with it.
        #expect(await phone.status(list)?.rejected == 0)
        #expect(await phone.status(list)?.queued == 0)
        #expect(await phone.sync().sent == 0, "a refused entry is not sent again")
        #expect(try phone.list(list).items.map(\.text).sorted() == ["Eggs", "Milk"], "the refused change is not on the device alone")
        try expectConverged(world, [phone], list)
    }

    // MARK: rateLimited / serviceBusy

    /// The service says when to come back: the engine waits at least that long, then retries.
    @Test(arguments: [SyncError.rateLimited(retryAfter: .seconds(30)), .serviceBusy(retryAfter: .seconds(30))])
    func aThrottledUploadWaitsTheServicesRetryAfterThenRetries(_ error: SyncError) async throws {
        let world = try World()
        let (phone, script, list) = try await Self.device(world)
        let ids = try await Self.adds(phone, 2, in: list)
        script.on(.upload, .fail(error))
        let before = world.clock.now()
        let r = await phone.sync()
        #expect(r.isComplete, "\(r.errors)")
        #expect(r.uploaded == 2)
        let uploads = script.calls(.upload)
        #expect(uploads.count == 2)
        #expect(uploads.count == 2 && uploads[1].at - uploads[0].at >= 30_000, "the retry came before the service's retryAfter")
        #expect(world.clock.now() - before >= 30_000)
        #expect(try world.serviceEntryIDs(list) == ids)
    }

    /// Without a retryAfter the engine backs off exponentially (jittered) between tries.
    @Test(arguments: [SyncError.rateLimited(retryAfter: nil), .serviceBusy(retryAfter: nil)])
    func aThrottledUploadWithoutRetryAfterBacksOff(_ error: SyncError) async throws {
        var options = SyncEngineOptions()
        options.maxAttempts = 5
        let world = try World()
        let (phone, script, list) = try await Self.device(world, options: options)
        let ids = try await Self.adds(phone, 1, in: list)
        script.on(.upload, .fail(error), times: 3)
        let r = await phone.sync()
        #expect(r.isComplete, "\(r.errors)")
        let at = script.calls(.upload).map(\.at)
        #expect(at.count == 4)
        let base = Int64(options.backoffBase.components.seconds * 1000 + options.backoffBase.components.attoseconds / 1_000_000_000_000_000)
        for attempt in 1..<at.count {
            let waited = at[attempt] - at[attempt - 1]
            let nominal = base << attempt
            #expect(waited >= nominal / 2 && waited <= nominal * 3 / 2, "attempt \(attempt) waited \(waited) ms (nominal \(nominal))")
        }
        #expect(try world.serviceEntryIDs(list) == ids)
    }

    /// A service that stays busy is not hammered: after maxAttempts the sync reports it and the
    /// changes stay queued for the next sync, which delivers them.
    @Test func aServiceThatStaysBusyIsLeftAfterMaxAttemptsWithChangesQueued() async throws {
        var options = SyncEngineOptions()
        options.maxAttempts = 3
        let world = try World()
        let (phone, script, list) = try await Self.device(world, options: options)
        let ids = try await Self.adds(phone, 2, in: list)
        script.on(.upload, .fail(.serviceBusy(retryAfter: .seconds(1))), times: 1_000)
        let r = await phone.sync()
        #expect(!r.isComplete)
        #expect(!r.errors.isEmpty)
        #expect(r.uploaded == 0)
        #expect(script.calls(.upload).count == 3, "maxAttempts tries, then stop")
        #expect(await phone.status(list)?.queued == 2)
        #expect(try world.serviceEntryIDs(list).isEmpty)
        script.clearRules()
        let r2 = await phone.sync()
        #expect(r2.isComplete, "\(r2.errors)")
        #expect(r2.uploaded == 2)
        #expect(await phone.status(list)?.queued == 0)
        #expect(try world.serviceEntryIDs(list) == ids)
    }

    // MARK: partialFailure

    /// Only the entries the service did not take are sent again.
    @Test func aPartialFailureRetriesOnlyTheEntriesNotTaken() async throws {
        let world = try World()
        let (phone, script, list) = try await Self.device(world)
        let ids = try await Self.adds(phone, 5, in: list)
        script.on(.upload, .takeFirst(2))
        let r = await phone.sync()
        #expect(r.isComplete, "\(r.errors)")
        #expect(r.uploaded == 5)
        #expect(script.calls(.upload).map(\.ids) == [ids, Array(ids[2...])])
        #expect(try world.serviceEntryIDs(list) == ids)
        #expect(await phone.engine.totals.entriesSent == 8)
    }

    /// An entry the service holds with other content is a conflict: reported once, never resent,
    /// while the retryable entries of the same upload are retried and arrive.
    @Test func aConflictIsReportedAndNotRetriedWhileRetryableEntriesAre() async throws {
        let world = try World()
        let (phone, script, list) = try await Self.device(world)
        let milk = try await phone.engine.record(.add(item: CompactID("milk")!, text: "Milk", after: nil), in: list)
        // The service already holds milk's id with other content (same account, another text).
        var other = milk
        other.operation = .add(item: CompactID("milk")!, text: "Oat milk", after: nil)
        _ = try world.core.upload(caller: "alice", entries: [other], to: list)
        let rest = try await Self.adds(phone, 2, in: list)
        script.on(.upload, .takeFirst(1))   // milk (the conflict) is tried; the others are not taken this time
        let r = await phone.sync()
        #expect(r.rejected.map(\.id) == [milk.id])
        #expect(r.rejected.first?.why.contains("conflict") == true, "\(r.rejected)")
        #expect(r.uploaded == 2)
        #expect(script.calls(.upload).map(\.ids) == [[milk.id] + rest, rest])
        #expect(await phone.status(list)?.rejected == 0, "the re-fetch in the same sync left it out")
        #expect(await phone.status(list)?.queued == 0)
        let r2 = await phone.sync()
        #expect(r2.sent == 0, "a conflict is not retried")
        #expect(r2.rejected.isEmpty)
        let r3 = await phone.sync()
        #expect(r3.sent == 0 && r3.isComplete, "\(r3.errors)")
        #expect(try world.serviceEntryIDs(list) == [milk.id] + rest)
        #expect(try phone.list(list).items.contains { $0.text == "Oat milk" }, "the device shows the service's Milk, not its own")
        try expectConverged(world, [phone], list)
    }

    /// A fetched entry whose id a local change holds with other content makes the list want a
    /// re-fetch; while the push keeps failing (over quota) the re-fetch waits, and the list still
    /// receives everyone's changes from its token; once the push goes through, the conflict is
    /// refused and the re-fetch leaves the device with the service's copy.
    @Test func aListWaitingToBeFetchedAnewStillReceivesChangesWhileItsPushFails() async throws {
        let world = try World()
        let (phone, script, list) = try await Self.device(world)
        let milk = try await phone.engine.record(.add(item: CompactID("milk")!, text: "Milk", after: nil), in: list)
        var other = milk
        other.operation = .add(item: CompactID("milk")!, text: "Oat milk", after: nil)
        func serviceAdd(_ id: String, _ text: String, _ at: UInt64) throws {
            var e = other
            e.id = CompactID(id)!
            e.clock = HybridTime(physicalMillis: other.clock.physicalMillis + at, counter: 0)
            e.operation = .add(item: CompactID(id)!, text: text, after: nil)
            _ = try world.core.upload(caller: "alice", entries: [e], to: list)
        }
        _ = try world.core.upload(caller: "alice", entries: [other], to: list)
        try serviceAdd("bread", "Bread", 1)
        script.on(.upload, .fail(.quotaExceeded), times: 4)
        let r1 = await phone.sync()
        #expect(r1.quotaExceeded)
        #expect(try phone.list(list).items.map(\.text).sorted() == ["Bread", "Milk"], "Bread arrived; the local Milk stays for now")
        try serviceAdd("eggs", "Eggs", 2)
        let r2 = await phone.sync()
        #expect(r2.quotaExceeded)
        #expect(try phone.list(list).items.map(\.text).sorted() == ["Bread", "Eggs", "Milk"], "fetching from the token goes on")
        // The quota allows again: the conflict is refused and the list fetched anew.
        while script.calls(.upload).count < 4 { _ = await phone.sync() }
        let r3 = await phone.sync()
        #expect(r3.rejected.map(\.id) == [milk.id], "\(r3.errors)")
        #expect(try phone.list(list).items.map(\.text).sorted() == ["Bread", "Eggs", "Oat milk"])
        try expectConverged(world, [phone], list)
    }

    // MARK: networkUnavailable

    /// Offline: changes stay queued and the report says so; the next sync delivers them.
    @Test func offlineChangesStayQueuedAndTheNextSyncDeliversThem() async throws {
        let world = try World()
        let (phone, script, list) = try await Self.device(world)
        script.offline = true
        let ids = try await Self.adds(phone, 2, in: list)
        let r = await phone.sync()
        #expect(r.offline && !r.isComplete)
        #expect(r.uploaded == 0)
        #expect(await phone.status(list)?.queued == 2)
        #expect(await phone.status().lastError == "offline")
        #expect(try world.serviceEntryIDs(list).isEmpty)
        script.offline = false
        let r2 = await phone.sync()
        #expect(r2.isComplete && !r2.offline, "\(r2.errors)")
        #expect(r2.uploaded == 2)
        #expect(await phone.status(list)?.queued == 0)
        #expect(try world.serviceEntryIDs(list) == ids)
    }

    // MARK: quotaExceeded

    /// A full account keeps changes queued and says so, sync after sync, and they go up once the
    /// quota allows.
    @Test func quotaExceededKeepsChangesQueuedUntilTheQuotaAllows() async throws {
        let world = try World()
        let (phone, script, list) = try await Self.device(world)
        let ids = try await Self.adds(phone, 3, in: list)
        script.on(.upload, .fail(.quotaExceeded), times: 2)
        for _ in 0..<2 {
            let r = await phone.sync()
            #expect(r.quotaExceeded && !r.isComplete)
            #expect(r.uploaded == 0)
            #expect(await phone.status(list)?.queued == 3)
        }
        let r = await phone.sync()
        #expect(r.isComplete && !r.quotaExceeded, "\(r.errors)")
        #expect(r.uploaded == 3)
        #expect(try world.serviceEntryIDs(list) == ids)
        #expect(await phone.status(list)?.queued == 0)
    }

    /// The reference service's own quota answers quotaExceeded for the whole upload, and the
    /// changes stay queued on the device.
    @Test func theServicesQuotaRefusesTheUploadAndTheChangesStayQueued() async throws {
        var limits = ServiceLimits()
        limits.maxEntriesPerAccount = 2
        let world = try World(limits: limits)
        let (phone, _, list) = try await Self.device(world)
        _ = try await Self.adds(phone, 3, in: list)
        let r = await phone.sync()
        #expect(r.quotaExceeded)
        #expect(r.uploaded == 0)
        #expect(await phone.status(list)?.queued == 3)
        #expect(try world.serviceEntryIDs(list).isEmpty)
    }

    // MARK: Crash between "applied" and "learned"

    /// The service stored the batch, its answer was lost, and the device lost power: after the
    /// restart the retry is acknowledged, nothing is stored twice and nothing is lost.
    @Test(arguments: [MemoryFileSystem.CrashMode.dropUnsynced, .tearLastWrite(seed: 7), .garbleLastWrite(seed: 9)])
    func aLostAnswerThenAPowerLossNeitherDuplicatesNorLoses(_ mode: MemoryFileSystem.CrashMode) async throws {
        let world = try World()
        let (phone, script, list) = try await Self.device(world)
        let ipad = try world.device("alice:ipad")
        let ids = try await Self.adds(phone, 3, in: list)
        script.on(.upload, .dropResponse)
        let r = await phone.sync()
        #expect(r.offline)
        #expect(try world.serviceEntryIDs(list) == ids, "the service applied the batch")
        try phone.powerLoss(mode)
        #expect(await phone.status(list)?.queued == 3, "the device never learned it")
        let r2 = await phone.sync()
        #expect(r2.isComplete, "\(r2.errors)")
        #expect(r2.uploaded == 3 && r2.rejected.isEmpty)
        #expect(world.core.counters.entriesStored == 3, "the retry stored nothing new")
        #expect(try phone.entryIDs(list) == ids)
        await settle([phone, ipad])
        #expect(try world.serviceEntryIDs(list) == ids)
        try expectConverged(world, [phone, ipad], list)
    }

    /// A rate-limited service is left alone for the rest of the sync once maxAttempts ran out:
    /// the next list is not tried, nor the pull (the engine says such an error stops the sync).
    @Test func aRateLimitedServiceIsNotCalledAgainInTheSameSync() async throws {
        var options = SyncEngineOptions()
        options.maxAttempts = 3
        let world = try World()
        let script = Script()
        let phone = try world.device("alice:phone", options: options, script: script)
        let weekly = try await phone.engine.createList("weekly")
        let party = try await phone.engine.createList("party")
        await phone.sync()
        try await phone.add("Milk", weekly)
        try await phone.add("Cake", party)
        script.forgetLog()
        script.on(.upload, .fail(.rateLimited(retryAfter: .seconds(1))), times: 1_000)
        let r = await phone.sync()
        #expect(!r.isComplete)
        #expect(script.calls(.upload).count == options.maxAttempts, "\(script.log.map(\.call))")
        #expect(script.log.count == options.maxAttempts, "calls after giving up: \(script.log.map(\.call))")
        #expect(await phone.status(weekly)?.queued == 1)
        #expect(await phone.status(party)?.queued == 1)
    }

    /// Power lost at any write of a push (the entries recorded durably before it): after the
    /// restart every change reaches the service exactly once.
    @Test func aPowerLossAtAnyWriteOfAPushLosesAndDuplicatesNothing() async throws {
        func run(failingAt n: Int?) async throws -> (writes: Int, problems: [String]) {
            let world = try World()
            let phone = try world.device("alice:phone")
            let list = try await phone.engine.createList("weekly")
            try await phone.add("Milk", list)
            await phone.sync()
            let ids = try await Self.adds(phone, 5, in: list)
            phone.fs.setFaults(.init(failOnCall: n, failPersistently: true))
            await phone.sync()
            let writes = phone.fs.mutatingCalls
            guard let n else { return (writes, []) }
            phone.fs.setFaults(.init())
            try phone.powerLoss()
            await phone.sync()
            await phone.sync()
            var problems = try convergenceProblems(world, [phone], list).map { "write \(n): \($0)" }
            let stored = try world.serviceEntryIDs(list)
            if !Set(ids).isSubset(of: Set(stored)) { problems.append("write \(n): lost \(Set(ids).subtracting(stored).count) changes") }
            if await phone.status(list)?.queued != 0 { problems.append("write \(n): changes still queued") }
            return (writes, problems)
        }
        let total = try await run(failingAt: nil).writes
        #expect(total > 0)
        var problems: [String] = []
        for n in 1...max(1, total) { problems += try await run(failingAt: n).problems }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
    }
}

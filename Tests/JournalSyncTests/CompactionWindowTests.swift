import Foundation
import Testing
import JournalCodec
import JournalLog
import JournalQuery
@testable import JournalService
import ListModel
@testable import JournalSync
import JournalTesting

/// A fetch that runs beside the service's compaction (fetches do not wait for it, Spec/SYNC.md
/// §6.2): what it serves is the log before the purge or after it, never half of each.
// The engine's compaction has windows between its steps (the mark raised, the log rewritten, the
// snapshot written) that these tests open; over PostgreSQL a zone's compaction is one transaction.
@Suite(.enabled(if: World.isEngine, "the engine's compaction windows")) struct CompactionWindowTests {
    /// What a fetch made inside the hook got.
    final class Window: @unchecked Sendable {
        let lock = NSLock()
        var token: ServiceToken?
        var entries: [JournalEntry] = []
        var refused: (any Error)?
        var done = false
    }

    /// Whether each of two lists was answered, at each moment a test looked.
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var pairs: [(Bool, Bool)] = []
        func add(_ pair: (Bool, Bool)) {
            lock.lock(); defer { lock.unlock() }
            pairs.append(pair)
        }
        func all() -> [(Bool, Bool)] {
            lock.lock(); defer { lock.unlock() }
            return pairs
        }
    }

    /// Alice's list: Milk added and bought long ago with hundreds of items around it, so its add
    /// and its mark-off lie in sealed segments, far apart.
    static func list(compactionGroupEntries: Int = 1_000_000) async throws -> (World, ZoneID, CompactID) {
        var limits = ServiceLimits()
        limits.retentionMillis = day
        limits.compactionGroupEntries = compactionGroupEntries
        let world = try World(limits: limits)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        for k in 0..<200 { try await phone.add("Item \(k)", list) }
        try await phone.engine.record(.markOff(item: milk), in: list)
        for k in 200..<400 { try await phone.add("Item \(k)", list) }
        await phone.sync()
        return (world, list, milk)
    }

    /// The entries after `token` to the end; nil when the token expired (the device re-fetches).
    static func drain(_ world: World, _ list: ZoneID, from start: ServiceToken?) throws -> [JournalEntry]? {
        var token = start
        var entries: [JournalEntry] = []
        while true {
            let page: ZoneChangesPage
            do { page = try world.core.fetchZoneChanges(caller: "alice", zone: list, since: token, limit: 100) } catch {
                if case .tokenExpired = error { return nil }
                throw error
            }
            entries += page.entries
            token = page.token
            if !page.moreComing { return entries }
        }
    }

    /// Runs `fetch` once, while the service's compaction rewrites its log (the first segment it
    /// writes a rewrite of is opened), and compacts.
    @discardableResult
    static func compact(_ world: World, fetchingInside fetch: @escaping @Sendable () -> Void) throws -> ListCompactionReport {
        let once = Window()
        world.serverFS.openHook = { path in
            guard path.hasSuffix(".cleaned") else { return }
            once.lock.lock(); defer { once.lock.unlock() }
            guard !once.done else { return }
            once.done = true
            fetch()
        }
        defer { world.serverFS.openHook = nil }
        let report = try world.compact(after: 2 * day)
        #expect(once.done, "the run rewrote no segment")
        return report
    }

    @Test func aFetchBegunWhileTheServiceRewritesItsLogNeverKeepsHalfAPurgedLifecycle() async throws {
        let (world, list, milk) = try await Self.list()
        let window = Window()
        let report = try Self.compact(world) {
            do {
                let page = try world.core.fetchZoneChanges(caller: "alice", zone: list, since: nil, limit: 1)
                window.token = page.token
                window.entries = page.entries
            } catch { window.refused = error }
        }
        #expect(report.zones.map(\.zone) == [list.storeName])
        guard let token = window.token else {
            #expect(window.refused as? SyncError == .serviceBusy(retryAfter: .seconds(1)))
            return
        }
        guard let rest = try Self.drain(world, list, from: token) else { return }
        let entries = window.entries + rest
        let added = entries.contains { if case .add(milk, _, _) = $0.operation { true } else { false } }
        let bought = entries.contains { if case .markOff(milk) = $0.operation { true } else { false } }
        #expect(added == bought, "the fetch kept Milk's add without its mark-off: Milk would stay on this device's list")
    }

    @Test func aFetchOfAnotherListIsAnsweredWhileOneIsPurged() async throws {
        let (world, list, _) = try await Self.list()
        let phone = try world.device("alice:tablet")
        let other = try await phone.engine.createList("other")
        try await phone.add("Tea", other)
        await phone.sync()
        let window = Window()
        try Self.compact(world) {
            do { window.entries = try world.core.fetchZoneChanges(caller: "alice", zone: other, since: nil, limit: 10).entries } catch {
                window.refused = error
            }
        }
        #expect(window.refused == nil && window.entries.count == 1)
        _ = list
    }

    @Test func thePurgedListIsFetchedAgainOnceTheRunEnds() async throws {
        let (world, list, milk) = try await Self.list()
        try Self.compact(world) {}
        let entries = try #require(try Self.drain(world, list, from: nil))
        // Milk's add and mark-off went (a `place` keeps where it stood, for the items after it).
        #expect(!entries.contains { e in
            switch e.operation { case .add(milk, _, _), .markOff(milk): true; default: false }
        })
        // What stays, and the compaction record after it (SYNC.md §6.7).
        #expect(entries.count == 402)
        #expect(entries.last.map(CompactionRecord.isRecord) == true)
    }

    @Test func aHistoryFetchedWhileTheListIsPurgedIsRefusedForAMoment() async throws {
        let (world, list, _) = try await Self.list()
        let window = Window()
        try Self.compact(world) {
            do { _ = try world.core.fetchZoneHistory(caller: "alice", zone: list) } catch { window.refused = error }
        }
        #expect(window.refused as? SyncError == .serviceBusy(retryAfter: .seconds(1)))
        let history = try ActivityLogCodec.decode(try world.core.fetchZoneHistory(caller: "alice", zone: list))
        #expect(history.allEvents().contains { $0.kind == .markedOff })
    }

    /// A fetch whose read spans the whole of a purge's window (the run raised the mark after the
    /// fetch's first check, and ended before its second) is refused too: its page was read from
    /// the log before the rewrite with the final mark as its token's floor.
    @Test func aFetchWhoseReadSpansAWholePurgeIsRefused() async throws {
        let (world, list, _) = try await Self.list()
        let checked = DispatchSemaphore(value: 0), markRaised = DispatchSemaphore(value: 0)
        let read = DispatchSemaphore(value: 0), runEnded = DispatchSemaphore(value: 0)
        world.core.fetchReadHooks = (afterCheck: { checked.signal(); markRaised.wait() }, afterRead: { read.signal(); runEnded.wait() })
        defer { world.core.fetchReadHooks = nil }
        let outcome = Window()
        let fetch = Thread {
            do { outcome.token = try world.core.fetchZoneChanges(caller: "alice", zone: list, since: nil, limit: 1).token } catch {
                outcome.refused = error
            }
            outcome.lock.withLock { outcome.done = true }
        }
        fetch.start()
        checked.wait()
        let once = Window()
        world.serverFS.openHook = { path in
            guard path.hasSuffix(".cleaned"), once.lock.withLock({ !once.done }) else { return }
            once.lock.withLock { once.done = true }
            markRaised.signal()  // the fetch plans its page under the raised mark, and reads it
            read.wait()  // from the log before the rewrite
        }
        defer { world.serverFS.openHook = nil }
        try world.compact(after: 2 * day)
        runEnded.signal()
        while !outcome.lock.withLock({ outcome.done }) { usleep(1_000) }
        #expect(outcome.token == nil)
        #expect(outcome.refused as? SyncError == .serviceBusy(retryAfter: .seconds(1)))
    }

    /// A run compacts its zones a group at a time: a list whose group is done (rewrite committed,
    /// snapshot written, mark raised) is answered again while the next group is purged, and that
    /// one is refused meanwhile (SYNC.md §6.2 rule 3).
    @Test func aListIsAnsweredAgainOnceItsGroupIsDone() async throws {
        let (world, weekly, _) = try await Self.list(compactionGroupEntries: 1)  // each list a group of its own
        let phone = try world.device("alice:tablet")
        let other = try await phone.engine.createList("other")
        let tea = try await phone.add("Tea", other)
        for k in 0..<100 { try await phone.add("Thing \(k)", other) }
        try await phone.engine.record(.markOff(item: tea), in: other)
        for k in 100..<200 { try await phone.add("Thing \(k)", other) }
        await phone.sync()
        let seen = Answers()
        world.serverFS.openHook = { path in
            guard path.hasSuffix(".cleaned") else { return }
            func answers(_ list: ZoneID) -> Bool { (try? world.core.fetchZoneChanges(caller: "alice", zone: list, since: nil, limit: 1)) != nil }
            seen.add((answers(weekly), answers(other)))
        }
        let report = try world.compact(after: 2 * day)
        world.serverFS.openHook = nil
        #expect(Set(report.zones.map(\.zone)) == [weekly.storeName, other.storeName])
        let answered = seen.all()
        #expect(answered.contains { !$0.0 } && answered.contains { !$0.1 }, "each list is purged in a rewrite of its own")
        #expect(!answered.contains { !$0.0 && !$0.1 }, "a list whose group was done was refused while the next was purged")
    }

    /// A run that fails at any I/O call, its rewrite committed or not, leaves no fetch answered
    /// from a log purged below an unraised mark: the service raises the marks of committed purges
    /// before it answers fetches of their zones again, or keeps refusing them (SYNC.md §6.2 rule 8).
    @Test func aFailedRunRaisesTheMarksOfWhatItCommittedBeforeFetchesResume() async throws {
        var committedThenFailed = 0
        for call in 1... {
            let (world, list, _) = try await Self.list()
            world.serverFS.setFaults(MemoryFileSystem.FaultPlan(failOnCall: call))
            let failed: Bool
            do { try world.compact(after: 2 * day); failed = false } catch { failed = true }
            world.serverFS.setFaults(MemoryFileSystem.FaultPlan())
            guard failed else { break }  // past the run's last I/O call
            let info = try #require(world.serverStore.zone(list.storeName))
            let newest = SnapshotDirectory.list(store: world.serverStore.path, zone: list.storeName, incarnation: info.incarnation,
                                                kind: .history, fs: world.serverFS).first?.sequence ?? 0
            // nil: the store refuses reads (a swap failed part way; a reopen finishes it).
            // (Without the compaction record the failed run may still have written, SYNC.md §6.2 rule 10.)
            let entries = try? world.serviceEntries(list).filter { !CompactionRecord.isRecord($0) }.map(\.id)
            do {
                _ = try world.core.fetchZoneChanges(caller: "alice", zone: list, since: nil, limit: 10)
                #expect(entries != nil, "call \(call): a fetch was answered from a store that refuses reads")
                #expect(newest <= info.lowWaterMark || newest > info.lastChange, "call \(call): a purge's mark was left unraised")
                if let entries, entries.count < 402 { committedThenFailed += 1 }
            } catch {
                #expect(error == .serviceBusy(retryAfter: .seconds(1)), "call \(call): \(error)")
            }
        }
        #expect(committedThenFailed > 0, "no fault point came after the rewrite's commit")
    }
}

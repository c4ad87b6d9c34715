import Foundation
import Testing
import JournalLog
import JournalService
@testable import JournalSync

/// The background window (Spec/SYNC.md §7.11): iOS gives a woken app about 30 s, and the app must
/// answer new data, no data or failed truthfully. A bounded sync does the visible work first,
/// stops starting work at its deadline, cuts off a call under way, and says what it left.
@Suite struct BoundedSyncTests {
    /// Every call takes `delay` (a slow network), and is cut off when its task is cancelled.
    struct SlowService: ForwardingSyncService {
        let inner: LocalService
        let delay: Duration
        var account: String { inner.account }
        func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
            do { try await Task.sleep(for: delay) } catch { throw .networkUnavailable() }
            return try await inner.forward(call)
        }
    }

    /// Alice's phone changed ten lists her iPad holds; the iPad's calls take 200 ms each.
    static func tenChangedLists() async throws -> (World, ipad: Device, lists: [ZoneID]) {
        let world = try World()
        let phone = try world.device("alice:phone")
        var lists: [ZoneID] = []
        for i in 0..<10 { lists.append(try await phone.engine.createList("list-\(i)")) }
        await phone.sync()
        let ipad = try world.device("alice:ipad") { SlowService(inner: $0, delay: .milliseconds(200)) }
        await ipad.sync()
        for list in lists { try await phone.add("Milk", list) }
        await phone.sync()
        return (world, ipad, lists)
    }

    /// A sync that would take over 2 s (11 calls of 200 ms), given 500 ms and a hint for the
    /// first list: it returns before the slow sync could, with that list's change, `newData`,
    /// and the other lists deferred; the next sync finishes them.
    @Test func aDeadlineShorterThanTheWorkReturnsInTimeWithWhatItDid() async throws {
        let (world, ipad, lists) = try await Self.tenChangedLists()
        let start = ContinuousClock.now
        let r = await ipad.engine.sync(until: start + .milliseconds(500), hinted: [ZoneHint(zone: lists[0], head: nil)])
        let took = ContinuousClock.now - start
        #expect(took < .milliseconds(1_500), "the whole sync takes over 2 s; this took \(took)")
        #expect(r.backgroundResult == .newData)
        #expect(r.timedOut)
        #expect(r.problems.isEmpty && !r.offline, "a cut-off call is no failure: \(r.errors)")
        #expect(try ipad.list(lists[0]).items.map(\.text) == ["Milk"], "the hinted list first")
        #expect(!r.deferred.contains(lists[0]), "the hinted list is done")
        let rest = await ipad.sync()
        #expect(rest.isComplete, "\(rest.errors)")
        for list in lists { #expect(try ipad.list(list) == world.serviceList(list)) }
    }

    @Test func nothingNewIsNoData() async throws {
        let (_, ipad, _) = try await Self.tenChangedLists()
        await ipad.sync()
        let r = await ipad.engine.sync(until: .now + .seconds(30))
        #expect(r.backgroundResult == .noData)
        #expect(!r.timedOut && r.deferred.isEmpty)
    }

    @Test func offlineIsFailed() async throws {
        let world = try World()
        let phone = try world.device("alice:phone") { OfflineService(account: $0.account) }
        _ = try await phone.engine.createList("weekly")
        #expect(await phone.engine.sync(until: .now + .seconds(30)).backgroundResult == .failed)
    }
}

import Foundation
import Testing
import JournalLog
import JournalService
@testable import JournalSync
import JournalTesting

/// A device's steady-state sync takes two requests (Spec/SYNC.md §3.11): both databases in one,
/// an upload that moves the token past the device's own entries, and zone heads that spare a
/// fetch of a zone with nothing new.
@Suite struct RoundTripTests {
    /// Counts the calls that reach the service, by name, and the entries fetched.
    final class Counting: ForwardingSyncService, @unchecked Sendable {
        let inner: LocalService
        var account: String { inner.account }
        private let lock = NSLock()
        private var calls: [String] = []
        private var fetched = 0
        init(_ inner: LocalService) { self.inner = inner }
        func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
            let answer = try await inner.forward(call)
            lock.withLock {
                calls.append(call.name)
                if case .zoneChanges(let p) = answer { fetched += p.entries.count }
            }
            return answer
        }
        func take() -> (calls: [String], fetched: Int) {
            lock.withLock {
                defer { (calls, fetched) = ([], 0) }
                return (calls, fetched)
            }
        }
    }

    static func pair() async throws -> (World, Device, Counting, Device, Counting, ZoneID) {
        let world = try World()
        var a: Counting?, b: Counting?
        let alice = try world.device("alice:phone") { c in let x = Counting(c); a = x; return x }
        let bob = try world.device("bob:phone") { c in let x = Counting(c); b = x; return x }
        let list = try await sharedList(alice, with: [bob])
        try await alice.add("Milk", list)
        await settle([alice, bob])
        _ = a!.take(); _ = b!.take()
        return (world, alice, a!, bob, b!, list)
    }

    @Test func oneChangeBetweenTwoDevicesTakesTwoRequestsEach() async throws {
        let (world, alice, a, bob, b, list) = try await Self.pair()
        try await alice.add("Bread", list)
        #expect(await alice.sync().isComplete)
        #expect(await bob.sync().applied == 1)
        let (ac, af) = a.take(), (bc, bf) = b.take()
        #expect(ac == ["upload", "fetchBothDatabases"], "alice: \(ac)")
        #expect(af == 0, "her own entry does not come back")
        #expect(bc == ["fetchBothDatabases", "fetchZoneChanges"], "bob: \(bc)")
        #expect(bf == 1)
        try expectConverged(world, [alice, bob], list)
    }

    @Test func aSyncWithNothingNewTakesOneRequest() async throws {
        let (_, alice, a, _, _, _) = try await Self.pair()
        #expect(await alice.sync().isComplete)
        #expect(a.take().calls == ["fetchBothDatabases"])
    }

    @Test func aChangeBySomeoneElseBeforeTheUploadComesWithTheUploadsAnswer() async throws {
        let (world, alice, a, bob, _, list) = try await Self.pair()
        try await bob.add("Eggs", list)
        await bob.sync()
        try await alice.add("Tea", list)
        let r = await alice.sync()
        // Bob's change stood between her token and her upload: the upload's answer carries it
        // (SYNC.md §3.11), and the database page then names the head she holds.
        #expect(r.applied == 1)
        #expect(a.take().calls == ["upload", "fetchBothDatabases"])
        await settle([alice, bob])
        try expectConverged(world, [alice, bob], list)
    }

    @Test func aHeadTheDeviceHoldsIsAHeadOfTheZoneAsItIsNot() async throws {
        // After bob changes the list, alice's held head no longer matches: she fetches.
        let (world, alice, a, bob, _, list) = try await Self.pair()
        try await bob.add("Jam", list)
        await bob.sync()
        #expect(await alice.sync().applied == 1)
        #expect(a.take().calls == ["fetchBothDatabases", "fetchZoneChanges"])
        try expectConverged(world, [alice, bob], list)
    }
}

import Foundation
import Testing
import JournalLog
import JournalService
@testable import JournalSync
import JournalTesting

/// A fetch never waits for another call's fsync (SYNC.md §2): the service appends its own records
/// outside the lock fetches take. A slow disk here is a sync held in `MemoryFileSystem.syncHook`.
@Suite(.enabled(if: World.isEngine, "it holds the engine's fsync")) struct ServiceLockTests {
    /// Holds the next sync of a log segment until released.
    final class HeldSync: @unchecked Sendable {
        private let lock = NSLock()
        private var armed = false
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)

        func arm() { lock.withLock { armed = true } }

        func hook(_ path: String) {
            guard path.contains(".seg"), lock.withLock({ () -> Bool in defer { armed = false }; return armed }) else { return }
            entered.signal()
            release.wait()
        }
    }

    /// Runs `body` on a thread of its own; the result once it ends.
    final class Background<T>: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var result: Result<T, any Error>?
        init(_ body: @escaping @Sendable () throws -> T) {
            Thread { [self] in
                result = Result { try body() }
                done.signal()
            }.start()
        }
        /// The result, or nil if it did not end within `seconds`.
        func wait(_ seconds: Double) -> Result<T, any Error>? {
            done.wait(timeout: .now() + seconds) == .success ? result : nil
        }
    }

    static func world(_ held: HeldSync) throws -> World {
        let world = try World()
        world.serverFS.syncHook = { held.hook($0) }
        return world
    }

    /// alice's zone shared with bob.
    static func shared(_ world: World) throws -> ZoneID {
        let zone = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: zone)
        _ = try world.core.acceptShare(caller: "bob", invitation: world.core.shareZone(caller: "alice", zone: zone, with: "bob"))
        return zone
    }

    @Test func aDatabaseFetchCompletesWhileARemovalsSyncIsHeld() throws {
        let held = HeldSync()
        let world = try Self.world(held)
        let zone = try Self.shared(world)
        let core = world.core
        held.arm()
        let removal = Background { try core.removeParticipant(caller: "alice", participant: "bob", from: zone) }
        #expect(held.entered.wait(timeout: .now() + 10) == .success, "the removal never synced")
        let fetch = Background { try core.fetchDatabaseChanges(caller: "alice", scope: .private, since: nil, limit: 10) }
        let page = fetch.wait(10)
        #expect(page != nil, "the fetch waited for the removal's fsync")
        #expect((try? page?.get())?.changed == [zone])
        // bob lost the list before his leave was durable: nothing after it can reach him.
        #expect(throws: SyncError.zoneDeleted(reason: .removed)) {
            try core.fetchZoneChanges(caller: "bob", zone: zone, since: nil, limit: 10)
        }
        held.release.signal()
        #expect(removal.wait(10) != nil)
        #expect(core.members(of: zone).isEmpty)
    }

    @Test func aFetchCompletesWhileACreationsSyncIsHeld() throws {
        let held = HeldSync()
        let world = try Self.world(held)
        let zone = try Self.shared(world)
        let core = world.core
        held.arm()
        let creation = Background { try core.createZone(caller: "alice", zone: ZoneID(owner: "alice", name: "other")!) }
        #expect(held.entered.wait(timeout: .now() + 10) == .success, "the creation never synced")
        let fetch = Background { try core.fetchZoneChanges(caller: "bob", zone: zone, since: nil, limit: 10) }
        #expect(fetch.wait(10) != nil, "the fetch waited for the creation's fsync")
        let shared = Background { try core.fetchDatabaseChanges(caller: "bob", scope: .shared, since: nil, limit: 10) }
        #expect((try? shared.wait(10)?.get())?.changed == [zone])
        held.release.signal()
        #expect(creation.wait(10) != nil)
    }

    /// A database page taken while a join is being written does not cover it: paging on from
    /// its token lists the zone once the join is applied.
    @Test func aPageTakenDuringAJoinDoesNotSkipIt() throws {
        let held = HeldSync()
        let world = try Self.world(held)
        let core = world.core
        let zone = ZoneID(owner: "alice", name: "weekly")!
        try core.createZone(caller: "alice", zone: zone)
        let invitation = try core.shareZone(caller: "alice", zone: zone, with: "bob")
        let before = try core.fetchDatabaseChanges(caller: "bob", scope: .shared, since: nil, limit: 10)
        held.arm()
        let join = Background { try core.acceptShare(caller: "bob", invitation: invitation) }
        #expect(held.entered.wait(timeout: .now() + 10) == .success)
        let during = try #require(try Background { try core.fetchDatabaseChanges(caller: "bob", scope: .shared, since: before.token, limit: 10) }.wait(10)?.get())
        held.release.signal()
        #expect(join.wait(10) != nil)
        let after = try core.fetchDatabaseChanges(caller: "bob", scope: .shared, since: during.token, limit: 10)
        #expect(during.changed + after.changed == [zone], "during: \(during.changed), after: \(after.changed)")
    }
}

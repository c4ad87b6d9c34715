import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync
import JournalTesting

/// The reference service's own rules (Spec/SYNC.md §2–§5), called directly.
@Suite struct ServiceCoreTests {
    /// An entry of `zone` by `author`, dated `wall` with its hybrid clock at `hlc` (default: `wall`).
    static func entry(_ zone: ZoneID, by author: String = "alice", wall: Int64, hlc: Int64? = nil, text: String = "Milk") -> JournalEntry {
        JournalEntry(id: .random(), zone: zone.storeName, author: author, wallTime: wall,
                     clock: HybridTime(physicalMillis: UInt64(hlc ?? wall), counter: 0),
                     operation: .add(item: CompactID(text.lowercased())!, text: text, after: nil))
    }

    /// "Saved" means durable: a service over a store that never syncs would acknowledge what a
    /// power loss takes, so it does not start.
    @Test func aServiceRefusesAStoreOfDurabilityNone() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/srv")
        var o = StoreOptions(durability: .none, segmentSize: 16 << 10, preallocate: false)
        o.fileSystem = fs
        let store = try JournalStore.open("/srv/service.wal", options: o)
        defer { try? store.close() }
        #expect {
            _ = try ServiceCore(store: store, now: { 0 })
        } throws: { error in
            guard case ServiceCoreError.notDurable = error else { return false }
            return "\(error)".contains("durability none")
        }
    }

    /// A retry of entries the zone already holds adds nothing, so an account at its quota gets
    /// `saved`, not `quotaExceeded`; a new entry is still refused.
    @Test func aRetryAtTheQuotaIsSavedAndOnlyNewEntriesCount() throws {
        var limits = ServiceLimits()
        limits.maxEntriesPerAccount = 3
        let world = try World(limits: limits)
        let list = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: list)
        let now = world.clock.now()
        let batch = ["Milk", "Eggs", "Tea"].map { Self.entry(list, wall: now, text: $0) }
        #expect(try world.core.upload(caller: "alice", entries: batch, to: list).saved.count == 3)
        let again = try world.core.upload(caller: "alice", entries: batch, to: list)
        #expect(Set(again.saved) == Set(batch.map(\.id)))
        #expect(world.core.counters.entriesStored == 3)
        #expect(throws: SyncError.quotaExceeded) {
            try world.core.upload(caller: "alice", entries: [batch[0], Self.entry(list, wall: now, text: "Jam")], to: list)
        }
    }

    /// Every replica's hybrid clock observes an entry's hlc: one a day ahead of the service's
    /// clock is refused, even when its wall time is now.
    @Test func anEntryWhoseHybridClockIsADayAheadIsInvalid() throws {
        let world = try World()
        let list = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: list)
        let now = world.clock.now()
        let ahead = Self.entry(list, wall: now, hlc: now + 2 * day)
        let fine = Self.entry(list, wall: now, text: "Eggs")
        var failed: [CompactID: EntryFailure] = [:]
        do { _ = try world.core.upload(caller: "alice", entries: [ahead, fine], to: list) } catch {
            if case .partialFailure(let r) = error { failed = r.failed }
        }
        guard case .invalid? = failed[ahead.id] else {
            Issue.record("the entry dated ahead was not refused as invalid: \(failed)")
            return
        }
        #expect(failed[fine.id] == nil)
        #expect(try world.serviceEntryIDs(list) == [fine.id])
    }

    /// A zone's participants leave with it, so a list created again under its name is shared
    /// with no one, and a former participant is told the old one was deleted.
    @Test func aZoneCreatedAgainAfterItsDeletionIsSharedWithNoOne() throws {
        let world = try World()
        let list = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: list)
        let invitation = try world.core.shareZone(caller: "alice", zone: list, with: "bob")
        _ = try world.core.acceptShare(caller: "bob", invitation: invitation)
        #expect(world.core.members(of: list) == ["bob"])
        try world.core.deleteZone(caller: "alice", zone: list)
        try world.core.createZone(caller: "alice", zone: list)
        #expect(world.core.members(of: list).isEmpty)
        #expect(throws: SyncError.zoneDeleted(reason: .deleted)) {
            try world.core.fetchZoneChanges(caller: "bob", zone: list, since: nil, limit: 10)
        }
    }

    /// The service's own zones are `_service/…`, and no account name starts with `_`.
    @Test func noAccountCanOwnTheServicesZones() {
        #expect(SyncNames.accountRefusal("_service") != nil)
        #expect(ZoneID(storeName: "_service/members") == nil)
        #expect(ZoneID(owner: "alice_", name: "x") != nil)
    }

    /// A compacted list whose history file is gone: the service cannot assemble its history,
    /// which no retry fixes, and says so (not "busy", which a client would retry for ever).
    @Test func aHistoryThatCannotBeAssembledIsAnInvalidRequestNotABusyService() async throws {
        let (world, list) = try await Self.compactedListWithoutItsHistory()
        #expect {
            _ = try world.core.fetchZoneHistory(caller: "alice", zone: list)
        } throws: { error in
            guard case SyncError.invalidRequest(let why) = error else { return false }
            return why.contains("history") && why.contains("operator")
        }
    }

    /// A history longer than one answer may carry is refused with its size, as one that cannot
    /// be assembled is: a client could not take it, and would retry for ever.
    @Test func aHistoryOverTheAnswersBytesIsRefusedWithItsSize() async throws {
        var limits = ServiceLimits()
        limits.retentionMillis = day
        limits.maxHistoryBytes = 16
        let world = try World(limits: limits)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        try await phone.engine.record(.markOff(item: milk), in: list)
        await phone.sync()
        _ = try world.compact(after: 2 * day)
        #expect {
            _ = try world.core.fetchZoneHistory(caller: "alice", zone: list)
        } throws: { error in
            guard case SyncError.invalidRequest(let why) = error else { return false }
            return why.contains("bytes, over the 16")
        }
    }

    /// A list the service compacted, left without its snapshot (a run that stopped between its
    /// rewrite and its snapshot): its mark equals its last change, so the service's filter leaves
    /// it out of the next run, which still writes the snapshot it lacks.
    @Test(.enabled(if: World.isEngine, "it removes the engine's files")) func aCompactedListLeftWithoutItsSnapshotGetsItBackAtTheNextRun() async throws {
        let (world, list) = try await Self.compactedList()
        let info = try #require(world.serverStore.zone(list.storeName))
        // Nothing above the mark but the compaction record (SYNC.md §6.7): the filter leaves the
        // zone out until a change arrives.
        #expect(try world.serviceEntries(list).last.map(CompactionRecord.isRecord) == true)
        func states() -> [SnapshotFile] {
            SnapshotDirectory.list(store: world.serverStore.path, zone: list.storeName, incarnation: info.incarnation,
                                   kinds: [.state, .delta, .base], fs: world.serverFS)
        }
        for f in states() { try world.serverFS.remove(f.path) }
        #expect(states().isEmpty)

        let again = try world.compact(after: day)
        #expect(again.zones.isEmpty)
        #expect(states().contains { $0.kind == .state && $0.sequence >= info.lowWaterMark })
        #expect(try world.serviceList(list).items.map(\.text) == ["Eggs"])
    }

    /// Alice's list with Milk bought long ago, compacted by the service.
    static func compactedList() async throws -> (World, ZoneID) {
        let world = try World(retentionMillis: day)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        try await phone.add("Eggs", list, after: milk)
        try await phone.engine.record(.markOff(item: milk), in: list)
        await phone.sync()
        let report = try world.compact(after: 2 * day)
        #expect(report.zones.map(\.zone) == [list.storeName])
        return (world, list)
    }

    /// Alice's list with Milk bought long ago, compacted by the service, then its history
    /// files removed from the service's disk.
    static func compactedListWithoutItsHistory() async throws -> (World, ZoneID) {
        let (world, list) = try await compactedList()
        if let database = world.database {
            try database.executeWaiting("DELETE FROM jlog_history_pieces")
            return (world, list)
        }
        let info = try #require(world.serverStore.zone(list.storeName))
        let files = SnapshotDirectory.list(store: world.serverStore.path, zone: list.storeName, incarnation: info.incarnation,
                                           kind: .history, fs: world.serverFS)
        #expect(!files.isEmpty)
        for f in files { try world.serverFS.remove(f.path) }
        return (world, list)
    }
}

/// A zone-changes page is bounded by bytes as well as by count (SYNC.md §4.2): large entries
/// never make a page a client cannot take, and paging by its tokens still yields every entry
/// once, in order.
@Suite struct PageBytesTests {
    /// Item `n` of `zone`, its text `bytes` long.
    static func large(_ zone: ZoneID, _ n: Int, bytes: Int, wall: Int64) -> JournalEntry {
        JournalEntry(id: .random(), zone: zone.storeName, author: "alice", wallTime: wall,
                     clock: HybridTime(physicalMillis: UInt64(wall), counter: 0),
                     operation: .add(item: CompactID("item-\(n)")!, text: String(repeating: "x", count: bytes), after: nil))
    }

    static let list = ZoneID(owner: "alice", name: "weekly")!

    /// A service whose pages hold `pageBytes`, and `count` entries of `bytes` each uploaded one
    /// by one to `list`.
    static func world(pageBytes: Int, count: Int, bytes: Int) throws -> (World, [JournalEntry]) {
        var limits = ServiceLimits()
        limits.maxPageBytes = pageBytes
        let world = try World(limits: limits)
        try world.core.createZone(caller: "alice", zone: list)
        let entries = (0..<count).map { large(list, $0, bytes: bytes, wall: world.clock.now()) }
        for e in entries { _ = try world.core.upload(caller: "alice", entries: [e], to: list) }
        return (world, entries)
    }

    @Test func aPageOfLargeEntriesStopsAtItsBytesAndPagingYieldsEveryEntryOnce() throws {
        let (world, big) = try Self.world(pageBytes: 10_000, count: 9, bytes: 4_000)
        let list = Self.list
        var token: ServiceToken? = nil
        var fetched: [JournalEntry] = []
        var pages = 0
        repeat {
            let page = try world.core.fetchZoneChanges(caller: "alice", zone: list, since: token, limit: 1_000)
            let bytes = page.entries.reduce(0) { $0 + EntryCodec.encode($1).count }
            #expect(!page.entries.isEmpty && (bytes <= 10_000 || page.entries.count == 1), "\(bytes) bytes in \(page.entries.count)")
            fetched += page.entries
            token = page.token
            pages += 1
            if !page.moreComing { break }
        } while pages < 20
        #expect(fetched.filter { big.contains($0) } == big)
        #expect(pages >= 4)
    }

    /// One entry larger than the page's bytes still goes, alone: a page always moves forward.
    @Test func anEntryLargerThanThePageGoesAlone() throws {
        let (world, big) = try Self.world(pageBytes: 1_000, count: 2, bytes: 2_000)
        let list = Self.list
        let first = try world.core.fetchZoneChanges(caller: "alice", zone: list, since: nil, limit: 1_000)
        #expect(first.moreComing)
        let second = try world.core.fetchZoneChanges(caller: "alice", zone: list, since: first.token, limit: 1_000)
        #expect((first.entries + second.entries).filter { big.contains($0) } == big)
    }
}

/// An owner takes back what it gave (SYNC.md §5.2, §5.3): an invitation not yet accepted is
/// withdrawn by removing its participant or by stopping the sharing, also after a restart.
@Suite struct InvitationWithdrawalTests {
    static let list = ZoneID(owner: "alice", name: "weekly")!

    @Test func removingAnInviteeWithdrawsItsInvitation() throws {
        let world = try World()
        try world.core.createZone(caller: "alice", zone: Self.list)
        let invitation = try world.core.shareZone(caller: "alice", zone: Self.list, with: "bob")
        try world.core.removeParticipant(caller: "alice", participant: "bob", from: Self.list)
        #expect(throws: SyncError.zoneNotFound) { try world.core.acceptShare(caller: "bob", invitation: invitation) }
        #expect(world.core.members(of: Self.list).isEmpty)
    }

    @Test func stoppingSharingWithdrawsEveryInvitation() throws {
        let world = try World()
        try world.core.createZone(caller: "alice", zone: Self.list)
        let toBob = try world.core.shareZone(caller: "alice", zone: Self.list, with: "bob")
        let toCarol = try world.core.shareZone(caller: "alice", zone: Self.list, with: "carol")
        try world.core.stopSharing(caller: "alice", zone: Self.list)
        #expect(throws: SyncError.zoneNotFound) { try world.core.acceptShare(caller: "bob", invitation: toBob) }
        #expect(throws: SyncError.zoneNotFound) { try world.core.acceptShare(caller: "carol", invitation: toCarol) }
    }

    /// The withdrawal of every invitation (an empty account in its record) is read back after a
    /// restart, as another node reads it.
    @Test func stoppingSharingOutlivesARestart() throws {
        let world = try World()
        try world.core.createZone(caller: "alice", zone: Self.list)
        let invitation = try world.core.shareZone(caller: "alice", zone: Self.list, with: "bob")
        try world.core.stopSharing(caller: "alice", zone: Self.list)
        try world.restartService()
        #expect(throws: SyncError.zoneNotFound) { try world.core.acceptShare(caller: "bob", invitation: invitation) }
    }

    @Test func anInvitationIssuedAfterAWithdrawalIsAccepted() throws {
        let world = try World()
        try world.core.createZone(caller: "alice", zone: Self.list)
        _ = try world.core.shareZone(caller: "alice", zone: Self.list, with: "bob")
        try world.core.removeParticipant(caller: "alice", participant: "bob", from: Self.list)
        let again = try world.core.shareZone(caller: "alice", zone: Self.list, with: "bob")
        #expect(try world.core.acceptShare(caller: "bob", invitation: again) == Self.list)
    }

    @Test func aWithdrawalOutlivesARestart() throws {
        let world = try World()
        try world.core.createZone(caller: "alice", zone: Self.list)
        let invitation = try world.core.shareZone(caller: "alice", zone: Self.list, with: "bob")
        try world.core.removeParticipant(caller: "alice", participant: "bob", from: Self.list)
        try world.restartService()
        #expect(throws: SyncError.zoneNotFound) { try world.core.acceptShare(caller: "bob", invitation: invitation) }
    }

    /// Another invitee's invitation stands when one is withdrawn.
    @Test func aWithdrawalIsForItsParticipantOnly() throws {
        let world = try World()
        try world.core.createZone(caller: "alice", zone: Self.list)
        _ = try world.core.shareZone(caller: "alice", zone: Self.list, with: "bob")
        let toCarol = try world.core.shareZone(caller: "alice", zone: Self.list, with: "carol")
        try world.core.removeParticipant(caller: "alice", participant: "bob", from: Self.list)
        #expect(try world.core.acceptShare(caller: "carol", invitation: toCarol) == Self.list)
    }

    /// A removed member's shared database keys the list it left by its removal: paging from just
    /// before the removal, one zone a page, never tells it when the list last changed.
    @Test func aLeftZoneIsKeyedByTheLeaveAlone() throws {
        let world = try World()
        try world.core.createZone(caller: "alice", zone: Self.list)
        _ = try world.core.acceptShare(caller: "bob", invitation: world.core.shareZone(caller: "alice", zone: Self.list, with: "bob"))
        let before = try world.core.fetchDatabaseChanges(caller: "bob", scope: .shared, since: nil, limit: 10).token
        try world.core.removeParticipant(caller: "alice", participant: "bob", from: Self.list)
        let afterRemoval = try world.core.fetchDatabaseChanges(caller: "bob", scope: .shared, since: before, limit: 10)
        #expect(afterRemoval.deleted == [ZoneGone(zone: Self.list, reason: .removed)])
        // The list changes after bob left; another list he is in changes later still.
        _ = try world.core.upload(caller: "alice", entries: [ServiceCoreTests.entry(Self.list, wall: world.clock.now())], to: Self.list)
        let other = ZoneID(owner: "alice", name: "other")!
        try world.core.createZone(caller: "alice", zone: other)
        _ = try world.core.acceptShare(caller: "bob", invitation: world.core.shareZone(caller: "alice", zone: other, with: "bob"))
        let first = try world.core.fetchDatabaseChanges(caller: "bob", scope: .shared, since: before, limit: 1)
        #expect(first.deleted == [ZoneGone(zone: Self.list, reason: .removed)] && first.moreComing)
        let key = first.token.text.split(separator: ".", omittingEmptySubsequences: false)[2]   // jdb2.SCOPE.KEY.…
        let listPositions = try world.core.storage.zoneChanges(Self.list.storeName, since: nil, limit: 100).entries.map(\.sequence)
        #expect(UInt64(key)! < listPositions.max()!, "the page's key \(key) is after the list's last change")
    }
}

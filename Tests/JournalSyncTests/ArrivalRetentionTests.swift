import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync

/// Retention counts from when the service received an entry too, not from the client's clock
/// alone (SYNC.md §6.2 rule 9, COMPACTION.md §1): a device dated a month back cannot make its
/// entries compactable at once and so expire other devices' tokens early.
@Suite struct ArrivalRetentionTests {
    static let retention: Int64 = 14 * 86_400_000

    /// An add and a mark-off dated a month back, uploaded now.
    static func finishedItem(_ list: ZoneID, at wall: Int64, item name: String = "milk") -> [JournalEntry] {
        let item = CompactID(name)!
        func entry(_ op: JournalCodec.EntryOperation, _ ms: Int64) -> JournalEntry {
            JournalEntry(id: .random(), zone: list.storeName, author: "alice", wallTime: ms,
                         clock: HybridTime(physicalMillis: UInt64(ms), counter: 0), operation: op)
        }
        return [entry(.add(item: item, text: "Milk", after: nil), wall), entry(.markOff(item: item), wall + 1)]
    }

    @Test func entriesDatedInThePastWaitForTheRetentionFromTheirArrival() throws {
        let world = try World(retentionMillis: Self.retention)
        let list = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: list)
        let now = world.clock.now()
        _ = try world.core.upload(caller: "alice", entries: Self.finishedItem(list, at: now - 30 * 86_400_000), to: list)
        let early = try world.core.compact(now: now + 86_400_000)
        #expect(early.storage.entriesPurged == 0)
        #expect(early.skipped.contains { $0.zone == list.storeName && { if case .arrivedRecently = $0 { true } else { false } }($0.reason) },
                "\(early.skipped)")
        let late = try world.core.compact(now: now + Self.retention + 86_400_000)
        #expect(late.storage.entriesPurged == 2, "\(late.skipped)")
    }

    /// A short retention is honoured however often the service compacts: runs a second apart
    /// (each noting what had arrived) never keep pushing the arrival of what they saw later, so
    /// a purge comes at most a minute (`ArrivalLog.granularity`) after the retention, never never.
    @Test func runsASecondApartPurgeOnceTheRetentionHasPassedSinceArrival() throws {
        let world = try World(retentionMillis: 20_000)
        let list = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: list)
        _ = try world.core.upload(caller: "alice", entries: Self.finishedItem(list, at: world.clock.now() - 60 * 86_400_000), to: list)
        var purged = 0
        for _ in 0..<(20 + 60 + 2) where purged == 0 {
            purged += try world.compact(after: 1_000).storage.entriesPurged
        }
        #expect(purged == 2, "a 20 s retention with a run every second never purged in 82 s")
    }

    /// Arrival times survive a restart: checkpoints are in the log, so a service restarted after
    /// the upload still purges once the retention has passed since the arrival, and not before.
    @Test func arrivalsSurviveARestart() throws {
        let world = try World(retentionMillis: Self.retention)
        let list = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: list)
        let now = world.clock.now()
        _ = try world.core.upload(caller: "alice", entries: Self.finishedItem(list, at: now - 30 * 86_400_000), to: list)
        try world.restartService()
        #expect(try world.core.compact(now: now + 86_400_000).storage.entriesPurged == 0)
        try world.restartService()
        #expect(try world.core.compact(now: now + Self.retention + 86_400_000).storage.entriesPurged == 2)
    }

    /// Entries whose own time is recent are kept however long ago they arrived: the later of
    /// the two decides.
    @Test func recentEntriesStayWhenTheyArrivedLongAgo() throws {
        let world = try World(retentionMillis: Self.retention)
        let list = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: list)
        let now = world.clock.now()

        // Dated 23 hours ahead (the most the service takes is a day), received now.
        _ = try world.core.upload(caller: "alice", entries: Self.finishedItem(list, at: now + 23 * hour), to: list)
        #expect(try world.core.compact(now: now + Self.retention + hour).storage.entriesPurged == 0)
        #expect(try world.core.compact(now: now + Self.retention + 24 * hour).storage.entriesPurged == 2)
    }

    /// A run raises the mark to its snapshot position, above the entries that arrived too late
    /// for it: those still wait for the retention from their arrival in the runs after it,
    /// though they now lie below the mark (a device that synced since holds them, SYNC.md §6.7).
    @Test func entriesBelowTheMarkWaitForTheRetentionFromTheirArrival() throws {
        let world = try World(retentionMillis: Self.retention)
        let list = ZoneID(owner: "alice", name: "weekly")!
        try world.core.createZone(caller: "alice", zone: list)
        let month: Int64 = 30 * 86_400_000
        _ = try world.core.upload(caller: "alice", entries: Self.finishedItem(list, at: world.clock.now() - month), to: list)
        world.clock.advance(by: Self.retention + 86_400_000)
        _ = try world.core.upload(caller: "alice", entries: Self.finishedItem(list, at: world.clock.now() - month, item: "eggs"), to: list)
        #expect(try world.core.compact(now: world.clock.now()).storage.entriesPurged == 2, "the milk, which arrived long ago")
        world.clock.advance(by: 86_400_000)
        #expect(try world.core.compact(now: world.clock.now()).storage.entriesPurged == 0, "the eggs arrived a day ago")
        world.clock.advance(by: Self.retention)
        let late = try world.core.compact(now: world.clock.now()).storage.entriesPurged
        #expect(late == 3, "the eggs, and the first run's compaction record, now older than the retention")
    }
}

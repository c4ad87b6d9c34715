import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync
import JournalTesting

/// A zone's history read in pages (Spec/SYNC.md §3.12): the pieces newest first, then the log,
/// a few events per page, each page a piece of its own, and a cursor to the next.
@Suite struct HistoryPagesTests {
    /// Pages of two events, so that a short list's history takes several.
    static func world() throws -> World {
        var limits = ServiceLimits()
        limits.retentionMillis = day
        limits.maxHistoryPageEvents = 2
        return try World(limits: limits)
    }

    /// alice's list compacted twice (two history pieces), with events in the log after them.
    static func twiceCompacted(_ world: World) async throws -> (phone: Device, list: ZoneID) {
        let (phone, list) = try await SnapshotRefetchTests.compactedList(world)
        let tea = try await phone.add("Tea", list)
        try await phone.add("Jam", list, after: tea)
        try await phone.engine.record(.markOff(item: tea), in: list)
        await phone.sync()
        try world.compact(after: 2 * day)
        try await phone.add("Soap", list)
        await phone.sync()
        return (phone, list)
    }

    /// Every page from the first, merged as a reader merges pieces (first event of an id kept).
    static func allPages(_ world: World, _ list: ZoneID) throws -> (log: ActivityLog, pages: Int) {
        var log = ActivityLog(zone: list.storeName)
        var cursor: HistoryCursor? = nil, pages = 0
        repeat {
            let page = try world.core.fetchZoneHistoryPage(caller: "alice", zone: list, after: cursor)
            pages += 1
            if !page.bytes.isEmpty {
                let header = try HistoryPieceCodec.decode(page.bytes, into: &log)
                #expect(!header.complete)
                #expect(header.previous == 0)
            }
            cursor = page.next
        } while cursor != nil && pages < 1_000
        return (log, pages)
    }

    @Test func thePagesHoldTheWholeHistoryInTheReadersOrder() async throws {
        let world = try Self.world()
        let (_, list) = try await Self.twiceCompacted(world)
        #expect((try world.core.storage.zoneInfo(list.storeName)?.lowWaterMark ?? 0) > 0)
        let (log, pages) = try Self.allPages(world, list)
        #expect(pages > 3)
        #expect(log == (try world.serviceHistory(list)))
    }

    @Test func aDeviceInstallsTheHistoryPageByPage() async throws {
        let world = try Self.world()
        let (_, list) = try await Self.twiceCompacted(world)
        let ipad = try world.device("alice:ipad", options: SnapshotRefetchTests.onDemand)
        await ipad.sync()
        try await ipad.engine.fetchHistory(list)
        #expect(try ipad.history(list) == world.serviceHistory(list))
    }

    @Test func aPageResumesInsideAPieceFromItsCursorAloneAfterARestart() async throws {
        let world = try Self.world()
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        for i in 0..<6 {
            let item = try await phone.add("thing \(i)", list)
            try await phone.engine.record(.markOff(item: item), in: list)
        }
        await phone.sync()
        try world.compact(after: 2 * day)
        let first = try world.core.fetchZoneHistoryPage(caller: "alice", zone: list, after: nil)
        // The service restarted: where the last page ended is known only from the cursor.
        try world.restartService()
        var log = ActivityLog(zone: list.storeName)
        _ = try HistoryPieceCodec.decode(first.bytes, into: &log)
        var cursor = first.next
        while let c = cursor {
            let page = try world.core.fetchZoneHistoryPage(caller: "alice", zone: list, after: c)
            _ = try HistoryPieceCodec.decode(page.bytes, into: &log)
            cursor = page.next
        }
        #expect(log == (try world.serviceHistory(list)))
    }

    /// Pages from `cursor` on, merged into `log`; how many were read.
    static func pages(_ world: World, _ list: ZoneID, after cursor: HistoryCursor?, into log: inout ActivityLog,
                      until stop: (HistoryCursor) -> Bool = { _ in false }) throws -> (pages: Int, next: HistoryCursor?) {
        var cursor = cursor, pages = 0
        repeat {
            let page = try world.core.fetchZoneHistoryPage(caller: "alice", zone: list, after: cursor)
            pages += 1
            if !page.bytes.isEmpty { _ = try HistoryPieceCodec.decode(page.bytes, into: &log) }
            cursor = page.next
        } while cursor.map { !stop($0) } ?? false && pages < 1_000
        return (pages, cursor)
    }

    /// Marks off the Soap and compacts: one more piece on top of the chain.
    static func compactAgain(_ world: World, _ phone: Device, _ list: ZoneID) async throws {
        let soap = try #require(try phone.list(list).items.first { $0.text == "Soap" })
        try await phone.engine.record(.markOff(item: soap.id), in: list)
        await phone.sync()
        try world.compact(after: 2 * day)
    }

    /// A compaction between pages only adds a piece on top of the chain: the read goes on from
    /// its cursor, reads the new piece once the chain it was in ends, and ends with the whole
    /// history, no page read twice.
    @Test func aCompactionBetweenPagesResumesTheRead() async throws {
        let world = try Self.world()
        let (phone, list) = try await Self.twiceCompacted(world)
        var log = ActivityLog(zone: list.storeName)
        let first = try Self.pages(world, list, after: nil, into: &log) { _ in true }
        try await Self.compactAgain(world, phone, list)
        let rest = try Self.pages(world, list, after: first.next, into: &log)
        #expect(log == (try world.serviceHistory(list)))
        #expect(first.pages + rest.pages <= (try Self.allPages(world, list).pages) + 1)
    }

    /// A compaction while the read is in the log moves entries it has not read into a piece: the
    /// next page reads that piece, then the log again, and the history is whole.
    @Test func aCompactionWhileReadingTheLogResumesWithItsPiece() async throws {
        let world = try Self.world()
        let (phone, list) = try await Self.twiceCompacted(world)
        var log = ActivityLog(zone: list.storeName)
        let inLog = try Self.pages(world, list, after: nil, into: &log) { $0.text.hasPrefix("h2.l.") }
        #expect(inLog.next != nil)
        try await Self.compactAgain(world, phone, list)
        _ = try Self.pages(world, list, after: inLog.next, into: &log)
        #expect(log == (try world.serviceHistory(list)))
    }

    /// A list made again since the first page has another history: its cursor expires.
    @Test func aCursorOfAnEarlierIncarnationExpires() async throws {
        let world = try Self.world()
        let (_, list) = try await Self.twiceCompacted(world)
        let first = try world.core.fetchZoneHistoryPage(caller: "alice", zone: list, after: nil)
        let cursor = try #require(first.next)
        var p = try #require(HistoryPosition(cursor))
        p.incarnation += 1
        #expect(throws: SyncError.tokenExpired) { try world.core.fetchZoneHistoryPage(caller: "alice", zone: list, after: p.cursor) }
    }

    @Test func aCursorTheServiceDidNotWriteIsRefused() async throws {
        let world = try Self.world()
        let (_, list) = try await Self.twiceCompacted(world)
        for text in ["", "h1", "h1.p.1.1.1.0.0.0", "h1.x.1.2.3.4", "h2.l.1.2.3", "h1.l.1.2.3.4", "h2.p.1.2.3.4.5.6", "h1.p.01.2.3.4.5.6", String(repeating: "a", count: 600)] {
            #expect(throws: SyncError.self) { try world.core.fetchZoneHistoryPage(caller: "alice", zone: list, after: HistoryCursor(text)) }
        }
    }

    @Test func aZoneSomeoneElseOwnsLooksLikeOneThatDoesNotExist() async throws {
        let world = try Self.world()
        let (_, list) = try await Self.twiceCompacted(world)
        let cursor = try world.core.fetchZoneHistoryPage(caller: "alice", zone: list, after: nil).next
        #expect(throws: SyncError.zoneNotFound) { try world.core.fetchZoneHistoryPage(caller: "mallory", zone: list, after: nil) }
        #expect(throws: SyncError.zoneNotFound) { try world.core.fetchZoneHistoryPage(caller: "mallory", zone: list, after: cursor) }
    }

    @Test func aNeverCompactedListHasOneEmptyPage() async throws {
        let world = try Self.world()
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        let page = try world.core.fetchZoneHistoryPage(caller: "alice", zone: list, after: nil)
        #expect(page.bytes.isEmpty)
        #expect(page.next == nil)
    }
}

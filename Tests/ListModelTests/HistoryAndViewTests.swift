import JournalCodec
import Testing
@testable import ListModel

@Suite struct HistoryTests {
    static let entries: [JournalEntry] = sevenEntryExample + [
        add("c1", "coffee", "Coffee", by: "bob", at: 10_000),
        change("c2", .markOff(item: id("coffee")), by: "bob", at: 20_000),
        change("c3", .unmark(item: id("coffee")), by: "alice", at: 30_000),
        change("c4", .markOff(item: id("coffee")), by: "carol", at: 40_000),
        add("c5", "coffee2", "coffee", by: "carol", at: 35_000),
        change("c6", .markOff(item: id("coffee2")), by: "alice", at: 38_000),
        change("j1", .join(participant: "carol"), by: "alice", at: 500),
        change("l1", .leave(participant: "bob"), by: "bob", at: 50_000),
        change("o1", .opaque(kind: 0x90, body: [1, 2]), at: 60_000),
    ]

    static func log(_ entries: [JournalEntry] = entries) -> ActivityLog {
        var log = ActivityLog(zone: zone)
        log.record(contentsOf: entries)
        return log
    }

    @Test func whoDeletedTheBreadByText() {
        let d = Self.log().deletions(ofItemsMatching: "BREAD")
        #expect(d.map(\.author) == ["bob"])
        #expect(d.first?.wallTime == Int64(t0 + 5_000))
        #expect(d.first?.text == "Bread")
    }

    @Test func whoDeletedAnItemByID() {
        #expect(Self.log().deletions(of: id("bread")).map(\.entryID) == [id("e6")])
        #expect(Self.log().deletions(of: id("milk")).isEmpty)
    }

    @Test func whenDidWeLastBuyCoffee() {
        let last = Self.log().lastMarkOff(ofItemsMatching: "coffee")
        #expect(last?.author == "carol")
        #expect(last?.wallTime == Int64(t0 + 40_000))
        #expect(last?.item == id("coffee"))
    }

    @Test func containsMatchFindsLongerTexts() {
        #expect(Self.log().items(matching: "OFF", .contains) == [id("coffee"), id("coffee2")])
        #expect(Self.log().items(matching: "OFF").isEmpty)
    }

    @Test func whatHappenedToAnItemInClockOrder() {
        let events = Self.log().events(forItem: id("coffee"))
        #expect(events.map(\.kind) == [.added, .markedOff, .unmarked, .markedOff])
        #expect(events.map(\.author) == ["bob", "bob", "alice", "carol"])
        #expect(events.allSatisfy { $0.text == "Coffee" })
    }

    @Test func participantJoinsAndLeaves() {
        let p = Self.log().participantEvents()
        #expect(p.map(\.kind) == [.joined, .left])
        #expect(p.map(\.text) == ["carol", "bob"])
    }

    @Test func historyIgnoresDuplicatesAndOpaqueKinds() {
        #expect(Self.log(Self.entries + Self.entries).count == Self.entries.count - 1)
        #expect(Self.log(Self.entries.reversed()) == Self.log())
    }

    @Test func historyEncodingRoundTrips() throws {
        let log = Self.log()
        let bytes = ActivityLogCodec.encode(log)
        let back = try ActivityLogCodec.decode(bytes)
        #expect(back == log)
        #expect(back.allEvents() == log.allEvents())
        #expect(ActivityLogCodec.encode(back) == bytes)
        #expect(try ActivityLogCodec.decode(ActivityLogCodec.encode(ActivityLog(zone: zone))) == ActivityLog(zone: zone))
    }

    @Test func historyEncodingRoundTripsRandomLogs() throws {
        for seed in 0..<20 as Range<UInt64> {
            let log = Self.log(randomEntries(seed: seed, count: 80))
            #expect(try ActivityLogCodec.decode(ActivityLogCodec.encode(log)) == log)
        }
    }

    @Test func historyDecodeRejectsCorruption() {
        let bytes = ActivityLogCodec.encode(Self.log())
        var flipped = bytes
        flipped[20] ^= 0x01
        #expect(throws: ActivityLogError.checksumMismatch) { try ActivityLogCodec.decode(flipped) }
        var magic = bytes
        magic[0] = 0
        #expect(throws: ActivityLogError.badMagic) { try ActivityLogCodec.decode(magic) }
        var major = bytes
        major[4] = 9
        #expect(throws: ActivityLogError.unsupportedMajor(9)) { try ActivityLogCodec.decode(major) }
        for n in 0..<bytes.count {
            #expect(throws: ActivityLogError.self) { try ActivityLogCodec.decode(Array(bytes.prefix(n))) }
        }
    }
}

extension HistoryTests {
    /// A count larger than the remaining bytes could hold is refused before anything is reserved.
    @Test func historyDecodeRejectsOversizedCounts() {
        var w = ByteWriter()
        w.append(contentsOf: ActivityLogCodec.magic)
        w.u8(1)
        w.u8(0)
        w.string("z")
        w.varint(UInt64(1) << 40) // authors
        w.u32(CRC32C.checksum(w.bytes))
        #expect {
            try ActivityLogCodec.decode(w.bytes)
        } throws: { error in
            if case .malformed = error as? ActivityLogError { return true }
            return false
        }
    }
}

@Suite struct ViewTests {
    @Test func shoppingModeShowsPendingAddsAsNotificationsOnly() {
        let applied = replay(Array(sevenEntryExample.prefix(2)))
        let remoteAdd = add("r1", "jam", "Jam", by: "bob", at: 9_000)
        let remoteMark = change("r2", .markOff(item: id("milk")), by: "bob", at: 9_500)
        let session = ShoppingSession(applied: applied, pending: [remoteAdd, remoteMark, sevenEntryExample[0]])
        #expect(session.pending.count == 2)
        #expect(session.state == applied.state())
        #expect(session.notifications.map(\.text) == ["Jam"])
        #expect(session.notifications.first?.addedBy == "bob")
    }

    @Test func applyingAChosenNotificationUpdatesTheState() {
        var session = ShoppingSession(applied: replay(Array(sevenEntryExample.prefix(2))))
        session.enqueue(add("r1", "jam", "Jam", by: "bob", at: 9_000))
        session.enqueue(add("r2", "tea", "Tea", by: "bob", at: 9_100))
        let s = session.apply([id("r2")])
        #expect(texts(s) == ["Tea", "Milk", "Bread"])
        #expect(session.notifications.map(\.text) == ["Jam"])
        let all = session.applyAll()
        #expect(texts(all) == ["Tea", "Jam", "Milk", "Bread"])
        #expect(session.pending.isEmpty)
    }

    @Test func horizonHidesItemsAddedAndMarkedOffBeforeIt() {
        let hour: UInt64 = 3_600_000
        let s = replay([
            add("e1", "old", "Old done", at: 0), change("m1", .markOff(item: id("old")), at: hour),
            add("e2", "recent", "Recently done", at: 0), change("m2", .markOff(item: id("recent")), at: 4 * hour),
            add("e3", "active", "Old but active", at: 0),
        ]).state()
        let view = s.hidingDone(now: Int64(t0 + 5 * hour))
        #expect(Set(texts(view)) == ["Recently done", "Old but active"])
        #expect(s.hidingDone(now: Int64(t0 + 5 * hour), horizon: 10 * 3_600_000).items.count == 3)
    }
}

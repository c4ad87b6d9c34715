import Foundation
import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// Issue 17.10: a person who deletes a list expects its contents gone from disk.
@Suite struct DeletedListTests {
    typealias C = CompactorTests

    static func storeBytes(_ fs: MemoryFileSystem, _ store: String) throws -> [[UInt8]] {
        try fs.listDirectory(store).filter { $0.hasSuffix(".seg") }.compactMap { fs.contents(store + "/" + $0) }
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard haystack.count >= n.count else { return false }
        return (0...(haystack.count - n.count)).contains { i in haystack[i..<i + n.count].elementsEqual(n) }
    }

    /// The whole list lives in the active segment, and no live list has anything old: the
    /// compaction still seals it, and the deleted list's text is gone from every segment.
    @Test func aDeletedListsTextLeavesTheDisk() throws {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        try s.append(C.e("p1", .add(item: CompactID("gift")!, text: "Birthday present for Bob", after: nil), 1, zone: "Party"))
        try s.append(C.e("p2", .add(item: CompactID("cake")!, text: "Cake", after: nil), 2, zone: "Party"))
        try s.append(C.e("w1", .add(item: C.milk, text: "Milk", after: nil), 3))
        try s.deleteZone("Party")
        #expect(try Self.storeBytes(fs, s.path).contains { Self.contains($0, "Birthday present") })
        // Compacted the next day: nothing of the live list is old, so only the deletion drives it.
        _ = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: Int64(C.t0) + C.day)
        #expect(!(try Self.storeBytes(fs, s.path).contains { Self.contains($0, "Birthday present") }))
        #expect(!(try Self.storeBytes(fs, s.path).contains { Self.contains($0, "Cake") }))
        #expect(s.zone("Party")?.isDeleted == true)
        #expect(try ListQuery(store: s, fs: fs).materialise(C.zone).state.items.map(\.text) == ["Milk"])
        // After a reopen with the index rebuilt, the list is still deleted.
        try s.close()
        try fs.remove(s.path + "/" + StoreLayout.indexFile)
        let reopened = try JournalStore.open(s.path, options: s.options)
        #expect(reopened.zone("Party")?.isDeleted == true)
        try reopened.close()
    }

    /// As `jlog import --sync`, `jlog delete-zone` and `jlog compact` do, each in a process of
    /// its own: one batch holds both lists, the store is reopened between the steps, and the
    /// live list has nothing older than the cutoff. The deleted list's entries still go,
    /// whatever their age (COMPACTION.md §1).
    @Test func aDeletedListsEntriesGoAfterReopensWhenNoLiveListIsOld() throws {
        let fs = MemoryFileSystem()
        var s = try ListQueryTests.store(fs)
        try s.append(batch: [C.e("p1", .add(item: CompactID("gift")!, text: "Birthday present for Bob", after: nil), 1, zone: "Party"),
                             C.e("w1", .add(item: C.milk, text: "Milk", after: nil), 3),
                             C.e("p2", .add(item: CompactID("cake")!, text: "Cake", after: nil), 2, zone: "Party")])
        let options = s.options
        try s.close()
        s = try JournalStore.open(s.path, options: options)
        try s.deleteZone("Party")
        try s.close()
        s = try JournalStore.open(s.path, options: options)
        let report = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: Int64(C.t0) + C.day)
        #expect(report.storage.deletedZoneEntriesPurged == 2, "\(report.storage) \(report.skipped)")
        #expect(!(try Self.storeBytes(fs, s.path).contains { Self.contains($0, "Birthday present") }))
        #expect(try ListQuery(store: s, fs: fs).materialise(C.zone).state.items.map(\.text) == ["Milk"])
        try s.close()
    }
}

/// Issue 17.8: without `hlc`, the shipped example gave different lists in different orders.
@Suite struct ImportOrderTests {
    static var examples: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("examples/weekly-shop.jsonl").path
    }

    @Test func theSameLinesInAnyOrderGiveTheSameLists() throws {
        let lines = try String(contentsOfFile: Self.examples, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count > 20)
        var rng = SplitMix64(seed: 5)
        var digests: Set<[String: UInt64]> = []
        for round in 0..<6 {
            var order = lines
            if round > 0 { order.shuffle(using: &rng) }
            // Sent twice, in two orders: still one entry each.
            let entries = try (order + order.reversed()).map { try EntryJSON.parse(line: $0).entry() }
            var reducers: [String: ListReducer] = [:]
            for e in entries { _ = reducers[e.zone, default: ListReducer(zone: e.zone)].apply(e) }
            digests.insert(reducers.mapValues { $0.stateDigest() })
        }
        #expect(digests.count == 1)
    }
}

import Foundation
import Testing
import JournalLog
import ListModel
@testable import JournalQuery

/// Observing lists from an app (issue 36): the state now, then after each change; across
/// processes through a reader; ended by cancellation and by close; and the async calls run on
/// the store's own thread.
@Suite struct ListObservationTests {
    typealias C = CompactorTests
    static let zone = C.zone

    static func add(_ id: String, _ text: String, at t: UInt64, zone: String = C.zone) -> JournalEntry {
        C.e(id, .add(item: CompactID(id)!, text: text, after: nil), t, zone: zone)
    }

    static func directory() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("jlog-observe-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    /// Reads values from `observation` until they satisfy `done` (or fails after 10 s).
    static func states<S: AsyncSequence & Sendable>(_ observation: S, until done: @escaping @Sendable ([S.Element]) -> Bool) async throws -> [S.Element] where S.Element: Sendable {
        try await withThrowingTaskGroup(of: [S.Element]?.self) { group in
            group.addTask {
                var seen: [S.Element] = []
                for try await s in observation {
                    seen.append(s)
                    if done(seen) { return seen }
                }
                return seen
            }
            group.addTask {
                try await Task.sleep(for: .seconds(10))
                return nil
            }
            defer { group.cancelAll() }
            return try #require(try await group.next() ?? nil, "the observation timed out")
        }
    }

    @Test func anObservationGivesTheListNowThenAfterEachChange() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lists = try await ListStore.open(dir + "/s.wal")
        try await lists.append(Self.add("milk", "Milk", at: 1))
        let observation = lists.observe(Self.zone)
        let appender = Task {
            try await Task.sleep(for: .milliseconds(50))
            try await lists.append(Self.add("eggs", "Eggs", at: 2))
        }
        let seen = try await Self.states(observation) { $0.last?.items.count == 2 }
        #expect(seen.first?.items.map(\.text) == ["Milk"])
        #expect(Set(seen.last?.items.map(\.text) ?? []) == ["Milk", "Eggs"])
        try await appender.value
        try await lists.close()
    }

    /// A reader in another process (here: a `StoreReader` of the same directory) sees the
    /// writer's changes through its own observation.
    @Test func aReaderObservesWhatTheWriterAppends() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lists = try await ListStore.open(dir + "/s.wal")
        try await lists.append(Self.add("milk", "Milk", at: 1))
        let reader = try StoreReader.open(dir + "/s.wal")
        let observation = ListObservation(reader: reader, zone: Self.zone)
        let appender = Task {
            try await Task.sleep(for: .milliseconds(50))
            try await lists.append(Self.add("tea", "Tea", at: 2))
        }
        let seen = try await Self.states(observation) { $0.last?.items.count == 2 }
        #expect(seen.last?.items.count == 2)
        try await appender.value
        reader.close()
        try await lists.close()
    }

    /// Closing the store ends its observations.
    @Test func closingTheStoreEndsTheObservation() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lists = try await ListStore.open(dir + "/s.wal")
        try await lists.append(Self.add("milk", "Milk", at: 1))
        let (firstState, seen) = AsyncStream<Void>.makeStream()
        let observing = Task { () -> Int in
            var n = 0
            for try await _ in lists.observe(Self.zone) {
                n += 1
                seen.yield()
            }
            return n
        }
        for await _ in firstState { break }
        try await lists.close()
        #expect(try await observing.value == 1)
    }

    /// Cancelling the task that reads an observation ends it (its work on the store stops).
    @Test func cancellingEndsTheObservation() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lists = try await ListStore.open(dir + "/s.wal")
        try await lists.append(Self.add("milk", "Milk", at: 1))
        let (firstState, seen) = AsyncStream<Void>.makeStream()
        let observing = Task { () -> Int in
            var n = 0
            do {
                for try await _ in lists.observe(Self.zone) {
                    n += 1
                    seen.yield()
                }
            } catch {}
            return n
        }
        for await _ in firstState { break }
        observing.cancel()
        #expect(await observing.value == 1)
        try await lists.close()
    }

    /// The set of lists: names and counts, updated when any list changes.
    @Test func theListsAreObservedWithTheirCounts() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lists = try await ListStore.open(dir + "/s.wal")
        try await lists.append(Self.add("milk", "Milk", at: 1))
        let appender = Task {
            try await Task.sleep(for: .milliseconds(50))
            try await lists.append(Self.add("nails", "Nails", at: 2, zone: "Hardware"))
        }
        let seen = try await Self.states(lists.observeLists()) { $0.last!.count == 2 }
        #expect(seen.first?.map(\.zone) == [Self.zone])
        #expect(seen.last?.map(\.zone) == ["Hardware", Self.zone])
        #expect(seen.last?.first?.items == 1)
        try await appender.value
        try await lists.close()
    }

    /// A list deleted and made again under its name shows its new incarnation; a list deleted
    /// for good leaves the summaries.
    @Test func aListMadeAgainAndAListDeletedShowAsTheyAre() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lists = try await ListStore.open(dir + "/s.wal")
        try await lists.append(Self.add("milk", "Milk", at: 1))
        try await lists.append(Self.add("nails", "Nails", at: 2, zone: "Hardware"))
        let store = lists.store
        let changer = Task {
            try await Task.sleep(for: .milliseconds(50))
            try await lists.executor.run { () throws(JournalError) in
                try store.deleteZone(Self.zone)
                try store.deleteZone("Hardware")
                try store.createZone(Self.zone)
            }
            try await lists.append(Self.add("tea", "Tea", at: 3))
            try await lists.append(Self.add("jam", "Jam", at: 4))
        }
        let seen = try await Self.states(lists.observeLists()) { $0.last!.map(\.zone) == [Self.zone] && $0.last!.first?.items == 2 }
        #expect(seen.first?.count == 2)
        try await changer.value
        try await lists.close()
    }

    /// The async calls run on the store's own thread, not the caller's.
    @Test func anAppendRunsOnTheStoresThread() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lists = try await ListStore.open(dir + "/s.wal")
        let executor = lists.executor
        #expect(try await executor.run { executor.isCurrent })
        #expect(!executor.isCurrent)
        try await lists.close()
    }
}

/// The app-facing calls name a list by its `ZoneID` (issue 48 point 8), the same value the sync
/// engine takes: `owner/name` in the store.
@Suite struct ListStoreZoneIDTests {
    @Test func listStoreReadsObservesAndSnapshotsAListByItsZoneID() async throws {
        let dir = try ListObservationTests.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let weekly = try #require(ZoneID(owner: "alice", name: "weekly"))
        let lists = try await ListStore.open(dir + "/s.wal")
        try await lists.append(ListObservationTests.add("milk", "Milk", at: 1, zone: weekly.storeName))
        #expect(try await lists.materialise(weekly).state.items.map(\.text) == ["Milk"])
        #expect(try await lists.changes(in: weekly, since: nil).entries.count == 1)
        #expect(try await lists.writeSnapshot(weekly).entries == 1)
        let seen = try await ListObservationTests.states(lists.observe(weekly)) { !$0.isEmpty }
        #expect(seen.first?.items.map(\.text) == ["Milk"])
        #expect(try ListQuery(store: lists.store).history(weekly).log.count == 1)
        try await lists.close()
    }
}

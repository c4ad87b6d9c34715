import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// What an app developer tripped over (issue 36): each is now what it reads as.
@Suite struct AppDeveloperTrapTests {
    typealias Z = ZoneFeedTests

    /// `durability: .none` is `Durability.none` (the parameter is not optional): in a store of
    /// durability `always`, such an entry is not durable, so the feed does not serve it until
    /// something syncs it; the store's own default would have served it at once.
    @Test func durabilityNoneMeansNoneAndBecomesVisibleWhenSynced() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs)
        try store.append(Z.entry(1, zone: "L"), durability: .none)
        // Not served yet: the zone it creates is not visible either.
        #expect((try? store.changes(in: "L", since: nil))?.entries.isEmpty ?? true)
        try store.sync()
        #expect(try store.changes(in: "L", since: nil).entries.count == 1)
        try store.append(Z.entry(2, zone: "L"))
        #expect(try store.changes(in: "L", since: nil).entries.count == 2)
        try store.close()
    }

    /// A change stream waiting for more finishes when its store closes, instead of waiting for
    /// its task to be cancelled.
    @Test func closingTheStoreEndsItsChangeStreams() async throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs)
        try store.append(Z.entry(1, zone: "L"))
        let pages = Task { () -> Int in
            var n = 0
            for try await _ in store.changeStream(in: "L", since: nil) { n += 1 }
            return n
        }
        let database = Task { () -> Int in
            var n = 0
            for try await _ in store.databaseChangeStream(since: nil) { n += 1 }
            return n
        }
        // Both have delivered what there was and wait; closing ends them.
        for _ in 0..<200 where store.changeGeneration == 0 { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(50))
        try store.close()
        #expect(try await pages.value == 1)
        #expect(try await database.value == 1)
    }

    /// The store's identity is a value, printed as 32 hex digits, the same through a reader.
    @Test func aStoreIDIsAValue() throws {
        try withTemporaryDirectory { dir in
            let store = try JournalStore.open(dir.path("s.wal"), options: storeOptions())
            try store.append(Z.entry(1, zone: "L"))
            let id = store.storeID
            #expect(id.description.count == 32)
            #expect(id == StoreID(high: id.high, low: id.low))
            try store.close()
            let reader = try StoreReader.open(dir.path("s.wal"))
            #expect(reader.storeID == id)
        }
    }
}

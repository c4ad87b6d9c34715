import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// Bad arguments from a caller are thrown errors with a case per meaning, never a trap.
@Suite struct CallerInputTests {
    static func memoryStore(segmentSize: Int = 64 << 10) throws -> JournalStore {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        var o = StoreOptions(durability: .always, segmentSize: segmentSize, preallocate: false)
        o.fileSystem = fs
        return try JournalStore.open("/d/s.wal", options: o)
    }

    /// A page of no entries could not make progress: `invalidLimit`, for 0 and below.
    @Test(arguments: [0, -1, Int.min])
    func aPageOfNoEntriesIsRefused(_ limit: Int) throws {
        let store = try Self.memoryStore()
        try store.append(ZoneFeedTests.entry(1, zone: "List-1"))
        #expect {
            _ = try store.changes(in: "List-1", since: nil, limit: limit)
        } throws: { error in
            guard case FeedError.invalidLimit(limit) = error else { return false }
            return true
        }
        try store.close()
    }

    /// A segment size outside 77 bytes … 2 GiB is `invalidOption`, naming the range.
    @Test(arguments: [0, 10, (1 << 31) + 1])
    func aSegmentSizeOutOfRangeIsRefused(_ size: Int) throws {
        #expect {
            _ = try Self.memoryStore(segmentSize: size)
        } throws: { error in
            guard case JournalError.invalidOption(let why) = error else { return false }
            return why.contains("segmentSize")
        }
    }
}

import Foundation
import Testing
import JournalLog
@testable import JournalQuery
import JournalTesting

/// A query's bad settings are thrown errors, never a trap.
@Suite struct QueryInputTests {
    /// `pageSize` 0 would page for ever: the read is refused with `invalidLimit`.
    @Test func aPageSizeOfZeroIsRefused() throws {
        let fs = MemoryFileSystem()
        let s = try ListQueryTests.store(fs)
        try s.append(CompactorTests.e("w1", .add(item: CompactorTests.milk, text: "Milk", after: nil), 1))
        var q = ListQuery(store: s, fs: fs)
        q.pageSize = 0
        #expect {
            _ = try q.materialise(CompactorTests.zone)
        } throws: { error in
            guard case QueryError.feed(.invalidLimit(0)) = error else { return false }
            return true
        }
        try s.close()
    }
}

import Foundation
import Testing
@testable import JournalQuery

/// The query layer's helper threads (`ListQuery.helperThreads`), which the list model uses only
/// through `ReducerHelpers`.
@Suite struct PageWarmerTests {
    /// The helper only asks the kernel to back the pages: what the memory holds is unchanged,
    /// and it stays writable.
    @Test func warmingLeavesTheMemoryAsItWas() {
        let bytes = PageWarmer.minimumBytes * 2
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes, alignment: 64)
        defer { buffer.deallocate() }
        for i in stride(from: 0, to: bytes / 2, by: 4096) { buffer[i] = UInt8(truncatingIfNeeded: i / 4096) }
        let warmer = PageWarmer.start([buffer])
        warmer?.finish()
        for i in stride(from: 0, to: bytes / 2, by: 4096) { #expect(buffer[i] == UInt8(truncatingIfNeeded: i / 4096)) }
        for i in stride(from: bytes / 2, to: bytes, by: 4096) { buffer[i] = 7 }
        #expect(buffer[bytes - 4096] == 7)
    }

    @Test func aSmallRangeStartsNoThread() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer { buffer.deallocate() }
        #expect(PageWarmer.start([buffer]) == nil)
        #expect(PageWarmer.start([]) == nil)
    }
}

@Suite struct HelperThreadsTests {
    /// Both halves run exactly once and are done when `run` returns.
    @Test func bothHalvesRunOnceBeforeRunReturns() {
        let n = 10_000
        let out = UnsafeMutableBufferPointer<Int>.allocate(capacity: n)
        defer { out.deallocate() }
        out.initialize(repeating: 0)
        TwoThreads.run({ for i in (n / 2)..<n { out[i] += i } }, { for i in 0..<(n / 2) { out[i] += i } })
        #expect(Array(out) == Array(0..<n))
    }
}

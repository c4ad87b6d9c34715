import Foundation
import Testing
@testable import JournalLog
import JournalCodec

/// Work that grows with the store stays off the append path (issue 21): while it runs, another
/// thread's append completes. Each test blocks the background work at a file it opens and
/// appends from a second thread meanwhile; an append that needed the writer's lock would wait
/// for the hook, which gives it 5 s before giving up.
@Suite struct AppendPathTests {
    typealias Z = ZoneFeedTests

    /// Runs `work` on another thread; the semaphore is signalled when it ends.
    static func start(_ work: @escaping @Sendable () throws -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        Thread { try? work(); done.signal() }.start()
        return done
    }

    /// Runs `append` on another thread and reports whether it finished within 5 s.
    static func appendsMeanwhile(_ append: @escaping @Sendable () throws -> Void) -> Bool {
        start(append).wait(timeout: .now() + 5) == .success
    }

    @Test func anIndexCheckpointIsWrittenWithTheLockReleased() throws {
        let mem = MemoryFileSystem()
        try mem.createDirectory("/d")
        let fs = HookFileSystem(mem, suffix: "zones.idx.tmp")
        var options = StoreOptions(durability: .always, segmentSize: 1 << 20, preallocate: false)
        options.fileSystem = fs
        options.indexCheckpointBytes = 1 << 30  // only when asked
        let store = try JournalStore.open("/d/s.wal", options: options)
        for n in 0..<50 { try store.append(Z.entry(n, zone: "List-a")) }
        let passed = Flag()
        fs.hook = { passed.value = Self.appendsMeanwhile { try store.append(Z.entry(1_000, zone: "List-b")) } }
        try store.checkpointIndex()
        #expect(passed.value, "an append waited for the index checkpoint")
        #expect(store.indexCheckpointError == nil)
        try store.close()
        let reopened = try JournalStore.open("/d/s.wal", options: options)
        #expect(try Z.drain(reopened, "List-b", limit: 10).0.count == 1)
    }

    @Test func aCompactionWaitsForACheckpointBeingWritten() throws {
        let mem = MemoryFileSystem()
        try mem.createDirectory("/d")
        let fs = HookFileSystem(mem, suffix: "zones.idx.tmp")
        var options = StoreOptions(durability: .always, segmentSize: 1_024, preallocate: false)
        options.fileSystem = fs
        options.indexCheckpointBytes = 1 << 30
        let store = try JournalStore.open("/d/s.wal", options: options)
        var sequences: [SequenceNumber] = []
        for n in 0..<40 { sequences.append(try store.append(Z.entry(n, zone: "List-a"))) }
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let purge = sequences.filter { $0 <= store.sealedThrough }.prefix(5)
        let finishedEarly = Flag()
        let compaction = Box2()
        fs.hook = {
            // The compaction must not swap frames under the checkpoint being written: it waits.
            compaction.done = Self.start { _ = try store.compact(purging: Array(purge)) }
            finishedEarly.value = compaction.done!.wait(timeout: .now() + 0.3) == .success
        }
        try store.checkpointIndex()
        #expect(!finishedEarly.value, "the compaction did not wait for the checkpoint being written")
        // It runs once the checkpoint is in place; the next open trusts no stale offset.
        #expect(try #require(compaction.done).wait(timeout: .now() + 5) == .success)
        try store.close()
        let reopened = try JournalStore.open("/d/s.wal", options: options)
        #expect(try Z.drain(reopened, "List-a", limit: 7).0.count == 40 - purge.count)
    }
}

final class Flag: @unchecked Sendable { var value = false }
final class Box2: @unchecked Sendable { var done: DispatchSemaphore? }

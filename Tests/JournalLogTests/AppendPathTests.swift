import Foundation
import Testing
@testable import JournalLog
import JournalCodec
import JournalTesting

/// Work that grows with the store stays off the append path (issue 21): while it runs, another
/// thread's append completes. Each test blocks the background work at a file it opens and
/// appends from a second thread meanwhile; an append that needed the writer's lock would wait
/// for the hook, which gives it 5 s before giving up.
@Suite struct AppendPathTests {
    typealias Z = ZoneFeedTests

    /// A store on an in-memory disk whose hook runs at the first open of a file ending in `suffix`.
    static func hooked(_ suffix: String, segmentSize: Int, checkpointBytes: Int = 1 << 30) throws -> (HookFileSystem, StoreOptions) {
        let mem = MemoryFileSystem()
        try mem.createDirectory("/d")
        let fs = HookFileSystem(mem, suffix: suffix)
        var options = StoreOptions(durability: .always, segmentSize: segmentSize, preallocate: false)
        options.fileSystem = fs
        options.indexCheckpointBytes = checkpointBytes  // only when asked
        return (fs, options)
    }

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
        let (fs, options) = try Self.hooked("zones.idx.tmp", segmentSize: 1 << 20)
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

    @Test func aZonesIDsAreReadWithTheLockReleased() throws {
        let (fs, options) = try Self.hooked(".seg", segmentSize: 4_096, checkpointBytes: 16 << 20)
        var store = try JournalStore.open("/d/s.wal", options: options)
        for n in 0..<200 { try store.append(Z.entry(n, zone: "List-a")) }
        try store.append(Z.entry(500, zone: "List-b"))
        try store.close()
        store = try JournalStore.open("/d/s.wal", options: options)
        let reopened = store
        // List-b's ids are loaded first, so the hook catches List-a's read of its frames.
        try reopened.append(Z.entry(501, zone: "List-b"))
        let passed = Flag()
        fs.hook = { passed.value = Self.appendsMeanwhile { try reopened.append(Z.entry(502, zone: "List-b")) } }
        // A retried upload: the zone's ids must be whole for it to be recognised.
        let again = try reopened.append(Z.entry(7, zone: "List-a"))
        #expect(passed.value, "an append to another zone waited for List-a's ids to be read")
        #expect(again == 8, "the retry was stored again instead of recognised")
        #expect(try Z.drain(reopened, "List-a", limit: 50).0.count == 200)
    }

    @Test func aCompactionSwapsItsSegmentsWithOnlyItsZonesHeld() throws {
        let (fs, options) = try Self.hooked(".seg.cleaned", segmentSize: 1_024, checkpointBytes: 16 << 20)
        let store = try JournalStore.open("/d/s.wal", options: options)
        var sequences: [SequenceNumber] = []
        for n in 0..<40 { sequences.append(try store.append(Z.entry(n, zone: "List-a"))) }
        try store.append(Z.entry(500, zone: "List-b"))
        try store.setLowWaterMark("List-a", to: store.sealedThrough)
        let purge = Set(sequences.filter { $0 <= store.sealedThrough }.prefix(5))
        let other = Flag(), same = Flag(), held = Box2()
        fs.renameHook = {
            other.value = Self.appendsMeanwhile { try store.append(Z.entry(501, zone: "List-b")) }
            held.done = Self.start { try store.append(Z.entry(41, zone: "List-a")) }
            same.value = held.done!.wait(timeout: .now() + 0.3) == .success
        }
        let report = try store.compact(within: nil, choosing: { seq, _ in purge.contains(seq) ? .purge : .keep },
                                       unchangedAfter: ["List-a": sequences.last!])
        #expect(report.entriesPurged == purge.count)
        #expect(other.value, "an append to another zone waited for the swap")
        #expect(!same.value, "an append to the compacted zone slipped in during the swap")
        #expect(try #require(held.done).wait(timeout: .now() + 5) == .success)
        #expect(try Z.drain(store, "List-a", limit: 7).0.count == 40 - purge.count + 1)
        #expect(try Z.drain(store, "List-b", limit: 7).0.count == 2)
    }

    @Test func aCompactionWaitsForACheckpointBeingWritten() throws {
        let (fs, options) = try Self.hooked("zones.idx.tmp", segmentSize: 1_024)
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

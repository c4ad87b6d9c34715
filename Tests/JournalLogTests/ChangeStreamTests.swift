import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// Issue 18.3: change notifications as an AsyncSequence.
@Suite struct ChangeStreamTests {
    typealias Z = ZoneFeedTests

    final class Seen: @unchecked Sendable {
        let lock = NSLock()
        var sequences: [SequenceNumber] = []
        func add(_ s: [SequenceNumber]) { lock.withLock { sequences += s } }
        var count: Int { lock.withLock { sequences.count } }
        var all: [SequenceNumber] { lock.withLock { sequences } }
    }

    /// A subscriber sees every committed entry exactly once and in order, across segment rolls
    /// and compactions (its consumer mark holds back what it has not read).
    @Test func aSubscriberSeesEveryEntryOnceInOrderAcrossRollsAndCompaction() async throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs, segmentSize: 1_024)
        try store.createZone("L")
        try store.registerConsumer("subscriber", leaseUntil: nil)
        let seen = Seen()
        let subscriber = Task {
            for try await page in store.changeStream(in: "L", since: nil, limit: 17) {
                seen.add(page.entries.map(\.sequence))
                try store.advanceConsumer("subscriber", zone: "L", to: page.entries.last!.sequence)
            }
        }
        var appended: [SequenceNumber] = []
        for n in 0..<400 {
            appended.append(try store.append(Z.entry(n, zone: "L")))
            if n % 100 == 99 {
                // Compact what the subscriber has read and a sealed segment holds.
                let sealed = try store.sealActiveSegment()
                let floor = min(sealed, store.consumerFloor(zone: "L", incarnation: store.zone("L")!.incarnation, now: 0) ?? 0)
                if floor > 0 {
                    try store.setLowWaterMark("L", to: floor)
                    _ = try store.compact(purging: appended.filter { $0 <= floor && $0 % 3 == 0 })
                }
            }
            if n % 50 == 0 { await Task.yield() }
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while seen.count < appended.count && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        subscriber.cancel()
        _ = await subscriber.result
        #expect(seen.all == appended)
        try store.close()
    }

    /// A reader beside the writer (as another process would be) learns of new entries by polling.
    @Test func aReadersStreamPicksUpWhatTheWriterAppends() async throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs, segmentSize: 1_024)
        try store.append(Z.entry(0, zone: "L"))
        let reader = try StoreReader.open("/d/s.wal", fileSystem: fs)
        reader.pollInterval = .milliseconds(2)
        let seen = Seen()
        let subscriber = Task {
            for try await page in reader.changeStream(in: "L", since: nil) { seen.add(page.entries.map(\.sequence)) }
        }
        var appended: [SequenceNumber] = [1]
        for n in 1..<60 {
            appended.append(try store.append(Z.entry(n, zone: "L")))
            if n % 10 == 0 { try await Task.sleep(for: .milliseconds(3)) }
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while seen.count < appended.count && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        subscriber.cancel()
        _ = await subscriber.result
        #expect(seen.all == appended)
        try store.close()
    }

    @Test func aDatabaseStreamNamesTheZonesThatChange() async throws {
        let (store, _) = try Z.memoryStore()
        try store.append(Z.entry(0, zone: "A"))
        var iterator = store.databaseChangeStream(since: nil).makeAsyncIterator()
        #expect(try await iterator.next()?.changed.map(\.name) == ["A"])
        let next = Task { [iterator] in
            var it = iterator
            return try await it.next()?.changed.map(\.name)
        }
        try await Task.sleep(for: .milliseconds(20))
        try store.append(Z.entry(1, zone: "B"))
        #expect(try await next.value == ["B"])
        try store.close()
    }

    @Test func cancellingAWaitingStreamEndsIt() async throws {
        let (store, _) = try Z.memoryStore()
        try store.append(Z.entry(0))
        let task = Task { () -> Int in
            var pages = 0
            for try await _ in store.changeStream(in: "List-a", since: nil) { pages += 1 }
            return pages
        }
        try await Task.sleep(for: .milliseconds(20))
        task.cancel()
        #expect(try await task.value == 1)
        try store.close()
    }
}

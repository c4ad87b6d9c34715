import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// A file system that refuses every change, as read-only media does.
final class ReadOnlyFileSystem: FileSystem, @unchecked Sendable {
    let base: MemoryFileSystem
    init(_ base: MemoryFileSystem) { self.base = base }
    private func refuse(_ op: String, _ path: String) -> JournalError { .io(operation: op, path: path, errno: EROFS) }
    func openFile(_ path: String, create: Bool, truncate: Bool) throws(JournalError) -> any StorageFile { throw refuse("open", path) }
    func openForReading(_ path: String) throws(JournalError) -> any StorageFile { try base.openForReading(path) }
    func identity(of path: String) -> FileIdentity? { base.identity(of: path) }
    func listDirectory(_ path: String) throws(JournalError) -> [String] { try base.listDirectory(path) }
    func createDirectory(_ path: String) throws(JournalError) { throw refuse("mkdir", path) }
    func rename(_ from: String, _ to: String) throws(JournalError) { throw refuse("rename", from) }
    func remove(_ path: String) throws(JournalError) { throw refuse("unlink", path) }
    func removeDirectory(_ path: String) throws(JournalError) { throw refuse("rmdir", path) }
    func syncDirectory(_ path: String) throws(JournalError) { throw refuse("fsync directory", path) }
    func kind(of path: String) -> FileKind { base.kind(of: path) }
    func lockDirectory(_ path: String) throws(JournalError) -> any FileLock { throw refuse("flock", path) }
}

@Suite struct StoreReaderTests {
    typealias Z = ZoneFeedTests

    static func drain(_ r: StoreReading, _ zone: String, since token: FeedToken? = nil) throws -> ([FeedEntry], FeedToken?) {
        var all: [FeedEntry] = []
        var t = token
        while true {
            let page = try r.changes(in: zone, since: t, limit: 7)
            all += page.entries
            t = page.token
            if !page.moreComing { return (all, t) }
        }
    }

    @Test func aReaderSeesWhatTheWriterAppendedAfterARefresh() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs, segmentSize: 1_024)
        for n in 0..<10 { try store.append(Z.entry(n)) }
        let reader = try StoreReader.open("/d/s.wal", fileSystem: fs)
        let (first, token) = try Self.drain(reader, "List-a")
        #expect(first.map(\.sequence) == Array(1...10))
        #expect(reader.zones().map(\.name) == ["List-a"])
        // Across segment rolls, in a new zone too.
        for n in 10..<40 { try store.append(Z.entry(n, zone: n % 2 == 0 ? "List-a" : "List-b")) }
        #expect(reader.horizon == 10)
        #expect(try reader.refresh())
        #expect(!(try reader.refresh()), "nothing new: a second refresh finds nothing")
        #expect(reader.horizon == 40)
        let (more, _) = try Self.drain(reader, "List-a", since: token)
        #expect(more.map(\.entry) == (10..<40).filter { $0 % 2 == 0 }.map { Z.entry($0, zone: "List-a") })
        #expect(try Self.drain(reader, "List-b").0.map(\.sequence) == (try Self.drain(store, "List-b").0.map(\.sequence)))
        #expect(reader.zones() == store.zones())
        try store.close()
    }

    /// A token the writer issued is valid at a reader, which catches up to answer it.
    @Test func aReaderAnswersATokenTheWriterIssued() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs)
        try store.append(Z.entry(1))
        let reader = try StoreReader.open("/d/s.wal", fileSystem: fs)
        for n in 2...5 { try store.append(Z.entry(n)) }
        let token = try store.changes(in: "List-a", since: nil, limit: 3).token
        let page = try reader.changes(in: "List-a", since: token)
        #expect(page.entries.map(\.sequence) == [4, 5])
        try store.close()
    }

    @Test func aReaderChangesNothingOnDisk() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs, segmentSize: 1_024)
        for n in 0..<30 { try store.append(Z.entry(n)) }
        let before = fs.mutatingCalls
        let reader = try StoreReader.open("/d/s.wal", fileSystem: fs)
        _ = try Self.drain(reader, "List-a")
        try reader.refresh()
        _ = reader.zones()
        #expect(fs.mutatingCalls == before)
        try store.close()
    }

    @Test func aReaderWorksOnReadOnlyMediaWhereAWriterCannot() throws {
        let fs = MemoryFileSystem()
        let (store, options) = try Z.memoryStore(fs, segmentSize: 1_024)
        for n in 0..<30 { try store.append(Z.entry(n)) }
        try store.close()
        let ro = ReadOnlyFileSystem(fs)
        let reader = try StoreReader.open("/d/s.wal", fileSystem: ro)
        #expect(try Self.drain(reader, "List-a").0.count == 30)
        var o = options
        o.fileSystem = ro
        #expect(throws: JournalError.self) { try JournalStore.open("/d/s.wal", options: o) }
    }

    /// A frame half written at the end (a writer appending right now) is not there yet.
    @Test func aTornLookingTailIsTheEndForAReader() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs)
        for n in 0..<5 { try store.append(Z.entry(n)) }
        try store.close()
        let seg = "/d/s.wal/" + (try fs.listDirectory("/d/s.wal").first { $0.hasSuffix(".seg") }!)
        var bytes = fs.contents(seg)!
        bytes += [40, 0, 0, 0, 1, 9, 9, 9]   // the start of a frame header
        fs.install(seg, bytes: bytes)
        let reader = try StoreReader.open("/d/s.wal", fileSystem: fs)
        #expect(reader.horizon == 5)
        #expect(reader.liveTail != nil)
        #expect(try Self.drain(reader, "List-a").0.count == 5)
    }

    @Test func damageBeforeTheEndIsAnErrorOrTheEndOfAPointInTimeRead() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs, segmentSize: 512)
        for n in 0..<40 { try store.append(Z.entry(n)) }
        try store.close()
        let names = try fs.listDirectory("/d/s.wal").filter { $0.hasSuffix(".seg") }.sorted()
        #expect(names.count > 3)
        let seg = "/d/s.wal/" + names[1]
        var bytes = fs.contents(seg)!
        bytes[SegmentHeader.size + 20] ^= 0xFF
        fs.install(seg, bytes: bytes)
        #expect(throws: JournalError.self) { try StoreReader.open("/d/s.wal", fileSystem: fs) }
        let prefix = try StoreReader.open("/d/s.wal", fileSystem: fs, mode: .pointInTime)
        #expect(prefix.horizon < 40 && prefix.horizon > 0)
    }

    /// Issue 17.5: a crash after a compaction's commit point leaves `.swap` files; a reader (and
    /// `LogReader`) reads the committed run whole, exactly what the next writer's open makes of it.
    @Test func aPendingCommitIsReadWhole() throws {
        var found = false
        for failAt in 1...40 where !found {
            let fs = MemoryFileSystem()
            let (store, options, all) = try CompactionTests.filledStore(fs, count: 90)
            let sealed = store.sealedThrough
            try store.setLowWaterMark("List-a", to: sealed)
            let purge = all.filter { $0.value.zone == "List-a" && $0.key <= sealed }.map(\.key)
            fs.setFaults(MemoryFileSystem.FaultPlan(failOnCall: failAt, failPersistently: true))
            let failed = (try? store.compact(purging: purge)) == nil
            fs.setFaults(MemoryFileSystem.FaultPlan())
            let names = try fs.listDirectory("/d/s.wal")
            guard failed, names.contains(where: { $0.hasSuffix(".swap") }),
                  names.filter({ $0.hasSuffix(".seg") }).count > 1 else { continue }
            found = true
            let reader = try StoreReader.open("/d/s.wal", fileSystem: fs)
            #expect(reader.compactionCommitPending)
            let seen = try Self.drain(reader, "List-a").0.map(\.sequence)
            var report: ScanReport?
            var logged: [SequenceNumber] = []
            report = try LogReader.read("/d/s.wal", fs: fs) { e, _ in if case .entry(let s, let x) = e, x.zone == "List-a" { logged.append(s) } }
            #expect(report?.compactionCommitPending == true)
            #expect(logged == seen)
            // The next writer finishes the run: the same entries.
            try? store.close()
            let reopened = try JournalStore.open("/d/s.wal", options: options)
            #expect(try Self.drain(reopened, "List-a").0.map(\.sequence) == seen)
            #expect(seen.allSatisfy { $0 > sealed }, "the committed run purged every sealed List-a entry")
            try reopened.close()
        }
        #expect(found, "no fault point left a pending commit")
    }

    /// A reader opened before a compaction keeps reading its own consistent files; after a refresh
    /// it reads the compacted log. Neither is ever a mix.
    @Test func aReaderAcrossACompactionReadsTheOldLogThenTheNew() throws {
        let fs = MemoryFileSystem()
        let (store, _, all) = try CompactionTests.filledStore(fs, count: 90)
        let reader = try StoreReader.open("/d/s.wal", fileSystem: fs)
        let before = try Self.drain(reader, "List-a").0.map(\.sequence)
        let sealed = store.sealedThrough
        try store.setLowWaterMark("List-a", to: sealed)
        let purge = all.filter { $0.value.zone == "List-a" && $0.key <= sealed }.map(\.key)
        _ = try store.compact(purging: purge)
        #expect(try Self.drain(reader, "List-a").0.map(\.sequence) == before)
        try reader.refresh()
        let after = try Self.drain(reader, "List-a").0.map(\.sequence)
        #expect(after == (try Self.drain(store, "List-a").0.map(\.sequence)))
        #expect(after.count < before.count)
        try store.close()
    }

    /// Readers on other threads beside a writer that appends, rolls and compacts: sequences only
    /// rise, each entry is seen once, and every read matches what the writer holds.
    @Test func readersBesideABusyWriterSeeAConsistentGrowingPrefix() throws {
        let fs = MemoryFileSystem()
        let (store, _) = try Z.memoryStore(fs, segmentSize: 2_048)
        try store.createZone("List-a")
        final class Box: @unchecked Sendable { var done = false; var issues: [String] = []; let lock = NSLock() }
        let box = Box()
        let readers = (0..<2).map { _ in
            Thread {
                do {
                    let r = try StoreReader.open("/d/s.wal", fileSystem: fs)
                    var token: FeedToken? = nil
                    var last: SequenceNumber = 0
                    var finished = false
                    while !finished {
                        box.lock.lock(); finished = box.done; box.lock.unlock()
                        try r.refresh()
                        let page: ZoneChanges
                        do throws(FeedError) {
                            page = try r.changes(in: "List-a", since: token, limit: 50)
                        } catch {
                            guard case .tokenExpired = error else { throw error }
                            // Compaction purged entries this reader had not read: start again.
                            (token, last) = (nil, 0)
                            continue
                        }
                        for e in page.entries {
                            if e.sequence <= last { box.lock.lock(); box.issues.append("sequence \(e.sequence) after \(last)"); box.lock.unlock() }
                            last = e.sequence
                        }
                        token = page.token
                    }
                } catch {
                    box.lock.lock(); box.issues.append("reader: \(error)"); box.lock.unlock()
                }
            }
        }
        readers.forEach { $0.start() }
        for n in 0..<600 {
            try store.append(Z.entry(n, zone: "List-a"), durability: n % 3 == 0 ? .always : Durability.none)
            if n % 150 == 149 {
                let sealed = try store.sealActiveSegment()
                try store.setLowWaterMark("List-a", to: sealed)
                let old = try Self.drain(store, "List-a").0.filter { $0.sequence <= sealed && $0.sequence % 2 == 0 }.map(\.sequence)
                _ = try store.compact(purging: old)
            }
        }
        try store.sync()
        box.lock.lock(); box.done = true; box.lock.unlock()
        while readers.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.01) }
        #expect(box.issues.isEmpty, "\(box.issues.prefix(5))")
        try store.close()
    }
}

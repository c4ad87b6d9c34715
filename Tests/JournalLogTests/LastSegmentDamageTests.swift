import Foundation
import Testing
@testable import JournalLog

/// Issue 46 item 8: `jlog verify` of a store with one bit flipped inside a frame of its last
/// segment, intact frames after it, sometimes called the store clean. The scan took the damage
/// for a live writer's frame in flight (a store without `LOCK` counted as "maybe live") and gave
/// up on it when its settle time ran out before it had looked five times, as it does on a loaded
/// machine. FORMAT.md §9.1 makes the verdict a matter of bytes: a CRC mismatch followed by an
/// intact frame is corruption, never a torn tail and never the end of the log.
@Suite struct LastSegmentDamageTests {
    /// A store as an independent writer of FORMAT.md leaves it: LZ4-compressed batches of 64
    /// entries, 64 KiB segments, no `EPOCHS`, no `index/`, no `LOCK`; then one bit flipped in the
    /// payload of a batch of the last segment that two intact batches follow (`KEY` stays: it is
    /// no part of the log). Built once: every test only reads it.
    final class Fixture: Sendable {
        let directory: TemporaryDirectory
        /// The store, without `LOCK`.
        let store: String
        /// The same bytes, with a `LOCK` that names a live process (a stale one whose process id
        /// was reused, or a writer that is idle): a reader must look again before it reports.
        let lockedStore: String
        /// The frame whose bit is flipped.
        let damaged: RecordLocation
        /// Entries in the frames before the damaged one (what pointInTime keeps).
        let entriesBefore: Int
        static let entries = 3_000
        static let batch = 64

        init() throws {
            directory = try TemporaryDirectory("last-segment-damage")
            store = directory.path("s.wal")
            lockedStore = directory.path("locked.wal")
            try Self.write(store)
            let frames = try recordLocations(store)
            let inLast = frames.filter { $0.segment == frames.last?.segment }
            guard inLast.count >= 3 else { throw FixtureError.lastSegmentTooShort(inLast.count) }
            damaged = inLast[inLast.count - 3]
            entriesBefore = Int(damaged.sequence - 1)
            try Self.flipOneBit(in: damaged, of: store)
            try FileManager.default.copyItem(atPath: store, toPath: lockedStore)
            try writeFile(lockedStore + "/" + StoreLayout.lockFile,
                          Array("pid 1 (an app) since 2026-11-22T10:00:00.000Z\n".utf8))
        }

        enum FixtureError: Error { case lastSegmentTooShort(Int), notCompressed }

        /// Writes the entries in batches, then removes what an independent writer does not make.
        private static func write(_ path: String) throws {
            var generator = EntryGenerator(seed: 46, includeOpaque: false)
            let all = generator.entries(entries)
            let writer = try JournalStore.open(path, options: storeOptions(durability: .none, segmentSize: 64 << 10))
            for start in stride(from: 0, to: all.count, by: batch) {
                try writer.append(batch: Array(all[start..<min(start + batch, all.count)]))
            }
            try writer.close()
            for name in [StoreEpochs.fileName, StoreLayout.indexDirectory, StoreLayout.lockFile] {
                try? FileManager.default.removeItem(atPath: path + "/" + name)
            }
        }

        /// Flips one bit in the middle of the frame's payload, after checking it is an LZ4 batch.
        private static func flipOneBit(in frame: RecordLocation, of store: String) throws {
            let segment = store + "/" + frame.segment
            let payload = frame.offset + Frame.headerSize
            guard frame.type == RecordType.batch.rawValue, try readFile(segment)[payload] & 1 == 1 else { throw FixtureError.notCompressed }
            try flipByte(segment, at: payload + (frame.size - Frame.overhead) / 2, mask: 0x10)
        }
    }

    static let fixture = Result { try Fixture() }

    /// What `jlog verify --json` answers, reduced to what must not vary: every damaged spot the
    /// salvage scan found, and how many entries each recovery mode keeps (nil: it refuses).
    struct Verdict: Equatable, CustomStringConvertible {
        var problems: [String]
        var kept: [RecoveryMode: Int?]

        var description: String {
            let modes = RecoveryMode.allCases.map { m in "\(m.rawValue): " + (kept[m]?.map(String.init) ?? "refuses") }
            return "\(problems) \(modes.joined(separator: ", "))"
        }

        /// Verify's path: a salvage scan, then a read under every mode.
        static func of(_ path: String, settle: Duration = .milliseconds(200)) -> Verdict {
            var problems: [String] = []
            var kept: [RecoveryMode: Int?] = [:]
            for mode in RecoveryMode.allCases {
                var entries = 0
                do {
                    let report = try LogReader.read(path, mode: mode, settle: settle) { event, _ in
                        if case .entry = event { entries += 1 }
                    }
                    kept[mode] = entries
                    if mode == .salvage {
                        problems = report.problems.map { "\($0.problem.kind) at \($0.segment):\($0.offset)\($0.isTornTail ? " (torn tail)" : "")" }
                    }
                } catch {
                    kept[mode] = .some(nil)
                }
            }
            return Verdict(problems: problems, kept: kept)
        }
    }

    /// FORMAT.md §9.1–9.2: corruption, not a torn tail; strict and tolerateTail refuse,
    /// pointInTime keeps the entries before it, salvage every entry but the damaged batch's.
    static func expected(_ f: Fixture) -> Verdict {
        Verdict(problems: ["crcMismatch at \(f.damaged.segment):\(f.damaged.offset)"],
                kept: [.strict: nil, .tolerateTail: nil, .pointInTime: f.entriesBefore,
                       .salvage: Fixture.entries - Fixture.batch])
    }

    @Test func aCRCMismatchFollowedByIntactFramesIsCorruption() throws {
        let f = try Self.fixture.get()
        #expect(Verdict.of(f.store) == Self.expected(f))
    }

    /// Every writer writes `LOCK` before it appends (FORMAT.md §2), so without one nothing can be
    /// in flight, and the damage is judged at once.
    @Test func aStoreWithoutLockHasNoLiveWriter() throws {
        let f = try Self.fixture.get()
        #expect(!WriterLock.writerMayBeLive(store: f.store, fs: PosixFileSystem()))
        #expect(WriterLock.writerMayBeLive(store: f.lockedStore, fs: PosixFileSystem()))
    }

    /// Many verify runs at once, each with a settle time shorter than five looks (as a loaded
    /// machine's 200 ms are): all give the same verdict, the spec's, with or without a `LOCK`
    /// that names a live process. Damage that holds still is damage however slowly it is looked at.
    @Test(arguments: [false, true])
    func concurrentVerifyRunsAllReportTheSameCorruption(locked: Bool) throws {
        let f = try Self.fixture.get()
        let path = locked ? f.lockedStore : f.store
        let verdicts = Self.concurrently(threads: 6, runs: 10) { Verdict.of(path, settle: .milliseconds(20)) }
        let expected = Self.expected(f)
        let wrong = verdicts.filter { $0 != expected }
        let count = wrong.count
        #expect(count == 0, "\(count) of \(verdicts.count) runs answered otherwise, first: \(wrong.first?.description ?? "")")
    }

    /// Runs `body` `runs` times on each of `threads` threads at once; returns every result.
    static func concurrently(threads: Int, runs: Int, _ body: @escaping @Sendable () -> Verdict) -> [Verdict] {
        let results = Results()
        let group = DispatchGroup()
        for _ in 0..<threads {
            group.enter()
            Thread {
                for _ in 0..<runs { results.append(body()) }
                group.leave()
            }.start()
        }
        group.wait()
        return results.all
    }

    /// Verdicts gathered from several threads.
    final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var verdicts: [Verdict] = []
        func append(_ v: Verdict) { lock.withLock { verdicts.append(v) } }
        var all: [Verdict] { lock.withLock { verdicts } }
    }
}

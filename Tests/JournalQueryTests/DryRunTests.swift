import Testing
import JournalLog
import ListModel
@testable import JournalQuery
import JournalTesting

/// A compaction dry run decides and writes nothing, so it needs no writer (issue 21): over a
/// `StoreReader` it runs beside the store's open writer and decides exactly what the writer's
/// own dry run decides.
@Suite struct DryRunTests {
    typealias C = CompactorTests

    /// What a dry run reports, in a comparable form.
    static func decision(_ r: ListCompactionReport) -> [String] {
        r.zones.map { "\($0.zone) \($0.incarnation) chosen \($0.chosen) rewritten \($0.rewritten) mark \($0.lowWaterMark) at \($0.snapshotSequence)" }
            + r.skipped.map { "skipped \($0.zone) \($0.reason)" }
            + ["chosen \(r.chosen)", "rewritten \(r.rewritten)"]
    }

    /// Every file under `path`, with its bytes.
    static func files(_ fs: MemoryFileSystem, _ path: String) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in try fs.listDirectory(path) {
            let p = path + "/" + name
            switch fs.kind(of: p) {
            case .directory: out.merge(try files(fs, p)) { a, _ in a }
            default: out[p] = fs.contents(p) ?? []
            }
        }
        return out
    }

    /// The seven-entry list and bought tea, all in the active segment: a run would seal it first,
    /// and a dry run assumes the seal.
    static func unsealedStore() throws -> (JournalStore, MemoryFileSystem) {
        let fs = MemoryFileSystem()
        if fs.kind(of: "/d") == .missing { try fs.createDirectory("/d") }
        var o = StoreOptions(durability: .always, segmentSize: 1 << 20, preallocate: false)
        o.fileSystem = fs
        let s = try JournalStore.open("/d/s.wal", options: o)
        for x in [C.e("e1", .add(item: C.milk, text: "Milk", after: nil), 1), C.e("e2", .markOff(item: C.milk), 2),
                  C.e("e3", .add(item: C.tea, text: "Tea", after: nil), 3), C.e("e4", .add(item: C.eggs, text: "Eggs", after: C.tea), 4),
                  C.e("e5", .delete(item: C.tea), 5)] {
            try s.append(x)
        }
        return (s, fs)
    }

    @Test(arguments: [false, true])
    func aReadersDryRunDecidesWhatTheWritersDoes(sealed: Bool) throws {
        let (s, fs) = sealed ? try C.sevenEntryStore() : try Self.unsealedStore()
        let reader = try StoreReader.open(s.path, fileSystem: fs)
        let theirs = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: C.later, dryRun: true)
        let mine = try ListCompactor(query: ListQuery(reader: reader)).run(now: C.later, dryRun: true)
        #expect(!theirs.zones.isEmpty)
        #expect(Self.decision(mine) == Self.decision(theirs))
    }

    /// Consumers are read from their files without the writer: one that has processed nothing
    /// holds the list back the same way.
    @Test func aReadersDryRunHonoursConsumers() throws {
        let (s, fs) = try C.sevenEntryStore()
        try s.registerConsumer("uploaded", leaseUntil: nil)
        let reader = try StoreReader.open(s.path, fileSystem: fs)
        let theirs = try ListCompactor(query: ListQuery(store: s, fs: fs)).run(now: C.later, dryRun: true)
        let mine = try ListCompactor(query: ListQuery(reader: reader)).run(now: C.later, dryRun: true)
        #expect(mine.skipped.contains { $0.zone == C.zone && $0.reason == .heldByConsumers(at: 0) })
        #expect(Self.decision(mine) == Self.decision(theirs))
    }

    @Test func aReadersDryRunBesideTheOpenWriterWritesNothing() throws {
        let (s, fs) = try Self.unsealedStore()
        let before = try Self.files(fs, "/d")
        let reader = try StoreReader.open(s.path, fileSystem: fs)
        let report = try ListCompactor(query: ListQuery(reader: reader)).run(now: C.later, dryRun: true)
        #expect(report.zones.first?.chosen ?? 0 > 0)
        #expect(try Self.files(fs, "/d") == before)
        try s.append(C.e("e6", .add(item: C.jam, text: "Jam", after: nil), 6))  // the writer carries on
    }

    @Test func aRunThatWritesRefusesAReader() throws {
        let (s, fs) = try C.sevenEntryStore()
        let reader = try StoreReader.open(s.path, fileSystem: fs)
        #expect(throws: QueryError.self) { _ = try ListCompactor(query: ListQuery(reader: reader)).run(now: C.later) }
        #expect(s.zone(C.zone)?.lowWaterMark == 0)
    }
}

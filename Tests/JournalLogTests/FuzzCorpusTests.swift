import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// Replays every fuzz target's seed corpus and every past crash through the same checks the
/// fuzzers run, so a regression fails here without libFuzzer.
@Suite struct FuzzCorpusTests {
    static let fuzz = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz").standardized

    static func inputs(_ target: String) -> [URL] {
        ["corpus", "regressions"].flatMap { dir -> [URL] in
            let d = fuzz.appendingPathComponent(dir).appendingPathComponent(target)
            return ((try? FileManager.default.contentsOfDirectory(at: d, includingPropertiesForKeys: nil)) ?? [])
                .filter { !$0.lastPathComponent.hasPrefix(".") }
        }
    }

    @Test(arguments: FuzzChecks.targets.keys.sorted())
    func corpusAndPastCrashesReplayCleanly(target: String) throws {
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" { try Self.writeSeeds() }
        let check = try #require(FuzzChecks.targets[target])
        let files = Self.inputs(target)
        #expect(!files.isEmpty, "Fuzz/corpus/\(target) has no seeds")
        for f in files {
            let bytes = try [UInt8](Data(contentsOf: f))
            bytes.withUnsafeBytes { check($0) }
        }
    }

    /// Seeds come from the spec's vectors and golden stores: real encodings, not random bytes.
    static func writeSeeds() throws {
        func put(_ target: String, _ name: String, _ bytes: [UInt8]) throws {
            let d = fuzz.appendingPathComponent("corpus").appendingPathComponent(target)
            try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
            try Data(bytes).write(to: d.appendingPathComponent(name))
        }
        let entries = try SpecVectorTests.sampleLines.map(SpecVectorTests.entry)
        for (i, line) in SpecVectorTests.sampleLines.enumerated() {
            try put("FuzzJSONLine", "line-\(i)", Array(line.utf8))
            try put("FuzzEntry", "entry-\(i)", EntryCodec.encode(entries[i]))
        }
        for (i, line) in SpecVectorTests.placeLines.enumerated() {
            try put("FuzzEntry", "entry-place-\(i)", EntryCodec.encode(try SpecVectorTests.entry(line)))
        }
        for (i, line) in SpecVectorTests.moveLines.enumerated() {
            try put("FuzzEntry", "entry-move-\(i)", EntryCodec.encode(try SpecVectorTests.entry(line)))
            try put("FuzzJSONLine", "line-move-\(i)", Array(line.utf8))
        }
        let encoded = entries.map(EntryCodec.encode)
        try put("FuzzBatch", "plain", BatchCodec.encode(entries: encoded, compress: false))
        try put("FuzzBatch", "lz4", BatchCodec.encode(entries: Array(repeating: encoded, count: 4).flatMap { $0 }, compress: true))
        try put("FuzzBatch", "gaps", BatchCodec.encode(entries: Array(encoded.prefix(3)), sequenceDeltas: [0, 2, 5], compress: false))
        try put("FuzzWireBatch", "plain", WireBatch.encode(entries, compress: false))
        try put("FuzzWireBatch", "lz4", WireBatch.encode(Array(repeating: entries, count: 4).flatMap { $0 }, compress: true))
        let header = SegmentHeader(storeID: (1, 2), baseSequence: 1, previousChain: 7, createdAt: 0)
        try put("FuzzSegmentHeader", "header", header.encoded())
        let consumer = try SpecVectorTests.blocks("compaction.txt")[0]["consumer"].map(SpecVectorTests.bytes) ?? []
        try put("FuzzConsumer", "vector", consumer)
        try put("FuzzConsumer", "no-lease-two-zones", ConsumerCodec.encode(ConsumerState(name: "apply-queue", leaseUntil: nil, marks: [
            ConsumerState.Mark(zone: "List-db6a6e29-weekly", incarnation: 1, position: 27),
            ConsumerState.Mark(zone: "List-5c1f0a77-party", incarnation: 20, position: 26)])))
        try put("FuzzConsumer", "no-marks", ConsumerCodec.encode(ConsumerState(name: "export", leaseUntil: 0)))
        let stores = SpecVectorTests.vectors.appendingPathComponent("stores")
        for store in ["clean.wal", "torn-tail.wal", "corrupt-sealed.wal"] {
            for seg in try StoreLayout.segmentPaths(stores.appendingPathComponent(store).path, fs: PosixFileSystem()) {
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: seg)))
                try put("FuzzSegment", "\(store)-\(URL(fileURLWithPath: seg).lastPathComponent)", bytes)
                try put("FuzzSegmentHeader", "\(store)-\(URL(fileURLWithPath: seg).lastPathComponent)", Array(bytes.prefix(64)))
            }
        }
    }
}

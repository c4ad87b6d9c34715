import Foundation
import JournalSync
import JournalSyncWire
import Testing
import JournalTesting

/// The accounts file (Spec/SYNC.md §9.2) as the fuzz target sees it.
@Suite struct AccountsFileTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz").standardized

    /// Replays the sync layer's fuzz targets' seeds and past crashes (Fuzz/corpus/TARGET,
    /// Fuzz/regressions/TARGET) through their checks.
    static let targets = SyncFuzzChecks.targets.merging(WireFuzzChecks.targets) { a, _ in a }

    @Test(arguments: Self.targets.keys.sorted())
    func theFuzzCorpusReplaysCleanly(target: String) throws {
        let check = try #require(Self.targets[target])
        var count = 0
        for dir in ["corpus", "regressions"] {
            let d = Self.corpus.appendingPathComponent(dir).appendingPathComponent(target)
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: d.path)) ?? []).sorted() where !name.hasPrefix(".") {
                let bytes = try [UInt8](Data(contentsOf: d.appendingPathComponent(name)))
                bytes.withUnsafeBytes { check($0) }
                count += 1
            }
        }
        #expect(count >= 2, "Fuzz/corpus/\(target) has no seeds")
    }

    /// A file whose every byte is right but one is refused whole, not read in part.
    @Test func aFlippedByteRefusesTheWholeFile() throws {
        let list = [AccountCredential(id: "AAAAAAAAAAA", account: "alice", secretHash: String(repeating: "ab", count: 32),
                                                issuedAt: 1, expiresAt: nil, revokedAt: nil)]
        var bytes = AccountsFileCodec.encode(list)
        #expect(AccountsFileCodec.decode(bytes) == list)
        bytes[20] ^= 0x01
        #expect(AccountsFileCodec.decode(bytes) == nil)
    }
}

import Foundation
import JournalLog
import Testing
@testable import JournalSync

/// The sync state file (Spec/SYNC.md §7.2): every field round-trips, and damage is refused.
@Suite struct SyncStateTests {
    static func entry(_ id: String, _ text: String) -> JournalEntry {
        JournalEntry(id: CompactID(id)!, zone: "alice/weekly", author: "alice:phone", wallTime: 1_795_338_000_000,
                     clock: HybridTime(physicalMillis: 1_795_338_000_000, counter: 1),
                     operation: .add(item: CompactID("i-" + id)!, text: text, after: nil))
    }

    /// A state with every field set, every zone flag among them.
    static func full() -> SyncState {
        var s = SyncState(replica: "alice:phone", account: "alice")
        s.clock = 42
        s.lastSync = 1_795_338_000_000
        s.lastError = "offline"
        s.databaseTokens = [.private: ServiceToken("p1"), .shared: ServiceToken("s1")]
        s.signedOutAccount = "alice"
        s.signedOut = [entry("k1", "Kept")]
        var z = SyncState.Zone(zone: ZoneID(owner: "alice", name: "weekly")!, scope: .private)
        z.token = ServiceToken("z1")
        (z.needsFetch, z.existsOnService, z.pendingDelete, z.shopping, z.refetchWanted) = (true, true, true, true, true)
        z.toApply = [entry("a1", "Apply")]
        z.held = [entry("h1", "Held")]
        z.rejected = [CompactID("r1")!]
        z.replacing = SyncState.Replacing(oldIncarnation: 7, token: ServiceToken("z0"), pendingLocal: [entry("p1", "Pending")])
        z.lastError = "over quota"
        s.zones[z.zone.storeName] = z
        var quiet = SyncState.Zone(zone: ZoneID(owner: "bob", name: "party")!, scope: .shared)
        quiet.refetchWanted = true
        s.zones[quiet.zone.storeName] = quiet
        return s
    }

    @Test func everyFieldRoundTrips() throws {
        let s = Self.full()
        #expect(try SyncStateCodec.decode(SyncStateCodec.encode(s)) == s)
    }

    @Test func anUnknownZoneFlagIsRefused() throws {
        var s = SyncState(replica: "alice:phone", account: "alice")
        s.zones["alice/weekly"] = SyncState.Zone(zone: ZoneID(owner: "alice", name: "weekly")!, scope: .private)
        var bytes = SyncStateCodec.encode(s)
        // The zone's flags byte: after owner, name, scope and the absent token.
        let flags = bytes.count - 4 - 6   // flags, toApply 0, held 0, rejected 0, replacing 0, lastError 0
        #expect(bytes[flags] == 0)
        bytes[flags] = 32
        let crc = CRC32C.checksum(Array(bytes[..<(bytes.count - 4)]))
        withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange((bytes.count - 4)..., with: $0) }
        #expect(throws: CodecError.self) { try SyncStateCodec.decode(bytes) }
    }

    @Test func aFlippedByteIsRefused() {
        var bytes = SyncStateCodec.encode(Self.full())
        bytes[bytes.count / 2] ^= 0x04
        #expect(throws: CodecError.self) { try SyncStateCodec.decode(bytes) }
    }

    /// Writes the fuzz target's seeds when JOURNALLOG_WRITE_VECTORS=1.
    @Test func seedCorpusDecodes() throws {
        let seeds: [(String, [UInt8])] = [
            ("full", SyncStateCodec.encode(Self.full())),
            ("fresh", SyncStateCodec.encode(SyncState(replica: "alice:phone", account: "alice"))),
            ("signed-out", SyncStateCodec.encode(SyncState(replica: "bob:tablet", account: nil))),
        ]
        let dir = AccountsFileTests.corpus.appendingPathComponent("corpus/FuzzSyncState")
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for (name, bytes) in seeds { try Data(bytes).write(to: dir.appendingPathComponent(name)) }
        }
        for (_, bytes) in seeds { #expect(throws: Never.self) { try SyncStateCodec.decode(bytes) } }
    }
}

import Foundation
import JournalCodec
import PropertyBased
import Testing
@testable import ListModel
import JournalTesting

@Suite struct SnapshotTests {
    static func snapshot(_ entries: [JournalEntry], sequence: UInt64 = 7) -> [UInt8] {
        SnapshotCodec.encode(reducer: replay(entries), incarnation: 3, sequence: sequence)
    }

    @Test func snapshotRoundTripsHeaderAndState() throws {
        let bytes = Self.snapshot(sevenEntryExample)
        let (header, reducer) = try SnapshotCodec.decode(bytes)
        #expect(header.zone == zone)
        #expect(header.incarnation == 3)
        #expect(header.sequence == 7)
        #expect(header.entryCount == 7)
        #expect(header.digest == replay(sevenEntryExample).state().digest)
        #expect(reducer == replay(sevenEntryExample))
    }

    @Test func snapshotOfAPrefixPlusTheTailEqualsAFullReplay() async throws {
        await propertyCheck(count: 40, input: Gen.int(in: 0...Int.max), Gen.int(in: 0...60), Gen.int(in: 0...60)) { seed, n, cut in
            let entries = shuffledWithDuplicates(randomEntries(seed: UInt64(seed), count: n, moves: seed % 2 == 0), seed: UInt64(seed))
            let split = min(cut, entries.count)
            let bytes = SnapshotCodec.encode(reducer: replay(Array(entries[..<split])), incarnation: 1, sequence: UInt64(split))
            guard var (_, restored) = try? SnapshotCodec.decode(bytes) else {
                Issue.record("snapshot does not decode")
                return
            }
            // Entries re-sent across the snapshot point still give the same state (every operation
            // is idempotent); only the entry count relies on the store's dedup (SNAPSHOT.md §3).
            var resent = restored
            resent.apply(contentsOf: entries[split...])
            let full = replay(entries)
            #expect(resent.state() == full.state())
            #expect(resent.state().digest == full.state().digest)
            // As the store feeds it: the tail holds no entry folded into the snapshot.
            let before = Set(entries[..<split].map(\.id))
            restored.apply(contentsOf: entries[split...].filter { !before.contains($0.id) })
            #expect(restored.state() == full.state())
            #expect(restored.state().digest == full.state().digest)
            #expect(restored == full)
            #expect(restored.stateDigest() == full.state().digest)
            #expect(full.stateDigest() == full.state().digest)
        }
    }

    /// A tombstone keeps only what ordering needs, so marks and texts of deleted items are not
    /// stored, and the snapshot holds no entry ids: deleting everything shrinks it.
    @Test func tombstonesAndSeenIDsAreNotStored() throws {
        let adds = (0..<50).map { add("e\($0)", "i\($0)", "a fairly long item text \($0)", after: $0 == 0 ? nil : "i\($0 - 1)", at: UInt64($0)) }
        let marks = (0..<50).map { change("m\($0)", .markOff(item: id("i\($0)")), at: 100 + UInt64($0)) }
        let deletes = (0..<50).map { change("d\($0)", .delete(item: id("i\($0)")), at: 200 + UInt64($0)) }
        let live = SnapshotCodec.encodeBody(replay(adds + marks))
        let dead = SnapshotCodec.encodeBody(replay(adds + marks + deletes))
        #expect(dead.count < live.count)
        let body = SnapshotCodec.encodeBody(replay(adds + marks + deletes))
        func holds(_ needle: [UInt8]) -> Bool {
            body.count >= needle.count && (0...(body.count - needle.count)).contains { body[$0..<($0 + needle.count)].elementsEqual(needle) }
        }
        #expect(holds([0, 2] + Array("e1".utf8)))
        #expect(!holds(Array("a fairly long".utf8)))
        #expect(!holds([0, 2] + Array("m1".utf8)))
        #expect(!holds([0, 2] + Array("d1".utf8)))
        let (header, restored) = try SnapshotCodec.decode(SnapshotCodec.encode(reducer: replay(adds + marks + deletes), incarnation: 1, sequence: 150))
        #expect(header.entryCount == 150)
        #expect(restored.entryCount == 150)
        #expect(restored.state().items.isEmpty)
        // A late add after a tombstone still lands in place after a restore.
        var r = restored
        r.apply(add("late", "late", "Late", after: "i10", at: 300))
        var full = replay(adds + marks + deletes)
        full.apply(add("late", "late", "Late", after: "i10", at: 300))
        #expect(r == full)
        #expect(r.state() == full.state())
    }

    @Test func snapshotBytesDoNotDependOnArrivalOrder() {
        let entries = randomEntries(seed: 42, count: 50)
        let a = SnapshotCodec.encode(reducer: replay(entries), incarnation: 1, sequence: 50)
        let b = SnapshotCodec.encode(reducer: replay(shuffledWithDuplicates(entries, seed: 9)), incarnation: 1, sequence: 50)
        #expect(a == b)
    }

    /// "José" composed and decomposed are different authors and participants, byte for byte.
    @Test func canonicallyEquivalentNamesStayDistinctThroughASnapshot() throws {
        let composed = "Jos\u{E9}", decomposed = "Jose\u{301}"
        let entries = [add("e1", "a", "A", by: composed, at: 0), add("e2", "b", "B", by: decomposed, at: 0),
                       change("e3", .markOff(item: id("a")), by: decomposed, at: 1), change("e4", .join(participant: composed), at: 2),
                       change("e5", .join(participant: decomposed), at: 3)]
        let full = replay(entries)
        #expect(full.state().participants.count == 2)
        let (_, restored) = try SnapshotCodec.decode(SnapshotCodec.encode(reducer: full, incarnation: 1, sequence: 5))
        #expect(Array(restored.state().canonicalBytes()) == full.state().canonicalBytes())
        #expect(restored == full)
        #expect(replay(entries.reversed()).state().canonicalBytes() == full.state().canonicalBytes())
    }

    @Test func largeSnapshotIsCompressed() throws {
        let entries = (0..<500).map { add("e\($0)", "i\($0)", "the same long item text for every item", at: UInt64($0)) }
        let bytes = Self.snapshot(entries)
        #expect(SnapshotCodec.encodeBody(replay(entries)).count > bytes.count)
        #expect(try SnapshotCodec.decode(bytes).header.flags == SnapshotCodec.flagLZ4)
    }

    @Test func decodeRejectsBadMagic() {
        var bytes = Self.snapshot(sevenEntryExample)
        bytes[1] ^= 0xFF
        #expect(throws: SnapshotError.badMagic) { try SnapshotCodec.decode(bytes) }
    }

    @Test func decodeRejectsABodyWithABadCRC() {
        var bytes = Self.snapshot(sevenEntryExample)
        bytes[64] ^= 0x01 // the body CRC field (the header CRC is recomputed below)
        let headerEnd = 69 + Int(bytes[68])
        let crc = CRC32C.checksum(Array(bytes[0..<headerEnd]))
        for k in 0..<4 { bytes[headerEnd + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
        #expect(throws: SnapshotError.bodyChecksumMismatch) { try SnapshotCodec.decode(bytes) }
    }

    @Test func decodeRejectsAFlippedBodyByte() {
        var bytes = Self.snapshot(sevenEntryExample)
        bytes[bytes.count - 3] ^= 0x40
        #expect(throws: SnapshotError.self) { try SnapshotCodec.decode(bytes) }
    }

    @Test func decodeRejectsAFlippedHeaderByte() {
        var bytes = Self.snapshot(sevenEntryExample)
        bytes[30] ^= 0x01
        #expect(throws: SnapshotError.headerChecksumMismatch) { try SnapshotCodec.decode(bytes) }
    }

    @Test func decodeRejectsEveryTruncation() {
        let bytes = Self.snapshot(sevenEntryExample)
        for n in 0..<bytes.count {
            #expect(throws: SnapshotError.self) { try SnapshotCodec.decode(Array(bytes.prefix(n))) }
        }
    }

    @Test func decodeRejectsUnknownMajor() {
        var bytes = Self.snapshot(sevenEntryExample)
        bytes[8] = 2 // version 2 had no placements (bit 4 of an item's flags); a version-3 reader refuses it
        #expect(throws: SnapshotError.unsupportedMajor(2)) { try SnapshotCodec.decode(bytes) }
        bytes[8] = 4
        #expect(throws: SnapshotError.unsupportedMajor(4)) { try SnapshotCodec.decode(bytes) }
    }

    /// A header claiming a huge body is refused before anything that size is allocated.
    @Test func decodeRejectsOversizedLengths() {
        let good = Self.snapshot(sevenEntryExample)
        func withField(_ offset: Int, _ value: UInt64) -> [UInt8] {
            var b = good
            for k in 0..<8 { b[offset + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(k))) }
            let headerEnd = 69 + Int(b[68])
            let crc = CRC32C.checksum(Array(b[0..<headerEnd]))
            for k in 0..<4 { b[headerEnd + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
            return b
        }
        #expect(throws: SnapshotError.lengthOutOfRange(field: "body length", length: 1 << 40, limit: UInt64(SnapshotCodec.maxBodyBytes))) {
            try SnapshotCodec.decode(withField(48, 1 << 40))
        }
        #expect(throws: SnapshotError.self) { try SnapshotCodec.decode(withField(48, UInt64(SnapshotCodec.maxBodyBytes))) }
        #expect(throws: SnapshotError.self) { try SnapshotCodec.decode(withField(56, UInt64.max)) }
    }

    @Test func decodeRejectsADigestThatDoesNotMatchTheState() {
        var bytes = Self.snapshot(sevenEntryExample)
        bytes[40] ^= 0x01
        let headerEnd = 69 + Int(bytes[68])
        let crc = CRC32C.checksum(Array(bytes[0..<headerEnd]))
        for k in 0..<4 { bytes[headerEnd + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
        #expect {
            try SnapshotCodec.decode(bytes)
        } throws: { error in
            if case .digestMismatch = error as? SnapshotError { return true }
            return false
        }
    }

    /// Spec/vectors/snapshot.txt: the seven-entry example as a snapshot. Regenerate with
    /// JOURNALLOG_WRITE_VECTORS=1 after a deliberate format change (and update Spec/SNAPSHOT.md).
    @Test func snapshotVectorMatches() throws {
        let url = packageRoot.appendingPathComponent("Spec/vectors/snapshot.txt")
        let bytes = SnapshotCodec.encode(reducer: replay(sevenEntryExample), incarnation: 3, sequence: 7, compress: false)
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let digest = String(format: "%016llx", replay(sevenEntryExample).state().digest)
        let moves = SnapshotCodec.encode(reducer: replay(moveExample), incarnation: 3, sequence: 9, compress: false)
        let movesHex = moves.map { String(format: "%02x", $0) }.joined()
        let movesDigest = String(format: "%016llx", replay(moveExample).state().digest)
        let sealed = SnapshotCodec.encode(reducer: replay(SealedTextTests.example), incarnation: 3, sequence: 6, compress: false)
        let sealedHex = sealed.map { String(format: "%02x", $0) }.joined()
        let sealedDigest = String(format: "%016llx", replay(SealedTextTests.example).state().digest)
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" {
            let text = """
            # Snapshot (SNAPSHOT.md): the seven-entry example of MERGE.md §1 (the entries in order),
            # zone List-db6a6e29, incarnation 3, sequence 7, body stored uncompressed (flags 0) so it
            # can be read by hand. digest is ListState.digest of the state (MERGE.md §8).

            digest: \(digest)
            snapshot: \(hex)

            # The example of MERGE.md §3.5 (the seven entries, then carol moves milk after eggs at
            # 09:00:07 and alice adds jam after milk at 09:00:08: Eggs, Milk, Jam), incarnation 3,
            # sequence 9, uncompressed: header flag bit 2 (moves), milk's record with flag bit 5.

            moves-digest: \(movesDigest)
            moves-snapshot: \(movesHex)

            # MERGE.md §11: the example with sealed texts (SealedTextTests.example: milk, bread and
            # eggs added sealed, a sealed rename, bread deleted, milk marked off), incarnation 3,
            # sequence 6, uncompressed. Each sealed value is epoch 1 with every nonce and
            # ciphertext byte equal to a fill byte (milk 01, bread 02, the name 03, eggs 05): the
            # list model never opens them. Header flag bit 3; the name register of form 2; milk's
            # and eggs' records with flag bit 6; the digest in its version-2 form (MERGE.md §8).

            sealed-digest: \(sealedDigest)
            sealed-snapshot: \(sealedHex)

            """
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        let fields = try vectorFields(url)
        #expect(fields["snapshot"] == hex)
        #expect(fields["digest"] == digest)
        let raw = hexBytes(fields["snapshot"] ?? "")
        #expect(try SnapshotCodec.decode(raw).reducer == replay(sevenEntryExample))
        #expect(try SnapshotCodec.decode(raw).header.flags == 0)
        #expect(fields["moves-snapshot"] == movesHex)
        #expect(fields["moves-digest"] == movesDigest)
        let decoded = try SnapshotCodec.decode(hexBytes(fields["moves-snapshot"] ?? ""))
        #expect(decoded.reducer == replay(moveExample))
        #expect(decoded.header.flags == SnapshotCodec.flagMoves)
        #expect(texts(decoded.reducer.state()) == ["Eggs", "Milk", "Jam"])
        #expect(fields["sealed-snapshot"] == sealedHex)
        #expect(fields["sealed-digest"] == sealedDigest)
        let sealedDecoded = try SnapshotCodec.decode(hexBytes(fields["sealed-snapshot"] ?? ""))
        #expect(sealedDecoded.reducer == replay(SealedTextTests.example))
        #expect(sealedDecoded.header.flags == SnapshotCodec.flagSealed)
    }

    /// The fuzz base with "b" gone, "c" marked off and "d" added: a delta body against it.
    static func deltaSeedBody() -> [UInt8] {
        func entry(_ n: UInt64, _ op: JournalCodec.EntryOperation) -> JournalEntry {
            JournalEntry(id: CompactID("f\(n)")!, zone: "fuzz", author: "alice", wallTime: Int64(n),
                         clock: HybridTime(physicalMillis: 1_000 + n, counter: 0), operation: op)
        }
        var r = ListReducer(zone: "fuzz")
        r.apply(contentsOf: [entry(1, .add(item: CompactID("a")!, text: "A", after: nil)),
                             entry(3, .add(item: CompactID("c")!, text: "C", after: CompactID("a")!)),
                             entry(5, .markOff(item: CompactID("c")!)),
                             entry(6, .add(item: CompactID("d")!, text: "D", after: CompactID("c")!))])
        return SnapshotDelta.deltaBody(SnapshotCodec.encodeBody(r), against: ListFuzzChecks.fuzzBaseBody, base: .init(sequence: 1, bodyCRC: 0))!
    }

    static func deltaSeedPair() -> [UInt8] {
        let base = SnapshotDeltaTests.base(SnapshotDeltaTests.list(count: 12))
        let delta = SnapshotDelta.encode(reducer: replay(SnapshotDeltaTests.list(count: 12, skipping: [2], extra: 1)),
                                         incarnation: 3, sequence: 500, base: base)!
        var out: [UInt8] = []
        withUnsafeBytes(of: UInt32(base.count).littleEndian) { out += $0 }
        return out + base + delta
    }

    @Test func deltaSeedsPassTheFuzzCheck() {
        #expect((try? SnapshotDelta.apply(Self.deltaSeedBody(), to: ListFuzzChecks.fuzzBaseBody)) != nil)
        let pair = Self.deltaSeedPair()
        let n = Int(pair[0]) | Int(pair[1]) << 8 | Int(pair[2]) << 16
        #expect((try? SnapshotDelta.decode(Array(pair[(4 + n)...]), base: Array(pair[4..<(4 + n)]))) != nil)
    }

    /// Replays Fuzz/corpus/FuzzSnapshot and Fuzz/regressions/FuzzSnapshot through the fuzz check.
    @Test func fuzzCorpusPassesTheSnapshotCheck() throws {
        #expect(try replayFuzzCorpus("FuzzSnapshot", ListFuzzChecks.snapshot) >= 3)
    }

    /// Writes the seed corpus when JOURNALLOG_WRITE_VECTORS=1 (real snapshots of several shapes).
    @Test func seedCorpusDecodes() throws {
        let url = packageRoot.appendingPathComponent("Fuzz/corpus/FuzzSnapshot")
        let seeds: [(String, [UInt8])] = [
            ("seven-entry-example", Self.snapshot(sevenEntryExample)),
            ("random-60", Self.snapshot(randomEntries(seed: 7, count: 60))),
            ("moves-random-60", Self.snapshot(randomEntries(seed: 7, count: 60, moves: true))),
            ("sealed-example", Self.snapshot(SealedTextTests.example)),
            ("compressed-300", Self.snapshot((0..<300).map { add("e\($0)", "i\($0)", "same text", after: $0 == 0 ? nil : "i\($0 - 1)", at: UInt64($0)) })),
            ("empty", SnapshotCodec.encode(reducer: ListReducer(zone: zone), incarnation: 0, sequence: 0)),
            // A bare body: the fuzz check also feeds its input to the body parser (past the CRCs).
            ("body-random-60", SnapshotCodec.encodeBody(replay(randomEntries(seed: 7, count: 60)))),
            // A delta body against the fuzz check's fixed base, and a base file and a delta file.
            ("delta-body", Self.deltaSeedBody()),
            ("delta-pair", Self.deltaSeedPair()),
        ]
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            for (name, bytes) in seeds { try Data(bytes).write(to: url.appendingPathComponent(name)) }
        }
        for (name, bytes) in seeds where !name.hasPrefix("body-") && !name.hasPrefix("delta-") { #expect(throws: Never.self) { try SnapshotCodec.decode(bytes) } }
    }
}

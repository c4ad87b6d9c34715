import Foundation
import Testing
import JournalCodec
import JournalSeal

/// Sealed texts (Spec/SEALING.md §2, §3): they open only under their list's key of their epoch,
/// for the entry they were sealed for; their size tells the text's length only to its bucket;
/// each epoch's key opens the one before it.
@Suite struct SealingTests {
    static let zone = "alice/Qm9vbXMtMTIzNDU"
    static let key = ListKey(epoch: 1, material: Array(0..<32))!
    static let sealer = TextSealer(key: key, zone: zone)

    static func binding(entry: String = "00000000-0000-4000-8000-000000000001", item: String? = "00000000-0000-4000-8000-0000000000aa",
                        author: String = "alice:phone", epoch: UInt64 = 1, zone: String = zone) -> SealBinding {
        SealBinding(zone: zone, entry: CompactID(entry)!, kind: 0x41, item: item.flatMap(CompactID.init),
                    author: author, clock: HybridTime(physicalMillis: 1_764_000_000_000, counter: 3), wallTime: 1_764_000_000_123, epoch: epoch)
    }

    @Test(arguments: ["", "Milk", "Chopped tomatoes x2", String(repeating: "é", count: 200), String(repeating: "x", count: 4_096)])
    func aSealedTextOpensToItself(text: String) throws {
        let value = try Self.sealer.seal(text, for: Self.binding())
        #expect(try Self.sealer.open(try SealedValue(decoding: value.encoded), for: Self.binding()) == text)
        #expect(value.encoded.count <= SealedValue.maxBytes)
    }

    @Test func aTextOverTheLimitIsNotSealed() {
        #expect(throws: SealError.textTooLong(bytes: 4_097)) { try Self.sealer.seal(String(repeating: "x", count: 4_097), for: Self.binding()) }
    }

    enum Moved: String, CaseIterable, Sendable { case entry, item, noItem, author, zone }

    @Test(arguments: Moved.allCases)
    func aValueMovedToAnotherEntryItemAuthorOrListDoesNotOpen(moved: Moved) throws {
        let value = try Self.sealer.seal("Milk", for: Self.binding())
        let elsewhere = switch moved {
        case .entry: Self.binding(entry: "00000000-0000-4000-8000-000000000002")
        case .item: Self.binding(item: "00000000-0000-4000-8000-0000000000bb")
        case .noItem: Self.binding(item: nil)
        case .author: Self.binding(author: "bob:phone")
        case .zone: Self.binding(zone: "alice/other")
        }
        #expect(throws: SealError.cannotOpen) { try Self.sealer.open(value, for: elsewhere) }
    }

    @Test func anotherListsKeyDoesNotOpenIt() throws {
        let value = try Self.sealer.seal("Milk", for: Self.binding())
        let stranger = TextSealer(key: ListKey.random(epoch: 1), zone: Self.zone)
        #expect(throws: SealError.cannotOpen) { try stranger.open(value, for: Self.binding()) }
    }

    @Test func aChangedByteDoesNotOpen() throws {
        var value = try Self.sealer.seal("Milk", for: Self.binding())
        value.sealed[3] ^= 1
        #expect(throws: SealError.cannotOpen) { try Self.sealer.open(value, for: Self.binding()) }
    }

    @Test func aValueOfAnotherEpochIsRefusedBeforeOpening() throws {
        let second = TextSealer(key: ListKey.random(epoch: 2), zone: Self.zone)
        let value = try second.seal("Milk", for: Self.binding(epoch: 2))
        #expect(throws: SealError.wrongEpoch(key: 1, value: 2)) { try Self.sealer.open(value, for: Self.binding()) }
        #expect(throws: SealError.wrongEpoch(key: 1, value: 2)) { try Self.sealer.seal("Milk", for: Self.binding(epoch: 2)) }
    }

    /// Lengths show only their bucket: texts of 1 and 13 bytes seal to the same size.
    @Test func theSizeTellsOnlyTheBucket() throws {
        let short = try Self.sealer.seal("a", for: Self.binding()), longer = try Self.sealer.seal("Chopped beans", for: Self.binding())
        #expect(short.encoded.count == longer.encoded.count)
        #expect(short.encoded.count == 1 + 1 + 12 + 16 + 16)
        #expect((0...4_098).map { SealPadding.paddedSize(max(1, $0)) }.allSatisfy { SealPadding.isPaddedSize($0) })
        #expect([1, 16, 17, 100, 257, 300, 1_000, 4_098].map(SealPadding.paddedSize) == [16, 16, 32, 128, 272, 304, 1_024, 4_352])
    }

    @Test func paddingThatIsNotZerosDoesNotRead() {
        var padded = SealPadding.pad("Milk")!
        #expect(SealPadding.unpad(padded) == "Milk")
        padded[15] = 1
        #expect(SealPadding.unpad(padded) == nil)
    }

    @Test func eachKeyOpensTheOneBeforeIt() throws {
        let first = ListKey.random(epoch: 1), second = ListKey.random(epoch: 2), third = ListKey.random(epoch: 3)
        let links = (try second.backLink(to: first, zone: Self.zone), try third.backLink(to: second, zone: Self.zone))
        #expect(try third.openBackLink(links.1, zone: Self.zone) == second)
        #expect(try second.openBackLink(links.0, zone: Self.zone) == first)
        #expect(throws: SealError.cannotOpen) { try third.openBackLink(links.1, zone: "alice/other") }
        #expect(throws: (any Error).self) { try third.backLink(to: first, zone: Self.zone) }
    }

    @Test(arguments: [[], [2], [1, 0], [1, 1] + Array(repeating: 0, count: 12 + 15), [1, 1] + Array(repeating: 0, count: 12 + 16 + 17),
                      [1, 0x81, 0x00] + Array(repeating: 0, count: 12 + 16 + 16)])  // last: epoch 1 in two bytes
    func bytesThatAreNoSealedValueAreRefused(bytes: [UInt8]) {
        #expect(throws: CodecError.self) { try SealedValue(decoding: bytes) }
    }

    /// Spec/vectors/sealing.txt: a key, its text key, sealed values with fixed nonces, a back link.
    /// Regenerate with JOURNALLOG_WRITE_VECTORS=1 only after a deliberate change (and SEALING.md).
    @Test func theSpecsVectorsMatch() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Spec/vectors/sealing.txt").standardized
        func hex(_ b: some Sequence<UInt8>) -> String { b.map { String(format: "%02x", $0) }.joined() }
        let nonce = Array(repeating: UInt8(0x24), count: 12)
        let texts = ["Milk", "", "Chopped tomatoes x2"]
        var lines = [
            "zone: \(Self.zone)",
            "key1: \(hex(Self.key.material))",
            "textKey1: \(hex(Self.key.textKey(zone: Self.zone).withUnsafeBytes { Array($0) }))",
        ]
        for (i, text) in texts.enumerated() {
            let b = Self.binding()
            lines.append("text\(i): \(text)")
            lines.append("aad\(i): \(hex(b.associatedData))")
            lines.append("plaintext\(i): \(hex(SealPadding.pad(text)!))")
            lines.append("sealed\(i): \(hex(try Self.sealer.seal(text, for: b, nonce: nonce).encoded))")
        }
        // The first text as a whole sealed-add entry (FORMAT.md §6, SEALING.md §5): item ...aa at
        // the head, the same binding and nonce.
        let b = Self.binding()
        let add = SealedChange.add(item: b.item!, after: nil, text: try Self.sealer.seal(texts[0], for: b, nonce: nonce))
        let entry = JournalEntry(id: b.entry, zone: Self.zone, author: b.author, wallTime: b.wallTime, clock: b.clock, operation: add.operation)
        lines.append("sealedAddEntry0: \(hex(EntryCodec.encode(entry)))")
        let key2 = ListKey(epoch: 2, material: Array(32..<64))!
        lines.append("key2: \(hex(key2.material))")
        lines.append("backLink2: \(hex(try key2.backLink(to: Self.key, zone: Self.zone, nonce: nonce)))")
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" {
            let text = """
            # Sealed values (SEALING.md §2, §3) of zone alice/Qm9vbXMtMTIzNDU under key1 (epoch 1,
            # bytes 00..1f), each for the binding: entry 00000000-0000-4000-8000-000000000001, kind
            # 0x41, item 00000000-0000-4000-8000-0000000000aa, author alice:phone, hlc physical
            # 1764000000000 counter 3, wall time 1764000000123, epoch 1; nonce 24 repeated 12 times.
            # textKey1 is HKDF-SHA256(key1, salt: zone, info: "jlog-seal v1 text"); aadN the binding's
            # associated data, plaintextN the padded text, sealedN the value's bytes. backLink2 is
            # key1 sealed under key2 (epoch 2, bytes 20..3f) with the same nonce. sealedAddEntry0 is the
            # whole entry (FORMAT.md §6) of a sealedAdd (kind 0x41) of that item at the head carrying
            # sealed0: the binding's id, zone, author and clocks.

            \(lines.joined(separator: "\n"))

            """
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        let written = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
        #expect(written == lines)
    }

    /// `Fuzz/FuzzSealed`'s seeds and past crashes, through the fuzzer's own check.
    @Test func theFuzzersCorpusReplaysCleanly() throws {
        let fuzz = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz").standardized
        var replayed = 0
        for dir in ["corpus", "regressions"] {
            let d = fuzz.appendingPathComponent(dir).appendingPathComponent("FuzzSealed")
            for f in (try? FileManager.default.contentsOfDirectory(at: d, includingPropertiesForKeys: nil)) ?? [] where !f.lastPathComponent.hasPrefix(".") {
                SealInputChecks.check(try [UInt8](Data(contentsOf: f)))
                replayed += 1
            }
        }
        #expect(replayed >= 6)
    }
}

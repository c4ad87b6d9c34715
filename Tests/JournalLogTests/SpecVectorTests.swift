import Foundation
import Testing
@testable import JournalLog

/// Checks the code against `Spec/vectors/`. Run with JOURNALLOG_WRITE_VECTORS=1 to regenerate
/// the files after a deliberate format change (and update Spec/FORMAT.md in the same commit).
@Suite struct SpecVectorTests {
    static let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Spec/vectors").standardized
    static var writing: Bool { ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" }

    /// `key: value` blocks separated by blank lines; `#` starts a comment line.
    static func blocks(_ file: String) throws -> [[String: String]] {
        let text = try String(contentsOf: vectors.appendingPathComponent(file), encoding: .utf8)
        var out: [[String: String]] = []
        var cur: [String: String] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#") { continue }
            if line.trimmingCharacters(in: .whitespaces).isEmpty {
                if !cur.isEmpty { out.append(cur); cur = [:] }
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { continue }
            cur[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        if !cur.isEmpty { out.append(cur) }
        return out
    }

    static func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
    static func bytes(_ h: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = h.replacingOccurrences(of: " ", with: "").makeIterator()
        while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
        return out
    }

    static func write(_ file: String, header: String, blocks: [[(String, String)]]) throws {
        var text = header.split(separator: "\n").map { "# " + $0 }.joined(separator: "\n") + "\n\n"
        for b in blocks { text += b.map { "\($0.0): \($0.1)" }.joined(separator: "\n") + "\n\n" }
        try text.write(to: vectors.appendingPathComponent(file), atomically: true, encoding: .utf8)
    }

    // The entries every vector file draws on: one per operation, both id forms, offsets in time.
    static let sampleLines = [
        #"{"id":"0f8e2c1a-9b7d-4e21-8c3f-5a6b7c8d9e0f","zone":"List-db6a6e29","op":"add","item":"milk","text":"Milk","after":null,"by":"alice","at":"2026-11-22T09:00:00.000Z","hlc":"1795338000000:0"}"#,
        #"{"id":"e2","zone":"List-db6a6e29","op":"add","item":"3b0c5d2e-1f4a-4b6c-9d8e-7f6a5b4c3d2e","text":"Eggs – free range","after":"milk","by":"bob","at":"2026-11-22T09:00:01.250Z","hlc":"1795338001250:3"}"#,
        #"{"id":"e3","zone":"List-db6a6e29","op":"markOff","item":"milk","by":"alice","at":"2026-11-22T18:30:00.000Z","hlc":"1795372200000:0"}"#,
        #"{"id":"e4","zone":"List-db6a6e29","op":"unmark","item":"milk","by":"alice","at":"2026-11-22T18:31:00.000Z","hlc":"1795372260000:0"}"#,
        #"{"id":"e5","zone":"List-db6a6e29","op":"delete","item":"milk","by":"carol","at":"2026-11-22T18:32:00.000Z","hlc":"1795372320000:1"}"#,
        #"{"id":"e6","zone":"List-db6a6e29","op":"rename","text":"Weekly Shopping","by":"bob","at":"2026-11-22T09:02:00.000Z","hlc":"1795338120000:0"}"#,
        #"{"id":"e7","zone":"List-db6a6e29","op":"recolour","text":"yellow","by":"bob","at":"2026-11-22T09:03:00.000Z","hlc":"1795338180000:0"}"#,
    ]

    /// Participant join and leave (kinds 7 and 8, segment minor ≥ 1): in entries.txt only, so the
    /// batch, frame and store vectors built from `sampleLines` stay as they were.
    static let participantLines = [
        #"{"id":"e8","zone":"List-db6a6e29","op":"join","text":"dörte","by":"alice","at":"2026-11-22T09:05:00.000Z","hlc":"1795338300000:0"}"#,
        #"{"id":"e9","zone":"List-db6a6e29","op":"leave","text":"bob","by":"bob","at":"2026-11-22T19:00:00.000Z","hlc":"1795374000000:2"}"#,
    ]

    /// The compactor's `place` (kind 9, segment minor ≥ 2), after an item and at the head: in
    /// entries.txt only, like the participant lines.
    static let placeLines = [
        #"{"id":"e2","zone":"List-db6a6e29","op":"place","item":"3b0c5d2e-1f4a-4b6c-9d8e-7f6a5b4c3d2e","after":"milk","by":"bob","at":"2026-11-22T09:00:01.250Z","hlc":"1795338001250:3"}"#,
        #"{"id":"0f8e2c1a-9b7d-4e21-8c3f-5a6b7c8d9e0f","zone":"List-db6a6e29","op":"place","item":"3b0c5d2e-1f4a-4b6c-9d8e-7f6a5b4c3d2e","after":null,"by":"alice","at":"2026-11-22T09:00:00.000Z","hlc":"1795338000000:0"}"#,
    ]

    static func entry(_ line: String) throws -> JournalEntry {
        let p = try EntryJSON.parse(line: line)
        return JournalEntry(id: p.id!, zone: p.zone, author: p.author, wallTime: p.wallTime, clock: p.clock!, operation: p.operation)
    }

    @Test func crc32cVectorsMatch() throws {
        if Self.writing {
            let inputs: [[UInt8]] = [Array("123456789".utf8), [UInt8](repeating: 0, count: 32), [UInt8](repeating: 0xFF, count: 32),
                                     Array(0..<32), Array("JournalLog".utf8), []]
            try Self.write("crc32c.txt", header: "CRC32C (Castagnoli): input bytes in hex, CRC as 8 hex digits.",
                           blocks: inputs.map { [("input", Self.hex($0)), ("crc", String(format: "%08x", CRC32C.checksum($0)))] })
        }
        let blocks = try Self.blocks("crc32c.txt")
        #expect(blocks.count >= 5)
        for b in blocks {
            #expect(String(format: "%08x", CRC32C.checksum(Self.bytes(b["input"]!))) == b["crc"]!)
        }
    }

    @Test func entryEncodingVectorsMatch() throws {
        if Self.writing {
            try Self.write("entries.txt", header: "JournalEntry encodings (FORMAT.md §6): the entry as a JSON line (§7), then its bytes.",
                           blocks: try (Self.sampleLines + Self.participantLines + Self.placeLines).map { [("json", $0), ("hex", Self.hex(EntryCodec.encode(try Self.entry($0))))] })
        }
        let blocks = try Self.blocks("entries.txt")
        #expect(blocks.count == Self.sampleLines.count + Self.participantLines.count + Self.placeLines.count)
        for b in blocks {
            let e = try Self.entry(b["json"]!)
            #expect(Self.hex(EntryCodec.encode(e)) == b["hex"]!)
            #expect(try EntryCodec.decode(Self.bytes(b["hex"]!)) == e)
        }
    }

    @Test func frameVectorsMatch() throws {
        let payload = EntryCodec.encode(try Self.entry(Self.sampleLines[0]))
        let cases: [(String, UInt8, UInt64, [UInt8], UInt32)] = [
            ("entry chained from 0", RecordType.entry.rawValue, 1, payload, 0),
            ("entry chained from 0xdeadbeef", RecordType.entry.rawValue, 42, payload, 0xDEADBEEF),
            ("empty skippable record", 0x80, 42, [], 0x12345678),
        ]
        if Self.writing {
            try Self.write("frames.txt", header: "Frames (FORMAT.md §4): type, sequence, payload and chain seed in; the frame's bytes out.",
                           blocks: cases.map { c in
                               var out: [UInt8] = []
                               Frame.append(type: c.1, sequence: c.2, payload: c.3, chain: c.4, to: &out)
                               return [("name", c.0), ("type", String(format: "%02x", c.1)), ("sequence", String(c.2)),
                                       ("payload", Self.hex(c.3)), ("chain", String(format: "%08x", c.4)), ("frame", Self.hex(out))]
                           })
        }
        let blocks = try Self.blocks("frames.txt")
        #expect(blocks.count == cases.count)
        for b in blocks {
            var out: [UInt8] = []
            let chain = UInt32(b["chain"]!, radix: 16)!
            Frame.append(type: UInt8(b["type"]!, radix: 16)!, sequence: UInt64(b["sequence"]!)!, payload: Self.bytes(b["payload"]!),
                         chain: chain, to: &out)
            #expect(Self.hex(out) == b["frame"]!)
            let scanned = out.withUnsafeBytes { Frame.scan($0, at: 0, chain: chain) }
            guard case .frame(let h, _, _) = scanned else {
                Issue.record("vector \(b["name"]!) does not scan")
                continue
            }
            #expect(h.sequence == UInt64(b["sequence"]!)!)
        }
    }

    @Test func segmentHeaderVectorMatches() throws {
        let header = SegmentHeader(storeID: (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210), baseSequence: 1001,
                                   previousChain: 0xCAFEBABE, createdAt: 1_795_424_400_000)
        if Self.writing {
            try Self.write("segment-header.txt", header: "Segment header (FORMAT.md §3.1); the store's first chain is crc32c(storeID).",
                           blocks: [[("storeID", "0123456789abcdeffedcba9876543210"), ("baseSequence", "1001"), ("previousChain", "cafebabe"),
                                     ("createdAt", "1795424400000"), ("flags", "0"), ("header", Self.hex(header.encoded())),
                                     ("firstChain", String(format: "%08x", SegmentHeader.firstChain(storeID: header.storeID)))]])
        }
        let b = try Self.blocks("segment-header.txt")[0]
        #expect(Self.hex(header.encoded()) == b["header"]!)
        #expect(try Self.bytes(b["header"]!).withUnsafeBytes { try SegmentHeader.decode($0) } == header)
        #expect(String(format: "%08x", SegmentHeader.firstChain(storeID: header.storeID)) == b["firstChain"]!)
    }

    @Test func batchVectorsMatch() throws {
        let entries = try Self.sampleLines.map { EntryCodec.encode(try Self.entry($0)) }
        let plain = BatchCodec.encode(entries: entries, compress: false)
        let packed = BatchCodec.encode(entries: Array(repeating: entries, count: 4).flatMap { $0 }, compress: true)
        let gapped = BatchCodec.encode(entries: Array(entries.prefix(3)), sequenceDeltas: [0, 2, 5], compress: false)
        if Self.writing {
            try Self.write("batches.txt", header: "Batch payloads (FORMAT.md §5.2), decoded with first sequence 100.\nentries: the JSON lines of entries.txt by index.",
                           blocks: [[("name", "plain"), ("entries", "0,1,2,3,4,5,6"), ("sequences", "100-106"), ("payload", Self.hex(plain))],
                                    [("name", "lz4 (28 entries: entries.txt four times)"), ("entries", "0-6 x4"), ("sequences", "100-127"), ("payload", Self.hex(packed))],
                                    [("name", "gaps after compaction"), ("entries", "0,1,2"), ("sequences", "100,102,107"), ("payload", Self.hex(gapped))]])
        }
        let blocks = try Self.blocks("batches.txt")
        #expect(blocks.count == 3)
        #expect(blocks[0]["payload"] == Self.hex(plain))
        #expect(blocks[1]["payload"] == Self.hex(packed))
        #expect(blocks[2]["payload"] == Self.hex(gapped))
        let decoded = try Self.bytes(blocks[2]["payload"]!).withUnsafeBytes { try BatchCodec.decode($0, firstSequence: 100) }
        #expect(decoded.map(\.0) == [100, 102, 107])
        let lz = try Self.bytes(blocks[1]["payload"]!).withUnsafeBytes { try BatchCodec.summary($0) }
        #expect(lz.flags.contains(.lz4))
    }

    /// Golden stores: a clean one, one with a torn tail, one with a flipped byte in a sealed segment.
    @Test func goldenStoresRecoverAsDocumented() throws {
        let stores = Self.vectors.appendingPathComponent("stores")
        if Self.writing {
            try? FileManager.default.removeItem(at: stores)
            try FileManager.default.createDirectory(at: stores, withIntermediateDirectories: true)
            let entries = try Self.sampleLines.map(Self.entry)
            func make(_ name: String) throws -> String {
                let path = stores.appendingPathComponent(name).path
                var o = StoreOptions(durability: .none, segmentSize: 300, preallocate: false)
                o.compressBatches = true
                let s = try JournalStore.open(path, options: o)
                try s.append(entries[0])
                try s.append(batch: Array(entries[1...3]))
                for e in entries[4...] { try s.append(e) }
                try s.close()
                try? FileManager.default.removeItem(atPath: path + "/LOCK")
                return path
            }
            _ = try make("clean.wal")
            let torn = try make("torn-tail.wal")
            let tornLast = try StoreLayout.segmentPaths(torn, fs: PosixFileSystem()).last!
            let h = try FileHandle(forUpdating: URL(fileURLWithPath: tornLast))
            try h.truncate(atOffset: try h.seekToEnd() - 5)
            try h.close()
            let corrupt = try make("corrupt-sealed.wal")
            let first = try StoreLayout.segmentPaths(corrupt, fs: PosixFileSystem()).first!
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: first)))
            bytes[SegmentHeader.size + 20] ^= 0x01
            try Data(bytes).write(to: URL(fileURLWithPath: first))
        }
        let all = try Self.sampleLines.map(Self.entry)
        let clean = try LogReader.entries(stores.appendingPathComponent("clean.wal").path, mode: .strict)
        #expect(clean.map(\.1) == all)
        #expect(clean.map(\.0) == Array(1...7))

        let torn = stores.appendingPathComponent("torn-tail.wal").path
        #expect(throws: JournalError.self) { try LogReader.entries(torn, mode: .strict) }
        #expect(try LogReader.entries(torn, mode: .tolerateTail).map(\.1) == Array(all.prefix(6)))

        let corrupt = stores.appendingPathComponent("corrupt-sealed.wal").path
        #expect(throws: JournalError.self) { try LogReader.entries(corrupt, mode: .tolerateTail) }
        #expect(try LogReader.entries(corrupt, mode: .pointInTime).isEmpty)
        #expect(try LogReader.entries(corrupt, mode: .salvage).map(\.1) == Array(all.dropFirst()))
    }
}

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

    /// A move (kind 0x40, MERGE.md §3.5), after an item and to the top: in entries.txt only.
    static let moveLines = [
        #"{"id":"e10","zone":"List-db6a6e29","op":"move","item":"milk","after":"3b0c5d2e-1f4a-4b6c-9d8e-7f6a5b4c3d2e","by":"carol","at":"2026-11-22T09:10:00.000Z","hlc":"1795338600000:0"}"#,
        #"{"id":"5d1e7c3a-2b4f-4a6e-9c8d-1e2f3a4b5c6d","zone":"List-db6a6e29","op":"move","item":"milk","after":null,"by":"bob","at":"2026-11-22T09:11:00.000Z","hlc":"1795338660000:1"}"#,
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
                           blocks: try (Self.sampleLines + Self.participantLines + Self.placeLines + Self.moveLines).map { [("json", $0), ("hex", Self.hex(EntryCodec.encode(try Self.entry($0))))] })
        }
        let blocks = try Self.blocks("entries.txt")
        #expect(blocks.count == Self.sampleLines.count + Self.participantLines.count + Self.placeLines.count + Self.moveLines.count)
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
                           blocks: [[("storeID", "0123456789abcdef fedcba9876543210 (two u64, each written little-endian: bytes efcdab89674523011032547698badcfe)"),
                                     ("baseSequence", "1001"), ("previousChain", "cafebabe"),
                                     ("createdAt", "1795424400000"), ("flags", "0"), ("minor", String(header.minor)),
                                     ("header", Self.hex(header.encoded())),
                                     ("firstChain", String(format: "%08x", SegmentHeader.firstChain(storeID: header.storeID)))]])
        }
        let b = try Self.blocks("segment-header.txt")[0]
        #expect(Self.hex(header.encoded()) == b["header"]!)
        #expect(try Self.bytes(b["header"]!).withUnsafeBytes { try SegmentHeader.decode($0) } == header)
        #expect(String(format: "%08x", SegmentHeader.firstChain(storeID: header.storeID)) == b["firstChain"]!)
        // The store id's notation (FORMAT.md §3.1): two u64, the first stored first, each little-endian.
        let id = b["storeID"]!.split(separator: " ")
        #expect(UInt64(id[0], radix: 16) == header.storeID.0 && UInt64(id[1], radix: 16) == header.storeID.1)
        let stored = String(b["storeID"]!.split(separator: "bytes ")[1].prefix(32))
        #expect(Self.hex(Array(header.encoded()[16..<32])) == stored)
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

    /// The steps of `CompactID.derived` (FORMAT.md §7.5), computed here from the spec's words (the
    /// bytes hashed, the two SipHash-2-4 keys, the UUIDv8 bit layout) and checked against the code.
    static let derivedLines = [
        #"{"zone":"List-db6a6e29","op":"add","item":"milk","text":"Milk","after":null,"by":"alice","at":"2026-11-22T09:00:00.000Z","hlc":"1795338000000:0"}"#,
        #"{"zone":"List-db6a6e29","op":"rename","text":"Weekly Shopping","by":"bob","at":"2026-11-22T10:02:00.123456+01:00"}"#,
    ]

    @Test func derivedIDStepsMatch() throws {
        func hex64(_ v: UInt64) -> String { let s = String(v, radix: 16); return String(repeating: "0", count: 16 - s.count) + s }
        func steps(_ line: String) throws -> [(String, String)] {
            let e = try EntryJSON.parse(line: line).entry()
            var probe = e
            probe.id = CompactID("-")!
            let hashed = EntryCodec.encode(probe)
            let h1 = SipHash24.hash(key: (0x4A4C_4944_0000_0001, 0x6465_7269_7665_6431), hashed)
            let h2 = SipHash24.hash(key: (0x4A4C_4944_0000_0002, 0x6465_7269_7665_6432), hashed)
            // Bits 12–15 of hash1 become 1000 (version 8); bits 62–63 of hash2 become 10 (the variant).
            let id = CompactID(uuidHigh: (h1 & ~0xF000) | 0x8000, low: (h2 & ~(0x3 << 62)) | (0x2 << 62))
            #expect(id == CompactID.derived(from: e))
            #expect(id == e.id, "a line without an id gets the derived one")
            return [("line", line), ("hlc", e.clock.description), ("hashed", Self.hex(hashed)),
                    ("hash1", hex64(h1)), ("hash2", hex64(h2)), ("id", id.description)]
        }
        let expected = try Self.derivedLines.map(steps)
        if Self.writing {
            try Self.write("derived-id-steps.txt", header: """
                The steps of a derived entry id (FORMAT.md §7.5, CompactID.derived), for a JSON line without "id".
                hlc: the entry's hlc (derived from "at" when the line has none); hashed: the entry's encoding
                (FORMAT.md §6) with the id replaced by the text id "-" (00 01 2d); hash1, hash2: SipHash-2-4 of
                those bytes under (k0, k1) = (0x4a4c494400000001, 0x6465726976656431) and
                (0x4a4c494400000002, 0x6465726976656432); id: hash1 then hash2, each big-endian, with the
                version nibble (bits 12-15 of hash1) set to 8 and the top two bits of hash2 set to 10.
                """, blocks: expected)
        }
        let blocks = try Self.blocks("derived-id-steps.txt")
        #expect(blocks.count == expected.count)
        for (b, want) in zip(blocks, expected) {
            for (k, v) in want { #expect(b[k] == v, "\(k) of \(want[0].1)") }
        }
        #expect(try Self.blocks("derived-id.txt")[0]["id"] == blocks[0]["id"], "derived-id.txt is the first line's id")
    }

    /// JSON Lines (FORMAT.md §7): lines a reader accepts and the exact line a writer makes of each,
    /// and lines a reader rejects.
    static let jsonAccepted: [(String, String)] = [
        ("every escape a reader accepts, and what a writer escapes",
         #"{"id":"e1","zone":"List-1","op":"add","item":"milk","text":"q\" b\\ s\/ n\n r\r t\t b\b f\f c\u0001\u001F é\u00e9\u00C9 \ud83d\ude00 €","after":null,"by":"alice","at":"2026-11-22T09:00:00.000Z","hlc":"1795338000000:0"}"#),
        ("whitespace, any key order, an escaped key, an offset, extra fraction digits, no id and no hlc",
         #"{ "op" : "markOff" , "item":"milk","\u007Aone":"List-1", "by":"bob","at":"2026-11-22T10:30:00.1239+01:30" }"#),
        ("add without after (the head); an upper-case UUID is a text id; empty text; lower-case z; hlc with leading zeros",
         #"{"zone":"List-1","op":"add","item":"3B0C5D2E-1F4A-4B6C-9D8E-7F6A5B4C3D2E","text":"","by":"alice","at":"2026-11-22T09:00:00z","hlc":"0001795338000000:007"}"#),
        ("place (read by the codec; jlog import refuses it, FORMAT.md §6)",
         #"{"id":"0f8e2c1a-9b7d-4e21-8c3f-5a6b7c8d9e0f","zone":"List-1","op":"place","item":"eggs","after":"milk","by":"alice","at":"2026-11-22T09:00:00.5Z","hlc":"1795338000500:1"}"#),
        ("move to the head (after absent)",
         #"{"id":"e11","zone":"List-1","op":"move","item":"eggs","by":"bob","at":"2026-11-22T09:00:01Z","hlc":"1795338001000:0"}"#),
        ("an opaque kind; a negative offset across midnight",
         #"{"zone":"List-1","op":"op0x80","body":"00ff7f","by":"alice","at":"2026-11-21T23:30:00-09:30","hlc":"1795338000000:2"}"#),
        ("an opaque kind with an empty body; an hlc far from the wall time",
         #"{"zone":"List-1","op":"op0xff","body":"","by":"alice","at":"2026-11-22T09:00:00Z","hlc":"1:0"}"#),
        ("join: text is the participant",
         #"{"zone":"List-1","op":"join","text":"dörte","by":"alice","at":"2026-11-22T09:00:00Z"}"#),
        ("the earliest time; the derived hlc is clamped to 0",
         #"{"zone":"List-1","op":"rename","text":"Old list","by":"alice","at":"0001-01-01T00:00:00Z"}"#),
        ("the latest time; fraction digits past the third are dropped, not rounded",
         #"{"zone":"List-1","op":"recolour","text":"blue","by":"alice","at":"9999-12-31T23:59:59.999999999Z"}"#),
        ("delete; the greatest counter",
         #"{"zone":"List-1","op":"delete","item":"42","by":"alice","at":"2026-11-22T09:00:00Z","hlc":"1795338000000:65535"}"#),
    ]

    static let jsonRejected: [(String, String)] = {
        let tail = #""by":"alice","at":"2026-11-22T09:00:00Z""#
        func rename(_ text: String) -> String { #"{"zone":"List-1","op":"rename","text":""# + text + #"","# + tail + "}" }
        func at(_ t: String) -> String { #"{"zone":"List-1","op":"rename","text":"x","by":"alice","at":""# + t + #""}"# }
        func hlc(_ h: String) -> String { #"{"zone":"List-1","op":"rename","text":"x","# + tail + #","hlc":""# + h + #""}"# }
        return [
            ("a lone high surrogate", rename(#"\ud83d"#)),
            ("a high surrogate not followed by a low one", rename(#"\ud83d\u0041"#)),
            ("a lone low surrogate", rename(#"\ude00"#)),
            ("an escape JSON does not define", rename(#"\x41"#)),
            ("\\u with three hex digits", rename(#"\u00e"#)),
            ("an unknown key", #"{"zone":"List-1","op":"recolour","colour":"blue","# + tail + "}"),
            ("a duplicate key", #"{"zone":"List-1","zone":"List-2","op":"rename","text":"x","# + tail + "}"),
            ("a number where a string is required", #"{"zone":"List-1","op":"rename","text":"x","# + tail + #","hlc":1795338000000}"#),
            ("a boolean for after", #"{"zone":"List-1","op":"add","item":"milk","text":"Milk","after":false,"# + tail + "}"),
            ("a nested value", #"{"zone":"List-1","op":"rename","text":["x"],"# + tail + "}"),
            ("null for id", #"{"id":null,"zone":"List-1","op":"rename","text":"x","# + tail + "}"),
            ("after (even null) on markOff", #"{"zone":"List-1","op":"markOff","item":"milk","after":null,"# + tail + "}"),
            ("text on delete", #"{"zone":"List-1","op":"delete","item":"milk","text":"Milk","# + tail + "}"),
            ("body on add", #"{"zone":"List-1","op":"add","item":"milk","text":"Milk","body":"00","# + tail + "}"),
            ("item on rename", #"{"zone":"List-1","op":"rename","item":"milk","text":"x","# + tail + "}"),
            ("add without item", #"{"zone":"List-1","op":"add","text":"Milk","# + tail + "}"),
            ("add without text", #"{"zone":"List-1","op":"add","item":"milk","# + tail + "}"),
            ("no by", #"{"zone":"List-1","op":"rename","text":"x","at":"2026-11-22T09:00:00Z"}"#),
            ("no at", #"{"zone":"List-1","op":"rename","text":"x","by":"alice"}"#),
            ("no op", #"{"zone":"List-1","text":"x","# + tail + "}"),
            ("an op name in the wrong case", #"{"zone":"List-1","op":"Rename","text":"x","# + tail + "}"),
            ("op0xNN below 0x40", #"{"zone":"List-1","op":"op0x3f","body":"","# + tail + "}"),
            ("op0x40, the kind of move", #"{"zone":"List-1","op":"op0x40","body":"","# + tail + "}"),
            ("text on move", #"{"zone":"List-1","op":"move","item":"milk","text":"Milk","# + tail + "}"),
            ("move without item", #"{"zone":"List-1","op":"move","after":"milk","# + tail + "}"),
            ("op0xNN in upper-case hex", #"{"zone":"List-1","op":"op0xFF","body":"","# + tail + "}"),
            ("a body in upper-case hex", #"{"zone":"List-1","op":"op0x80","body":"FF","# + tail + "}"),
            ("a body of odd length", #"{"zone":"List-1","op":"op0x80","body":"abc","# + tail + "}"),
            ("an empty id", #"{"id":"","zone":"List-1","op":"rename","text":"x","# + tail + "}"),
            ("an empty zone", #"{"zone":"","op":"rename","text":"x","# + tail + "}"),
            ("an empty author", #"{"zone":"List-1","op":"rename","text":"x","by":"","at":"2026-11-22T09:00:00Z"}"#),
            ("join with no participant", #"{"zone":"List-1","op":"join","text":"","# + tail + "}"),
            ("a time without a zone designator", at("2026-11-22T09:00:00")),
            ("a space for T", at("2026-11-22 09:00:00Z")),
            ("a lower-case t", at("2026-11-22t09:00:00Z")),
            ("a leap second", at("2026-11-22T09:00:60Z")),
            ("ten fraction digits", at("2026-11-22T09:00:00.1234567890Z")),
            ("a dot without fraction digits", at("2026-11-22T09:00:00.Z")),
            ("an offset without a colon", at("2026-11-22T09:00:00+0100")),
            ("an offset of hours only", at("2026-11-22T09:00:00+01")),
            ("a day the month does not have", at("2026-02-29T00:00:00Z")),
            ("year 0000", at("0000-12-31T00:00:00Z")),
            ("an instant after 9999 once the offset is applied", at("9999-12-31T23:59:59.999-00:01")),
            ("an hlc of 2^48 ms", hlc("281474976710656:0")),
            ("an hlc counter of 65536", hlc("1:65536")),
            ("an hlc without a counter", hlc("1")),
            ("an hlc with three parts", hlc("1:2:3")),
            ("an hlc without millis", hlc(":0")),
            ("a second value after the object", #"{"zone":"List-1","op":"rename","text":"x","# + tail + "} {}"),
            ("an array", "[]"),
        ]
    }()

    @Test func jsonLinesVectorsMatch() throws {
        if Self.writing {
            var blocks: [[(String, String)]] = []
            for (name, line) in Self.jsonAccepted {
                blocks.append([("name", name), ("in", line), ("out", EntryJSON.format(try EntryJSON.parse(line: line).entry()))])
            }
            for (name, line) in Self.jsonRejected { blocks.append([("name", name), ("in", line), ("result", "rejected")]) }
            try Self.write("json-lines.txt", header: """
                JSON Lines (FORMAT.md §7). in: a line as a reader gets it. out: the line a writer makes of the
                entry it stands for (a missing id and hlc derived, §7.5). result: rejected: a reader refuses the line.
                """, blocks: blocks)
        }
        let blocks = try Self.blocks("json-lines.txt")
        #expect(blocks.count == Self.jsonAccepted.count + Self.jsonRejected.count)
        var accepted = 0, rejected = 0
        for b in blocks {
            let line = b["in"]!
            if let out = b["out"] {
                accepted += 1
                let e = try EntryJSON.parse(line: line).entry()
                #expect(EntryJSON.format(e) == out, "\(b["name"]!)")
                #expect(try EntryJSON.parse(line: out).entry() == e, "what a writer makes reads back as the same entry")
            } else {
                rejected += 1
                #expect(b["result"] == "rejected")
                #expect(throws: EntryJSONError.self, "\(b["name"]!)") { try EntryJSON.parse(line: line) }
            }
        }
        #expect(accepted == Self.jsonAccepted.count && rejected == Self.jsonRejected.count)
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

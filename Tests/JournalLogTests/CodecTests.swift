import Foundation
import Testing
@testable import JournalLog
import JournalTesting

/// Decoders over `[UInt8]` that return a Result instead of using typed-throws closures
/// inside `withUnsafeBytes` (which this toolchain does not compile reliably).
fileprivate enum Decode {
    static func entry(_ b: [UInt8]) -> Result<JournalEntry, CodecError> {
        b.withUnsafeBytes { p in
            do throws(CodecError) { return .success(try EntryCodec.decode(p)) } catch { return .failure(error) }
        }
    }

    static func batch(_ b: [UInt8], first: SequenceNumber = 1) -> Result<[(SequenceNumber, JournalEntry)], CodecError> {
        b.withUnsafeBytes { p in
            do throws(CodecError) { return .success(try BatchCodec.decode(p, firstSequence: first)) } catch { return .failure(error) }
        }
    }

    static func batchSummary(_ b: [UInt8]) -> Result<BatchCodec.Summary, CodecError> {
        b.withUnsafeBytes { p in
            do throws(CodecError) { return .success(try BatchCodec.summary(p)) } catch { return .failure(error) }
        }
    }

    static func header(_ b: [UInt8]) -> Result<SegmentHeader, SegmentHeader.DecodeError> {
        b.withUnsafeBytes { p in
            do throws(SegmentHeader.DecodeError) { return .success(try SegmentHeader.decode(p)) } catch { return .failure(error) }
        }
    }

    /// The value and the number of bytes the varint took.
    static func varint(_ b: [UInt8]) -> Result<(UInt64, Int), CodecError> {
        b.withUnsafeBytes { p in
            var r = ByteReader(p)
            do throws(CodecError) {
                let v = try r.varint()
                return .success((v, r.offset))
            } catch { return .failure(error) }
        }
    }

    static func zigzag(_ b: [UInt8]) -> Result<Int64, CodecError> {
        b.withUnsafeBytes { p in
            var r = ByteReader(p)
            do throws(CodecError) { return .success(try r.zigzag()) } catch { return .failure(error) }
        }
    }

    static func zoneCreate(_ b: [UInt8]) -> Result<String, CodecError> {
        b.withUnsafeBytes { p in
            do throws(CodecError) { return .success(try ZoneRecordCodec.decodeCreate(p)) } catch { return .failure(error) }
        }
    }

    static func zoneDelete(_ b: [UInt8]) -> Result<String, CodecError> {
        b.withUnsafeBytes { p in
            do throws(CodecError) { return .success(try ZoneRecordCodec.decodeDelete(p).0) } catch { return .failure(error) }
        }
    }

    static func seal(_ b: [UInt8]) -> Result<SequenceNumber, CodecError> {
        b.withUnsafeBytes { p in
            do throws(CodecError) { return .success(try SealCodec.decode(p).lastSequence) } catch { return .failure(error) }
        }
    }

    static func frame(_ b: [UInt8], chain: UInt32) -> Frame.Scan {
        b.withUnsafeBytes { Frame.scan($0, at: 0, chain: chain) }
    }
}

fileprivate extension Result {
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
    var value: Success? {
        if case .success(let v) = self { return v }
        return nil
    }
    var failure: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}

@Suite struct CodecTests {
    static let uuid = CompactID("0f8e2c1a-9b7d-4e21-8c3f-5a6b7c8d9e0f")!
    static let textID = CompactID("milk")!

    static func entry(_ op: EntryOp, id: CompactID = CompactID("e1")!) -> JournalEntry {
        JournalEntry(id: id, zone: "List-db6a6e29", author: "alice", wallTime: 1_795_424_400_123,
                     clock: HybridTime(physicalMillis: 1_795_424_400_000, counter: 3), operation: op)
    }

    /// One operation of every kind, both id forms, edge-case texts, and opaque kinds.
    static let operations: [EntryOp] = [
        .add(item: textID, text: "Milk", after: nil),
        .add(item: uuid, text: "Eggs – free range 🥚", after: textID),
        .add(item: textID, text: "", after: uuid),
        .add(item: textID, text: String(repeating: "x", count: Limits.maxTextBytes), after: nil),
        .markOff(item: textID),
        .markOff(item: uuid),
        .unmark(item: uuid),
        .delete(item: textID),
        .rename(name: "Weekly Shopping"),
        .rename(name: ""),
        .recolour(colour: "yellow"),
        .opaque(kind: 0x80, body: []),
        .opaque(kind: 0x81, body: [1, 2, 3, 0, 255]),
        .opaque(kind: 0xFF, body: Array(repeating: 0xAB, count: 300)),
    ]

    // MARK: Entries

    @Test(arguments: operations)
    func entryRoundTripsForEveryOperation(op: EntryOp) throws {
        for id in [CompactID("e1")!, Self.uuid] {
            let e = Self.entry(op, id: id)
            #expect(EntryCodec.validate(e) == nil)
            let bytes = EntryCodec.encode(e)
            #expect(bytes.first == EntryCodec.encodingVersion)
            let back = try Decode.entry(bytes).get()
            #expect(back == e)
            #expect(back.operation.kindByte == op.kindByte)
            #expect(EntryCodec.encode(back) == bytes)
        }
    }

    /// A UUID id prints as Foundation prints the same 16 bytes (lowercased), and parses back.
    @Test func uuidIDsPrintAsFoundationDoes() {
        var rng = SplitMix64(seed: 9)
        for _ in 0..<200 {
            let id = CompactID.random(using: &rng)
            let u = UUID(uuidString: id.description)
            #expect(u?.uuidString.lowercased() == id.description)
            #expect(CompactID(id.description) == id)
        }
        #expect(Self.uuid.description == "0f8e2c1a-9b7d-4e21-8c3f-5a6b7c8d9e0f")
    }

    @Test func generatedEntriesRoundTrip() throws {
        var g = EntryGenerator(seed: 1)
        for e in g.entries(500) {
            #expect(EntryCodec.validate(e) == nil)
            #expect(try Decode.entry(EntryCodec.encode(e)).get() == e)
        }
    }

    @Test func wallTimeFarFromTheHybridClockRoundTrips() throws {
        for wall: Int64 in [-1, 0, 1_795_424_400_000 - 86_400_000, 1 << 62, -(1 << 62)] {
            var e = Self.entry(.rename(name: "x"))
            e.wallTime = wall
            #expect(try Decode.entry(EntryCodec.encode(e)).get() == e)
        }
    }

    /// An entry that passes `validate` must decode again: otherwise a store accepts an append
    /// that its own readers then report as a corrupt payload.
    @Test(arguments: [Int64.min, Int64.min + 1, Int64.max])
    func entryThatPassesValidationAlwaysDecodes(wallTime: Int64) throws {
        var e = Self.entry(.rename(name: "x"))
        e.wallTime = wallTime
        if EntryCodec.validate(e) == nil {
            #expect(try Decode.entry(EntryCodec.encode(e)).get() == e)
        }
    }

    @Test(arguments: [UInt8(0x00), 0x0A, 0x10, 0x3F])
    func unknownNonSkippableOperationKindIsRejected(kind: UInt8) {
        // An opaque entry with an empty body ends with its kind byte.
        var bytes = EntryCodec.encode(Self.entry(.opaque(kind: 0x81, body: [])))
        bytes[bytes.count - 1] = kind
        #expect(Decode.entry(bytes).failure == CodecError(.unknownOperation(kind), at: bytes.count - 1))
    }

    /// A newer version's list change (0x41–0x7F; 0x40 is `move`) reads as an opaque entry, kept
    /// byte for byte.
    @Test(arguments: [UInt8(0x44), 0x55, 0x7F])
    func aNewerListChangeReadsAsOpaque(kind: UInt8) throws {
        let e = Self.entry(.opaque(kind: kind, body: [1, 2, 3]))
        #expect(EntryCodec.validate(e) == nil)
        let back = try Decode.entry(EntryCodec.encode(e)).get()
        #expect(back == e)
        #expect(back.operation.isNewerListChange)
        #expect(!EntryOperation.opaque(kind: 0x84, body: []).isNewerListChange)
    }

    @Test func aMoveRoundTripsAndIsNoOpaqueKind() throws {
        let e = Self.entry(.move(item: CompactID("milk")!, after: nil))
        #expect(try Decode.entry(EntryCodec.encode(e)).get() == e)
        #expect(EntryCodec.validate(Self.entry(.opaque(kind: 0x40, body: []))) != nil)
    }

    @Test func opaqueKindBelowHighBitFailsValidation() {
        #expect(EntryCodec.validate(Self.entry(.opaque(kind: 0x07, body: []))) != nil)
    }

    @Test func unsupportedEncodingVersionIsRejected() {
        var bytes = EntryCodec.encode(Self.entry(.rename(name: "x")))
        bytes[0] = 2
        #expect(Decode.entry(bytes).failure == CodecError(.unsupportedEncodingVersion(2), at: 0))
    }

    @Test func trailingBytesAfterAnEntryAreRejected() {
        let bytes = EntryCodec.encode(Self.entry(.markOff(item: Self.uuid))) + [0]
        #expect(Decode.entry(bytes).failure?.kind == .trailingBytes(1))
    }

    @Test func canonicalUUIDStoredAsTextIsRejected() {
        // Hand-build an entry whose id uses the text form for a canonical UUID.
        var w = ByteWriter()
        w.u8(EntryCodec.encodingVersion)
        w.u8(0)
        w.string("0f8e2c1a-9b7d-4e21-8c3f-5a6b7c8d9e0f")
        w.string("zone")
        w.string("alice")
        w.varint(HybridTime(physicalMillis: 1, counter: 0).rawValue)
        w.zigzag(0)
        w.u8(EntryOp.Kind.rename.rawValue)
        w.string("x")
        #expect(Decode.entry(w.bytes).failure?.kind == .invalidValue(field: "id"))
    }

    @Test func invalidUTF8TextIsRejected() {
        var bytes = EntryCodec.encode(Self.entry(.rename(name: "abc")))
        bytes[bytes.count - 1] = 0xFF
        #expect(Decode.entry(bytes).failure?.kind == .invalidUTF8(field: "name"))
    }

    // MARK: Batches

    @Test func batchRoundTripsWithoutCompression() throws {
        var g = EntryGenerator(seed: 2)
        let entries = g.entries(40)
        let payload = BatchCodec.encode(entries: entries.map(EntryCodec.encode), compress: false)
        let summary = try Decode.batchSummary(payload).get()
        #expect(!summary.flags.contains(.lz4))
        #expect(summary.count == 40)
        #expect(summary.lastDelta == 39)
        #expect(summary.rawLength == nil)
        let back = try Decode.batch(payload, first: 100).get()
        #expect(back.map(\.0) == Array(100...139))
        #expect(back.map(\.1) == entries)
    }

    @Test func batchRoundTripsWithCompression() throws {
        var g = EntryGenerator(seed: 3)
        let entries = g.entries(40)
        let payload = BatchCodec.encode(entries: entries.map(EntryCodec.encode), compress: true)
        let summary = try Decode.batchSummary(payload).get()
        #expect(summary.flags.contains(.lz4))
        #expect(summary.rawLength != nil)
        let back = try Decode.batch(payload, first: 7).get()
        #expect(back.map(\.0) == Array(7...46))
        #expect(back.map(\.1) == entries)
    }

    /// `encode(journalEntries:)` measures each entry, then writes the body into memory of that
    /// size: the same bytes as encoding each entry on its own and framing those, for every kind
    /// (opaque bodies, text ids, long and non-ASCII strings) and with compression on or off.
    @Test func aBatchWrittenToItsMeasureEqualsOneBuiltEntryByEntry() {
        for seed in 0..<20 as Range<UInt64> {
            var g = EntryGenerator(seed: 100 + seed)
            let entries = g.entries(Int(seed % 7) * 30 + 1)
            for compress in [false, true] {
                #expect(BatchCodec.encode(journalEntries: entries, compress: compress)
                        == BatchCodec.encode(entries: entries.map(EntryCodec.encode), compress: compress), "seed \(seed)")
            }
            for e in entries {
                var counter = ByteCounter()
                EntryCodec.encode(e, into: &counter)
                #expect(counter.count == EntryCodec.encode(e).count)
            }
        }
    }

    @Test func aBatchHandedOutEntryByEntryStopsWhenTold() throws {
        var g = EntryGenerator(seed: 4)
        let entries = g.entries(40)
        for compress in [false, true] {
            let payload = BatchCodec.encode(entries: entries.map(EntryCodec.encode), compress: compress)
            var got: [(SequenceNumber, JournalEntry)] = []
            let failure: CodecError? = payload.withUnsafeBytes { p in
                do throws(CodecError) {
                    try BatchCodec.decode(p, firstSequence: 10, after: 12) { s, e in
                        got.append((s, e))
                        return got.count < 5
                    }
                    return nil
                } catch { return error }
            }
            #expect(failure == nil)
            // Entries at or below `after` are skipped; the fifth one handed out is the last.
            #expect(got.map(\.0) == Array(13...17), "compressed: \(compress)")
            #expect(got.map(\.1) == Array(entries[3..<8]))
        }
    }

    @Test func repeatedStringsGiveWhatTheirBytesSayAndStillRejectBadUTF8() {
        var strings = RepeatedStrings()
        func decode(_ bytes: [UInt8]) -> String? { bytes.withUnsafeBytes { strings.string($0) } }
        let names = (0..<20).map { "author-\($0)" }
            + [String(repeating: "z", count: Limits.maxZoneBytes), String(repeating: "y", count: Limits.maxZoneBytes + 1), "Zoë", ""]
        for round in 0..<3 {
            for name in names { #expect(decode(Array(name.utf8)) == name, "round \(round)") }
        }
        #expect(decode([0x61, 0xFF]) == nil)
        #expect(decode([0x61, 0xFF]) == nil)
        #expect(decode([0xC3]) == nil)
    }

    @Test func largeRepetitiveBatchIsReallyCompressed() throws {
        let e = Self.entry(.add(item: Self.textID, text: "The same text again and again", after: nil))
        let encoded = Array(repeating: EntryCodec.encode(e), count: 2_000)
        let plain = BatchCodec.encode(entries: encoded, compress: false)
        let packed = BatchCodec.encode(entries: encoded, compress: true)
        #expect(try Decode.batchSummary(packed).get().flags.contains(.lz4))
        #expect(packed.count * 10 < plain.count, "packed \(packed.count) vs plain \(plain.count)")
        let back = try Decode.batch(packed).get()
        #expect(back.count == 2_000)
        #expect(back.allSatisfy { $0.1 == e })
        #expect(back.last?.0 == 2_000)
    }

    @Test func smallBatchStaysUncompressedEvenWhenCompressionIsOn() throws {
        let payload = BatchCodec.encode(entries: [EntryCodec.encode(Self.entry(.rename(name: "a"))),
                                                  EntryCodec.encode(Self.entry(.rename(name: "b")))], compress: true)
        #expect(try !Decode.batchSummary(payload).get().flags.contains(.lz4))
    }

    @Test func batchWithSequenceGapsRoundTrips() throws {
        var g = EntryGenerator(seed: 4)
        let entries = g.entries(5)
        for compress in [false, true] {
            let payload = BatchCodec.encode(entries: entries.map(EntryCodec.encode), sequenceDeltas: [0, 2, 1, 10, 3], compress: compress)
            let back = try Decode.batch(payload, first: 10).get()
            #expect(back.map(\.0) == [10, 12, 13, 23, 26])
            #expect(back.map(\.1) == entries)
            #expect(try Decode.batchSummary(payload).get().lastDelta == 16)
        }
    }

    @Test func batchWithWrongLastDeltaIsRejected() {
        let encoded = [EntryCodec.encode(Self.entry(.rename(name: "a"))), EntryCodec.encode(Self.entry(.rename(name: "b")))]
        var payload = BatchCodec.encode(entries: encoded, compress: false)
        // flags u8 | count varint | lastDelta varint: lastDelta is the third byte.
        #expect(payload[2] == 1)
        payload[2] = 5
        #expect(Decode.batch(payload).isFailure)
    }

    @Test func batchWithUnknownFlagsIsRejected() {
        var payload = BatchCodec.encode(entries: [EntryCodec.encode(Self.entry(.rename(name: "a")))], compress: false)
        payload[0] = 0x02
        #expect(Decode.batchSummary(payload).failure?.kind == .invalidValue(field: "batch flags"))
    }

    @Test func corruptedCompressedBatchBodyIsRejected() {
        let e = Self.entry(.add(item: Self.textID, text: "The same text again and again", after: nil))
        var payload = BatchCodec.encode(entries: Array(repeating: EntryCodec.encode(e), count: 100), compress: true)
        let body = try? Decode.batchSummary(payload).get().bodyOffset
        #expect(body != nil)
        // Drop the last byte of the LZ4 body: it can no longer decompress to the stated size.
        payload.removeLast()
        #expect(Decode.batch(payload).isFailure)
    }

    // MARK: Segment header

    static let header = SegmentHeader(storeID: (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210), baseSequence: 4242,
                                      previousChain: 0xDEAD_BEEF, createdAt: 1_795_424_400_000, flags: .compacted)

    @Test func segmentHeaderRoundTrips() throws {
        let bytes = Self.header.encoded()
        #expect(bytes.count == SegmentHeader.size)
        #expect(Array(bytes.prefix(8)) == SegmentHeader.magic)
        let back = try Decode.header(bytes).get()
        #expect(back == Self.header)
        #expect(back.encoded() == bytes)
    }

    @Test func segmentHeaderFollowedByFrameBytesStillDecodes() throws {
        let bytes = Self.header.encoded() + [1, 2, 3, 4]
        #expect(try Decode.header(bytes).get() == Self.header)
    }

    @Test func everySingleByteFlipOfASegmentHeaderIsRejected() {
        let bytes = Self.header.encoded()
        for i in 0..<bytes.count {
            for mask: UInt8 in [0x01, 0x80, 0xFF] {
                var b = bytes
                b[i] ^= mask
                #expect(Decode.header(b).isFailure, "flip of byte \(i) with mask \(mask) was accepted")
            }
        }
    }

    @Test func everyPrefixOfASegmentHeaderIsRejectedAsTruncated() {
        let bytes = Self.header.encoded()
        for n in 0..<bytes.count {
            #expect(Decode.header(Array(bytes.prefix(n))).failure == .truncated(n))
        }
    }

    @Test func segmentHeaderWithNewerMinorVersionIsAccepted() throws {
        let h = SegmentHeader(storeID: (1, 2), baseSequence: 1, previousChain: 0, createdAt: 0, minor: 9)
        #expect(try Decode.header(h.encoded()).get().minor == 9)
    }

    @Test func segmentHeaderWithOtherMajorVersionIsRejected() {
        let h = SegmentHeader(storeID: (1, 2), baseSequence: 1, previousChain: 0, createdAt: 0, major: 2)
        #expect(Decode.header(h.encoded()).failure == .unsupportedMajor(2))
    }

    // MARK: Varints

    static let varintCases: [(UInt64, Int)] = [
        (0, 1), (1, 1), (127, 1), (128, 2), (255, 2), (16_383, 2), (16_384, 3), (UInt64(UInt32.max), 5),
        (1 << 56 - 1, 8), (1 << 56, 9), (1 << 63 - 1, 9), (1 << 63, 10), (UInt64.max, 10),
    ]

    @Test func varintEdgeValuesRoundTripWithTheirLengths() throws {
        for (v, n) in Self.varintCases {
            var w = ByteWriter()
            w.varint(v)
            #expect(w.bytes.count == n, "\(v)")
            let (back, used) = try Decode.varint(w.bytes).get()
            #expect(back == v)
            #expect(used == n)
        }
    }

    @Test func varintLongerThanTenBytesOverflows() {
        let bytes = [UInt8](repeating: 0x80, count: 10) + [0x00]
        #expect(Decode.varint(bytes).failure?.kind == .varintOverflow)
    }

    @Test func tenthVarintByteAboveOneOverflows() {
        let bytes = [UInt8](repeating: 0xFF, count: 9) + [0x02]
        #expect(Decode.varint(bytes).failure?.kind == .varintOverflow)
        let max = [UInt8](repeating: 0xFF, count: 9) + [0x01]
        #expect(Decode.varint(max).value?.0 == UInt64.max)
    }

    @Test func nonMinimalVarintStillDecodes() {
        #expect(Decode.varint([0x80, 0x00]).value?.0 == 0)
        #expect(Decode.varint([0x81, 0x80, 0x00]).value?.0 == 1)
    }

    @Test func truncatedVarintIsRejected() {
        #expect(Decode.varint([]).failure == CodecError(.truncated, at: 0))
        #expect(Decode.varint([0x80]).failure == CodecError(.truncated, at: 1))
        #expect(Decode.varint([0xFF, 0xFF, 0xFF]).failure == CodecError(.truncated, at: 3))
    }

    @Test func zigzagEdgeValuesRoundTrip() throws {
        for v: Int64 in [0, -1, 1, -64, 63, 64, -65, Int64(Int32.min), Int64(Int32.max), Int64.min, Int64.max] {
            var w = ByteWriter()
            w.zigzag(v)
            #expect(try Decode.zigzag(w.bytes).get() == v)
        }
        var w = ByteWriter()
        w.zigzag(-1)
        #expect(w.bytes == [1])
        w = ByteWriter()
        w.zigzag(1)
        #expect(w.bytes == [2])
    }

    @Test func stringLengthAboveLimitIsRejectedBeforeReading() {
        var w = ByteWriter()
        w.u8(EntryCodec.encodingVersion)
        w.u8(0)
        w.varint(UInt64(Limits.maxIDBytes + 1))
        #expect(Decode.entry(w.bytes).failure?.kind == .lengthOutOfRange(field: "id", length: Limits.maxIDBytes + 1, limit: Limits.maxIDBytes))
    }

    // MARK: Frames

    @Test func frameRoundTripsAndChains() {
        var out: [UInt8] = []
        let c1 = Frame.append(type: RecordType.entry.rawValue, sequence: 1, payload: [1, 2, 3], chain: 77, to: &out)
        let first = out
        let c2 = Frame.append(type: RecordType.entry.rawValue, sequence: 2, payload: [4, 5], chain: c1, to: &out)
        guard case .frame(let h, let range, let crc) = Decode.frame(first, chain: 77) else {
            Issue.record("first frame does not scan")
            return
        }
        #expect(h == Frame.Header(length: 3, type: 1, sequence: 1))
        #expect(range == Frame.headerSize..<Frame.headerSize + 3)
        #expect(crc == c1)
        let second = Array(out[first.count...])
        guard case .frame(_, _, let crc2) = Decode.frame(second, chain: c1) else {
            Issue.record("second frame does not scan")
            return
        }
        #expect(crc2 == c2)
        // Chained from anything else, the second frame does not validate.
        guard case .crcMismatch = Decode.frame(second, chain: 77) else {
            Issue.record("second frame validated with the wrong chain")
            return
        }
    }

    @Test func frameScanReportsZeroTruncatedAndBadLength() {
        #expect(Decode.frame([UInt8](repeating: 0, count: 20), chain: 0) == .zero)
        #expect(Decode.frame([1, 2, 3], chain: 0) == .truncated(needed: Frame.headerSize))
        var out: [UInt8] = []
        Frame.append(type: 1, sequence: 1, payload: [1, 2, 3, 4], chain: 0, to: &out)
        #expect(Decode.frame(Array(out.dropLast()), chain: 0) == .truncated(needed: out.count))
        var big = out
        big[3] = 0x7F
        guard case .badLength = Decode.frame(big, chain: 0) else {
            Issue.record("oversized length not reported")
            return
        }
    }

    // MARK: Robustness

    /// Every decoder on one input; none may crash, whatever the bytes.
    static func decodeEverything(_ b: [UInt8]) {
        _ = Decode.entry(b)
        _ = Decode.batch(b)
        _ = Decode.batchSummary(b)
        _ = Decode.header(b)
        _ = Decode.varint(b)
        _ = Decode.zigzag(b)
        _ = Decode.zoneCreate(b)
        _ = Decode.zoneDelete(b)
        _ = Decode.seal(b)
        _ = Decode.frame(b, chain: 0)
        b.withUnsafeBytes { FuzzChecks.entry($0); FuzzChecks.batch($0); FuzzChecks.segmentHeader($0) }
    }

    @Test func decodersNeverCrashOnRandomBytes() {
        var rng = SplitMix64(seed: 0x5EED)
        for i in 0..<3_000 {
            let n = i < 300 ? i : Int(rng.next() % 600)
            Self.decodeEverything(rng.bytes(n))
        }
    }

    @Test func decodersNeverCrashOnRandomBytesThatStartLikeRealEncodings() {
        var rng = SplitMix64(seed: 0xFACE)
        for _ in 0..<2_000 {
            // A plausible prefix (version byte, batch flags, text id tag) then noise.
            let head: [UInt8] = [[1, 0], [1, 1], [0], [1], [0, 5, 4], [1, 3, 2, 40]].randomElement(using: &rng)!
            Self.decodeEverything(head + rng.bytes(Int(rng.next() % 120)))
        }
    }

    @Test func everyStrictPrefixOfAnEntryIsRejected() {
        var g = EntryGenerator(seed: 5, includeOpaque: false)
        var entries = g.entries(40)
        entries += Self.operations.filter { $0.kindByte < 0x80 }.map { Self.entry($0) }
        for e in entries {
            let bytes = EntryCodec.encode(e)
            for n in 0..<bytes.count {
                #expect(Decode.entry(Array(bytes.prefix(n))).isFailure, "prefix \(n) of \(bytes.count) decoded")
            }
        }
    }

    @Test func prefixesOfOpaqueEntriesNeverCrash() throws {
        // An opaque body runs to the end, so a prefix past the kind byte is itself a valid, shorter entry.
        let e = Self.entry(.opaque(kind: 0x90, body: Array(0..<40)))
        let bytes = EntryCodec.encode(e)
        let kindAt = bytes.count - 41
        for n in 0..<bytes.count {
            let r = Decode.entry(Array(bytes.prefix(n)))
            if n <= kindAt {
                #expect(r.isFailure)
            } else {
                #expect(try r.get().operation == .opaque(kind: 0x90, body: Array(0..<UInt8(n - kindAt - 1))))
            }
        }
    }

    @Test(arguments: [false, true])
    func everyStrictPrefixOfABatchIsRejected(compress: Bool) {
        var g = EntryGenerator(seed: 6, includeOpaque: false)
        let payload = BatchCodec.encode(entries: g.entries(30).map(EntryCodec.encode), compress: compress)
        #expect(Decode.batch(payload).value?.count == 30)
        for n in 0..<payload.count {
            #expect(Decode.batch(Array(payload.prefix(n))).isFailure, "prefix \(n) of \(payload.count) decoded")
        }
    }

    @Test func singleByteMutationsOfValidEncodingsNeverCrash() {
        var g = EntryGenerator(seed: 8)
        var rng = SplitMix64(seed: 9)
        let entries = g.entries(20)
        let samples: [[UInt8]] = entries.map(EntryCodec.encode) + [
            BatchCodec.encode(entries: entries.map(EntryCodec.encode), compress: false),
            BatchCodec.encode(entries: entries.map(EntryCodec.encode), compress: true),
            Self.header.encoded(),
            ZoneRecordCodec.encodeCreate(zone: "Groceries"),
            ZoneRecordCodec.encodeDelete(zone: "Groceries", reason: .purged),
            SealCodec.encode(endChain: 5, lastSequence: 9),
        ]
        for s in samples {
            for i in 0..<s.count {
                var b = s
                b[i] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
                Self.decodeEverything(b)
            }
        }
    }

    @Test func arbitrarySegmentBytesNeverCrashTheScannerInAnyMode() {
        var rng = SplitMix64(seed: 10)
        let header = SegmentHeader(storeID: (1, 2), baseSequence: 1, previousChain: SegmentHeader.firstChain(storeID: (1, 2)),
                                   createdAt: 0).encoded()
        var frames: [UInt8] = []
        var chain = SegmentHeader.firstChain(storeID: (1, 2))
        var g = EntryGenerator(seed: 11)
        for s in 1...5 {
            chain = Frame.append(type: RecordType.entry.rawValue, sequence: SequenceNumber(s),
                                 payload: EntryCodec.encode(g.next()), chain: chain, to: &frames)
        }
        let valid = header + frames
        valid.withUnsafeBytes { FuzzChecks.segment($0) }
        for _ in 0..<200 {
            var b = valid
            for _ in 0..<Int(rng.next() % 4 + 1) {
                let i = Int(rng.next() % UInt64(b.count))
                b[i] = UInt8(truncatingIfNeeded: rng.next())
            }
            if rng.next() % 3 == 0 { b = Array(b.prefix(Int(rng.next() % UInt64(b.count)))) }
            b.withUnsafeBytes { FuzzChecks.segment($0) }
        }
    }
}

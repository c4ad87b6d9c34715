import Foundation
import JournalCodec
import JournalLog

/// The property each fuzz target checks, shared by the libFuzzer targets in `Fuzz/` and by the
/// test that replays their corpora and past crashes. Each returns normally on any input unless
/// a round trip breaks, which traps.
package enum FuzzChecks {
    /// Entry decoding round-trips: decode, encode, decode gives the same entry.
    package static func entry(_ bytes: UnsafeRawBufferPointer) {
        guard let entry = try? EntryCodec.decode(bytes) else { return }
        let again = EntryCodec.encode(entry)
        guard let back = try? EntryCodec.decode(again), back == entry, EntryCodec.encode(back) == again else {
            fatalError("entry round trip failed")
        }
    }

    /// Batch payloads (including LZ4 bodies) round-trip with and without compression.
    package static func batch(_ bytes: UnsafeRawBufferPointer) {
        guard let decoded = try? BatchCodec.decode(bytes, firstSequence: 1) else { return }
        var deltas: [UInt64] = []
        var previous: UInt64 = 1
        for (seq, _) in decoded {
            deltas.append(seq - previous)
            previous = seq
        }
        for compress in [false, true] {
            let again = BatchCodec.encode(entries: decoded.map { EntryCodec.encode($0.1) }, sequenceDeltas: deltas, compress: compress)
            let result = again.withUnsafeBytes { try? BatchCodec.decode($0, firstSequence: 1) }
            guard let back = result, back.map(\.0) == decoded.map(\.0), back.map(\.1) == decoded.map(\.1) else {
                fatalError("batch round trip failed")
            }
        }
    }

    /// A segment header that decodes re-encodes to exactly the same 64 bytes.
    package static func segmentHeader(_ bytes: UnsafeRawBufferPointer) {
        guard let header = try? SegmentHeader.decode(bytes) else { return }
        guard header.encoded().elementsEqual(bytes.prefix(SegmentHeader.size)) else { fatalError("header round trip failed") }
    }

    /// Arbitrary bytes read as a store's only segment and as a standalone file, in every mode.
    package static func segment(_ bytes: UnsafeRawBufferPointer) {
        let fs = MemoryFileSystem()
        try? fs.createDirectory("/s")
        fs.install("/s/00000000000000000001.seg", bytes: [UInt8](bytes))
        for mode in RecoveryMode.allCases {
            var lastSequence: SequenceNumber = 0
            _ = try? LogReader.read("/s", mode: mode, fs: fs, settle: .zero) { event, _ in
                if case .entry(let s, _) = event {
                    guard mode == .salvage || s > lastSequence else { fatalError("sequences went backwards") }
                    lastSequence = s
                }
            }
            _ = try? LogReader.read("/s/00000000000000000001.seg", mode: mode, fs: fs) { _, _ in }
        }
    }

    /// A JSON line that parses formats back to a line that parses to the same entry.
    package static func jsonLine(_ bytes: UnsafeRawBufferPointer) {
        guard let parsed = try? EntryJSON.parse(utf8: bytes) else { return }
        let entry = JournalEntry(id: parsed.id ?? CompactID("fuzz")!, zone: parsed.zone, author: parsed.author,
                                 wallTime: parsed.wallTime, clock: parsed.clock ?? HybridTime(rawValue: 0), operation: parsed.operation)
        let line = EntryJSON.format(entry)
        guard let back = try? EntryJSON.parse(line: line), back.zone == entry.zone, back.author == entry.author,
              back.wallTime == entry.wallTime, back.operation == entry.operation, back.id == entry.id else {
            fatalError("JSON line round trip failed: \(line)")
        }
    }

    /// Change tokens: any text either fails cleanly or round-trips exactly.
    package static func changeToken(_ bytes: UnsafeRawBufferPointer) {
        let key: (UInt64, UInt64) = (0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908)
        guard let text = validUTF8String(bytes), let token = try? ChangeToken.parse(text, key: key, storeID: (1, 2), zoneHash: 3) else { return }
        // Written again (version 4) and read back, it is the same token (a database token's
        // zone hash is 0 in version 4).
        var expected = token
        if token.kind == .database { expected.zoneHash = 0 }
        let again = try? ChangeToken.parse(token.text(key: key), key: key, storeID: token.storeID, zoneHash: token.zoneHash)
        guard again == expected else { fatalError("token round trip failed") }
    }

    /// Every target by the name of its directory under `Fuzz/`.
    package static let targets: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
        "FuzzEntry": entry, "FuzzBatch": batch, "FuzzSegmentHeader": segmentHeader,
        "FuzzSegment": segment, "FuzzJSONLine": jsonLine, "FuzzChangeToken": changeToken,
        "FuzzZoneIndex": zoneIndexAndJournal, "FuzzConsumer": consumer, "FuzzWireBatch": wireBatch,
    ]
}

extension FuzzChecks {
    /// The zone index's two parsers (INDEX.md §4, §5) on the same input.
    package static func zoneIndexAndJournal(_ bytes: UnsafeRawBufferPointer) {
        zoneIndex(bytes)
        zoneIndexJournal(bytes)
    }

    /// Zone-index checkpoint decoding never crashes; what decodes re-encodes to the same bytes.
    package static func zoneIndex(_ bytes: UnsafeRawBufferPointer) {
        guard let index = try? ZoneIndexCodec.decode(bytes) else { return }
        _ = index.inconsistency()
        let again = ZoneIndexCodec.encode(index)
        let back = again.withUnsafeBytes { try? ZoneIndexCodec.decode($0) }
        guard back == index, ZoneIndexCodec.encode(back!) == again else { fatalError("zone index round trip failed") }
    }

    /// The checkpoint file the journal inputs extend, that of `Spec/vectors/zone-index.txt`: two
    /// segments, a zone with frames in both, a deleted one.
    package static let journalBase: ZoneIndexCheckpoint = {
        var a = ZoneTrack(name: "List-a", incarnation: 1, isImplicit: true)
        a.frameSequences = [1, 4, 9]
        a.frameLocations = [64, 130, 1 << 32 | 64]
        a.entryCount = 5
        a.lastSequence = 10
        a.lowWaterMark = 4
        a.historyThrough = 9
        var b = ZoneTrack(name: "List-b", incarnation: 2, isImplicit: false)
        b.deletedAt = 3
        return ZoneIndexCheckpoint(storeID: (1, 2), coveredSegment: 9, coveredOffset: 64, coveredCRC: 0x1234_5678,
                                   coveredSequence: 10, segments: [1, 9], zones: [a, b])
    }()

    /// Index journals (INDEX.md §5): any bytes after a header naming a checkpoint file apply
    /// cleanly or stop, and so do the bytes as one record's body (length and CRC made right, so
    /// the fuzzer reaches the body's parser). What applied is a checkpoint that encodes and
    /// decodes to itself, and one record made from the file's checkpoint to it applies to the same.
    package static func zoneIndexJournal(_ bytes: UnsafeRawBufferPointer) {
        let base = journalBase
        let header = ZoneIndexJournalCodec.header(extending: base, baseCRC: 7)
        var framed = ByteWriter(capacity: bytes.count + 8)
        framed.u32(UInt32(truncatingIfNeeded: bytes.count))
        framed.raw(bytes)
        framed.u32(CRC32C.extend(0, framed.bytes))
        for journal in [header + Array(bytes), header + framed.bytes] {
            let applied = journal.withUnsafeBytes { ZoneIndexJournalCodec.apply($0, to: base, baseCRC: 7) }
            guard applied.records > 0 else { continue }
            let c = applied.checkpoint
            _ = c.inconsistency()
            let file = ZoneIndexCodec.encode(c)
            guard file.withUnsafeBytes({ try? ZoneIndexCodec.decode($0) }) == c else { fatalError("an applied journal does not round-trip as a file") }
            guard let record = ZoneIndexJournalCodec.record(from: base, to: c) else { fatalError("an applied journal does not extend its file") }
            let again = (header + record).withUnsafeBytes { ZoneIndexJournalCodec.apply($0, to: base, baseCRC: 7) }
            guard again.records == 1, again.checkpoint == c else { fatalError("a record made from an applied journal does not apply to the same") }
        }
    }
}

extension FuzzChecks {
    /// Consumer-file decoding (COMPACTION.md §3) never crashes; what decodes re-encodes to bytes
    /// that decode to the same consumer and encode the same again. The input is read as it is and
    /// with its last four bytes replaced by the CRC of the rest, so the fuzzer reaches the parser
    /// behind the checksum.
    package static func consumer(_ bytes: UnsafeRawBufferPointer) {
        func roundTrip(_ b: UnsafeRawBufferPointer) {
            guard let c = try? ConsumerCodec.decode(b) else { return }
            let again = ConsumerCodec.encode(c)
            let back = again.withUnsafeBytes { try? ConsumerCodec.decode($0) }
            guard back == c, ConsumerCodec.encode(back!) == again else { fatalError("consumer round trip failed") }
        }
        roundTrip(bytes)
        guard bytes.count >= 4 else { return }
        var fixed = ByteWriter(capacity: bytes.count)
        fixed.bytes.append(contentsOf: bytes.prefix(bytes.count - 4))
        fixed.u32(CRC32C.extend(0, fixed.bytes))
        fixed.bytes.withUnsafeBytes(roundTrip)
    }
}

extension FuzzChecks {
    /// Wire batches (an upload's body, a fetched page) never crash the decoder; what decodes
    /// re-encodes to a batch that decodes to the same entries. The input is tried as it is and
    /// framed afresh (magic, length, CRC), so that the fuzzer reaches the batch behind the frame.
    package static func wireBatch(_ bytes: UnsafeRawBufferPointer) {
        func roundTrip(_ b: UnsafeRawBufferPointer) {
            guard let entries = try? WireBatch.decode(b), !entries.isEmpty else { return }
            for compress in [false, true] {
                guard let back = try? WireBatch.decode(WireBatch.encode(entries, compress: compress)), back == entries else {
                    fatalError("wire batch round trip failed")
                }
            }
        }
        roundTrip(bytes)
        guard !bytes.isEmpty, bytes.count <= Limits.maxPayloadBytes else { return }
        WireBatch.frame(Array(bytes)).withUnsafeBytes(roundTrip)
    }
}

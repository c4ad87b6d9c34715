/// Payload codecs for the record types (Spec/FORMAT.md §5).
package enum BatchCodec {
    package struct Flags: OptionSet, Sendable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        package static let lz4 = Flags(rawValue: 1)
    }

    /// `flags u8 | count varint | lastDelta varint | [rawLength varint] | body`, where the
    /// body is `count × (seqDelta varint | length varint | entry)`, LZ4-compressed when
    /// flagged. `lastDelta` lets recovery learn the last sequence without decoding the body.
    /// Encodes entries straight into the batch body: one scratch buffer, no array per entry.
    package static func encode(journalEntries entries: [JournalEntry], compress: Bool = true) -> [UInt8] {
        encode(journalEntries: entries, compress: compress, fingerprints: nil)
    }

    /// `encode`, also filling `fingerprints[i]` with `EntryFingerprint.of` entry i's encoding,
    /// taken from the body as it is written (no second encode).
    package static func encode(journalEntries entries: [JournalEntry], compress: Bool,
                              fingerprints: UnsafeMutableBufferPointer<UInt64>?) -> [UInt8] {
        precondition(!entries.isEmpty && entries.count <= Limits.maxBatchEntries)
        precondition(fingerprints.map { $0.count >= entries.count } ?? true)
        // Two passes over the entries, each read where it lies (passed by value, an entry is
        // copied whole first): measure every entry, then write the body into memory of exactly
        // that size. Appending to a growing array cost over 100 instructions an append.
        let body = entries.withUnsafeBufferPointer { entries -> [UInt8] in
            var lengths = [Int](repeating: 0, count: entries.count)
            var total = 0
            for i in entries.indices {
                var c = ByteCounter()
                EntryCodec.encode(entries.baseAddress! + i, into: &c)
                lengths[i] = c.count
                total += 1 + varintLength(UInt64(c.count)) + c.count  // delta (0 or 1), length, entry
            }
            return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
                var w = RawByteWriter(UnsafeMutableRawBufferPointer(buffer))
                for i in entries.indices {
                    w.varint(i == 0 ? 0 : 1)
                    w.varint(UInt64(lengths[i]))
                    let start = w.offset
                    EntryCodec.encode(entries.baseAddress! + i, into: &w)
                    precondition(w.offset - start == lengths[i], "an entry's encoding differs from its measure")
                    if let fingerprints {
                        fingerprints[i] = EntryFingerprint.of(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[start..<w.offset]))
                    }
                }
                precondition(w.offset == total, "the batch body differs from its measure")
                count = total
            }
        }
        return wrap(body: body, count: entries.count, lastDelta: UInt64(entries.count - 1), compress: compress)
    }

    package static func encode(entries: [[UInt8]], sequenceDeltas: [UInt64]? = nil, compress: Bool = true) -> [UInt8] {
        precondition(!entries.isEmpty && entries.count <= Limits.maxBatchEntries)
        let deltas = sequenceDeltas ?? [0] + Array(repeating: 1, count: entries.count - 1)
        precondition(deltas.count == entries.count && deltas[0] == 0 && deltas.dropFirst().allSatisfy { $0 >= 1 })
        var body = ByteWriter(capacity: entries.reduce(0) { $0 + $1.count + 4 })
        for (e, d) in zip(entries, deltas) {
            body.varint(d)
            body.varint(UInt64(e.count))
            body.append(contentsOf: e)
        }
        return wrap(body: body.bytes, count: entries.count, lastDelta: deltas.reduce(0, +), compress: compress)
    }

    /// Prepends the fixed fields, compressing the body when that pays.
    static func wrap(body: [UInt8], count: Int, lastDelta: UInt64, compress: Bool) -> [UInt8] {
        var w = ByteWriter(capacity: body.count + 16)
        if compress && body.count >= Limits.compressionThreshold {
            let packed = body.withUnsafeBytes { LZ4.compress($0) }
            if packed.count < body.count {
                w.u8(Flags.lz4.rawValue)
                w.varint(UInt64(count))
                w.varint(lastDelta)
                w.varint(UInt64(body.count))
                w.append(contentsOf: packed)
                return w.bytes
            }
        }
        w.u8(0)
        w.varint(UInt64(count))
        w.varint(lastDelta)
        w.append(contentsOf: body)
        return w.bytes
    }

    package struct Summary: Equatable, Sendable {
        package var flags: Flags
        package var count: Int
        /// Last sequence minus first sequence.
        package var lastDelta: UInt64
        package var bodyOffset: Int
        package var rawLength: Int?
    }

    /// Reads only the batch's fixed fields: enough for recovery to continue the numbering.
    package static func summary(_ p: UnsafeRawBufferPointer) throws(CodecError) -> Summary {
        var r = ByteReader(p)
        let flagsAt = r.offset
        let flags = Flags(rawValue: try r.u8())
        guard flags.rawValue & ~Flags.lz4.rawValue == 0 else { throw CodecError(.invalidValue(field: "batch flags"), at: flagsAt) }
        let countAt = r.offset
        let count = try r.varint()
        guard count >= 1 && count <= UInt64(Limits.maxBatchEntries) else {
            throw CodecError(.lengthOutOfRange(field: "batch count", length: Int(clamping: count), limit: Limits.maxBatchEntries), at: countAt)
        }
        let deltaAt = r.offset
        let lastDelta = try r.varint()
        guard lastDelta >= count - 1, lastDelta < 1 << 62 else { throw CodecError(.invalidValue(field: "batch lastDelta"), at: deltaAt) }
        var rawLength: Int? = nil
        if flags.contains(.lz4) {
            let at = r.offset
            let raw = try r.varint()
            guard raw >= 1 && raw <= UInt64(Limits.maxPayloadBytes) else {
                throw CodecError(.lengthOutOfRange(field: "batch raw length", length: Int(clamping: raw), limit: Limits.maxPayloadBytes), at: at)
            }
            rawLength = Int(raw)
        }
        return Summary(flags: flags, count: Int(count), lastDelta: lastDelta, bodyOffset: r.offset, rawLength: rawLength)
    }

    /// Decodes every entry with its sequence, given the frame's (first) sequence. With `after`
    /// and `zone`, only entries past `after` in that zone are decoded (the rest are skipped by
    /// their length): the change feed reads a few entries out of large batches.
    package static func decode(_ p: UnsafeRawBufferPointer, firstSequence: SequenceNumber, after: SequenceNumber = 0,
                              zone: [UInt8]? = nil) throws(CodecError) -> [(SequenceNumber, JournalEntry)] {
        var out: [(SequenceNumber, JournalEntry)] = []
        out.reserveCapacity(try summary(p).count)
        try decode(p, firstSequence: firstSequence, after: after, zone: zone) { s, e in
            out.append((s, e))
            return true
        }
        return out
    }

    /// `decode`, handing each entry to `body` as it is decoded rather than collecting them (a
    /// feed page would otherwise copy each entry once more). Stops, without reading the rest of
    /// the batch, when `body` returns false.
    package static func decode(_ p: UnsafeRawBufferPointer, firstSequence: SequenceNumber, after: SequenceNumber = 0,
                              zone: [UInt8]? = nil, each body: (SequenceNumber, consuming JournalEntry) -> Bool) throws(CodecError) {
        try decode(p, firstSequence: firstSequence, after: after, zone: zone, withEncoding: { s, e, _ in body(s, e) })
    }

    /// `decode`, handing each entry over with its encoding (FORMAT.md §6) as stored in the body:
    /// what an entry's fingerprint is taken over. The bytes are valid only during the call.
    package static func decode(_ p: UnsafeRawBufferPointer, firstSequence: SequenceNumber, after: SequenceNumber = 0, zone: [UInt8]? = nil,
                              withEncoding body: (SequenceNumber, consuming JournalEntry, UnsafeRawBufferPointer) -> Bool) throws(CodecError) {
        let s = try summary(p)
        if let raw = s.rawLength {
            guard let decompressed = LZ4.decompress(UnsafeRawBufferPointer(rebasing: p[s.bodyOffset...]), rawLength: raw) else {
                throw CodecError(.decompressionFailed, at: s.bodyOffset)
            }
            let failure: CodecError? = decompressed.withUnsafeBytes { b -> CodecError? in
                do throws(CodecError) {
                    try decodeBody(b, start: 0, summary: s, firstSequence: firstSequence, after: after, zone: zone, body)
                    return nil
                } catch {
                    return error
                }
            }
            // Offsets inside a compressed body are relative to the decompressed bytes.
            if let failure { throw CodecError(failure.kind, at: s.bodyOffset) }
        } else {
            try decodeBody(p, start: s.bodyOffset, summary: s, firstSequence: firstSequence, after: after, zone: zone, body)
        }
    }

    private static func decodeBody(_ b: UnsafeRawBufferPointer, start: Int, summary s: Summary, firstSequence: SequenceNumber,
                                   after: SequenceNumber, zone: [UInt8]?,
                                   _ body: (SequenceNumber, consuming JournalEntry, UnsafeRawBufferPointer) -> Bool) throws(CodecError) {
        var r = ByteReader(b, offset: start)
        var strings = RepeatedStrings()
        var seq = firstSequence
        for i in 0..<s.count {
            let deltaAt = r.offset
            let d = try r.varint()
            guard (i == 0 && d == 0) || (i > 0 && d >= 1 && d <= s.lastDelta) else {
                throw CodecError(.invalidValue(field: "sequence delta"), at: deltaAt)
            }
            seq &+= d
            let n = try r.length("entry", limit: Limits.maxPayloadBytes)
            if seq <= after || (zone.map { !EntryCodec.entry(b, r.offset..<r.offset + n, mayBeIn: $0) } ?? false) {
                r.offset += n
                continue
            }
            var er = ByteReader(b, offset: r.offset, end: r.offset + n)
            let e = try EntryCodec.decode(&er, &strings)
            let encoding = UnsafeRawBufferPointer(rebasing: b[r.offset..<r.offset + n])
            r.offset += n
            guard body(seq, e, encoding) else { return }
        }
        guard seq == firstSequence &+ s.lastDelta else { throw CodecError(.invalidValue(field: "batch lastDelta"), at: r.offset) }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
    }
}

/// Builds a batch from entries' encodings as they are stored, in ascending sequences (gaps
/// allowed): what a compaction keeps of a batch is copied, not decoded and encoded again.
package struct BatchBuilder: Sendable {
    private var body = ByteWriter(capacity: 1 << 12)
    private var last: SequenceNumber = 0
    private var first: SequenceNumber = 0
    package private(set) var count = 0

    package init() {}

    /// The body's length before compression.
    package var bodyBytes: Int { body.bytes.count }

    package mutating func append(sequence: SequenceNumber, encoding: UnsafeRawBufferPointer) {
        precondition(count == 0 || sequence > last, "batch entries in ascending sequences")
        body.varint(count == 0 ? 0 : sequence - last)
        body.varint(UInt64(encoding.count))
        body.raw(encoding)
        if count == 0 { first = sequence }
        last = sequence
        count += 1
    }

    /// The batch payload (FORMAT.md §5.2).
    package func encoded(compress: Bool) -> [UInt8] {
        precondition(count >= 1 && count <= Limits.maxBatchEntries)
        return BatchCodec.wrap(body: body.bytes, count: count, lastDelta: last - first, compress: compress)
    }
}

/// Why a zone was deleted; carried so clients can tell a user action from a purge.
public enum ZoneDeletionReason: UInt8, Sendable, CaseIterable {
    /// A user deleted the zone.
    case deleted = 0
    /// The zone was removed by the system, not a user, e.g. to replace it with the service's copy.
    case purged = 1
}

/// `zoneCreate`: `zone string`. `zoneDelete`: `zone string | reason u8`.
package enum ZoneRecordCodec {
    package static func encodeCreate(zone: String) -> [UInt8] {
        var w = ByteWriter()
        w.string(zone)
        return w.bytes
    }

    package static func encodeDelete(zone: String, reason: ZoneDeletionReason) -> [UInt8] {
        var w = ByteWriter()
        w.string(zone)
        w.u8(reason.rawValue)
        return w.bytes
    }

    package static func decodeCreate(_ p: UnsafeRawBufferPointer) throws(CodecError) -> String {
        var r = ByteReader(p)
        let z = try r.string("zone", limit: Limits.maxZoneBytes)
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return z
    }

    package static func decodeDelete(_ p: UnsafeRawBufferPointer) throws(CodecError) -> (String, ZoneDeletionReason) {
        var r = ByteReader(p)
        let z = try r.string("zone", limit: Limits.maxZoneBytes)
        let at = r.offset
        guard let reason = ZoneDeletionReason(rawValue: try r.u8()) else { throw CodecError(.invalidValue(field: "reason"), at: at) }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return (z, reason)
    }
}

/// `seal`: `endChain u32 | lastSequence u64`. Written at the end of a compacted segment so
/// the next segment's `previousChain` still links to it after the rewrite.
package enum SealCodec {
    package static func encode(endChain: UInt32, lastSequence: SequenceNumber) -> [UInt8] {
        var w = ByteWriter(capacity: 12)
        w.u32(endChain)
        w.u64(lastSequence)
        return w.bytes
    }

    package static func decode(_ p: UnsafeRawBufferPointer) throws(CodecError) -> (endChain: UInt32, lastSequence: SequenceNumber) {
        var r = ByteReader(p)
        let c = try r.u32()
        let s = try r.u64()
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return (c, s)
    }
}

/// Skippable record types (high bit set, FORMAT.md §4.1): an older reader skips them safely.
package enum SkippableRecordType {
    /// `lowWaterMark`: tokens below the mark get `tokenExpired`. Consumes no sequence.
    package static let lowWaterMark: UInt8 = 0x81
}

/// `lowWaterMark`: `zone string | incarnation u64 | mark u64 [| history u64]`. Set by the
/// compactor (or by hand) once entries at or below `mark` may be gone: a token below it can no
/// longer be served. `history`, when present, says how far the incarnation's history pieces reach
/// (the newest piece's sequence when the record was written): the log is the only durable record
/// that can say a newer piece is missing (FORMAT.md §5.6, COMPACTION.md §4). A record without it
/// (written before the field existed) reads as 0, and a record with 0 is written without it, so
/// a mark alone keeps its old bytes.
package enum LowWaterCodec {
    package static func encode(zone: String, incarnation: SequenceNumber, mark: SequenceNumber, history: SequenceNumber = 0) -> [UInt8] {
        var w = ByteWriter()
        w.string(zone)
        w.u64(incarnation)
        w.u64(mark)
        if history > 0 { w.u64(history) }
        return w.bytes
    }

    package static func decode(_ p: UnsafeRawBufferPointer) throws(CodecError) -> (zone: String, incarnation: SequenceNumber, mark: SequenceNumber, history: SequenceNumber) {
        var r = ByteReader(p)
        let z = try r.string("zone", limit: Limits.maxZoneBytes)
        let inc = try r.u64()
        var at = r.offset
        let mark = try r.u64()
        guard mark < 1 << 62 else { throw CodecError(.invalidValue(field: "low-water mark"), at: at) }
        // The optional field is exactly 8 bytes: anything else after the mark is trailing bytes.
        var history: SequenceNumber = 0
        if r.remaining == 8 {
            at = r.offset
            history = try r.u64()
            guard history < 1 << 62 else { throw CodecError(.invalidValue(field: "history reach"), at: at) }
        }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return (z, inc, mark, history)
    }
}

import JournalCodec

/// Snapshot deltas (Spec/SNAPSHOT.md §6): the state at a sequence as the item records that
/// changed against a base snapshot, so that a compaction run a day after the last one writes
/// bytes in proportion to what changed, not the whole list again.
///
/// A delta works on the bodies' bytes, never on a reducer: the base's records, minus those the
/// delta removes, with those it carries put in their place or after them, make a §3 body that is
/// decoded and checked exactly as a whole snapshot's (entry count and digest from the delta's
/// header). A wrong base, or a wrong delta, therefore fails that check; it never yields a state.
package enum SnapshotDelta {
    /// A body's item records, as byte ranges of it.
    struct Layout {
        /// End of the author table (the bodies of a base and its delta must share it byte for byte).
        var authorsEnd = 0
        /// Offset of the item count: what comes before it is the body's prefix.
        var prefixEnd = 0
        var records: [Record] = []
    }

    struct Record {
        var id: Range<Int>
        var bytes: Range<Int>
    }

    /// Where a delta's base is named: its sequence and the CRC32C of its decompressed body.
    package struct Base: Equatable, Sendable {
        package var sequence: UInt64
        package var bodyCRC: UInt32
    }

    /// A delta is written only when its body is at most this fraction of the whole body: past
    /// it, the whole snapshot is cheaper to read and becomes the next base.
    package static let largestFraction = 2

    // MARK: Encoding

    /// The delta file of `reducer` at `sequence` against `base` (a whole snapshot file of the
    /// same zone incarnation at a lower sequence), or nil when the base cannot serve (damaged,
    /// another zone or incarnation, another author table) or the delta would be larger than
    /// 1/`largestFraction` of the whole body.
    package static func encode(reducer: ListReducer, incarnation: UInt64, sequence: UInt64, base file: [UInt8],
                              compress: Bool = true) -> [UInt8]? {
        let base: (header: SnapshotHeader, body: [UInt8])
        do { base = try SnapshotCodec.storedBody(file) } catch { return nil }
        guard !base.header.isDelta, base.header.zone == reducer.zone, base.header.incarnation == incarnation,
              base.header.sequence < sequence else { return nil }
        let (body, digest) = SnapshotCodec.bodyAndDigest(reducer)
        guard let delta = deltaBody(body, against: base.body, base: Base(sequence: base.header.sequence, bodyCRC: base.header.bodyCRC),
                                    sealed: SnapshotCodec.isSealed(reducer), baseSealed: base.header.flags & SnapshotCodec.flagSealed != 0),
              delta.count <= body.count / largestFraction else { return nil }
        return SnapshotCodec.file(body: delta, minor: SnapshotCodec.deltaMinor,
                                  flags: SnapshotCodec.flagDelta | SnapshotCodec.contentFlags(reducer), zone: reducer.zone,
                                  incarnation: incarnation, sequence: sequence, entryCount: UInt64(reducer.entryCount),
                                  digest: digest, compress: compress)
    }

    /// The delta body (§6.1) taking `baseBody` to `body`; nil when their author tables differ.
    /// `sealed`, `baseSealed`: whether each body takes the sealed form (SNAPSHOT.md §3, header flag bit 3).
    static func deltaBody(_ body: [UInt8], against baseBody: [UInt8], base: Base, sealed: Bool = false, baseSealed: Bool = false) -> [UInt8]? {
        guard let new = try? layout(body, sealed: sealed), let old = try? layout(baseBody, sealed: baseSealed),
              body[0..<new.authorsEnd] == baseBody[0..<old.authorsEnd] else { return nil }
        var kept = [Bool](repeating: false, count: old.records.count)
        var changed: [Range<Int>] = []
        body.withUnsafeBytes { n in
            baseBody.withUnsafeBytes { b in
                let byID = RecordsByID(old.records, in: b)
                for rec in new.records {
                    if let k = byID.find(n, rec.id) {
                        kept[k] = true
                        if baseBody[old.records[k].bytes] == body[rec.bytes] { continue }
                    }
                    changed.append(rec.bytes)
                }
            }
        }
        var w = ByteWriter(capacity: 64 + new.prefixEnd + changed.reduce(0) { $0 + $1.count })
        w.u64(base.sequence)
        w.u32(base.bodyCRC)
        w.varint(UInt64(new.prefixEnd))
        w.append(contentsOf: body[0..<new.prefixEnd])
        w.varint(UInt64(new.records.count))
        w.varint(UInt64(kept.lazy.filter { !$0 }.count))
        for (k, rec) in old.records.enumerated() where !kept[k] { w.append(contentsOf: baseBody[rec.id]) }
        w.varint(UInt64(changed.count))
        for r in changed { w.append(contentsOf: body[r]) }
        return w.bytes
    }

    // MARK: Decoding

    /// The base a delta file names (its header and the first 12 bytes of its body checked).
    package static func base(ofFile bytes: UnsafeRawBufferPointer) throws(SnapshotError) -> Base {
        let (header, body) = try SnapshotCodec.storedBody(bytes)
        guard header.isDelta else { throw .malformedBody("not a delta", offset: 0) }
        return try base(of: body)
    }

    static func base(of body: [UInt8]) throws(SnapshotError) -> Base {
        guard body.count >= 12 else { throw .malformedBody("delta body shorter than its base's name", offset: 0) }
        return body.withUnsafeBytes { Base(sequence: $0.u64At(0), bodyCRC: $0.u32At(8)) }
    }

    /// Decodes a delta file, with the base file it names read through `loadBase` (given the
    /// base's sequence; nil: it cannot be read): the state at the delta's sequence, checked as a
    /// whole snapshot is (SNAPSHOT.md §6.2). The delta is decompressed once.
    package static func decode(_ delta: [UInt8], loadingBase loadBase: (UInt64) -> [UInt8]?) throws(SnapshotError)
        -> (header: SnapshotHeader, reducer: ListReducer) {
        let (header, body) = try SnapshotCodec.storedBody(delta)
        guard header.isDelta else { throw .malformedBody("not a delta", offset: 0) }
        let named = try base(of: body)
        guard let file = loadBase(named.sequence) else { throw .baseMismatch("its base at sequence \(named.sequence) cannot be read") }
        let baseHeader: SnapshotHeader, baseBody: [UInt8]
        do { (baseHeader, baseBody) = try SnapshotCodec.storedBody(file) } catch {
            throw .baseMismatch("the base does not read (\(error))")
        }
        guard !baseHeader.isDelta else { throw .baseMismatch("the base is itself a delta") }
        guard baseHeader.zone == header.zone, baseHeader.incarnation == header.incarnation else {
            throw .baseMismatch("the base belongs to another zone or incarnation")
        }
        guard baseHeader.sequence == named.sequence, baseHeader.sequence < header.sequence else {
            throw .baseMismatch("the base is at sequence \(baseHeader.sequence), the delta names \(named.sequence)")
        }
        guard baseHeader.bodyCRC == named.bodyCRC else { throw .baseMismatch("the base's body CRC is not the one the delta names") }
        let whole: [UInt8]
        do { whole = try apply(body, to: baseBody, baseSealed: baseHeader.flags & SnapshotCodec.flagSealed != 0) } catch { throw .malformedBody(error.description, offset: error.offset) }
        return (header, try SnapshotCodec.reducer(body: whole, header: header))
    }

    /// Decodes a delta file with its base file.
    package static func decode(_ delta: [UInt8], base: [UInt8]) throws(SnapshotError) -> (header: SnapshotHeader, reducer: ListReducer) {
        try decode(delta) { _ in base }
    }

    /// The whole §3 body a delta body makes of a base body (§6.2). Offsets in errors are the
    /// delta body's. The base is read once, front to back, and copied in runs: only the ids of
    /// the records the delta names are looked up, so the cost follows the base's bytes and the
    /// delta's records, not a table of every base record.
    /// `baseSealed`: the base's header flag bit 3 (its prefix ends in key records).
    package static func apply(_ delta: [UInt8], to baseBody: [UInt8], baseSealed: Bool = false) throws(CodecError) -> [UInt8] {
        let result: Result<[UInt8], CodecError> = delta.withUnsafeBytes { d in
            baseBody.withUnsafeBytes { b in
                do throws(CodecError) { return .success(try patch(d, b, baseSealed: baseSealed)) } catch { return .failure(error) }
            }
        }
        return try result.get()
    }

    private static func patch(_ delta: UnsafeRawBufferPointer, _ base: UnsafeRawBufferPointer, baseSealed: Bool) throws(CodecError) -> [UInt8] {
        var r = ByteReader(delta)
        _ = try r.bytes(12)
        let prefixLength = try r.length("prefix", limit: SnapshotCodec.maxBodyBytes)
        let prefix = try r.bytes(prefixLength)
        // Base records name authors by number: the prefix must carry the base's author table,
        // byte for byte, or every unchanged record would name another author.
        var b = ByteReader(base)
        let baseAuthorsEnd: Int
        do { baseAuthorsEnd = try skipPrefix(&b, sealed: baseSealed) } catch { throw CodecError(.invalidValue(field: "base body (\(error))"), at: 0) }
        guard prefix.count >= baseAuthorsEnd,
              UnsafeRawBufferPointer(rebasing: prefix[..<baseAuthorsEnd]).elementsEqual(UnsafeRawBufferPointer(rebasing: base[..<baseAuthorsEnd])) else {
            throw CodecError(.invalidValue(field: "author table (not the base's)"), at: 16)
        }
        let countAt = r.offset
        let itemCount = try r.varint()
        // What the delta names, by id: a removal (-1) or the record replacing or adding it.
        var named: [IDKey: Int] = [:]
        var quick = Set<UInt64>()
        let removedCount = try ActivityLogCodec.count(&r, "removed", minBytes: 3)
        for _ in 0..<removedCount {
            let at = r.offset
            _ = try CompactID.decoded(&r, field: "removed")
            let key = IDKey(delta, at..<r.offset)
            guard named.updateValue(-1, forKey: key) == nil else { throw CodecError(.invalidValue(field: "removed id (repeated)"), at: at) }
            quick.insert(key.quick)
        }
        let recordCount = try ActivityLogCodec.count(&r, "records", minBytes: 4)
        var records: [Record] = []
        records.reserveCapacity(recordCount)
        for k in 0..<recordCount {
            let at = r.offset
            let rec = try record(&r)
            let key = IDKey(delta, rec.id)
            guard named.updateValue(k, forKey: key) == nil else {
                throw CodecError(.invalidValue(field: "record id (repeated, or also removed)"), at: at)
            }
            quick.insert(key.quick)
            records.append(rec)
        }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }

        // The base, record by record: unchanged runs copied whole.
        let baseItems: Int
        do { baseItems = try ActivityLogCodec.count(&b, "items", minBytes: 4) } catch {
            throw CodecError(.invalidValue(field: "base body (\(error))"), at: 0)
        }
        let bound = prefix.count + 10 + (base.count - b.offset) + delta.count
        var w = ByteWriter(capacity: min(bound, SnapshotCodec.maxBodyBytes))
        w.raw(prefix)
        w.varint(itemCount)
        var matched = [Bool](repeating: false, count: recordCount)
        var removedFound = 0, count = 0
        var run = b.offset
        func copy(_ range: Range<Int>, from p: UnsafeRawBufferPointer) throws(CodecError) {
            guard w.bytes.count + range.count <= SnapshotCodec.maxBodyBytes else {
                throw CodecError(.lengthOutOfRange(field: "body", length: w.bytes.count + range.count, limit: SnapshotCodec.maxBodyBytes), at: 0)
            }
            w.raw(UnsafeRawBufferPointer(rebasing: p[range]))
        }
        for _ in 0..<baseItems {
            let rec: Record
            do { rec = try record(&b) } catch { throw CodecError(.invalidValue(field: "base body (\(error))"), at: 0) }
            // Most base records are not named: their ids are only folded into a 64-bit key.
            guard quick.contains(IDKey.quick(base, rec.id)), let k = named[IDKey(base, rec.id)] else {
                count += 1
                continue
            }
            try copy(run..<rec.bytes.lowerBound, from: base)
            run = rec.bytes.upperBound
            if k < 0 {
                removedFound += 1
            } else {
                matched[k] = true
                try copy(records[k].bytes, from: delta)
                count += 1
            }
        }
        guard b.isAtEnd else { throw CodecError(.invalidValue(field: "base body (trailing bytes)"), at: 0) }
        try copy(run..<base.count, from: base)
        guard removedFound == removedCount else { throw CodecError(.invalidValue(field: "removed id (not in the base)"), at: 0) }
        for (k, rec) in records.enumerated() where !matched[k] {
            try copy(rec.bytes, from: delta)
            count += 1
        }
        guard UInt64(count) == itemCount else { throw CodecError(.invalidValue(field: "item count"), at: countAt) }
        return w.bytes
    }

    /// An id's encoding, by its bytes, with a cheap 64-bit key to pass over ids the delta does not
    /// name without hashing them in full.
    struct IDKey: Hashable {
        let bytes: [UInt8]
        let quick: UInt64

        init(_ p: UnsafeRawBufferPointer, _ range: Range<Int>) {
            quick = Self.quick(p, range)
            bytes = Array(p[range])
        }

        static func quick(_ p: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64 {
            var h = UInt64(range.count)
            var i = range.lowerBound
            while i + 8 <= range.upperBound {
                h = (h ^ p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
                i += 8
            }
            while i < range.upperBound {
                h = (h ^ UInt64(p[i])) &* 0x0100_0000_01B3
                i += 1
            }
            return h
        }

        static func == (a: IDKey, b: IDKey) -> Bool { a.quick == b.quick && a.bytes == b.bytes }
        func hash(into h: inout Hasher) { h.combine(quick) }
    }

    /// A body's records by id, for the encoder to find each new record's id among the base's: an
    /// open-addressing table of record numbers keyed by `IDKey.quick`, the id bytes compared only
    /// when the keys agree. (A dictionary of byte slices spent most of a large list's delta
    /// hashing and retaining its 255k keys.) An id the body holds twice names its last record.
    struct RecordsByID {
        private let records: [Record]
        private let body: UnsafeRawBufferPointer
        private var slots: [Int32]
        private var quicks: [UInt64]
        private let mask: Int

        init(_ records: [Record], in body: UnsafeRawBufferPointer) {
            self.records = records
            self.body = body
            var capacity = 16
            while capacity < 2 * records.count { capacity <<= 1 }
            mask = capacity - 1
            slots = [Int32](repeating: -1, count: capacity)
            quicks = [UInt64](repeating: 0, count: capacity)
            for (k, rec) in records.enumerated() {
                let q = IDKey.quick(body, rec.id)
                var i = Self.slot(q, mask)
                while slots[i] >= 0 && !(quicks[i] == q && same(body, rec.id, Int(slots[i]))) { i = (i + 1) & mask }
                slots[i] = Int32(k)
                quicks[i] = q
            }
        }

        /// The number of the record whose id is `p[id]`, if any.
        func find(_ p: UnsafeRawBufferPointer, _ id: Range<Int>) -> Int? {
            let q = IDKey.quick(p, id)
            var i = Self.slot(q, mask)
            while slots[i] >= 0 {
                if quicks[i] == q && same(p, id, Int(slots[i])) { return Int(slots[i]) }
                i = (i + 1) & mask
            }
            return nil
        }

        private func same(_ p: UnsafeRawBufferPointer, _ id: Range<Int>, _ k: Int) -> Bool {
            UnsafeRawBufferPointer(rebasing: p[id]).elementsEqual(UnsafeRawBufferPointer(rebasing: body[records[k].id]))
        }

        /// A slot for a key: its bits mixed (`quick` ends in a multiply, whose low bits are weak).
        private static func slot(_ q: UInt64, _ mask: Int) -> Int {
            var x = q ^ (q >> 33)
            x &*= 0xFF51_AFD7_ED55_8CCD
            x ^= x >> 33
            return Int(truncatingIfNeeded: x) & mask
        }
    }

    // MARK: Layout

    /// Cuts a §3 body at its item records, reading only what it must to skip each field; the
    /// decoder checks the rest.
    static func layout(_ body: UnsafeRawBufferPointer, sealed: Bool) throws(CodecError) -> Layout {
        var r = ByteReader(body)
        var out = Layout()
        out.authorsEnd = try skipPrefix(&r, sealed: sealed)
        out.prefixEnd = r.offset
        let items = try ActivityLogCodec.count(&r, "items", minBytes: 4)
        out.records.reserveCapacity(min(items, 1 << 18))
        for _ in 0..<items { out.records.append(try record(&r)) }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return out
    }

    /// Reads past a body's prefix (authors through participants, §3) to its item count; returns
    /// where the author table ends.
    @discardableResult
    static func skipPrefix(_ r: inout ByteReader, sealed: Bool) throws(CodecError) -> Int {
        let authors = try ActivityLogCodec.count(&r, "authors", minBytes: 2)
        for _ in 0..<authors { try skipString(&r, limit: Limits.maxAuthorBytes) }
        let authorsEnd = r.offset
        _ = try r.varint()
        try skipRegister(&r)
        try skipRegister(&r)
        let people = try ActivityLogCodec.count(&r, "participants", minBytes: 5)
        for _ in 0..<people {
            try skipString(&r, limit: Limits.maxAuthorBytes)
            _ = try r.u8()
            try skipKey(&r)
        }
        if sealed { _ = try SnapshotCodec.keyRecords(&r) }
        return authorsEnd
    }

    static func layout(_ body: [UInt8], sealed: Bool = false) throws(CodecError) -> Layout {
        let result: Result<Layout, CodecError> = body.withUnsafeBytes { p in
            do throws(CodecError) { return .success(try layout(p, sealed: sealed)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// One item record (§3), skipped.
    static func record(_ r: inout ByteReader) throws(CodecError) -> Record {
        let start = r.offset
        _ = try CompactID.decoded(&r, field: "item")
        let idEnd = r.offset
        let f = try r.u8()
        if f & ItemFlag.added != 0 {
            try skipKey(&r)
            if f & ItemFlag.deleted == 0 {
                _ = try r.varint()
                // A text, or sealed bytes (flag bit 6): both a length and bytes.
                try skipString(&r, limit: f & SnapshotCodec.recordSealedText != 0 ? SealedValue.maxBytes : Limits.maxTextBytes)
            }
        }
        if f & ItemFlag.inTree != 0 {
            let at = r.offset
            switch try r.u8() {
            case 0: break
            case 1: _ = try CompactID.decoded(&r, field: "anchor")
            default: throw CodecError(.invalidValue(field: "anchor flag"), at: at)
            }
        }
        if f & ItemFlag.placed != 0 { try skipKey(&r) }
        if f & ItemFlag.marked != 0 {
            try skipKey(&r)
            _ = try r.varint()
        }
        if f & ItemFlag.moved != 0 {
            for _ in 0..<(try ActivityLogCodec.count(&r, "moves", minBytes: 5)) {
                try skipKey(&r)
                let at = r.offset
                switch try r.u8() {
                case 0: break
                case 1: _ = try CompactID.decoded(&r, field: "anchor")
                default: throw CodecError(.invalidValue(field: "anchor flag"), at: at)
                }
            }
        }
        return Record(id: start..<idEnd, bytes: start..<r.offset)
    }

    private static func skipString(_ r: inout ByteReader, limit: Int) throws(CodecError) {
        _ = try r.bytes(try r.length("string", limit: limit))
    }

    private static func skipKey(_ r: inout ByteReader) throws(CodecError) {
        _ = try r.varint()
        _ = try r.varint()
        _ = try CompactID.decoded(&r, field: "entry")
    }

    private static func skipRegister(_ r: inout ByteReader) throws(CodecError) {
        let at = r.offset
        switch try r.u8() {
        case 0: return
        case 1, 2:
            try skipKey(&r)
            try skipString(&r, limit: max(Limits.maxTextBytes, SealedValue.maxBytes))
        default: throw CodecError(.invalidValue(field: "register flag"), at: at)
        }
    }
}

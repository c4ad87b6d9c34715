import JournalCodec

/// The fixed fields of a snapshot file (Spec/SNAPSHOT.md §2).
package struct SnapshotHeader: Hashable, Sendable {
    package var major: UInt16
    package var minor: UInt16
    package var flags: UInt32
    package var zone: String
    /// Which incarnation of the zone (a deleted and re-created zone starts a new one).
    package var incarnation: UInt64
    /// The log sequence the snapshot reflects: entries up to and including it are in it.
    package var sequence: UInt64
    /// Distinct entries folded in.
    package var entryCount: UInt64
    /// `ListState.digest` of the materialised state.
    package var digest: UInt64
    /// CRC32C of the decompressed body: what a delta names its base by.
    package var bodyCRC: UInt32
    /// A delta (SNAPSHOT.md §6): the body says what changed against a base snapshot.
    package var isDelta: Bool { flags & SnapshotCodec.flagDelta != 0 }
}

/// Why snapshot bytes were rejected. Decoding never traps and never allocates more than the
/// limits allow.
package enum SnapshotError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated
    case badMagic
    case unsupportedMajor(UInt16)
    case unknownFlags(UInt32)
    case lengthOutOfRange(field: String, length: UInt64, limit: UInt64)
    case headerChecksumMismatch
    case bodyChecksumMismatch
    case decompressionFailed
    case malformedBody(String, offset: Int)
    case entryCountMismatch(header: UInt64, body: UInt64)
    case digestMismatch(header: UInt64, computed: UInt64)
    /// A delta read alone: it needs the base snapshot at `sequence` (SNAPSHOT.md §6).
    case deltaNeedsBase(sequence: UInt64)
    /// The base given with a delta is not the one it names.
    case baseMismatch(String)

    package var description: String {
        switch self {
        case .truncated: "snapshot is truncated"
        case .badMagic: "not a snapshot (bad magic)"
        case .unsupportedMajor(let m): "snapshot major version \(m) is not supported"
        case .unknownFlags(let f): "snapshot has unknown flags 0x\(String(f, radix: 16))"
        case .lengthOutOfRange(let f, let l, let lim): "snapshot \(f) \(l) exceeds \(lim)"
        case .headerChecksumMismatch: "snapshot header checksum mismatch"
        case .bodyChecksumMismatch: "snapshot body checksum mismatch"
        case .decompressionFailed: "snapshot body does not decompress"
        case .malformedBody(let why, let at): "snapshot body malformed: \(why) (body byte \(at))"
        case .entryCountMismatch(let h, let b): "snapshot header says \(h) entries, body holds \(b)"
        case .digestMismatch(let h, let c): "snapshot digest \(String(h, radix: 16)) but state hashes to \(String(c, radix: 16))"
        case .deltaNeedsBase(let s): "snapshot is a delta: it needs its base snapshot at sequence \(s)"
        case .baseMismatch(let why): "snapshot delta's base does not match: \(why)"
        }
    }
}

/// Snapshot payloads (Spec/SNAPSHOT.md): a reducer's internal state (entry count, tombstones,
/// dangling operations, anchors, last-writer-wins keys; not the entry ids), so that
/// `decode(encode(r)) + apply(tail)` equals a full replay exactly. Canonical: the bytes depend
/// only on the set of entries folded in, not on their arrival order.
package enum SnapshotCodec {
    package static let magic: [UInt8] = [0x89, 0x4A, 0x4C, 0x53, 0x0D, 0x0A, 0x1A, 0x0A]
    package static let major: UInt16 = 3
    /// A whole snapshot is written as 3.0, a delta as 3.1 (minor 1 added deltas; a 3.0 reader
    /// refuses one by its flag bit 1 and falls back, as for any snapshot it cannot read).
    package static let minor: UInt16 = 0
    package static let deltaMinor: UInt16 = 1
    /// Flag bit 0: the body is LZ4-compressed.
    package static let flagLZ4: UInt32 = 1
    /// Flag bit 1: the body is a delta against a base snapshot (SNAPSHOT.md §6).
    package static let flagDelta: UInt32 = 2
    /// Header flag bit 2: some item record holds moves (MERGE.md §3.5). A reader older than moves
    /// refuses the flag (`unknownFlags`) and falls back, where it would refuse the record's flag
    /// bit 5 anyway, later and less clearly.
    package static let flagMoves: UInt32 = 4

    /// Header flag bit 3: a sealed list's body (MERGE.md §11, SEALING.md §5): its prefix ends in
    /// the list's key records, and it may hold sealed texts (a register of form 2, an item record
    /// with flag bit 6). A reader from before sealed lists refuses it.
    package static let flagSealed: UInt32 = 8

    /// Item record flag bit 6 (in the body only): the winning add's text is sealed.
    static let recordSealedText: UInt8 = 64

    /// The header flags a body of `r` needs beyond compression and delta.
    static func contentFlags(_ r: ListReducer) -> UInt32 {
        return (r.moves.isEmpty ? 0 : flagMoves) | (isSealed(r) ? flagSealed : 0)
    }

    /// Whether `r`'s body takes the sealed form (header flag bit 3).
    static func isSealed(_ r: ListReducer) -> Bool {
        !r.keyRecords.isEmpty || !r.sealedTexts.isEmpty || r.name?.value.sealedText != nil || r.colour?.value.sealedText != nil
    }

    /// A sealed body's key records (§3): a count, then each record's bytes with their length,
    /// strictly increasing by bytes.
    static func keyRecords(_ r: inout ByteReader) throws(CodecError) -> [[UInt8]] {
        let count = try ActivityLogCodec.count(&r, "key records", minBytes: 2)
        var out: [[UInt8]] = []
        for _ in 0..<count {
            let at = r.offset
            let body = Array(try r.bytes(try r.length("key record", limit: Limits.maxPayloadBytes)))
            if let last = out.last, !last.lexicographicallyPrecedes(body) {
                throw CodecError(.invalidValue(field: "key record order"), at: at)
            }
            out.append(body)
        }
        return out
    }

    /// `sealed bytes`: `length varint | SealedValue encoding` (SEALING.md §2.1).
    static func sealedBytes(_ v: SealedValue, into w: inout ByteWriter) {
        let bytes = v.encoded
        w.varint(UInt64(bytes.count))
        w.append(contentsOf: bytes)
    }

    /// Reads `sealed bytes`.
    static func sealedValue(_ r: inout ByteReader, _ field: String) throws(CodecError) -> SealedValue {
        let at = r.offset
        let n = try r.length(field, limit: SealedValue.maxBytes)
        do throws(CodecError) {
            return try SealedValue(decoding: Array(try r.bytes(n)))
        } catch {
            throw CodecError(.invalidValue(field: field + " (sealed)"), at: at)
        }
    }
    /// Largest decompressed body.
    package static let maxBodyBytes = 256 << 20
    /// Largest stored (possibly compressed) body: LZ4's bound for `maxBodyBytes`.
    package static let maxStoredBytes = maxBodyBytes + maxBodyBytes / 255 + 16
    /// Bytes before the zone name.
    static let fixedHeaderBytes = 69

    // MARK: Encoding

    /// The snapshot file's bytes. The body is LZ4-compressed when `compress` and that saves space.
    package static func encode(reducer: ListReducer, incarnation: UInt64, sequence: UInt64, compress: Bool = true) -> [UInt8] {
        let (body, digest) = bodyAndDigest(reducer)
        return file(body: body, minor: minor, flags: contentFlags(reducer), zone: reducer.zone, incarnation: incarnation, sequence: sequence,
                    entryCount: UInt64(reducer.entryCount), digest: digest, compress: compress)
    }

    /// The body (§3) and the state digest, from one computation of the list order.
    static func bodyAndDigest(_ r: ListReducer) -> (body: [UInt8], digest: UInt64) {
        let (order, visible, _) = r.countedLinearOrder()
        return (encodeBody(r, order: order), r.stateDigest(order: order, visible: visible))
    }

    /// A file around `body` (SNAPSHOT.md §2): the header, then the body, LZ4-compressed when
    /// `compress` and that saves space.
    /// The body is consumed: it is let go once compressed, before the file is assembled, so a
    /// large snapshot never holds its body, its compressed body and the file at once.
    static func file(body: consuming [UInt8], minor: UInt16, flags extra: UInt32, zone name: String, incarnation: UInt64, sequence: UInt64,
                     entryCount: UInt64, digest: UInt64, compress: Bool) -> [UInt8] {
        let bodyCount = body.count
        precondition(bodyCount <= maxBodyBytes, "snapshot body exceeds \(maxBodyBytes) bytes")
        let bodyCRC = CRC32C.checksum(body)
        var stored = compress ? body.withUnsafeBytes { LZ4.compress($0) } : []
        var flags = extra | flagLZ4
        if !compress || stored.count >= bodyCount {
            stored = body
            flags = extra
        }
        _ = consume body
        var w = ByteWriter(capacity: fixedHeaderBytes + name.utf8.count + 4 + stored.count)
        w.append(contentsOf: magic)
        w.u16(major)
        w.u16(minor)
        w.u32(flags)
        w.u64(incarnation)
        w.u64(sequence)
        w.u64(entryCount)
        w.u64(digest)
        w.u64(UInt64(bodyCount))
        w.u64(UInt64(stored.count))
        w.u32(bodyCRC)
        let zone = Array(name.utf8)
        precondition(!zone.isEmpty && zone.count <= Limits.maxZoneBytes, "zone must be 1...255 bytes")
        w.u8(UInt8(zone.count))
        w.append(contentsOf: zone)
        w.u32(CRC32C.checksum(w.bytes))
        w.append(contentsOf: stored)
        return w.bytes
    }

    /// The body (SNAPSHOT.md §3): authors, the entry count, registers, participants and item
    /// records. Tombstones carry only their add key and anchor; no entry id is stored.
    package static func encodeBody(_ r: ListReducer) -> [UInt8] { encodeBody(r, order: r.linearOrder()) }

    /// `encodeBody` given the reducer's list order (`linearOrder()`).
    package static func encodeBody(_ r: ListReducer, order: [Int32]) -> [UInt8] {
        // Only the authors some stored key names, in UTF-8 order.
        var used = [Bool](repeating: false, count: r.authors.count)
        var authorIndex: [ExactString: UInt64] = [:]
        func note(_ k: ChangeKey?) { if let k { authorIndex[ExactString(k.author)] = 0 } }
        note(r.name?.key)
        note(r.colour?.key)
        for p in r.participants.values { note(p.key) }
        for rec in r.records {
            if rec.flags & ItemFlag.added != 0 { used[Int(rec.addAuthor)] = true }
            if rec.flags & ItemFlag.marked != 0 { used[Int(rec.markAuthor)] = true }
        }
        for p in r.placements.values { used[Int(p.author)] = true }
        for list in r.moves.values { for m in list { used[Int(m.author)] = true } }
        for (k, a) in r.authors.strings.enumerated() where used[k] { authorIndex[ExactString(a)] = 0 }
        let authors = authorIndex.keys.map(\.value).sorted(by: utf8Less)
        for (i, a) in authors.enumerated() { authorIndex[ExactString(a)] = UInt64(i) }
        // Interned author number → output index.
        let out = r.authors.strings.map { authorIndex[ExactString($0)] ?? 0 }

        // The tree in list order first (tombstones and placements included), so a decoded reducer's
        // records are laid out the way `state()` walks them; then the records known only from
        // dangling operations, by id.
        let records = order.map { Int($0) }
            + sortedByID(r.records.indices.filter { r.records[$0].flags != 0 && r.records[$0].flags & ItemFlag.inTree == 0 }, r.records, r.textIDs)
        // A record takes ~120 bytes in a shopping list's body: reserving fewer made a large body
        // grow once near its end, holding the old and the new buffer at once (the compactor's
        // memory peak).
        var w = ByteWriter(capacity: 64 + records.count * 128)
        func key(_ k: ChangeKey) {
            w.varint(k.clock.rawValue)
            w.varint(authorIndex[ExactString(k.author)]!)
            k.entry.encoded(into: &w)
        }
        func register(_ reg: Register<ListText>?) {
            guard let reg else { return w.u8(0) }
            switch reg.value {
            case .plain(let s):
                w.u8(1)
                key(reg.key)
                w.string(s)
            case .sealed(let v):
                w.u8(2)
                key(reg.key)
                w.zigzag(v.binding.wallTime &- Int64(bitPattern: reg.key.clock.physicalMillis))
                sealedBytes(v.value, into: &w)
            }
        }
        w.varint(UInt64(authors.count))
        for a in authors { w.string(a) }
        w.varint(UInt64(r.entryCount))
        register(r.name)
        register(r.colour)
        let people = r.participants.keys.map(\.value).sorted(by: utf8Less)
        w.varint(UInt64(people.count))
        for p in people {
            let reg = r.participants[ExactString(p)]!
            w.string(p)
            w.u8(reg.value ? 1 : 0)
            key(reg.key)
        }
        if isSealed(r) {
            w.varint(UInt64(r.keyRecords.count))
            for body in r.keyRecords {
                w.varint(UInt64(body.count))
                w.append(contentsOf: body)
            }
        }
        w.varint(UInt64(records.count))
        for i in records {
            let rec = r.records[i]
            let sealed = r.sealedTexts.isEmpty ? nil : r.sealedTexts[Int32(i)]
            let f = rec.flags & ItemFlag.stored | (sealed == nil ? 0 : recordSealedText)
            assert(f & ItemFlag.deleted == 0 || f & (ItemFlag.marked | ItemFlag.markedOff) == 0, "a tombstone keeps no mark")
            r.textIDs.encode(rec.id, into: &w)
            w.u8(f)
            if f & ItemFlag.added != 0 {
                w.varint(rec.addClock)
                w.varint(out[Int(rec.addAuthor)])
                r.textIDs.encode(rec.addEntry, into: &w)
                if f & ItemFlag.deleted == 0 {
                    w.zigzag(rec.addedAt)
                    if let sealed { sealedBytes(sealed, into: &w) } else { w.string(r.texts[i]) }
                }
            }
            if f & ItemFlag.inTree != 0 {
                let a = Int(rec.anchor)
                if a >= 0 {
                    w.u8(1)
                    r.textIDs.encode(r.records[a].id, into: &w)
                } else {
                    w.u8(0)
                }
            }
            if f & ItemFlag.placed != 0 {
                let p = r.placements[Int32(i)]!
                w.varint(p.clock)
                w.varint(out[Int(p.author)])
                r.textIDs.encode(p.entry, into: &w)
            }
            if f & ItemFlag.marked != 0 {
                w.varint(rec.markClock)
                w.varint(out[Int(rec.markAuthor)])
                r.textIDs.encode(rec.markEntry, into: &w)
                w.zigzag(rec.markedAt)
            }
            if f & ItemFlag.moved != 0 {
                let moves = r.moves[Int32(i)]!
                w.varint(UInt64(moves.count))
                for m in moves {
                    w.varint(m.clock)
                    w.varint(out[Int(m.author)])
                    r.textIDs.encode(m.entry, into: &w)
                    if m.anchor >= 0 {
                        w.u8(1)
                        r.textIDs.encode(r.records[Int(m.anchor)].id, into: &w)
                    } else {
                        w.u8(0)
                    }
                }
            }
        }
        return w.bytes
    }

    // MARK: Decoding

    /// Checks everything (lengths before allocating, both CRCs, entry count, digest) and returns
    /// the header and the reducer, ready to apply the entries after `header.sequence`.
    package static func decode(_ bytes: UnsafeRawBufferPointer) throws(SnapshotError) -> (header: SnapshotHeader, reducer: ListReducer) {
        let (header, body) = try storedBody(bytes)
        if header.flags & flagDelta != 0 { throw .deltaNeedsBase(sequence: try SnapshotDelta.base(of: body).sequence) }
        return (header, try reducer(body: body, header: header))
    }

    /// The header and the decompressed body, its lengths and CRC checked (SNAPSHOT.md §4).
    static func storedBody(_ bytes: UnsafeRawBufferPointer) throws(SnapshotError) -> (header: SnapshotHeader, body: [UInt8]) {
        let (header, bodyStart, bodyLength) = try decodeHeader(bytes)
        let stored = UnsafeRawBufferPointer(rebasing: bytes[bodyStart...])
        let body: [UInt8]
        if header.flags & flagLZ4 != 0 {
            // LZ4 expands at most 255-fold: reject lengths the stored bytes cannot produce before allocating.
            guard UInt64(bodyLength) <= UInt64(stored.count) * 255 + 16 else {
                throw .lengthOutOfRange(field: "body length", length: UInt64(bodyLength), limit: UInt64(stored.count) * 255 + 16)
            }
            guard let b = LZ4.decompress(stored, rawLength: bodyLength) else { throw .decompressionFailed }
            body = b
        } else {
            guard stored.count == bodyLength else { throw .decompressionFailed }
            body = Array(stored)
        }
        guard CRC32C.checksum(body) == header.bodyCRC else { throw .bodyChecksumMismatch }
        return (header, body)
    }

    static func storedBody(_ bytes: [UInt8]) throws(SnapshotError) -> (header: SnapshotHeader, body: [UInt8]) {
        let result: Result<(header: SnapshotHeader, body: [UInt8]), SnapshotError> = bytes.withUnsafeBytes { p in
            do throws(SnapshotError) { return .success(try storedBody(p)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The reducer a §3 body holds, checked against the header's entry count and digest
    /// (`verifyDigest` false: the count only, when the digest was checked where the bytes came in
    /// and a checksum has kept them since: a list's base, MERGE.md §10).
    static func reducer(body: [UInt8], header: SnapshotHeader, verifyDigest: Bool = true) throws(SnapshotError) -> ListReducer {
        let decoded: Result<ListReducer, CodecError> = body.withUnsafeBytes { p in
            var r = ByteReader(p)
            do throws(CodecError) { return .success(try decodeBody(&r, zone: header.zone, sealed: header.flags & flagSealed != 0)) } catch { return .failure(error) }
        }
        let reducer: ListReducer
        switch decoded {
        case .success(let r): reducer = r
        case .failure(let e): throw .malformedBody(e.description, offset: e.offset)
        }
        guard UInt64(reducer.entryCount) == header.entryCount else {
            throw .entryCountMismatch(header: header.entryCount, body: UInt64(reducer.entryCount))
        }
        guard verifyDigest else { return reducer }
        let digest = reducer.stateDigest()
        guard digest == header.digest else { throw .digestMismatch(header: header.digest, computed: digest) }
        return reducer
    }

    package static func decode(_ bytes: [UInt8]) throws(SnapshotError) -> (header: SnapshotHeader, reducer: ListReducer) {
        let result: Result<(header: SnapshotHeader, reducer: ListReducer), SnapshotError> = bytes.withUnsafeBytes { p in
            do throws(SnapshotError) { return .success(try decode(p)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Reads and checks the header only (for listing snapshots without decoding bodies).
    /// The body's decompressed length, from the header alone: what a writer reports as the raw size.
    package static func rawBodyLength(_ bytes: UnsafeRawBufferPointer) throws(SnapshotError) -> Int {
        try decodeHeader(bytes).bodyLength
    }

    package static func header(_ bytes: UnsafeRawBufferPointer) throws(SnapshotError) -> SnapshotHeader {
        try decodeHeader(bytes).header
    }

    static func decodeHeader(_ bytes: UnsafeRawBufferPointer) throws(SnapshotError) -> (header: SnapshotHeader, bodyStart: Int, bodyLength: Int) {
        guard bytes.count >= 8 else { throw .truncated }
        guard magic.elementsEqual(bytes[0..<8]) else { throw .badMagic }
        guard bytes.count >= fixedHeaderBytes else { throw .truncated }
        let major = bytes.u16At(8)
        guard major == Self.major else { throw .unsupportedMajor(major) }
        let flags = bytes.u32At(12)
        guard flags & ~(flagLZ4 | flagDelta | flagMoves | flagSealed) == 0 else { throw .unknownFlags(flags) }
        let zoneLength = Int(bytes[68])
        guard zoneLength >= 1 else { throw .lengthOutOfRange(field: "zone length", length: 0, limit: UInt64(Limits.maxZoneBytes)) }
        let headerEnd = fixedHeaderBytes + zoneLength
        guard bytes.count >= headerEnd + 4 else { throw .truncated }
        let headerBytes = UnsafeRawBufferPointer(rebasing: bytes[0..<headerEnd])
        guard CRC32C.extend(0, headerBytes) == bytes.u32At(headerEnd) else { throw .headerChecksumMismatch }
        guard let zone = validUTF8String(UnsafeRawBufferPointer(rebasing: bytes[fixedHeaderBytes..<headerEnd])) else {
            throw .malformedBody("zone is not valid UTF-8", offset: fixedHeaderBytes)
        }
        let bodyLength = bytes.u64At(48), storedLength = bytes.u64At(56)
        guard bodyLength <= UInt64(maxBodyBytes) else {
            throw .lengthOutOfRange(field: "body length", length: bodyLength, limit: UInt64(maxBodyBytes))
        }
        guard storedLength <= UInt64(maxStoredBytes) else {
            throw .lengthOutOfRange(field: "stored length", length: storedLength, limit: UInt64(maxStoredBytes))
        }
        let bodyStart = headerEnd + 4
        guard UInt64(bytes.count - bodyStart) >= storedLength else { throw .truncated }
        guard UInt64(bytes.count - bodyStart) == storedLength else {
            throw .lengthOutOfRange(field: "file length", length: UInt64(bytes.count), limit: UInt64(bodyStart) + storedLength)
        }
        let header = SnapshotHeader(major: major, minor: bytes.u16At(10), flags: flags, zone: zone,
                                    incarnation: bytes.u64At(16), sequence: bytes.u64At(24),
                                    entryCount: bytes.u64At(32), digest: bytes.u64At(40), bodyCRC: bytes.u32At(64))
        return (header, bodyStart, Int(bodyLength))
    }

    /// Decodes a body (SNAPSHOT.md §3). Records are read straight into the reducer's array and
    /// the id index is built in one pass at the end; anchors are resolved on the way through the
    /// path of the pre-order the writer used, falling back to the index. Any failure (malformed
    /// bytes, a repeated id) is reported by decoding again record by record, exactly as the
    /// format describes, so the error names the first fault in the body.
    /// `sealed`: the header's flag bit 3 (the prefix ends in key records).
    package static func decodeBody(_ r: inout ByteReader, zone: String, sealed: Bool = false) throws(CodecError) -> ListReducer {
        let start = r
        do throws(CodecError) {
            return try decodeBody(&r, zone: zone, sealed: sealed, bulk: true)
        } catch {
            r = start
            return try decodeBody(&r, zone: zone, sealed: sealed, bulk: false)
        }
    }

    /// `bulk`: build the index at the end (fast; any repeated id is only noticed there);
    /// otherwise look every id up as it is read (slow; the first fault is the one reported).
    private static func decodeBody(_ r: inout ByteReader, zone: String, sealed: Bool, bulk: Bool) throws(CodecError) -> ListReducer {
        var d = BodyDecoder(zone: zone, bulk: bulk, authors: try ActivityLogCodec.decodeAuthors(&r))
        try d.header(&r)
        if sealed { d.out.keyRecords = try keyRecords(&r) }
        // The smallest record is a 3-byte text id and its flags.
        let itemCount = try ActivityLogCodec.count(&r, "items", minBytes: 4)
        // Bounded up front (a record takes ~130 bytes in memory, its encoding as little as 4):
        // hostile counts grow the arrays as records actually decode.
        d.out.reserveItems(min(itemCount, 1 << 18))
        // A sealed list's items are nearly all sealed texts: one table, grown once.
        if sealed { d.out.sealedTexts.reserveCapacity(min(itemCount, 1 << 18)) }
        for _ in 0..<itemCount { try d.record(&r) }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        try d.finish(at: r.offset)
        return d.out
    }

    /// A body being decoded into a reducer (SNAPSHOT.md §3): the authors it names, and in bulk
    /// mode the pre-order path from the head to the last record read (record numbers), where a
    /// record's anchor almost always is; anchors not found there are looked up at the end.
    private struct BodyDecoder {
        var out: ListReducer
        let bulk: Bool
        let authors: [String]
        var path: [Int32] = []
        var unresolved: [(record: Int32, anchor: RID)] = []
        /// Bulk: moves' anchors, found at the end (a move may name an item later in the body).
        var unresolvedMoves: [(record: Int32, move: Int, anchor: RID)] = []

        init(zone: String, bulk: Bool, authors: [String]) {
            out = ListReducer(zone: zone)
            self.bulk = bulk
            self.authors = authors
            // Strictly increasing, so interning numbers them 0, 1, 2, … like the body does.
            for a in authors { _ = out.intern(a) }
        }

        @inline(__always)
        func author(_ r: inout ByteReader) throws(CodecError) -> Int32 {
            let at = r.offset
            let i = try r.varint()
            guard i < UInt64(authors.count) else { throw CodecError(.invalidValue(field: "author index"), at: at) }
            return Int32(i)
        }

        func key(_ r: inout ByteReader) throws(CodecError) -> ChangeKey {
            let clock = try ActivityLogCodec.clockValue(&r)
            let a = try author(&r)
            return ChangeKey(clock: clock, author: authors[Int(a)], entry: try CompactID.decoded(&r, field: "entry"))
        }

        func register(_ r: inout ByteReader, _ field: String) throws(CodecError) -> Register<ListText>? {
            let at = r.offset
            switch try r.u8() {
            case 0: return nil
            case 1: return Register(key: try key(&r), value: .plain(try r.string(field, limit: Limits.maxTextBytes, allowEmpty: true)))
            case 2:
                let k = try key(&r)
                let wallAt = r.offset
                let (wall, overflow) = Int64(bitPattern: k.clock.physicalMillis).addingReportingOverflow(try r.zigzag())
                guard !overflow else { throw CodecError(.invalidValue(field: field + " wall time"), at: wallAt) }
                let v = try SnapshotCodec.sealedValue(&r, field)
                let kind = field == "name" ? SealedChange.renameKind : SealedChange.recolourKind
                return Register(key: k, value: .sealed(SealedText(v, zone: out.zone, entry: k.entry, kind: kind, item: nil, author: k.author,
                                                                  clock: k.clock, wallTime: wall)))
            default: throw CodecError(.invalidValue(field: field + " flag"), at: at)
            }
        }

        /// An id as `CompactID.decoded` reads it, UUIDs without building a `CompactID`.
        @inline(__always)
        mutating func rid(_ r: inout ByteReader, _ field: String) throws(CodecError) -> RID {
            let at = r.offset
            if try r.u8() == 1 {
                let raw = try r.bytes(16)
                return RID(high: UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)),
                           low: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)), text: false)
            }
            r.offset = at
            return out.textIDs.rid(try CompactID.decoded(&r, field: field))
        }

        /// The entry count, the name and colour registers, and the participants.
        mutating func header(_ r: inout ByteReader) throws(CodecError) {
            let countAt = r.offset
            let entryCount = try r.varint()
            guard entryCount < 1 << 62 else { throw CodecError(.invalidValue(field: "entry count"), at: countAt) }
            out.folded = Int(entryCount)
            out.name = try register(&r, "name")
            out.colour = try register(&r, "colour")
            let peopleCount = try ActivityLogCodec.count(&r, "participants", minBytes: 5)
            var lastPerson: String? = nil
            for _ in 0..<peopleCount {
                let at = r.offset
                let p = try r.string("participant", limit: Limits.maxAuthorBytes)
                if let l = lastPerson, !utf8Less(l, p) { throw CodecError(.invalidValue(field: "participant order"), at: at) }
                lastPerson = p
                let flagAt = r.offset
                let joined = try r.u8()
                guard joined <= 1 else { throw CodecError(.invalidValue(field: "joined flag"), at: flagAt) }
                out.participants[ExactString(p)] = Register(key: try key(&r), value: joined == 1)
            }
        }

        /// One item record.
        @inline(__always)
        mutating func record(_ r: inout ByteReader) throws(CodecError) {
            let at = r.offset
            let id = try rid(&r, "item")
            let flagsAt = r.offset
            let stored = try r.u8()
            let sealed = stored & SnapshotCodec.recordSealedText != 0
            let f = stored & ~SnapshotCodec.recordSealedText
            // A record always holds something; markedOff needs marked; a tombstone keeps no mark;
            // a sealed text is an added, not deleted, record's.
            guard f != 0, f & ~ItemFlag.stored == 0, f & 12 != ItemFlag.markedOff,
                  f & ItemFlag.deleted == 0 || f & (ItemFlag.marked | ItemFlag.markedOff) == 0,
                  !sealed || f & (ItemFlag.added | ItemFlag.deleted) == ItemFlag.added else {
                throw CodecError(.invalidValue(field: "item flags"), at: flagsAt)
            }
            // Bulk: a new record (a repeated id fails the index build). Otherwise the record is
            // new, or so far only an anchor (flags 0); a repeated id is refused.
            let i = bulk ? out.records.count : out.slot(id)
            if bulk {
                out.records.append(ItemRecord(id: id))
                out.texts.append("")
            } else {
                guard out.records[i].flags == 0 else { throw CodecError(.invalidValue(field: "repeated item"), at: at) }
            }
            var rec = out.records[i]
            rec.flags = f
            if f & ItemFlag.added != 0 {
                rec.addClock = try ActivityLogCodec.clockValue(&r).rawValue
                rec.addAuthor = try author(&r)
                rec.addEntry = try rid(&r, "entry")
                if f & ItemFlag.deleted == 0 {
                    rec.addedAt = try r.zigzag()
                    if sealed {
                        out.sealedTexts[Int32(i)] = try SnapshotCodec.sealedValue(&r, "text")
                    } else {
                        out.texts[i] = try r.string("text", limit: Limits.maxTextBytes, allowEmpty: true)
                    }
                }
            }
            if f & ItemFlag.inTree != 0 { try anchor(&r, record: i, &rec) }
            if f & ItemFlag.placed != 0 {
                let clock = try ActivityLogCodec.clockValue(&r).rawValue
                let a = try author(&r)
                out.placements[Int32(i)] = Placement(clock: clock, author: a, entry: try rid(&r, "entry"))
            }
            if f & ItemFlag.marked != 0 {
                rec.markClock = try ActivityLogCodec.clockValue(&r).rawValue
                rec.markAuthor = try author(&r)
                rec.markEntry = try rid(&r, "entry")
                rec.markedAt = try r.zigzag()
            }
            out.records[i] = rec
            if f & ItemFlag.moved != 0 { try moves(&r, record: i) }
        }

        /// A record's moves: at least one, strictly increasing by change key.
        mutating func moves(_ r: inout ByteReader, record i: Int) throws(CodecError) {
            let count = try ActivityLogCodec.count(&r, "moves", minBytes: 5)
            guard count > 0 else { throw CodecError(.invalidValue(field: "move count"), at: r.offset) }
            var list: [ItemMove] = []
            list.reserveCapacity(count)
            for k in 0..<count {
                let at = r.offset
                let clock = try ActivityLogCodec.clockValue(&r).rawValue
                let a = try author(&r)
                let entry = try rid(&r, "entry")
                if let last = list.last, !out.keyLess(last.clock, last.author, last.entry, clock, a, entry) {
                    throw CodecError(.invalidValue(field: "move order"), at: at)
                }
                var m = ItemMove(clock: clock, author: a, entry: entry, anchor: -1)
                let flagAt = r.offset
                switch try r.u8() {
                case 0: break
                case 1:
                    let anchor = try rid(&r, "anchor")
                    if bulk { unresolvedMoves.append((Int32(i), k, anchor)) } else { m.anchor = Int32(out.slot(anchor)) }
                default: throw CodecError(.invalidValue(field: "anchor flag"), at: flagAt)
                }
                list.append(m)
            }
            out.moves[Int32(i)] = list
        }

        /// The anchor of record `i` (in the tree): the head, or an item found on the path, or
        /// left for the end.
        @inline(__always)
        mutating func anchor(_ r: inout ByteReader, record i: Int, _ rec: inout ItemRecord) throws(CodecError) {
            let anchorAt = r.offset
            switch try r.u8() {
            case 0:
                path.removeAll(keepingCapacity: true)
            case 1:
                let a = try rid(&r, "anchor")
                if !bulk {
                    out.records[i] = rec
                    rec.anchor = Int32(out.slot(a))
                } else if let k = path.lastIndex(where: { out.records[Int($0)].id == a }) {
                    rec.anchor = path[k]
                    path.removeSubrange((k + 1)...)
                } else {
                    unresolved.append((Int32(i), a))
                    path.removeAll(keepingCapacity: true)
                }
            default: throw CodecError(.invalidValue(field: "anchor flag"), at: anchorAt)
            }
            // Keep the path short: a long one is searched in vain for orphans' anchors.
            if path.count >= 64 { path.removeFirst(32) }
            path.append(Int32(i))
        }

        /// Bulk: the id index in one pass (a repeated id fails here), then the anchors left.
        mutating func finish(at offset: Int) throws(CodecError) {
            guard bulk else { return }
            let hashes = out.records.map { out.index.hash($0.id) }
            let records = out.records
            if out.index.build(hashes, { records[Int($0)].id == records[Int($1)].id }) != nil {
                throw CodecError(.invalidValue(field: "repeated item"), at: offset)
            }
            for (i, a) in unresolved { out.records[Int(i)].anchor = Int32(out.slot(a)) }
            for (i, k, a) in unresolvedMoves { out.moves[i]![k].anchor = Int32(out.slot(a)) }
        }
    }
}

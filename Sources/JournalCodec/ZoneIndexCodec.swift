/// One incarnation of a zone as the index sees it: where its records are, and what happened to it.
/// The in-memory index and the checkpoint file (Spec/INDEX.md) hold exactly this.
package struct ZoneTrack: Equatable, Sendable {
    package var name: String
    /// The sequence of the record that started this incarnation: its `zoneCreate`, or the first
    /// entry of a zone that was never created explicitly.
    package var incarnation: SequenceNumber
    package var isImplicit: Bool
    package var deletedAt: SequenceNumber?
    package var deletionReason: ZoneDeletionReason
    /// Tokens whose position is below this get `tokenExpired` (0: none).
    package var lowWaterMark: SequenceNumber
    /// How far the incarnation's history pieces reach, as its `lowWaterMark` records say (the
    /// highest; 0: none says): a newest piece below it is missing (COMPACTION.md §4).
    package var historyThrough: SequenceNumber
    package var entryCount: Int
    /// The last sequence of a record of this incarnation (its incarnation when it has none yet).
    package var lastSequence: SequenceNumber
    /// The first sequence of this zone's records in each frame that holds any (its `zoneCreate`,
    /// entries, `zoneDelete`), ascending.
    package var frameSequences: [SequenceNumber]
    /// Parallel to `frameSequences`: `segmentOrdinal << 32 | frameOffset`.
    package var frameLocations: [UInt64]

    package init(name: String, incarnation: SequenceNumber, isImplicit: Bool) {
        self.name = name
        self.incarnation = incarnation
        self.isImplicit = isImplicit
        deletedAt = nil
        deletionReason = .deleted
        lowWaterMark = 0
        historyThrough = 0
        entryCount = 0
        lastSequence = incarnation
        frameSequences = []
        frameLocations = []
    }

    package static func location(segmentOrdinal: Int, offset: Int64) -> UInt64 {
        precondition(segmentOrdinal >= 0 && segmentOrdinal < 1 << 32 && offset >= 0 && offset < 1 << 32)
        return UInt64(segmentOrdinal) << 32 | UInt64(offset)
    }
}

/// The zone index as of one frame of the log: a checkpoint that spares open from decoding the
/// whole log. It is only a cache: a missing, stale or damaged checkpoint is rebuilt from the log.
package struct ZoneIndexCheckpoint: Equatable, Sendable {
    package var storeID0: UInt64
    package var storeID1: UInt64
    /// The last frame the checkpoint covers: its segment's base, offset and CRC, and the last
    /// sequence consumed through it. Open trusts the checkpoint only if that exact frame is there.
    package var coveredSegment: SequenceNumber
    package var coveredOffset: Int64
    package var coveredCRC: UInt32
    package var coveredSequence: SequenceNumber
    /// Segment bases by ordinal (frame locations refer to ordinals), ascending.
    package var segments: [SequenceNumber]
    package var zones: [ZoneTrack]

    package init(storeID: (UInt64, UInt64), coveredSegment: SequenceNumber, coveredOffset: Int64, coveredCRC: UInt32,
                coveredSequence: SequenceNumber, segments: [SequenceNumber], zones: [ZoneTrack]) {
        storeID0 = storeID.0
        storeID1 = storeID.1
        self.coveredSegment = coveredSegment
        self.coveredOffset = coveredOffset
        self.coveredCRC = coveredCRC
        self.coveredSequence = coveredSequence
        self.segments = segments
        self.zones = zones
    }

    package var storeID: (UInt64, UInt64) { (storeID0, storeID1) }

    /// Why the checkpoint cannot describe a log (nil when it can): the decoder checks syntax; this
    /// checks what a writer always guarantees, so a checkpoint that passes its CRC but was built
    /// wrong (or crafted) means "rebuild from the log", never a crash later.
    package func inconsistency() -> String? {
        if let first = segments.first, first < 1 { return "segment base 0" }
        if let last = segments.last, last > coveredSegment { return "a segment after the covered frame's" }
        var latestByName: [String: (incarnation: SequenceNumber, deleted: Bool)] = [:]
        var previousIncarnation: SequenceNumber = 0
        for z in zones {
            guard z.incarnation >= 1, z.incarnation <= coveredSequence else { return "zone \(z.name): incarnation outside the covered log" }
            // The table is in the order incarnations began, as the log made them (§4).
            guard z.incarnation > previousIncarnation else { return "zone \(z.name): incarnations out of order" }
            previousIncarnation = z.incarnation
            guard z.lastSequence >= z.incarnation, z.lastSequence <= coveredSequence else { return "zone \(z.name): last sequence outside the covered log" }
            guard z.lowWaterMark <= coveredSequence else { return "zone \(z.name): low-water mark past the covered log" }
            guard z.historyThrough <= coveredSequence else { return "zone \(z.name): history reach past the covered log" }
            if let d = z.deletedAt, d < z.incarnation || d > coveredSequence { return "zone \(z.name): deletion outside the covered log" }
            if let first = z.frameSequences.first, first < z.incarnation { return "zone \(z.name): a frame before its incarnation" }
            if let last = z.frameSequences.last, last > z.lastSequence { return "zone \(z.name): a frame past its last sequence" }
            if let previous = latestByName[z.name] {
                guard previous.deleted, previous.incarnation < z.incarnation else { return "zone \(z.name): incarnations overlap" }
            }
            latestByName[z.name] = (z.incarnation, z.deletedAt != nil)
        }
        return nil
    }
}

/// The checkpoint file `index/zones.idx` (Spec/INDEX.md): magic, version, fixed fields, then
/// delta-varint tables, and a CRC32C over everything before it.
package enum ZoneIndexCodec {
    package static let magic: [UInt8] = [0x89, 0x4A, 0x4C, 0x49, 0x0D, 0x0A, 0x1A, 0x0A]
    /// 2: each zone carries `historyThrough`. A file of another major is no checkpoint, so one
    /// an older writer left is rebuilt from the log (INDEX.md §3), which knows every fact.
    package static let major: UInt16 = 2
    package static let minor: UInt16 = 0
    /// A checkpoint larger than this is refused before it is read (1 GiB).
    package static let maxFileBytes = 1 << 30

    package enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
        case badMagic
        case unsupportedMajor(UInt16)
        case crcMismatch(stored: UInt32, computed: UInt32)
        case malformed(CodecError)
        package var description: String {
            switch self {
            case .badMagic: "not a zone index (bad magic)"
            case .unsupportedMajor(let m): "zone index major version \(m) is not supported"
            case .crcMismatch(let s, let c): "zone index CRC mismatch (stored \(hex32(s)), computed \(hex32(c)))"
            case .malformed(let e): "zone index does not decode: \(e)"
            }
        }
    }

    package static func encode(_ c: ZoneIndexCheckpoint) -> [UInt8] {
        var w = ByteWriter(capacity: 256 + c.zones.reduce(0) { $0 + 32 + $1.frameSequences.count * 4 })
        w.append(contentsOf: magic)
        w.u16(major)
        w.u16(minor)
        w.u64(c.storeID0)
        w.u64(c.storeID1)
        w.u64(c.coveredSegment)
        w.u64(UInt64(c.coveredOffset))
        w.u32(c.coveredCRC)
        w.u64(c.coveredSequence)
        w.varint(UInt64(c.segments.count))
        var previous: UInt64 = 0
        for s in c.segments {
            w.varint(s - previous)
            previous = s
        }
        w.varint(UInt64(c.zones.count))
        for z in c.zones {
            encodeHead(z, to: &w)
            w.varint(UInt64(z.frameSequences.count))
            encodeFrames(z, from: 0, to: &w)
        }
        w.u32(CRC32C.extend(0, w.bytes))
        return w.bytes
    }

    package static func decode(_ b: UnsafeRawBufferPointer) throws(DecodeError) -> ZoneIndexCheckpoint {
        guard b.count >= magic.count + 4 + 4, b.prefix(magic.count).elementsEqual(magic) else { throw .badMagic }
        let stored = b.u32(at: b.count - 4)
        let computed = CRC32C.extend(0, UnsafeRawBufferPointer(rebasing: b[0..<b.count - 4]))
        guard stored == computed else { throw .crcMismatch(stored: stored, computed: computed) }
        let maj = b.u16(at: magic.count)
        guard maj == major else { throw .unsupportedMajor(maj) }
        do throws(CodecError) {
            var r = ByteReader(b, offset: magic.count + 4, end: b.count - 4)
            let id0 = try r.u64(), id1 = try r.u64()
            let coveredSegment = try r.u64()
            let coveredOffset = try r.u64()
            let coveredCRC = try r.u32()
            let coveredSequence = try r.u64()
            guard coveredOffset < 1 << 32, coveredSequence < 1 << 62, coveredSegment < 1 << 62 else {
                throw CodecError(.invalidValue(field: "covered position"), at: r.offset)
            }
            let segmentCount = try r.count("segments")
            var segments: [SequenceNumber] = []
            segments.reserveCapacity(segmentCount)
            var base: UInt64 = 0
            for i in 0..<segmentCount {
                let at = r.offset
                let d = try r.varint()
                guard (i == 0 || d >= 1), d < 1 << 62, base + d < 1 << 62 else { throw CodecError(.invalidValue(field: "segment base"), at: at) }
                base += d
                segments.append(base)
            }
            let zoneCount = try r.count("zones")
            var zones: [ZoneTrack] = []
            zones.reserveCapacity(zoneCount)
            for _ in 0..<zoneCount {
                var z = try decodeHead(&r)
                try decodeFrames(&r, into: &z, segmentCount: segmentCount)
                zones.append(z)
            }
            guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
            return ZoneIndexCheckpoint(storeID: (id0, id1), coveredSegment: coveredSegment, coveredOffset: Int64(coveredOffset),
                                       coveredCRC: coveredCRC, coveredSequence: coveredSequence, segments: segments, zones: zones)
        } catch {
            throw .malformed(error)
        }
    }

    /// A zone entry up to its frames (§4): name, incarnation, flags, deletion, mark, history
    /// reach, counts.
    static func encodeHead(_ z: ZoneTrack, to w: inout ByteWriter) {
        w.string(z.name)
        w.varint(z.incarnation)
        w.u8((z.deletedAt != nil ? 1 : 0) | (z.isImplicit ? 2 : 0))
        if let d = z.deletedAt {
            w.varint(d)
            w.u8(z.deletionReason.rawValue)
        }
        w.varint(z.lowWaterMark)
        w.varint(z.historyThrough)
        w.varint(UInt64(z.entryCount))
        w.varint(z.lastSequence)
    }

    /// The zone's frames from index `start` on (§4's encoding, the first of them absolute); the
    /// caller writes their count.
    static func encodeFrames(_ z: ZoneTrack, from start: Int, to w: inout ByteWriter) {
        precondition(z.frameSequences.count == z.frameLocations.count)
        var seq: UInt64 = 0
        var ordinal: UInt64 = 0
        var offset: UInt64 = 0
        for i in start..<z.frameSequences.count {
            let s = z.frameSequences[i], loc = z.frameLocations[i]
            w.varint(s - seq)
            let o = loc >> 32, off = loc & 0xFFFF_FFFF
            w.varint(o - ordinal)
            w.varint(o == ordinal && i > start ? off - offset : off)
            seq = s
            ordinal = o
            offset = off
        }
    }

    static func decodeHead(_ r: inout ByteReader) throws(CodecError) -> ZoneTrack {
        let name = try r.string("zone", limit: Limits.maxZoneBytes)
        let incarnation = try r.sequence("incarnation")
        let flagsAt = r.offset
        let flags = try r.u8()
        guard flags & ~3 == 0 else { throw CodecError(.invalidValue(field: "zone flags"), at: flagsAt) }
        var z = ZoneTrack(name: name, incarnation: incarnation, isImplicit: flags & 2 != 0)
        if flags & 1 != 0 {
            z.deletedAt = try r.sequence("deletedAt")
            let at = r.offset
            guard let reason = ZoneDeletionReason(rawValue: try r.u8()) else { throw CodecError(.invalidValue(field: "reason"), at: at) }
            z.deletionReason = reason
        }
        z.lowWaterMark = try r.sequence("lowWaterMark")
        z.historyThrough = try r.sequence("historyThrough")
        let countAt = r.offset
        let entries = try r.varint()
        guard entries < 1 << 62 else { throw CodecError(.invalidValue(field: "entryCount"), at: countAt) }
        z.entryCount = Int(entries)
        z.lastSequence = try r.sequence("lastSequence")
        return z
    }

    /// Reads a frame count and that many frames, appending them to `z`'s; the first is absolute
    /// and must follow `after` (a journal record's last kept frame): a sequence above it and a
    /// location after it, as §4's encoding needs. Ordinals index `segmentCount` bases.
    static func decodeFrames(_ r: inout ByteReader, into z: inout ZoneTrack, segmentCount: Int,
                             after: (sequence: SequenceNumber, location: UInt64)? = nil) throws(CodecError) {
        let frames = try r.count("frames")
        z.frameSequences.reserveCapacity(z.frameSequences.count + frames)
        z.frameLocations.reserveCapacity(z.frameLocations.count + frames)
        var seq: UInt64 = 0, ordinal: UInt64 = 0, offset: UInt64 = 0
        for i in 0..<frames {
            let at = r.offset
            let ds = try r.varint(), dord = try r.varint(), doff = try r.varint()
            let continuing = i > 0 && dord == 0
            guard (i == 0 || ds >= 1), ds < 1 << 62, seq + ds < 1 << 62,
                  dord < UInt64(segmentCount), ordinal + dord < UInt64(segmentCount),
                  doff < 1 << 32, (continuing ? offset + doff : doff) < 1 << 32, !continuing || doff >= 1,
                  i > 0 || follows(after, seq: ds, ordinal: dord, offset: doff) else {
                throw CodecError(.invalidValue(field: "frame location"), at: at)
            }
            seq += ds
            ordinal += dord
            offset = continuing ? offset + doff : doff
            z.frameSequences.append(seq)
            z.frameLocations.append(ordinal << 32 | offset)
        }
    }
}

extension ZoneIndexCodec {
    /// Whether a frame at (`seq`, `ordinal`, `offset`) may follow `previous` (any may follow
    /// none): a later sequence, and a later location (a later segment, or a later offset in it).
    static func follows(_ previous: (sequence: SequenceNumber, location: UInt64)?, seq: UInt64, ordinal: UInt64, offset: UInt64) -> Bool {
        guard let previous else { return true }
        let o = previous.location >> 32, off = previous.location & 0xFFFF_FFFF
        return seq > previous.sequence && (ordinal > o || (ordinal == o && offset > off))
    }
}

extension ByteReader {
    /// A count that cannot exceed the bytes left (every counted item takes at least one byte),
    /// so a corrupt count cannot make a decoder allocate beyond the input's size.
    mutating func count(_ field: String) throws(CodecError) -> Int {
        let at = offset
        let v = try varint()
        guard v <= UInt64(remaining) else {
            throw CodecError(.lengthOutOfRange(field: field, length: Int(clamping: v), limit: remaining), at: at)
        }
        return Int(v)
    }

    mutating func sequence(_ field: String) throws(CodecError) -> SequenceNumber {
        let at = offset
        let v = try varint()
        guard v < 1 << 62 else { throw CodecError(.invalidValue(field: field), at: at) }
        return v
    }
}

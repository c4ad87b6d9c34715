/// The index journal `index/zones.idj` (Spec/INDEX.md §5): what changed in the zone index since
/// the checkpoint file it extends, one checksummed record per checkpoint taken. Why: rewriting a
/// checkpoint of every zone each time costs I/O in proportion to the store, and beside durable
/// appends that I/O is what they wait for (a 1.4 MB checkpoint ~150 times a second made 100-entry
/// batches wait 4-5x longer at p99); a record costs what changed.
///
/// Pure: `record(from:to:)` is the writer's diff, `apply(_:to:baseCRC:)` the reader's replay.
/// Like the checkpoint, the journal is a cache: a record that does not read whole ends it.
package enum ZoneIndexJournalCodec {
    package static let magic: [UInt8] = [0x89, 0x4A, 0x4C, 0x4A, 0x0D, 0x0A, 0x1A, 0x0A]
    /// 2: with the checkpoint file's major 2 (zone entries carry `historyThrough`); an older
    /// journal applies nothing, and open replays the log after the file.
    package static let major: UInt16 = 2
    package static let minor: UInt16 = 0
    /// magic, major, minor, storeID, baseCRC, baseSequence, headerCRC.
    package static let headerSize = 8 + 2 + 2 + 16 + 4 + 8 + 4
    /// A record longer than this ends the journal (a length read from damage is not allocated for).
    package static let maxRecordBytes = 1 << 30

    /// The journal's first bytes: which checkpoint file it extends (its store, its trailing CRC
    /// and its covered sequence). A journal whose header does not name the base is ignored.
    package static func header(extending base: ZoneIndexCheckpoint, baseCRC: UInt32) -> [UInt8] {
        var w = ByteWriter(capacity: headerSize)
        w.append(contentsOf: magic)
        w.u16(major)
        w.u16(minor)
        w.u64(base.storeID0)
        w.u64(base.storeID1)
        w.u32(baseCRC)
        w.u64(base.coveredSequence)
        w.u32(CRC32C.extend(0, w.bytes))
        return w.bytes
    }

    /// A checkpoint file's own CRC (its last four bytes), which a journal's header names.
    package static func fileCRC(_ file: [UInt8]) -> UInt32 {
        precondition(file.count >= 4)
        return file.withUnsafeBytes { $0.u32(at: $0.count - 4) }
    }

    /// One changed zone of a record: its position in the zone table (one past the end appends an
    /// incarnation), what it is now, and how many of its previous frames it starts with.
    package struct Change: Sendable {
        package var index: Int
        package var track: ZoneTrack
        package var keep: Int
        package init(index: Int, track: ZoneTrack, keep: Int) {
            self.index = index
            self.track = track
            self.keep = keep
        }
    }

    /// The record that turns `old` into `new`, framed (length, body, CRC); nil when `new` does
    /// not extend `old` (another store, a segment table that is not a prefix, fewer zones, a
    /// covered position that went back): the writer then writes a whole checkpoint.
    package static func record(from old: ZoneIndexCheckpoint, to new: ZoneIndexCheckpoint) -> [UInt8]? {
        guard extends(old: old, new: new) else { return nil }
        var changes: [Change] = []
        for i in new.zones.indices where i >= old.zones.count || !sameTrack(old.zones[i], new.zones[i]) {
            changes.append(Change(index: i, track: new.zones[i], keep: i < old.zones.count ? commonFrames(old.zones[i], new.zones[i]) : 0))
        }
        return record(covering: new, segmentsBefore: old.segments.count, changes: changes)
    }

    /// Whether a record can take `old` to `new`'s position and tables: the same store, a later
    /// covered frame, a segment table that starts with the old one, no fewer zones.
    package static func extends(old: ZoneIndexCheckpoint, new: ZoneIndexCheckpoint) -> Bool {
        old.storeID0 == new.storeID0 && old.storeID1 == new.storeID1 && new.coveredSequence >= old.coveredSequence
            && isLater(segment: new.coveredSegment, offset: new.coveredOffset, than: old)
            && new.zones.count >= old.zones.count && new.segments.starts(with: old.segments)
    }

    /// Whether a covered frame at `segment`/`offset` lies after `c`'s.
    static func isLater(segment: SequenceNumber, offset: Int64, than c: ZoneIndexCheckpoint) -> Bool {
        segment > c.coveredSegment || (segment == c.coveredSegment && offset > c.coveredOffset)
    }

    /// A record from its parts: the covered frame and segment table of `new` (whose zones are
    /// not read), the segments the previous state had, and the changed zones in ascending order.
    package static func record(covering new: ZoneIndexCheckpoint, segmentsBefore: Int, changes: [Change]) -> [UInt8] {
        precondition(segmentsBefore <= new.segments.count)
        var w = ByteWriter(capacity: 256)
        w.u32(0)  // the length, filled in below
        w.u64(new.coveredSegment)
        w.u64(UInt64(new.coveredOffset))
        w.u32(new.coveredCRC)
        w.u64(new.coveredSequence)
        w.varint(UInt64(new.segments.count - segmentsBefore))
        var previous = segmentsBefore > 0 ? new.segments[segmentsBefore - 1] : 0
        for s in new.segments[segmentsBefore...] {
            w.varint(s - previous)
            previous = s
        }
        w.varint(UInt64(changes.count))
        for c in changes {
            precondition(c.keep <= c.track.frameSequences.count)
            w.varint(UInt64(c.index))
            ZoneIndexCodec.encodeHead(c.track, to: &w)
            w.varint(UInt64(c.keep))
            w.varint(UInt64(c.track.frameSequences.count - c.keep))
            ZoneIndexCodec.encodeFrames(c.track, from: c.keep, to: &w)
        }
        let length = UInt32(w.bytes.count - 4)
        withUnsafeBytes(of: length.littleEndian) { p in for (k, b) in p.enumerated() { w.bytes[k] = b } }
        w.u32(CRC32C.extend(0, w.bytes))
        return w.bytes
    }

    /// Equal tracks, cheaply: the fields first; frame arrays left untouched share their storage,
    /// so comparing them is O(1) unless they changed.
    private static func sameTrack(_ a: ZoneTrack, _ b: ZoneTrack) -> Bool {
        a.lastSequence == b.lastSequence && a.entryCount == b.entryCount && a.lowWaterMark == b.lowWaterMark
            && a.historyThrough == b.historyThrough
            && a.deletedAt == b.deletedAt && a.frameSequences.count == b.frameSequences.count && a == b
    }

    /// How many of `old`'s frames `new` starts with.
    private static func commonFrames(_ old: ZoneTrack, _ new: ZoneTrack) -> Int {
        let n = min(old.frameSequences.count, new.frameSequences.count)
        var k = 0
        while k < n && old.frameSequences[k] == new.frameSequences[k] && old.frameLocations[k] == new.frameLocations[k] { k += 1 }
        return k
    }

    /// What replaying a journal gave.
    package struct Applied: Sendable {
        /// The base with every record that read whole applied.
        package var checkpoint: ZoneIndexCheckpoint
        package var records: Int
        /// Bytes of the journal those records end at (the header's end when none).
        package var validBytes: Int
        /// Why the replay stopped before the end of the bytes (nil: it read them all).
        package var stop: String?
    }

    /// Applies every record of the journal `b` that reads whole, in order, to `base`, stopping at
    /// the first that does not (a torn or damaged tail: what it held is replayed from the log).
    /// A header that does not name `base` applies nothing.
    package static func apply(_ b: UnsafeRawBufferPointer, to base: ZoneIndexCheckpoint, baseCRC: UInt32) -> Applied {
        var out = Applied(checkpoint: base, records: 0, validBytes: 0, stop: nil)
        guard b.count >= headerSize, b.prefix(magic.count).elementsEqual(magic) else {
            out.stop = "not an index journal (bad magic or short header)"
            return out
        }
        let stored = b.u32(at: headerSize - 4)
        guard stored == CRC32C.extend(0, UnsafeRawBufferPointer(rebasing: b[0..<headerSize - 4])) else {
            out.stop = "the journal's header CRC does not match"
            return out
        }
        guard b.u16(at: 8) == major else {
            out.stop = "index journal major version \(b.u16(at: 8)) is not supported"
            return out
        }
        guard b.u64(at: 12) == base.storeID0, b.u64(at: 20) == base.storeID1, b.u32(at: 28) == baseCRC,
              b.u64(at: 32) == base.coveredSequence else {
            out.stop = "the journal extends another checkpoint"
            return out
        }
        var at = headerSize
        out.validBytes = at
        while at < b.count {
            guard b.count - at >= 8 else {
                out.stop = "a record cut off at byte \(at)"
                return out
            }
            let length = Int(b.u32(at: at))
            guard length <= maxRecordBytes, length <= b.count - at - 8 else {
                out.stop = "a record at byte \(at) runs past the end"
                return out
            }
            let end = at + 4 + length
            let crc = CRC32C.extend(0, UnsafeRawBufferPointer(rebasing: b[at..<end]))
            guard crc == b.u32(at: end) else {
                out.stop = "the record at byte \(at) fails its CRC"
                return out
            }
            do throws(CodecError) {
                var r = ByteReader(b, offset: at + 4, end: end)
                let delta = try Delta(&r, against: out.checkpoint)
                guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
                delta.apply(to: &out.checkpoint)
            } catch {
                out.stop = "the record at byte \(at) does not apply: \(error)"
                return out
            }
            at = end + 4
            out.records += 1
            out.validBytes = at
        }
        return out
    }

    /// One record, read and checked against the checkpoint it applies to before anything changes,
    /// so a record that does not apply leaves the checkpoint as the records before it made it.
    private struct Delta {
        var coveredSegment: SequenceNumber
        var coveredOffset: Int64
        var coveredCRC: UInt32
        var coveredSequence: SequenceNumber
        var addedSegments: [SequenceNumber] = []
        /// Each changed entry as it is now, holding only its new frames, and how many of its
        /// frames so far it keeps: applied in place, so a zone's frames are copied at most once
        /// however many records touch it.
        var zones: [(index: Int, track: ZoneTrack, keep: Int)] = []

        init(_ r: inout ByteReader, against c: ZoneIndexCheckpoint) throws(CodecError) {
            coveredSegment = try r.u64()
            let offset = try r.u64()
            coveredCRC = try r.u32()
            coveredSequence = try r.u64()
            // Each record covers a later frame than the state before it: a journal left beside a
            // newer file (which covers at least as far as the journal's records) applies nothing,
            // even if the two files' CRCs collide.
            guard offset < 1 << 32, coveredSequence < 1 << 62, coveredSegment < 1 << 62, coveredSequence >= c.coveredSequence,
                  isLater(segment: coveredSegment, offset: Int64(offset), than: c) else {
                throw CodecError(.invalidValue(field: "covered position"), at: r.offset)
            }
            coveredOffset = Int64(offset)
            let added = try r.count("segments")
            var previous = c.segments.last ?? 0
            for _ in 0..<added {
                let at = r.offset
                let d = try r.varint()
                guard d >= 1, d < 1 << 62, previous + d < 1 << 62 else { throw CodecError(.invalidValue(field: "segment base"), at: at) }
                previous += d
                addedSegments.append(previous)
            }
            let segmentCount = c.segments.count + added
            let changed = try r.count("zones")
            var zoneCount = c.zones.count
            var lastIncarnation = c.zones.last?.incarnation ?? 0
            var last = -1
            for _ in 0..<changed {
                let at = r.offset
                let index = try r.varint()
                // Ascending; an index one past the table appends an incarnation.
                guard index <= UInt64(zoneCount), Int(index) > last else { throw CodecError(.invalidValue(field: "zone index"), at: at) }
                last = Int(index)
                if last == zoneCount { zoneCount += 1 }
                let headAt = r.offset
                var z = try ZoneIndexCodec.decodeHead(&r)
                let keepAt = r.offset
                let keep = try r.varint()
                var after: (sequence: SequenceNumber, location: UInt64)? = nil
                if last < c.zones.count {
                    let before = c.zones[last]
                    // An entry is the same incarnation from record to record; a new one comes
                    // after every other (the table is in incarnation order, §4).
                    guard z.name == before.name, z.incarnation == before.incarnation, z.isImplicit == before.isImplicit else {
                        throw CodecError(.invalidValue(field: "zone entry"), at: headAt)
                    }
                    guard keep <= UInt64(before.frameSequences.count) else { throw CodecError(.invalidValue(field: "frames kept"), at: keepAt) }
                    if keep > 0 { after = (before.frameSequences[Int(keep) - 1], before.frameLocations[Int(keep) - 1]) }
                } else {
                    guard z.incarnation > lastIncarnation else { throw CodecError(.invalidValue(field: "zone incarnation"), at: headAt) }
                    guard keep == 0 else { throw CodecError(.invalidValue(field: "frames kept"), at: keepAt) }
                    lastIncarnation = z.incarnation
                }
                try ZoneIndexCodec.decodeFrames(&r, into: &z, segmentCount: segmentCount, after: after)
                zones.append((last, z, Int(keep)))
            }
        }

        func apply(to c: inout ZoneIndexCheckpoint) {
            c.segments.append(contentsOf: addedSegments)
            for (i, z, keep) in zones {
                guard i < c.zones.count else {
                    c.zones.append(z)
                    continue
                }
                c.zones[i].frameSequences.removeSubrange(keep...)
                c.zones[i].frameSequences.append(contentsOf: z.frameSequences)
                c.zones[i].frameLocations.removeSubrange(keep...)
                c.zones[i].frameLocations.append(contentsOf: z.frameLocations)
                c.zones[i].deletedAt = z.deletedAt
                c.zones[i].deletionReason = z.deletionReason
                c.zones[i].lowWaterMark = z.lowWaterMark
                c.zones[i].historyThrough = z.historyThrough
                c.zones[i].entryCount = z.entryCount
                c.zones[i].lastSequence = z.lastSequence
            }
            c.coveredSegment = coveredSegment
            c.coveredOffset = coveredOffset
            c.coveredCRC = coveredCRC
            c.coveredSequence = coveredSequence
        }
    }
}

import JournalCodec

/// What one service compaction did to one zone, in a form a device applies to its own copy
/// (Spec/SYNC.md §6.7): the zone's mark before and after, the lowest token floor that can still
/// follow, the state digest after the purge, the ids of the entries it purged and the entries it
/// wrote over with a `place`. The service appends it to the zone itself, right after it raises the
/// mark, as an opaque entry (kind `0x84`, author `_service`, id `compaction.<to>`), so it travels
/// in the zone's feed in order with everything else; a device applies it when it meets it, then
/// stores it like any entry. Applying it twice, or to a copy that already holds the compacted set,
/// changes nothing.
///
/// Pure: no I/O. Ids are FORMAT.md §6 ids, so a denser id scheme changes nothing here.
package struct CompactionRecord: Sendable, Equatable {
    /// The opaque operation kind of a compaction record.
    package static let kind: UInt8 = 0x84
    /// The body version this writer writes and the only one it reads.
    package static let version: UInt8 = 1
    /// The author of every compaction record: the service's own name, never a device's.
    package static let author = "_service"
    /// Most ids (purged plus written over) one record carries: about 570 KB of UUID ids, well
    /// inside one entry (FORMAT.md §8). A run that purges more of one zone writes no record, and
    /// its older tokens expire (the devices re-fetch, as after a crash mid-run).
    package static let maxIDs = 32_768

    /// One entry the compaction wrote over with `place(item, after: anchor)`, keeping its id,
    /// author and clocks (COMPACTION.md §2).
    package struct Placement: Sendable, Equatable {
        package var entry: CompactID
        package var item: CompactID
        package var anchor: CompactID?

        package init(entry: CompactID, item: CompactID, anchor: CompactID?) {
            self.entry = entry
            self.item = item
            self.anchor = anchor
        }
    }

    /// The zone's low-water mark before the run.
    package var from: SequenceNumber
    /// The zone's low-water mark after it: the run's snapshot sequence `S`.
    package var to: SequenceNumber
    /// The lowest token floor that may follow the zone from here: a token issued under a mark
    /// below it expires (the records between are gone, or were never written).
    package var followFrom: SequenceNumber
    /// The lowest token position that may follow: the highest sequence any held record purged
    /// or wrote over. A token below it may have missed an entry that was purged before it saw it.
    package var followPosition: SequenceNumber
    /// `ListState.digest` (MERGE.md §8) of the zone at `to`, after the purge.
    package var digest: UInt64
    /// Ids of the entries the run purged, in the order it read them.
    package var purged: [CompactID]
    /// The entries it wrote over with a `place`.
    package var placed: [Placement]

    package init(from: SequenceNumber, to: SequenceNumber, followFrom: SequenceNumber, followPosition: SequenceNumber,
                 digest: UInt64, purged: [CompactID], placed: [Placement]) {
        self.from = from
        self.to = to
        self.followFrom = followFrom
        self.followPosition = followPosition
        self.digest = digest
        self.purged = purged
        self.placed = placed
    }

    /// The record's entry id: derived from `to`, so writing the same record twice (a retried
    /// finish of one run) stores it once.
    package static func id(to: SequenceNumber) -> CompactID { CompactID("compaction.\(to)")! }

    /// The `to` of the record whose id this is, or nil for any other id.
    package static func mark(ofID id: CompactID) -> SequenceNumber? {
        let text = id.description
        guard text.hasPrefix("compaction.") else { return nil }
        return SequenceNumber(text.dropFirst("compaction.".count))
    }

    /// The follow floor a zone had under `mark`, from its entries: the `followFrom` of its
    /// record at `mark`, or `mark` when it holds none (Spec/SYNC.md §6.7).
    package static func followFrom(mark: SequenceNumber, entries: some Sequence<JournalEntry>) -> (from: SequenceNumber, position: SequenceNumber) {
        guard mark > 0 else { return (0, 0) }
        for e in entries where isRecord(e) {
            if let r = try? of(e), r.to == mark { return (r.followFrom, r.followPosition) }
        }
        return (mark, 0)
    }

    /// Whether `e` is a compaction record (by kind and author; its body may still not decode).
    package static func isRecord(_ e: JournalEntry) -> Bool {
        guard case .opaque(kind, _) = e.operation else { return false }
        return e.author == author
    }

    /// The record as an entry of `zone`, dated by the service's clock.
    package func entry(zone: String, wallTime: Int64) -> JournalEntry {
        JournalEntry(id: Self.id(to: to), zone: zone, author: Self.author, wallTime: wallTime,
                     clock: HybridTime(derivedFromWallTime: wallTime), operation: .opaque(kind: Self.kind, body: encoded()))
    }

    /// The body (Spec/SYNC.md §6.7):
    /// `version u8 (1) | from varint | to varint | followFrom varint | followPosition varint | digest u64 |
    ///  purgedCount varint | purged: id each | placedCount varint |
    ///  placed: entry id | item id | hasAnchor u8 | [anchor id]`.
    package func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.u8(Self.version)
        w.varint(from)
        w.varint(to)
        w.varint(followFrom)
        w.varint(followPosition)
        w.u64(digest)
        w.varint(UInt64(purged.count))
        for id in purged { id.encoded(into: &w) }
        w.varint(UInt64(placed.count))
        for p in placed {
            p.entry.encoded(into: &w)
            p.item.encoded(into: &w)
            w.u8(p.anchor == nil ? 0 : 1)
            p.anchor?.encoded(into: &w)
        }
        return w.bytes
    }

    /// Decodes a body, checking every count against the bytes left before it allocates; any
    /// failure is a typed error, never a trap.
    package static func decode(_ body: [UInt8]) throws(CodecError) -> CompactionRecord {
        let result: Result<CompactionRecord, CodecError> = body.withUnsafeBytes { b in
            do throws(CodecError) { return .success(try decode(ByteReader(b))) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private static func decode(_ reader: ByteReader) throws(CodecError) -> CompactionRecord {
        var r = reader
        let at = r.offset
        guard try r.u8() == version else { throw CodecError(.invalidValue(field: "compaction record version"), at: at) }
        let from = try r.varint(), to = try r.varint(), followFrom = try r.varint(), followPosition = try r.varint()
        guard from < to, followFrom <= to, followPosition <= to else { throw CodecError(.invalidValue(field: "compaction record marks"), at: at) }
        let digest = try r.u64()
        // An id takes at least 2 bytes (a tag and a length or more).
        let purgedCount = try r.length("purged", limit: min(maxIDs, r.remaining / 2))
        var purged: [CompactID] = []
        purged.reserveCapacity(purgedCount)
        for _ in 0..<purgedCount { purged.append(try CompactID.decoded(&r, field: "purged id")) }
        let placedCount = try r.length("placed", limit: min(maxIDs - purgedCount, r.remaining / 5))
        var placed: [Placement] = []
        placed.reserveCapacity(placedCount)
        for _ in 0..<placedCount {
            let entry = try CompactID.decoded(&r, field: "placed entry id")
            let item = try CompactID.decoded(&r, field: "placed item")
            let flagAt = r.offset
            let anchor: CompactID?
            switch try r.u8() {
            case 0: anchor = nil
            case 1: anchor = try CompactID.decoded(&r, field: "placed anchor")
            default: throw CodecError(.invalidValue(field: "placed hasAnchor"), at: flagAt)
            }
            placed.append(Placement(entry: entry, item: item, anchor: anchor))
        }
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return CompactionRecord(from: from, to: to, followFrom: followFrom, followPosition: followPosition, digest: digest,
                                purged: purged, placed: placed)
    }

    /// The record an entry carries, or nil when `e` is no compaction record; a record whose body
    /// does not decode throws.
    package static func of(_ e: JournalEntry) throws(CodecError) -> CompactionRecord? {
        guard isRecord(e), case .opaque(_, let body) = e.operation else { return nil }
        return try decode(body)
    }
}

/// Where one frame put records of one zone incarnation: recorded at enqueue, placed after the write.
struct FrameTouch {
    var track: Int
    var firstSequence: SequenceNumber
    var lastSequence: SequenceNumber
    var entries: Int
}

/// The zone index in memory (Spec/INDEX.md): every incarnation of every zone, the frames that hold
/// its records, and (loaded on first append) the ids it holds, for idempotent appends.
///
/// Facts (creations, deletions, low-water marks, ids) are recorded when a record is enqueued, with
/// its sequence; frame locations once the record is written. Readers see only what lies at or
/// below the store's horizon, so a fact about an in-flight record is never served early.
struct ZoneCatalog {
    var segments: [SequenceNumber] = []
    private var segmentOrdinals: [SequenceNumber: Int] = [:]
    var tracks = TrackTable()
    /// Per track: entry id to sequence, nil until loaded. Exact, so a duplicate is never mistaken.
    var ids: [IDIndex?] = []
    /// Zone name to its tracks, oldest incarnation first.
    private(set) var byName: [String: [Int]] = [:]

    init() {}

    init(checkpoint c: ZoneIndexCheckpoint) {
        for s in c.segments { _ = ordinal(ofSegment: s) }
        for t in c.zones { _ = add(t, idsLoaded: false) }
    }

    /// The facts a checkpoint covering `covered` is made of, taken under the writer's lock: a
    /// copy of the track table shares its chunks, so this does not grow with the store; `index()`
    /// builds the checkpoint from it after the lock is released.
    mutating func takeCheckpoint(storeID: (UInt64, UInt64), covered: CoveredFrame) -> TakenCheckpoint {
        TakenCheckpoint(storeID: storeID, covered: covered, segments: segments, tracks: tracks, touched: tracks.takeTouched())
    }

    mutating func ordinal(ofSegment base: SequenceNumber) -> Int {
        if let o = segmentOrdinals[base] { return o }
        precondition(segments.last.map { $0 < base } ?? true, "segments are indexed in ascending order")
        segments.append(base)
        segmentOrdinals[base] = segments.count - 1
        return segments.count - 1
    }

    private mutating func add(_ t: ZoneTrack, idsLoaded: Bool) -> Int {
        // A checkpoint holds a prefix of the table (`TakenCheckpoint.visibleCount`).
        assert(tracks.last.map { $0.incarnation < t.incarnation } ?? true, "incarnations are added in sequence order")
        tracks.append(t)
        ids.append(idsLoaded ? IDIndex() : nil)
        byName[t.name, default: []].append(tracks.count - 1)
        return tracks.count - 1
    }

    /// The newest incarnation of `zone` (deleted or not).
    func latest(_ zone: String) -> Int? { byName[zone]?.last }

    /// The newest incarnation of `zone` that started at or below `horizon`.
    func latest(_ zone: String, atOrBelow horizon: SequenceNumber) -> Int? {
        byName[zone]?.last { tracks[$0].incarnation <= horizon }
    }

    func track(_ zone: String, incarnation: SequenceNumber) -> Int? {
        byName[zone]?.first { tracks[$0].incarnation == incarnation }
    }

    /// The live incarnation an entry joins, or nil when the zone needs a new one.
    func live(_ zone: String) -> Int? {
        guard let i = latest(zone), tracks[i].deletedAt == nil else { return nil }
        return i
    }

    mutating func create(_ zone: String, at seq: SequenceNumber, implicit: Bool, idsLoaded: Bool) -> Int {
        add(ZoneTrack(name: zone, incarnation: seq, isImplicit: implicit), idsLoaded: idsLoaded)
    }

    mutating func delete(track i: Int, at seq: SequenceNumber, reason: ZoneDeletionReason) {
        tracks[i].deletedAt = seq
        tracks[i].deletionReason = reason
        ids[i] = nil
    }

    /// Applies a durable `lowWaterMark` record: the mark and the history's reach only rise.
    mutating func setLowWater(_ zone: String, incarnation: SequenceNumber, mark: SequenceNumber, history: SequenceNumber) {
        guard let i = track(zone, incarnation: incarnation) else { return }
        let t = tracks[i]
        // Unchanged facts leave the track untouched, so no index journal record names it.
        guard mark > t.lowWaterMark || history > t.historyThrough else { return }
        tracks[i].lowWaterMark = max(t.lowWaterMark, mark)
        tracks[i].historyThrough = max(t.historyThrough, history)
    }

    /// Records that the frame at `location` holds `touch`'s records.
    mutating func place(_ touch: FrameTouch, location: UInt64) {
        // In place: a copy of the track would make its frame lists shared, and appending to them
        // would copy them whole.
        assert(tracks[touch.track].frameSequences.last.map { $0 < touch.firstSequence } ?? true, "frames are placed in log order")
        tracks[touch.track].frameSequences.append(touch.firstSequence)
        tracks[touch.track].frameLocations.append(location)
        tracks[touch.track].entryCount += touch.entries
        tracks[touch.track].lastSequence = max(tracks[touch.track].lastSequence, touch.lastSequence)
    }

    /// A `lowWaterMark` record's facts, applied once the record is durable.
    typealias Mark = LogWriter.LowWater

    /// Applies one record's facts (the rules every reader and the writer share, TOKENS.md §1) and
    /// says which incarnations the frame touches; low-water marks are returned, not applied,
    /// since the writer applies them only once their record is durable.
    mutating func prepare(_ events: [LogEvent], trackIDs: Bool = true) -> (touches: [FrameTouch], marks: [Mark]) {
        var touched: [Int: FrameTouch] = [:]
        var order: [Int] = []
        var marks: [Mark] = []
        func touch(_ track: Int, _ seq: SequenceNumber, entries: Int) {
            if touched[track] == nil {
                touched[track] = FrameTouch(track: track, firstSequence: seq, lastSequence: seq, entries: 0)
                order.append(track)
            }
            touched[track]!.entries += entries
            touched[track]!.lastSequence = seq
        }
        for event in events {
            switch event {
            case .entry(let seq, let e):
                // An incarnation that starts here is seen whole from its start: its id set is
                // complete. A replay (`trackIDs` false) leaves ids to be loaded on first append.
                let i = live(e.zone) ?? create(e.zone, at: seq, implicit: true, idsLoaded: trackIDs)
                if trackIDs, ids[i] != nil, ids[i]![e.id] == nil { ids[i]![e.id] = StoredID(sequence: seq, fingerprint: EntryFingerprint.of(e)) }
                touch(i, seq, entries: 1)
            case .zoneCreated(let seq, let zone):
                // A create for a zone that is live continues it (idempotent create); else a new incarnation.
                let i = live(zone) ?? create(zone, at: seq, implicit: false, idsLoaded: trackIDs)
                touch(i, seq, entries: 0)
            case .zoneDeleted(let seq, let zone, let reason):
                guard let i = live(zone) else { continue }
                delete(track: i, at: seq, reason: reason)
                touch(i, seq, entries: 0)
            case .lowWaterMark(_, let zone, let incarnation, let mark, let history):
                marks.append(Mark(zone: zone, incarnation: incarnation, mark: mark, history: history))
            case .seal, .skipped:
                continue
            }
        }
        return (order.map { touched[$0]! }, marks)
    }

    /// Replays one intact, durable record (open, or a rebuild).
    mutating func observe(_ events: [LogEvent], segment: SequenceNumber, offset: Int64) {
        let location = ZoneTrack.location(segmentOrdinal: ordinal(ofSegment: segment), offset: offset)
        let (touches, marks) = prepare(events, trackIDs: false)
        for t in touches { place(t, location: location) }
        for m in marks { setLowWater(m.zone, incarnation: m.incarnation, mark: m.mark, history: m.history) }
    }
}

/// The last frame written: what a checkpoint covers.
struct CoveredFrame {
    var segment: SequenceNumber
    var offset: Int64
    var crc: UInt32
    var lastSequence: SequenceNumber
}

/// An index checkpoint as taken under the writer's lock (`ZoneCatalog.takeCheckpoint`).
struct TakenCheckpoint {
    let storeID: (UInt64, UInt64)
    let covered: CoveredFrame
    let segments: [SequenceNumber]
    let tracks: TrackTable
    /// The tracks changed since the checkpoint taken before this one, ascending.
    var touched: [Int]

    /// This checkpoint, also counting as touched what `earlier` (taken before it, never
    /// written) counted.
    func including(_ earlier: TakenCheckpoint) -> TakenCheckpoint {
        var t = self
        t.touched = Array(Set(earlier.touched + touched)).sorted()
        return t
    }

    /// The checkpoint: only facts at or below the covered frame (anything later is replayed from
    /// the log on open).
    func index() -> ZoneIndexCheckpoint {
        var zones: [ZoneTrack] = []
        zones.reserveCapacity(visibleCount)
        for i in 0..<visibleCount { zones.append(visible(tracks[i])) }
        return ZoneIndexCheckpoint(storeID: storeID, coveredSegment: covered.segment, coveredOffset: covered.offset,
                                   coveredCRC: covered.crc, coveredSequence: covered.lastSequence, segments: segments, zones: zones)
    }

    /// The checkpoint without its zones: its position and segment table.
    var position: ZoneIndexCheckpoint {
        ZoneIndexCheckpoint(storeID: storeID, coveredSegment: covered.segment, coveredOffset: covered.offset,
                            coveredCRC: covered.crc, coveredSequence: covered.lastSequence, segments: segments, zones: [])
    }

    /// How many tracks the checkpoint holds: those that began at or below the covered sequence
    /// (the table is in incarnation order, so they come first).
    var visibleCount: Int {
        var n = tracks.count
        while n > 0 && tracks[n - 1].incarnation > covered.lastSequence { n -= 1 }
        return n
    }

    /// A track as the checkpoint holds it: a deletion past the covered sequence not yet, a
    /// deleted incarnation without frames.
    func visible(_ track: ZoneTrack) -> ZoneTrack {
        var t = track
        if let d = t.deletedAt, d > covered.lastSequence { t.deletedAt = nil }
        if t.deletedAt != nil {
            t.frameSequences = []
            t.frameLocations = []
        }
        return t
    }

    /// Whether the checkpoint holds less of `track` than the table does (a deletion past the
    /// covered sequence): a later checkpoint holds more of it even if it does not change.
    func hidesPart(of track: ZoneTrack) -> Bool {
        track.deletedAt.map { $0 > covered.lastSequence } ?? false
    }
}

import JournalCodec
import ListModel

/// The properties the ListModel fuzz targets check; shared with the corpus-replay test.
package enum ListFuzzChecks {
    /// Snapshot decoding never crashes; what decodes re-encodes and decodes to the same thing.
    /// The bytes are tried both as a whole snapshot file and, because the checksums stop most
    /// mutations at the header, as a bare body.
    package static func snapshot(_ bytes: UnsafeRawBufferPointer) {
        if let (header, reducer) = try? SnapshotCodec.decode(bytes) {
            roundTrip(reducer, incarnation: header.incarnation, sequence: header.sequence, digest: header.digest)
        }
        for sealed in [false, true] {
            var r = ByteReader(bytes)
            if let reducer = try? SnapshotCodec.decodeBody(&r, zone: "fuzz", sealed: sealed) {
                roundTrip(reducer, incarnation: 1, sequence: 2, digest: reducer.state().digest)
            }
        }
        snapshotDelta(bytes)
        base(bytes)
        compactionRecord(bytes)
    }

    /// The bytes as a compaction record's body (Spec/SYNC.md §6.7), and, split in two, a record
    /// applied to a base: a typed error or an answer, never a crash; a record decoded encodes
    /// to bytes that decode to it.
    static func compactionRecord(_ bytes: UnsafeRawBufferPointer) {
        if let record = try? CompactionRecord.decode(Array(bytes)) {
            precondition((try? CompactionRecord.decode(record.encoded())) == record, "a compaction record must survive its own encoding")
        }
        guard bytes.count >= 4 else { return }
        let n = Int(bytes.u32At(0))
        guard n <= bytes.count - 4 else { return }
        guard let record = try? CompactionRecord.decode(Array(bytes[4..<(4 + n)])) else { return }
        let snapshot = Array(bytes[(4 + n)...])
        _ = try? ListBase.following(snapshot, record: record)
    }

    /// The bytes as a list's base entry (MERGE.md §10), applied to an empty reducer and to one
    /// that holds an entry: never a crash; adopted only when empty and the bytes are a snapshot
    /// of the zone, otherwise reported, the state unchanged.
    static func base(_ bytes: UnsafeRawBufferPointer) {
        let header = try? SnapshotCodec.header(bytes)
        let zone = header?.zone ?? "fuzz"
        let entry = JournalEntry(id: CompactID("base.1.0")!, zone: zone, author: ListBase.author, wallTime: 0,
                                 clock: HybridTime(rawValue: 0), operation: .opaque(kind: ListBase.kind, body: Array(bytes)))
        var empty = ListReducer(zone: zone)
        _ = empty.apply(entry)
        if (try? SnapshotCodec.decode(bytes)) != nil { precondition(empty.baseProblem == nil, "a base that decodes is adopted") }
        var busy = ListReducer(zone: zone)
        _ = busy.apply(JournalEntry(id: CompactID("x")!, zone: zone, author: "a", wallTime: 0, clock: HybridTime(rawValue: 1),
                                    operation: .rename(name: "n")))
        let before = busy
        _ = busy.apply(entry)
        precondition(busy.baseProblem != nil && busy.state() == before.state(), "a base after an entry changes nothing and is reported")
    }

    /// Deltas (SNAPSHOT.md §6): the bytes as a delta body against a fixed base body (past the
    /// CRCs), and as `u32 length | base file | delta file`. Applying never crashes; what
    /// decodes round-trips as a whole snapshot.
    static func snapshotDelta(_ bytes: UnsafeRawBufferPointer) {
        if let whole = try? SnapshotDelta.apply(Array(bytes), to: fuzzBaseBody) {
            let decoded: ListReducer? = whole.withUnsafeBytes { p in
                var r = ByteReader(p)
                return try? SnapshotCodec.decodeBody(&r, zone: "fuzz")
            }
            if let decoded { roundTrip(decoded, incarnation: 1, sequence: 2, digest: decoded.state().digest) }
        }
        guard bytes.count >= 4 else { return }
        let n = Int(bytes.u32At(0))
        guard n <= bytes.count - 4 else { return }
        let base = UnsafeRawBufferPointer(rebasing: bytes[4..<(4 + n)]), delta = UnsafeRawBufferPointer(rebasing: bytes[(4 + n)...])
        if let (header, reducer) = try? SnapshotDelta.decode(Array(delta), base: Array(base)) {
            roundTrip(reducer, incarnation: header.incarnation, sequence: header.sequence, digest: header.digest)
        }
    }

    /// The base the first form applies to: three items, one marked off, in zone "fuzz".
    package static let fuzzBaseBody: [UInt8] = {
        var r = ListReducer(zone: "fuzz")
        func entry(_ n: UInt64, _ op: EntryOperation) -> JournalEntry {
            JournalEntry(id: CompactID("f\(n)")!, zone: "fuzz", author: "alice", wallTime: Int64(n),
                         clock: HybridTime(physicalMillis: 1_000 + n, counter: 0), operation: op)
        }
        r.apply(contentsOf: [entry(1, .add(item: CompactID("a")!, text: "A", after: nil)),
                             entry(2, .add(item: CompactID("b")!, text: "B", after: CompactID("a")!)),
                             entry(3, .add(item: CompactID("c")!, text: "C", after: CompactID("b")!)),
                             entry(4, .markOff(item: CompactID("b")!))])
        return SnapshotCodec.encodeBody(r)
    }()

    /// History decoding (a piece, or an older writer's whole history) never crashes; what decodes
    /// re-encodes as a piece that decodes to the same history, and re-encoding that is canonical.
    package static func history(_ bytes: UnsafeRawBufferPointer) {
        _ = try? HistoryPieceCodec.decodeHeader(bytes)
        // Streamed, as a service pages it (SYNC.md §3.12): never a crash, and a piece that
        // decodes streams whole, each id of the history at least once.
        var streamed: Set<CompactID>? = nil
        if let (_, start) = try? HistoryPieceCodec.startOfEvents(Array(bytes)) {
            var ids = Set<CompactID>()
            // Read to the end (nil: every event read), or a decoding error (no set).
            if case .success(nil) = Result(catching: { try HistoryPieceCodec.events(Array(bytes), from: start) { ids.insert($0.entry); return true } }) {
                streamed = ids
            }
        }
        guard let (header, log) = try? HistoryPieceCodec.decode(Array(bytes)) else { return }
        if header.major == HistoryPieceCodec.major, streamed?.count != log.count { fatalError("a piece streams unlike it decodes") }
        var h = header
        h.major = HistoryPieceCodec.major
        if h.major != header.major { h.incarnation = 1; h.sequence = 2 }
        let again = HistoryPieceCodec.encode(log, header: h)
        let second: (header: HistoryPieceHeader, log: ActivityLog)
        do { second = try HistoryPieceCodec.decode(again) } catch {
            fatalError("a decoded history re-encodes to bytes that do not decode: \(error)")
        }
        if second.log != log || second.log.allEvents() != log.allEvents() { fatalError("history changed across re-encoding") }
        if second.header != h { fatalError("history piece header changed across re-encoding") }
        if HistoryPieceCodec.encode(second.log, header: h) != again { fatalError("history piece encoding is not canonical") }
    }

    private static func roundTrip(_ reducer: ListReducer, incarnation: UInt64, sequence: UInt64, digest: UInt64) {
        let state = reducer.state()
        if state.digest != digest || reducer.stateDigest() != digest { fatalError("decoded state does not hash to the header's digest") }
        let again = SnapshotCodec.encode(reducer: reducer, incarnation: incarnation, sequence: sequence)
        let second: (header: SnapshotHeader, reducer: ListReducer)
        do {
            second = try SnapshotCodec.decode(again)
        } catch {
            fatalError("a decoded snapshot re-encodes to bytes that do not decode: \(error)")
        }
        let secondState = second.reducer.state()
        if secondState != state || secondState.canonicalBytes() != state.canonicalBytes() {
            fatalError("snapshot state changed across re-encoding")
        }
        if second.header.digest != digest { fatalError("snapshot digest changed across re-encoding") }
        if second.reducer != reducer { fatalError("snapshot reducer changed across re-encoding") }
        if second.header.entryCount != UInt64(reducer.entryCount) || second.header.zone != reducer.zone
            || second.header.incarnation != incarnation || second.header.sequence != sequence {
            fatalError("snapshot header changed across re-encoding")
        }
        let third = SnapshotCodec.encode(reducer: second.reducer, incarnation: incarnation, sequence: sequence)
        if third != again { fatalError("snapshot encoding is not canonical") }
    }
}

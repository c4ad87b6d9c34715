import JournalCodec

/// A list's **base** (Spec/MERGE.md §10): a whole snapshot of another store's list (SNAPSHOT.md),
/// carried in the log as the first entry of a zone incarnation, opaque kind `0x83`. A device that
/// re-fetches a compacted list installs the service's snapshot this way instead of the entries
/// behind it, so the re-fetch costs what the list holds, and the log stays the one durable,
/// checksummed record a replay needs (a file beside it could go missing unnoticed).
///
/// A reducer with nothing folded in adopts a base's state whole; a base after other entries
/// changes nothing and is reported (`ListReducer.baseProblem`), as is one that does not decode.
/// The base itself is not counted as an entry, so the device's digest equals the service's.
package enum ListBase {
    /// The opaque operation kind of a base entry.
    package static let kind: UInt8 = 0x83
    /// The largest snapshot a base carries: it must fit in one entry of one frame (FORMAT.md §8)
    /// with room to spare. A list whose snapshot is larger is re-fetched as entries.
    package static let maxSnapshotBytes = 3 << 20
    /// The author of a base entry: the service's own name (`_service`), never a device's, so the
    /// engine never uploads it.
    package static let author = "_service"

    /// The base entry for `snapshot` (SNAPSHOT.md bytes, already checked by `check`) in `zone`,
    /// dated `wallTime`. Its id is derived from the snapshot's sequence and digest: installing the
    /// same snapshot twice is one entry.
    package static func entry(snapshot: [UInt8], header: SnapshotHeader, zone: String, wallTime: Int64) -> JournalEntry {
        let id = CompactID("base.\(header.sequence).\(String(header.digest, radix: 16))")!
        return JournalEntry(id: id, zone: zone, author: author, wallTime: wallTime,
                            clock: HybridTime(derivedFromWallTime: wallTime), operation: .opaque(kind: kind, body: snapshot))
    }

    /// Checks a snapshot a service sent before it is stored as a base: a whole snapshot (not a
    /// delta) of `zone`, within `maxSnapshotBytes`, whose body decodes to its digest. The decoded
    /// reducer and header.
    package static func check(_ snapshot: [UInt8], zone: String) throws(SnapshotError) -> (header: SnapshotHeader, reducer: ListReducer) {
        guard snapshot.count <= maxSnapshotBytes else {
            throw .lengthOutOfRange(field: "base snapshot", length: UInt64(snapshot.count), limit: UInt64(maxSnapshotBytes))
        }
        let (header, reducer) = try SnapshotCodec.decode(snapshot)
        guard header.zone == zone else { throw .malformedBody("the snapshot is of zone \(header.zone), not \(zone)", offset: 0) }
        return (header, reducer)
    }

    /// Whether `e` is a base entry.
    package static func isBase(_ e: JournalEntry) -> Bool {
        if case .opaque(kind, _) = e.operation { return true }
        return false
    }

    /// Why a reader refuses the list `entries` make, applied in order to an empty list (a base it
    /// cannot apply: the reducer's `baseProblem`), or nil. A compactor asks it of a list with a
    /// base before deciding anything about it, and leaves a refused list whole (COMPACTION.md §1.1).
    package static func refusal(zone: String, _ entries: some Sequence<JournalEntry>) -> String? {
        var r = ListReducer(zone: zone)
        for e in entries { r.apply(e) }
        return r.baseProblem
    }
}

extension ListReducer {
    /// Applies a base entry's snapshot (`ListBase`): adopted whole when nothing is folded in yet,
    /// otherwise (or when it does not decode as this zone's) nothing changes and `baseProblem`
    /// says why. Never counted as an entry. Returns whether the state was adopted.
    mutating func adoptBase(_ snapshot: [UInt8]) -> Bool {
        guard entryCount == 0, records.isEmpty, name == nil, colour == nil, participants.isEmpty else {
            baseProblem = "a base snapshot after other entries of the list was ignored"
            return false
        }
        do throws(SnapshotError) {
            // Its digest was checked when it was installed (`check`), and the log's CRC has kept
            // its bytes since: the body alone decides the state.
            let (header, body) = try SnapshotCodec.storedBody(snapshot)
            guard header.flags & SnapshotCodec.flagDelta == 0 else { throw .deltaNeedsBase(sequence: 0) }
            let decoded = try SnapshotCodec.reducer(body: body, header: header, verifyDigest: false)
            guard header.zone == zone else {
                baseProblem = "the base snapshot is of zone \(header.zone)"
                return false
            }
            let keep = helpers
            self = decoded
            helpers = keep
            return true
        } catch {
            baseProblem = "the base snapshot cannot be read: \(error)"
            return false
        }
    }
}

extension ListReducer {
    /// The latest hybrid time any winner of the state carries (adds, marks, placements, the
    /// registers): what a device's clock observes when it installs a base, so that its next
    /// changes order after everything the base holds.
    package var latestClock: HybridTime {
        var m: UInt64 = 0
        for r in records { m = max(m, r.addClock, r.markClock) }
        for p in placements.values { m = max(m, p.clock) }
        if let name { m = max(m, name.key.clock.rawValue) }
        if let colour { m = max(m, colour.key.clock.rawValue) }
        for p in participants.values { m = max(m, p.key.clock.rawValue) }
        return HybridTime(rawValue: m)
    }
}

import JournalLog
import ListModel

/// The compactor's files and small steps: the snapshots a run writes (or a stopped run left
/// unwritten), a dry run's counts, the entries appended while it ran, and the files no zone needs.
extension ListCompactor {
    /// A compacted zone with no snapshot at or above its mark (a run stopped between its rewrite
    /// and its snapshot, COMPACTION.md §1): the one that run would have written, so that a second
    /// run finishes the job even when nothing is left to purge. A list its reader refuses gets
    /// none (COMPACTION.md §1.1): `report` lists it as skipped, if the run has not already.
    func writeMissingSnapshot(_ listed: ZoneInfo, into report: inout ListCompactionReport) throws(QueryError) {
        // The position first, then the replay through it: an entry appended meanwhile is above
        // it, and the snapshot never claims one it did not fold in.
        guard let info = query.store.zone(listed.name), !info.isDeleted, info.incarnation == listed.incarnation else { return }
        // The zone's last entry may lie below its mark (the run that stopped purged every entry
        // after it): no entry lies between them, and the state at the mark is the same.
        let through = min(max(info.lastChange, info.lowWaterMark), query.store.horizon)
        guard through >= info.lowWaterMark else { return }
        let m: MaterialisedList
        do { m = try query.materialisedReducer(listed.name, at: .sequence(through)) } catch {
            if Self.isGone(error) { return }
            guard case .baseUnreadable(_, let why) = error else { throw error }
            if !report.skipped.contains(where: { $0.zone == listed.name }) { report.skipped.append((listed.name, .baseUnreadable(reason: why))) }
            return
        }
        guard m.incarnation == listed.incarnation else { return }
        try writeSnapshot(listed.name, reducer: m.reducer, incarnation: m.incarnation, sequence: through)
    }

    /// The run's snapshot of a zone (step 7): a delta against the zone's base when it is small
    /// (SNAPSHOT.md §6: bytes in proportion to what changed since the base), else a whole one,
    /// which is the next run's base (the old base goes).
    func writeSnapshot(_ zone: String, reducer: ListReducer, incarnation: SequenceNumber, sequence: SequenceNumber) throws(QueryError) {
        let bases = SnapshotDirectory.list(store: query.store.path, zone: zone, incarnation: incarnation, kind: .base, fs: query.fs)
        if let base = bases.first, try query.writeDelta(zone, reducer: reducer, incarnation: incarnation, sequence: sequence, base: base) != nil {
            return
        }
        try query.writeState(zone, reducer: reducer, incarnation: incarnation, sequence: sequence)
        _ = remove(bases)
    }

    /// Why the zone's reader refuses its list through `sequence` (`QueryError.baseUnreadable`: a
    /// base it cannot apply, Spec/MERGE.md §10), or nil: the reducer's own verdict, from the newest
    /// snapshot at or below `sequence` (none of a refused list is ever written) plus the log.
    func refusal(_ zone: String, through sequence: SequenceNumber) throws(QueryError) -> String? {
        do { _ = try query.materialisedReducer(zone, at: .sequence(sequence)) } catch {
            guard case .baseUnreadable(_, let why) = error else { throw error }
            return why
        }
        return nil
    }

    /// A dry run's counts: the zone read again, each entry decided as a rewrite would.
    func countDry(_ plan: inout Plan, into report: inout ListCompactionReport) throws(QueryError) {
        var purged: [SequenceNumber] = [], rewritten: [SequenceNumber] = []
        var walks = plan.decisions.map { $0.walk() }
        _ = try query.replayPages(plan.zone.zone, after: nil, until: plan.readThrough) { page in
            for e in page {
                switch RetentionPasses.verdict(&walks, e.sequence, e.entry) {
                case .keep: continue
                case .purge: purged.append(e.sequence)
                case .replace: rewritten.append(e.sequence)
                }
            }
        }
        plan.zone.chosen = purged.count
        plan.zone.rewritten = rewritten.count
        report.chosen += purged
        report.rewritten += rewritten
    }

    /// Ranges merged into ascending, disjoint ones.
    static func union(_ ranges: [ClosedRange<SequenceNumber>]) -> [ClosedRange<SequenceNumber>] {
        var out: [ClosedRange<SequenceNumber>] = []
        for r in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = out.last, r.lowerBound <= last.upperBound &+ 1 {
                out[out.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                out.append(r)
            }
        }
        return out
    }

    /// Whether the error says the zone is gone (deleted, or never there).
    static func isGone(_ error: QueryError) -> Bool {
        if case .feed(.zoneDeleted) = error { return true }
        if case .feed(.zoneNotFound) = error { return true }
        return false
    }

    /// The zone's entries after `position`, or nil when the zone is gone or is no longer
    /// `incarnation` (when given).
    func liveTail(_ zone: String, after position: SequenceNumber, incarnation: SequenceNumber? = nil) throws(QueryError) -> [FeedEntry]? {
        if let incarnation, query.store.zone(zone)?.incarnation != incarnation { return nil }
        do { return try replayTail(zone, after: position) } catch { if Self.isGone(error) { return nil } else { throw error } }
    }

    /// The zone's entries after `position`, through the feed.
    func replayTail(_ zone: String, after position: SequenceNumber) throws(QueryError) -> [FeedEntry] {
        let store = query.store
        var all: [FeedEntry] = []
        do throws(FeedError) {
            var token = try store.zoneToken(zone, position: position)
            while true {
                let page = try store.changes(in: zone, since: token, limit: 65_536)
                all += page.entries
                token = page.token
                if !page.moreComing { return all }
            }
        } catch { throw .feed(error) }
    }

    func remove(_ files: [SnapshotFile]) -> Int {
        var removed = 0
        for f in files where (try? query.fs.remove(f.path)) != nil { removed += 1 }
        if removed > 0 { try? query.fs.syncDirectory(query.store.path + "/" + SnapshotDirectory.name) }
        return removed
    }

    /// Every file of a deleted or superseded zone incarnation, and history pieces no chain needs
    /// (older than a whole history the chain ends at, or left off it).
    func removeSuperseded() -> Int {
        let store = query.store
        // Keyed by hash and incarnation: two live zones whose names' hashes collide keep their files.
        var live: [String: Set<SequenceNumber>] = [:]
        for z in store.zones() where !z.isDeleted { live[SnapshotDirectory.zoneKey(z.name), default: []].insert(z.incarnation) }
        var doomed: [SnapshotFile] = []
        for file in SnapshotDirectory.list(store: store.path, fs: query.fs) where live[file.zoneKey]?.contains(file.incarnation) != true {
            doomed.append(file)
        }
        for z in store.zones() where !z.isDeleted {
            doomed += query.historyPiecesNoChainNeeds(z)
        }
        return remove(doomed)
    }
}

import JournalLog
import ListModel

/// What compacting one zone did.
public struct ZoneCompaction: Sendable, Equatable {
    public var zone: String
    public var incarnation: SequenceNumber
    /// The zone's low-water mark after the run: tokens below it get `tokenExpired`.
    public var lowWaterMark: SequenceNumber
    /// Entries the list rules chose to remove (finished lifecycles, superseded renames and recolours).
    public var chosen: Int
    /// Entries the list rules chose to replace by a `place` (the placements of finished items
    /// that anchor items that stay, COMPACTION.md §2).
    public var rewritten: Int = 0
    /// The history and snapshot written at this sequence; the snapshot is what an expired client
    /// re-fetches from.
    public var snapshotSequence: SequenceNumber
}

/// Why a live zone had nothing to compact: what an operator waits for, or fixes.
public enum CompactionSkip: Sendable, Equatable {
    /// Every entry is newer than the cutoff.
    case nothingOlderThanCutoff
    /// Entries older than the cutoff lie above the mark unexpired consumers hold the zone at
    /// (`jlog consumers`): they go once those consumers advance or their leases expire.
    case heldByConsumers(at: SequenceNumber)
    /// Entries older than the cutoff lie below the mark, but none is a finished item or a
    /// superseded rename or recolour.
    case nothingFinished
    /// It gained entries while every one of `ListCompactor.maxAttempts` rewrites was being
    /// written, so none committed: its history, raised mark and a snapshot of its unchanged log
    /// are left, and the next run finishes the job.
    case keptChanging
}

public struct ListCompactionReport: Sendable {
    public var zones: [ZoneCompaction] = []
    /// Live zones with nothing to compact, and why, in name order.
    public var skipped: [(zone: String, reason: CompactionSkip)] = []
    /// The sequences the list rules chose to remove, ascending (what a dry run would purge).
    public var chosen: [SequenceNumber] = []
    /// The sequences the list rules chose to replace by a `place`, ascending.
    public var rewritten: [SequenceNumber] = []
    public var storage = CompactionReport()
    /// Snapshot and history files removed: superseded ones, and those of deleted zones.
    public var filesRemoved = 0
}

/// The compactor (Spec/COMPACTION.md §1): per zone, it decides with `ListRetention` what may go
/// and writes the history; it removes the zone's snapshots, raises its low-water mark, has the
/// store rewrite the sealed segments in one atomic run, and writes a snapshot of what stays. A
/// crash between any two steps leaves a store whose every view agrees with its log; running
/// again finishes the job.
public struct ListCompactor: Sendable {
    public let query: ListQuery
    public var retentionMillis: Int64 = ListRetention.defaultRetentionMillis

    /// Rewrites tried before a zone that keeps changing under the run is left out of it
    /// (`CompactionSkip.keptChanging`; the next run finishes the job).
    public static let maxAttempts = 4

    /// Entries read and held at once: zones are planned and compacted in groups of about this
    /// many entries, each group one atomic rewrite, so memory follows the group, not the store.
    /// (A zone is never split: one larger than this is a group of its own.)
    public var maxEntriesPerGroup = 1_000_000

    /// Which live zones a run considers (all by default). A sync service compacts only zones it
    /// can expire every older token of (Spec/SYNC.md §6).
    public var zoneFilter: @Sendable (ZoneInfo) -> Bool = { _ in true }

    public init(query: ListQuery, retentionMillis: Int64 = ListRetention.defaultRetentionMillis) {
        self.query = query
        self.retentionMillis = retentionMillis
    }

    public init(store: JournalStore, fs: any FileSystem = PosixFileSystem(), retentionMillis: Int64 = ListRetention.defaultRetentionMillis) {
        self.init(query: ListQuery(store: store, fs: fs), retentionMillis: retentionMillis)
    }

    /// The store's writer: compaction rewrites segments and raises marks.
    private var store: JournalStore {
        get throws(QueryError) {
            guard let w = query.writer else { throw .storage(.readOnly("compaction needs the store's writer; open the store with JournalStore.open")) }
            return w
        }
    }

    private struct Plan {
        var zone: ZoneCompaction
        var entries: [(SequenceNumber, JournalEntry)]
        var retention: ListRetention
        var plan: RetentionPlan
        var mark: SequenceNumber
        var raise: Bool
    }

    /// Compacts every live zone as of `now` (milliseconds since the epoch). `dryRun` decides and
    /// reports without writing anything.
    public func run(now: Int64, dryRun: Bool = false) throws(QueryError) -> ListCompactionReport {
        let store = try self.store
        var report = ListCompactionReport()
        let cutoff = now - retentionMillis
        let zones = store.zones().filter { !$0.isDeleted && zoneFilter($0) }
        // Entries old enough to go that still sit in the active segment would wait for it to fill
        // (a segment can span months of a family's list): seal it first. A dry run assumes it.
        // Only the active segment's entries are read for this.
        var sealed = store.sealedThrough
        // A deleted list's entries in the active segment would stay on disk until it fills.
        var waiting = store.deletedZoneEntriesInActiveSegment
        for info in zones where !waiting && info.lastChange > sealed {
            waiting = try liveTail(info.name, after: max(sealed, info.lowWaterMark))?.contains { Self.isOld($0.entry, cutoff: cutoff) } ?? false
        }
        if waiting {
            if dryRun {
                sealed = store.nextSequence - 1
            } else {
                do { sealed = try store.sealActiveSegment() } catch { throw .storage(error) }
            }
        }
        // Zones are read, planned and compacted a group at a time, so what is held in memory
        // follows the group, not the store.
        var group: [Plan] = []
        var held = 0
        for listed in zones {
            // A zone deleted (or deleted and created again) since the list was taken is not
            // compacted: its entries go with its deletion.
            guard let info = store.zone(listed.name), !info.isDeleted, info.incarnation == listed.incarnation else { continue }
            let read: (entries: [(SequenceNumber, JournalEntry)], sequence: SequenceNumber)
            do { read = try query.entries(info.name) } catch { if Self.isGone(error) { continue } else { throw error } }
            // Nothing above the sealed log, the zone's horizon or any consumer's mark may go.
            let unheld = min(sealed, info.lastChange)
            var limit = unheld
            if let floor = store.consumerFloor(zone: info.name, incarnation: info.incarnation, now: now) { limit = min(limit, floor) }
            let mark = min(max(info.lowWaterMark, limit), sealed)
            let retention = ListRetention(now: now, retentionMillis: retentionMillis, mark: mark)
            let chosen = mark > 0 ? retention.plan(read.entries) : RetentionPlan()
            guard !chosen.isEmpty else {
                // Held back by consumers only if, without them, something would go.
                let heldBack = mark < unheld && !ListRetention(now: now, retentionMillis: retentionMillis, mark: unheld)
                    .plan(read.entries).isEmpty
                report.skipped.append((info.name, Self.whySkipped(read.entries, cutoff: cutoff, heldAt: heldBack ? mark : nil)))
                continue
            }
            group.append(Plan(zone: ZoneCompaction(zone: info.name, incarnation: info.incarnation, lowWaterMark: max(mark, info.lowWaterMark),
                                                   chosen: chosen.purge.count, rewritten: chosen.rewrite.count, snapshotSequence: read.sequence),
                              entries: read.entries, retention: retention, plan: chosen, mark: mark, raise: mark > info.lowWaterMark))
            held += read.entries.count
            if held >= maxEntriesPerGroup {
                try compact(&group, dryRun: dryRun, into: &report)
                group = []
                held = 0
            }
        }
        if !group.isEmpty || report.zones.isEmpty { try compact(&group, dryRun: dryRun, into: &report) }
        report.skipped.sort { $0.zone < $1.zone }
        report.chosen.sort()
        report.rewritten.sort()
        if !dryRun { report.filesRemoved += removeSuperseded() }
        return report
    }

    /// An entry's time is the later of its wall time and its hybrid clock (COMPACTION.md §2).
    static func isOld(_ e: JournalEntry, cutoff: Int64) -> Bool {
        max(e.wallTime, Int64(clamping: e.clock.physicalMillis)) < cutoff
    }

    /// Steps 3 to 7 of COMPACTION.md §1 for one group of planned zones, with one atomic rewrite;
    /// a dry run only reports the plans. An empty group still has the store drop the entries of
    /// deleted zones.
    private func compact(_ plans: inout [Plan], dryRun: Bool, into report: inout ListCompactionReport) throws(QueryError) {
        let store = try self.store
        if dryRun {
            record(plans, into: &report)
            return
        }
        for plan in plans {
            // 1. The history grows by a piece holding the events of every entry about to go or be
            // written over (SNAPSHOT.md §5), after the pieces before it.
            let piece = try query.startHistoryPiece(plan.zone.zone, incarnation: plan.zone.incarnation, sequence: plan.zone.snapshotSequence)
            do throws(JournalError) {
                let gone = Set(plan.plan.purge).union(plan.plan.rewrite.map(\.sequence))
                for (s, e) in plan.entries where gone.contains(s) { try piece.add(e) }
                _ = try piece.finish()
            } catch {
                piece.abandon()
                throw .storage(error)
            }
            // 2. No snapshot may outlive the entries it was made from: until step 5, the list is
            // a replay of the log, compacted or not.
            let stale = SnapshotDirectory.list(store: store.path, zone: plan.zone.zone, incarnation: plan.zone.incarnation, kind: .state, fs: query.fs)
            do {
                for f in stale { try query.fs.remove(f.path) }
                if !stale.isEmpty { try query.fs.syncDirectory(store.path + "/" + SnapshotDirectory.name) }
            } catch { throw .storage(error) }
            report.filesRemoved += stale.count
            // 3. Tokens below the mark expire from here on.
            if plan.raise {
                do { try store.setLowWaterMark(plan.zone.zone, to: plan.mark) } catch { throw .storage(error) }
            }
        }
        // Entries appended since the zones were read may name a chosen item (an unmark, a late
        // add after it): such an item is no longer finished, or anchors something new. Decide
        // again with them: they are above the mark, so they stay, and so does what they name.
        // (The history holds every entry through the snapshot's sequence already.) One appended
        // after this re-read makes the store refuse the rewrite at its commit point; then read
        // and decide again. A zone refused `maxAttempts` times leaves the group.
        var refusals: [String: Int] = [:]
        // Each refusal names a zone of the group, and a zone leaves it after `maxAttempts`: this
        // bound is never reached unless that breaks, but the loop cannot spin.
        let maxRefusals = Self.maxAttempts * max(plans.count, 1)
        var storage = CompactionReport()
        while true {
            var readThrough: [String: SequenceNumber] = [:]
            var gone: Set<String> = []
            for k in plans.indices {
                guard let tail = try liveTail(plans[k].zone.zone, after: plans[k].zone.snapshotSequence, incarnation: plans[k].zone.incarnation) else {
                    gone.insert(plans[k].zone.zone)  // deleted meanwhile: its entries go with it
                    continue
                }
                readThrough[plans[k].zone.zone] = tail.last?.sequence ?? plans[k].zone.snapshotSequence
                // Only what names an item: a later rename changes nothing chosen here.
                let named = tail.filter { $0.entry.operation.item != nil }.map { ($0.sequence, $0.entry) }
                guard !named.isEmpty else { continue }
                let again = plans[k].retention.plan(plans[k].entries + named)
                guard again != plans[k].plan else { continue }
                plans[k].plan = again
                plans[k].zone.chosen = again.purge.count
                plans[k].zone.rewritten = again.rewrite.count
            }
            plans.removeAll { gone.contains($0.zone.zone) }
            // 4. One atomic rewrite for every zone of the group.
            let replacing = Dictionary(uniqueKeysWithValues: plans.flatMap { $0.plan.rewrite.map { ($0.sequence, $0.entry) } })
            do {
                storage = try store.compact(purging: plans.flatMap(\.plan.purge).sorted(), replacing: replacing, unchangedAfter: readThrough)
                break
            } catch .compactionConflict(let zone, let at, let through) {
                refusals[zone, default: 0] += 1
                guard refusals.values.reduce(0, +) <= maxRefusals else {
                    throw .storage(.compactionConflict(zone: zone, appended: at, readThrough: through))
                }
                if refusals[zone]! >= Self.maxAttempts, let k = plans.firstIndex(where: { $0.zone.zone == zone }) {
                    // Nothing of it was rewritten: a snapshot of its log as it stands, for the
                    // clients whose tokens the raised mark expired.
                    let left = plans.remove(at: k)
                    let reducer = try query.materialise(zone, at: .sequence(left.zone.snapshotSequence)).reducer
                    try query.writeState(zone, reducer: reducer, incarnation: left.zone.incarnation, sequence: left.zone.snapshotSequence)
                    report.skipped.append((zone, .keptChanging))
                }
                // What was appended meanwhile may not be durable yet, and the feed serves only
                // what is: make it so before reading again.
                do { try store.sync() } catch { throw .storage(error) }
            } catch {
                throw .storage(error)
            }
        }
        report.storage.add(storage)
        // 5. The state that stays, for materialise and for expired clients to re-fetch from.
        for plan in plans {
            var reducer = ListReducer(zone: plan.zone.zone)
            if storage.entriesKept == 0 {
                // Exactly the chosen entries went and the rewrites were written: the compacted log
                // through the snapshot's sequence.
                let purge = plan.plan.purge, rewrite = plan.plan.rewrite
                var k = 0, w = 0
                for (s, e) in plan.entries {
                    if k < purge.count && purge[k] == s { k += 1; continue }
                    if w < rewrite.count && rewrite[w].sequence == s {
                        _ = reducer.apply(rewrite[w].entry)
                        w += 1
                        continue
                    }
                    _ = reducer.apply(e)
                }
            } else {
                reducer = try query.materialise(plan.zone.zone, at: .sequence(plan.zone.snapshotSequence)).reducer
            }
            try query.writeState(plan.zone.zone, reducer: reducer, incarnation: plan.zone.incarnation, sequence: plan.zone.snapshotSequence)
        }
        record(plans, into: &report)
    }

    private func record(_ plans: [Plan], into report: inout ListCompactionReport) {
        report.zones += plans.map(\.zone)
        report.chosen += plans.flatMap(\.plan.purge)
        report.rewritten += plans.flatMap { $0.plan.rewrite.map(\.sequence) }
    }

    /// Whether the error says the zone is gone (deleted, or never there).
    static func isGone(_ error: QueryError) -> Bool {
        if case .feed(.zoneDeleted) = error { return true }
        if case .feed(.zoneNotFound) = error { return true }
        return false
    }

    /// The zone's entries after `position`, or nil when the zone is gone or is no longer
    /// `incarnation` (when given).
    private func liveTail(_ zone: String, after position: SequenceNumber, incarnation: SequenceNumber? = nil) throws(QueryError) -> [FeedEntry]? {
        if let incarnation, try store.zone(zone)?.incarnation != incarnation { return nil }
        do { return try replayTail(zone, after: position) } catch { if Self.isGone(error) { return nil } else { throw error } }
    }

    /// Why a zone's plan came out empty: no entry old enough; consumers holding it at `heldAt`
    /// (given when, without them, something would go); or old entries the rules keep.
    static func whySkipped(_ entries: [(SequenceNumber, JournalEntry)], cutoff: Int64, heldAt: SequenceNumber?) -> CompactionSkip {
        guard entries.contains(where: { isOld($1, cutoff: cutoff) }) else { return .nothingOlderThanCutoff }
        if let heldAt { return .heldByConsumers(at: heldAt) }
        return .nothingFinished
    }

    /// The zone's entries after `position`, through the feed.
    private func replayTail(_ zone: String, after position: SequenceNumber) throws(QueryError) -> [FeedEntry] {
        let store = try self.store
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

    private func remove(_ files: [SnapshotFile]) -> Int {
        var removed = 0
        for f in files where (try? query.fs.remove(f.path)) != nil { removed += 1 }
        if removed > 0 { try? query.fs.syncDirectory(query.store.path + "/" + SnapshotDirectory.name) }
        return removed
    }

    /// Every file of a deleted or superseded zone incarnation, and history pieces no chain needs
    /// (older than a whole history the chain ends at, or left off it).
    private func removeSuperseded() -> Int {
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

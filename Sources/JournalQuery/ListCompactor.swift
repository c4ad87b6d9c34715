import JournalLog
import ListModel

/// What compacting one zone did.
public struct ZoneCompaction: Sendable, Equatable {
    public var zone: String
    public var incarnation: SequenceNumber
    /// The zone's low-water mark after the run: tokens below it get `tokenExpired`.
    public var lowWaterMark: SequenceNumber
    /// Entries the list rules chose (finished lifecycles, superseded renames and recolours).
    public var chosen: Int
    /// The snapshot and history written at this sequence, from which an expired client re-fetches.
    public var snapshotSequence: SequenceNumber
}

public struct ListCompactionReport: Sendable {
    public var zones: [ZoneCompaction] = []
    public var storage = CompactionReport()
    /// Snapshot and history files removed: superseded ones, and those of deleted zones.
    public var filesRemoved = 0
}

/// The compactor (Spec/COMPACTION.md): per zone, it decides with `ListRetention` what may go,
/// writes the history and a snapshot of what stays, raises the zone's low-water mark, then has
/// the store rewrite its sealed segments. Each step is safe to crash after; running again
/// finishes the job.
public struct ListCompactor: Sendable {
    public let query: ListQuery
    public var retentionMillis: Int64 = ListRetention.defaultRetentionMillis

    public init(query: ListQuery, retentionMillis: Int64 = ListRetention.defaultRetentionMillis) {
        self.query = query
        self.retentionMillis = retentionMillis
    }

    /// Compacts every live zone as of `now` (milliseconds since the epoch). `dryRun` decides and
    /// reports without writing anything.
    public func run(now: Int64, dryRun: Bool = false) throws(QueryError) -> ListCompactionReport {
        let store = query.store
        var report = ListCompactionReport()
        var purge: [SequenceNumber] = []
        let sealed = store.sealedThrough
        for info in store.zones() where !info.isDeleted {
            // Nothing above the sealed log, the zone's horizon or any consumer's mark may go.
            var limit = min(sealed, info.lastChange)
            if let floor = store.consumerFloor(zone: info.name, incarnation: info.incarnation, now: now) { limit = min(limit, floor) }
            let mark = min(max(info.lowWaterMark, limit), sealed)
            guard mark > 0 else { continue }
            var entries: [(SequenceNumber, JournalEntry)] = []
            let read = try query.entries(info.name)
            entries = read.entries
            let chosen = ListRetention(now: now, retentionMillis: retentionMillis, mark: mark).purgeable(entries)
            guard !chosen.isEmpty else { continue }
            let at = read.sequence
            report.zones.append(ZoneCompaction(zone: info.name, incarnation: info.incarnation, lowWaterMark: max(mark, info.lowWaterMark),
                                               chosen: chosen.count, snapshotSequence: at))
            purge += chosen
            if dryRun { continue }
            // The history first (it must hold every entry about to go), then the state that stays:
            // the snapshot an expired client re-fetches from.
            var (history, _) = try query.history(info.name)
            var reducer = ListReducer(zone: info.name)
            var k = 0
            for (s, e) in entries {
                _ = history.record(e)
                if k < chosen.count && chosen[k] == s { k += 1; continue }
                _ = reducer.apply(e)
            }
            try query.writeSnapshot(info.name, reducer: reducer, history: history, incarnation: info.incarnation, sequence: at)
            if mark > info.lowWaterMark {
                do { try store.setLowWaterMark(info.name, to: mark) } catch { throw .storage(error) }
            }
        }
        if dryRun { return report }
        do { report.storage = try store.compact(purging: purge) } catch { throw .storage(error) }
        report.filesRemoved = removeSuperseded(report.zones)
        return report
    }

    /// Removes snapshots older than the ones just written (they hold purged items), all but the two
    /// newest histories of each zone, and the files of deleted zone incarnations.
    private func removeSuperseded(_ done: [ZoneCompaction]) -> Int {
        let store = query.store
        var removed = 0
        let live = Dictionary(store.zones().filter { !$0.isDeleted }.map { (SnapshotDirectory.zoneKey($0.name), $0.incarnation) },
                              uniquingKeysWith: { a, _ in a })
        var histories: [String: Int] = [:]
        for file in SnapshotDirectory.list(store: store.path, fs: query.fs) {
            var remove = live[file.zoneKey] != file.incarnation
            if !remove, let z = done.first(where: { SnapshotDirectory.zoneKey($0.zone) == file.zoneKey }) {
                switch file.kind {
                case .state: remove = file.sequence < z.snapshotSequence
                case .history:
                    histories[file.zoneKey, default: 0] += 1
                    remove = histories[file.zoneKey]! > 2
                }
            }
            if remove, (try? query.fs.remove(file.path)) != nil { removed += 1 }
        }
        if removed > 0 { try? query.fs.syncDirectory(store.path + "/" + SnapshotDirectory.name) }
        return removed
    }
}

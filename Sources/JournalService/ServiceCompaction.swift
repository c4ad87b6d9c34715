import JournalLog
import JournalQuery
import JournalSync
import ListModel

/// The service's compaction (Spec/SYNC.md §6): the list rules' compactor over the zones that
/// changed since their last one, marks raised as each group of zones is done, and every raise
/// announced in `_service/compactions`, so that each device that sees the zone re-fetches it.
struct ServiceCompaction: Sendable {
    static let zone = "_service/compactions"
    static let kind: UInt8 = 0x81
    let context: ServiceContext
    private var store: any ServiceStorage { context.store }

    /// Compacts the zones whose last change is above their low-water mark, so that raising the
    /// mark afterwards expires every token issued before, and every device adopts the compacted copy.
    func compact(now time: Int64) throws(SyncError) -> ListCompactionReport {
        // Uploads and sharing changes wait for it; fetches go on, but for those of a zone being
        // purged (`purging`), which are refused from just before its mark rises to the last raise.
        try context.compaction.writing { () throws(SyncError) -> ListCompactionReport in
            // A run that failed to raise the marks it owed left its zones refused: raised first.
            if context.locked({ !context.purging.isEmpty }) {
                do { try raiseMarksOfCommittedPurges() } catch { throw .serviceBusy(retryAfter: .seconds(60)) }
                context.locked { context.purging.removeAll() }
            }
            let plan = try makePlan(now: time)
            // `purging` is cleared once every mark is raised. A run that failed may have committed
            // a rewrite first: its marks are raised as a restart would (rule 8) before fetches
            // of its zones are answered again; if even that fails, they stay refused until a run
            // or a restart succeeds.
            let report: ListCompactionReport
            do { report = try store.compact(plan) } catch {
                // Which zones it purged is not known: every cache of purged ids is read again.
                context.locked { context.purged.removeAll() }
                do {
                    try raiseMarksOfCommittedPurges()
                    context.locked { context.purging.removeAll() }
                } catch {}
                throw .serviceBusy(retryAfter: .seconds(60))
            }
            for z in report.zones {
                do { try finishPurge(z) } catch { throw .serviceBusy(retryAfter: .seconds(60)) }
            }
            context.locked { context.purging.removeAll() }
            return report
        }
    }

    /// The run at `time` as the storage's compactor takes it: told what arrived when and wired to
    /// the service's purge window.
    private func makePlan(now time: Int64) throws(SyncError) -> ServiceCompactionPlan {
        let retention = context.limits.retentionMillis
        // Nothing that arrived after the cutoff goes, whatever its own time says (rule 9).
        // Stamped with the service's clock, not the run's `time`: a run dated in the past must
        // not claim arrivals earlier than they were.
        do { try context.arrivals.note(at: context.now, force: true, write: context.appendRecord) } catch {
            throw .serviceBusy(retryAfter: .seconds(60))
        }
        // A storage that cannot say what arrived when fails the run: counting nothing as arrived
        // would report a run that purged nothing as a success.
        let recorded: SequenceNumber?
        do throws(StorageError) { recorded = try store.arrivedThrough(by: time - retention) } catch { throw error.syncError }
        let arrivedThrough = recorded ?? context.arrivals.arrived(by: time - retention)
        context.arrivals.forget(before: time - retention)
        let purgeWillBegin: @Sendable (String) -> Void = { [context] zone in
            context.locked {
                context.purging.insert(zone)
                context.purgesBegun[zone, default: 0] += 1
            }
        }
        // A group's zones are final once its snapshots are written: their marks rise and their
        // fetches are answered while later groups run. A raise that fails leaves the zone
        // refused; the end of the run tries again.
        let groupDidFinish: @Sendable ([ZoneCompaction]) -> Void = { [self] zones in
            for z in zones {
                do {
                    try finishPurge(z)
                    _ = context.locked { context.purging.remove(z.zone) }
                } catch {}
            }
        }
        let groupDidCommit: @Sendable ([ZoneCompaction]) -> Void = { [context] zones in
            context.locked { for z in zones where z.followed != nil { context.committed[z.zone] = z } }
        }
        return ServiceCompactionPlan(now: time, retentionMillis: retention, maxEntriesPerGroup: context.limits.compactionGroupEntries,
                                     arrivedThrough: arrivedThrough,
                                     zoneFilter: { z in !ServiceCore.isSystemZone(z.name) && z.lastChange > z.lowWaterMark },
                                     purgeWillBegin: purgeWillBegin, groupDidFinish: groupDidFinish, groupDidCommit: groupDidCommit)
    }

    /// Once a zone's purge is complete (not under `lock`: it writes): forgets its cached purged
    /// ids, raises its mark to the run's snapshot sequence (rule 4) and announces it (rule 5).
    /// Idempotent.
    private func finishPurge(_ z: ZoneCompaction) throws(JournalError) {
        context.locked { context.purged[z.zone] = nil }
        guard let info = try read(z.zone), !info.isDeleted else { return }
        // The record first, then the raise: a failure or a crash between the two leaves a record
        // that the raise of a restart (`raiseMarksOfCommittedPurges`) finds in place.
        if info.incarnation == z.incarnation, info.lowWaterMark <= z.snapshotSequence { try writeRecord(z, zone: info) }
        context.locked { if context.committed[z.zone]?.snapshotSequence == z.snapshotSequence { context.committed[z.zone] = nil } }
        if z.snapshotSequence > info.lowWaterMark { try store.raiseMark(z.zone, to: z.snapshotSequence) }
        let mark = try read(z.zone)?.lowWaterMark ?? 0
        if mark > context.locked({ context.announced[z.zone]?.mark ?? 0 }) { try announce(z.zone, mark: mark) }
    }

    /// Appends the zone's compaction record (Spec/SYNC.md §6.7) right after the run's `S`, before
    /// its mark is raised there and its fetches are answered again (uploads wait for the run, so
    /// nothing of the zone lies between): the zone's first entry above the mark once it is raised,
    /// so every token from the follow floor on meets it in its next page. A run that purged more
    /// than a record holds, or whose digest is unknown, writes none: its older tokens expire.
    /// Idempotent: the record's id is derived from `S`.
    private func writeRecord(_ z: ZoneCompaction, zone info: ZoneInfo) throws(JournalError) {
        guard let followed = z.followed, let digest = followed.digest, z.snapshotSequence > z.previousMark else { return }
        // Written already (a run's end finishes every zone its groups finished).
        do throws(FeedError) {
            if try context.followFloors.record(info, at: z.snapshotSequence) != nil { return }
        } catch { throw .writerFailed("the zone's compaction record could not be read: \(error)") }
        // Records this run purged were older than the retention, and so were all before them:
        // tokens under their marks can no longer follow.
        let purgedRecordMarks = followed.purged.compactMap { CompactionRecord.mark(ofID: $0) }
        let floor = min(max(followed.followFrom, purgedRecordMarks.max() ?? 0), z.previousMark)
        let record = CompactionRecord(from: z.previousMark, to: z.snapshotSequence, followFrom: floor,
                                      followPosition: followed.followPosition, digest: digest, purged: followed.purged, placed: followed.placed)
        _ = try store.appendBatch([record.entry(zone: z.zone, wallTime: context.now())], expectingMark: info.lowWaterMark)
    }

    /// The record of a run that failed after its rewrite committed (`committed`), once the zone's
    /// mark is raised to that run's snapshot position: its digest is the zone's whole log
    /// replayed, as a device checks it (a digest that differs only sends devices to re-fetch).
    private func writeRecordOfCommitted(_ zone: String) throws(JournalError) {
        guard var pending = context.locked({ context.committed[zone] }), let info = try read(zone) else { return }
        guard !info.isDeleted, info.incarnation == pending.incarnation, info.lowWaterMark == pending.snapshotSequence else {
            // Another incarnation, or a mark past the run's: the record can no longer be written.
            if info.isDeleted || info.incarnation != pending.incarnation || info.lowWaterMark > pending.snapshotSequence {
                context.locked { context.committed[zone] = nil }
            }
            return
        }
        // Through the zone's last entry: uploads it took after `S` while the run's raise was owed
        // come before the record, and a device applies them before it (SYNC.md §6.7).
        pending.followed?.digest = try replayedDigest(info, through: .max)
        try writeRecord(pending, zone: info)
        context.locked { context.committed[zone] = nil }
    }

    /// The state digest of the zone's log through `sequence`, every entry replayed in order.
    private func replayedDigest(_ info: ZoneInfo, through sequence: SequenceNumber) throws(JournalError) -> UInt64 {
        var reducer = ListReducer(zone: info.name)
        var token: FeedToken? = nil
        while true {
            let page: ZoneChanges
            do throws(FeedError) { page = try store.zoneChanges(info.name, since: token, limit: 10_000) } catch {
                throw .writerFailed("the zone's log could not be read for its compaction record: \(error)")
            }
            for e in page.entries where e.sequence <= sequence { _ = reducer.apply(e.entry) }
            guard page.moreComing, page.entries.last.map({ $0.sequence < sequence }) ?? false else { return reducer.stateDigest() }
            token = page.token
        }
    }

    /// A zone's row, for a step that writes: a storage that does not answer fails the step.
    private func read(_ zone: String) throws(JournalError) -> ZoneInfo? {
        do throws(StorageError) { return try store.zoneInfo(zone) } catch { throw .writerFailed(error.description) }
    }

    /// A compaction that committed without its mark being raised (a crash or a failure between
    /// the two) wrote a history file above the mark first: raise it now, so every older token
    /// expires; and one whose raise was not announced yet is announced now (SYNC.md §6.2 rule 8).
    func raiseMarksOfCommittedPurges() throws(JournalError) {
        let zones: [ZoneInfo]
        do throws(StorageError) { zones = try store.allZones() } catch { throw .writerFailed(error.description) }
        for z in zones where !z.isDeleted && !ServiceCore.isSystemZone(z.name) {
            let newest: SequenceNumber
            do throws(StorageError) { newest = try store.newestHistory(of: z) } catch { throw .writerFailed(error.description) }
            if newest > z.lowWaterMark && newest <= z.lastChange { try store.raiseMark(z.name, to: newest) }
            try writeRecordOfCommitted(z.name)
            let mark = try read(z.name)?.lowWaterMark ?? 0
            if mark > 0 && mark > context.locked({ context.announced[z.name]?.mark ?? 0 }) { try announce(z.name, mark: mark) }
        }
    }

    /// Records in `_service/compactions` that `zone` was compacted through `mark`: every device
    /// that sees the zone is told it changed, fetches it, gets `tokenExpired`, and re-fetches.
    /// Appended outside `lock` and applied under it once durable, like a membership change.
    private func announce(_ zone: String, mark: SequenceNumber) throws(JournalError) {
        var w = ByteWriter()
        w.u8(1)
        w.string(zone)
        w.varint(mark)
        let told = try context.appendOwnRecord(Self.zone, kind: Self.kind, body: w.bytes) { at in
            context.announced[zone] = (mark, at)
            return context.audience(zone)
        }
        context.hints.changed(zone, for: told)
    }

    /// The zone and mark an announcement's body names, or nil for a body this version does not read.
    static func decodeAnnouncement(_ body: [UInt8]) -> (String, SequenceNumber)? {
        body.withUnsafeBytes { b -> (String, SequenceNumber)? in
            var r = ByteReader(b)
            guard (try? r.u8()) == 1, let zone = try? r.string("zone", limit: Limits.maxZoneBytes), let mark = try? r.varint(), r.isAtEnd else { return nil }
            return (zone, mark)
        }
    }
}

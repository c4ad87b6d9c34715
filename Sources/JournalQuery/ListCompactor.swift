import JournalLog
import ListModel

/// Milliseconds since `start`, on the monotonic clock.
func millis(since start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) * 1e3 + Double(d.components.attoseconds) * 1e-15
}

/// The compactor (Spec/COMPACTION.md §1): per zone, it reads the entries once through a
/// `RetentionPlanner` (which keeps per item what the list rules need, not the entries) and
/// decides what may go; it removes the zone's snapshots and raises its low-water mark; the store
/// rewrites the sealed segments, asking the decision about each entry as it reads it again, while
/// the events of what goes are streamed into the zone's next history piece, which is in place
/// before the rewrite commits; then it writes a snapshot of what stays. A crash between any two
/// steps leaves a store whose every view agrees with its log; running again finishes the job.
public struct ListCompactor: Sendable {
    package let query: ListQuery
    /// How long, in milliseconds, a finished lifecycle is kept before a run may purge it
    /// (fourteen days by default).
    public var retentionMillis: Int64 = ListRetention.defaultRetentionMillis

    /// Rewrites tried before a zone that keeps changing under the run is left out of it
    /// (`CompactionSkip.keptChanging`; the next run finishes the job).
    package static let maxAttempts = 4

    /// Entries read at once: zones are planned and compacted in groups of about this many
    /// entries, each group one atomic rewrite. (A zone is never split: one larger than this is a
    /// group of its own.)
    package var maxEntriesPerGroup = 1_000_000

    /// Set by a sync service compacting its own store (Spec/SYNC.md §6.2 rule 2). Any other caller
    /// is refused a store that syncs: replicas that purge on their own diverge for ever.
    package var isTheSyncService = false

    /// Which live zones a run considers (all by default). A sync service compacts only zones it
    /// can expire every older token of (Spec/SYNC.md §6). A compacted zone left without its
    /// snapshot (a run stopped between its rewrite and its snapshot) gets it back whatever the
    /// filter says: that purges nothing and raises no mark.
    package var zoneFilter: @Sendable (ZoneInfo) -> Bool = { _ in true }

    /// Set by a sync service: the last position it had received by the cutoff. Nothing above it
    /// goes, so an entry goes only once both its own time and its arrival are older than the
    /// retention (COMPACTION.md §1, SYNC.md §6.2 rule 9): a client's clock cannot make its
    /// entries compactable early. Nil: no such bound (a store that does not sync).
    package var arrivedThrough: SequenceNumber?

    /// Told the name of each zone about to be purged, before its snapshots go and its mark rises
    /// (COMPACTION.md §1, steps 4–5). A sync service answers no fetch of the zone from then until
    /// its last raise of the mark (Spec/SYNC.md §6.2 rule 3): a token issued meanwhile would rest
    /// on a log about to change under it, with a floor that may equal the final mark.
    package var purgeWillBegin: (@Sendable (String) -> Void)?

    /// Told, after each group's rewrite committed and its zones' snapshots were written (not in a
    /// dry run), the zones of the group: their purge is complete, so a sync service raises their
    /// marks and answers their fetches again while the run goes on with the next group.
    package var groupDidFinish: (@Sendable ([ZoneCompaction]) -> Void)?
    /// Told each group's zones right after their rewrite commits, before their snapshots are
    /// written (their `followed` has no digest yet).
    package var groupDidCommit: (@Sendable ([ZoneCompaction]) -> Void)?

    /// A compactor of the lists `query` reads; the query must be over the store's writer, as
    /// compaction rewrites segments.
    public init(query: ListQuery, retentionMillis: Int64 = ListRetention.defaultRetentionMillis) {
        self.query = query
        self.retentionMillis = retentionMillis
    }

    package init(store: JournalStore, fs: any FileSystem = PosixFileSystem(), retentionMillis: Int64 = ListRetention.defaultRetentionMillis) {
        self.init(query: ListQuery(store: store, fs: fs), retentionMillis: retentionMillis)
    }

    /// The store's writer: compaction rewrites segments and raises marks.
    private var store: JournalStore {
        get throws(QueryError) {
            guard let w = query.writer else { throw .storage(.readOnly("compaction needs the store's writer; open the store with JournalStore.open")) }
            return w
        }
    }

    /// What a run decides from besides the feed: the writer's view of its segments and consumers,
    /// or, for a dry run (which writes nothing, so takes no lock), a `StoreReader`'s.
    private struct LogView {
        var sealedThrough: SequenceNumber
        var deletedZoneEntriesInActiveSegment: Bool
        /// The last sequence in the log: what a dry run takes as sealed when a run would seal.
        var lastSequence: SequenceNumber
        let writer: JournalStore?
        let path: String
        let fs: any FileSystem

        init(_ query: ListQuery, dryRun: Bool) throws(QueryError) {
            writer = query.writer
            path = query.store.path
            fs = query.store.storeFileSystem
            if let w = query.writer {
                sealedThrough = w.sealedThrough
                deletedZoneEntriesInActiveSegment = w.deletedZoneEntriesInActiveSegment
                lastSequence = w.nextSequence - 1
            } else if dryRun, let r = query.store as? StoreReader {
                sealedThrough = r.sealedThrough
                deletedZoneEntriesInActiveSegment = r.deletedZoneEntriesInActiveSegment
                lastSequence = r.horizon
            } else {
                throw .storage(.readOnly(dryRun ? "a dry run needs the store's writer or a StoreReader"
                                                : "compaction needs the store's writer; open the store with JournalStore.open"))
            }
        }

        /// `JournalStore.consumerFloor`; without the writer, the same rule over the consumer files.
        func consumerFloor(zone: String, incarnation: SequenceNumber, now: Int64) -> SequenceNumber? {
            if let writer { return writer.consumerFloor(zone: zone, incarnation: incarnation, now: now) }
            let (all, problems) = JournalStore.consumers(store: path, fs: fs)
            return JournalStore.consumerFloor(all, problems: problems, zone: zone, incarnation: incarnation, now: now)
        }
    }

    /// One zone of a group: what was read of it and what the rules decided.
    struct Plan {
        var zone: ZoneCompaction
        var planner: RetentionPlanner
        /// One per pass of the rules (COMPACTION.md §2.1); usually one.
        var decisions: [RetentionDecision]
        var mark: SequenceNumber
        var raise: Bool
        /// The last sequence given to the planner (the zone's read position, then its tail).
        var readThrough: SequenceNumber
    }

    /// Compacts every live zone as of `now` (milliseconds since the epoch). `dryRun` decides and
    /// reports without writing anything; it needs no writer, so it also runs over a `StoreReader`
    /// (`ListQuery(reader:)`) beside a live writer or on read-only media, and decides the same.
    public func run(now: Int64, dryRun: Bool = false) throws(QueryError) -> ListCompactionReport {
        if !dryRun, let refusal = Self.syncedStoreRefusal(store: query.store.path, fs: query.fs, isTheSyncService: isTheSyncService) { throw refusal }
        let source = try LogView(query, dryRun: dryRun)
        let store = query.store
        var report = ListCompactionReport()
        let cutoff = now - retentionMillis
        let live = store.zones().filter { !$0.isDeleted }
        let zones = live.filter(zoneFilter)
        // Entries old enough to go that still sit in the active segment would wait for it to fill
        // (a segment can span months of a family's list): seal it first. A dry run assumes it.
        // Only the active segment's entries are read for this.
        var sealed = source.sealedThrough
        // A deleted list's entries in the active segment would stay on disk until it fills.
        var waiting = source.deletedZoneEntriesInActiveSegment
        for info in zones where !waiting && info.lastChange > sealed {
            // From the sealed end, not the mark: a sync service raises a zone's mark to what a
            // run read, which may lie in the active segment, and old entries below that mark
            // there would otherwise never be sealed, so never purged (nor the compaction
            // records, SYNC.md §6.7). A seal happens at most once per segment's retention.
            waiting = try liveTail(info.name, after: sealed)?.contains { Self.isOld($0.entry, cutoff: cutoff) } ?? false
        }
        if waiting {
            if dryRun {
                sealed = source.lastSequence
            } else {
                let writer = try self.store
                do { sealed = try writer.sealActiveSegment() } catch { throw .storage(error) }
            }
        }
        // Zones are read, planned and compacted a group at a time. A group is compacted at the
        // top of the next turn, when nothing but `group` holds its planners: the snapshot step
        // lets them go before it materialises, and their memory is reused.
        var group: [Plan] = []
        var held = 0
        // The newest state file of each zone incarnation, to find compacted zones left without one.
        // A delta counts only beside the base it names (SNAPSHOT.md §6.3: a zone keeps one).
        var newestState: [String: SequenceNumber] = [:]
        var unsnapshotted: [ZoneInfo] = []
        if !dryRun {
            func key(_ f: SnapshotFile) -> String { f.zoneKey + "-\(f.incarnation)" }
            let files = SnapshotDirectory.list(store: store.path, fs: query.fs)
            let bases = Set(files.filter { $0.kind == .base }.map(key))
            for f in files where f.kind == .state || (f.kind == .delta && bases.contains(key(f))) {
                newestState[key(f)] = max(newestState[key(f)] ?? 0, f.sequence)
            }
        }
        func lacksSnapshot(_ z: ZoneInfo) -> Bool {
            let newest = newestState[SnapshotDirectory.zoneKey(z.name) + "-\(z.incarnation)"]
            return !dryRun && z.lowWaterMark > 0 && (newest.map { $0 < z.lowWaterMark } ?? true)
        }
        for listed in zones {
            if held >= maxEntriesPerGroup {
                try compact(&group, dryRun: dryRun, cutoff: cutoff, into: &report)
                group = []
                held = 0
            }
            let started = ContinuousClock.now
            defer { report.phaseMillis["read", default: 0] += millis(since: started) }
            guard let plan = try plan(listed, sealed: sealed, source: source, now: now, cutoff: cutoff, into: &report) else {
                if lacksSnapshot(listed) { unsnapshotted.append(listed) }
                continue
            }
            held += plan.planner.entries
            group.append(plan)
        }
        if !group.isEmpty || report.zones.isEmpty { try compact(&group, dryRun: dryRun, cutoff: cutoff, into: &report) }
        group = []
        unsnapshotted += live.filter { !zoneFilter($0) && lacksSnapshot($0) }
        // After the groups, when no planner is held any more.
        for listed in unsnapshotted { try writeMissingSnapshot(listed, into: &report) }
        report.skipped.sort { $0.zone < $1.zone }
        report.chosen.sort()
        report.rewritten.sort()
        if !dryRun { report.filesRemoved += removeSuperseded() }
        return report
    }

    /// Reads one live zone through a planner and decides (steps 1 and 2 of COMPACTION.md §1);
    /// nil when it is gone, its reader refuses it (§1.1) or it has nothing to compact (then
    /// `report` says why).
    private func plan(_ listed: ZoneInfo, sealed: SequenceNumber, source: LogView, now: Int64, cutoff: Int64,
                      into report: inout ListCompactionReport) throws(QueryError) -> Plan? {
        let store = query.store
        // A zone deleted (or deleted and created again) since the list was taken is not
        // compacted: its entries go with its deletion.
        guard let info = store.zone(listed.name), !info.isDeleted, info.incarnation == listed.incarnation else { return nil }
        var planner = RetentionPlanner()
        let read: SequenceNumber
        var follow: (from: SequenceNumber, position: SequenceNumber) = (info.lowWaterMark, 0)
        do throws(QueryError) {
            (_, read) = try query.replayPages(info.name, after: nil) { page in
                planner.add(contentsOf: page, sequence: \.sequence, entry: \.entry)
                if info.lowWaterMark > 0, page.contains(where: { CompactionRecord.isRecord($0.entry) }) {
                    let found = CompactionRecord.followFrom(mark: info.lowWaterMark, entries: page.lazy.map(\.entry))
                    if found.from < follow.from || found.position > follow.position { follow = found }
                }
            }
            // A list its reader refuses is left whole, decided before anything of it is written
            // (COMPACTION.md §1.1). Only a base makes a reader refuse a list: a list without one
            // costs nothing more.
            if planner.bases > 0, let why = try refusal(info.name, through: read) {
                report.skipped.append((info.name, .baseUnreadable(reason: why)))
                return nil
            }
        } catch { if Self.isGone(error) { return nil } else { throw error } }
        // Nothing above the sealed log, the zone's horizon or any consumer's mark may go.
        let bounds = CompactionMark.Bounds(lowWaterMark: info.lowWaterMark, unheld: min(sealed, info.lastChange), ceiling: sealed,
                                           consumers: source.consumerFloor(zone: info.name, incarnation: info.incarnation, now: now),
                                           arrivedThrough: arrivedThrough)
        let mark: SequenceNumber, first: RetentionDecision
        switch CompactionMark.decide(planner, cutoff: cutoff, bounds: bounds) {
        case .compact(let m, let f): (mark, first) = (m, f)
        case .skip(let why):
            report.skipped.append((info.name, why))
            return nil
        }
        var zone = ZoneCompaction(zone: info.name, incarnation: info.incarnation, lowWaterMark: max(mark, info.lowWaterMark),
                                  chosen: first.purgeCount, rewritten: first.rewriteCount, snapshotSequence: read)
        zone.previousMark = info.lowWaterMark
        zone.followed?.followFrom = follow.from
        zone.followed?.followPosition = follow.position
        var plan = Plan(zone: zone, planner: planner, decisions: [first], mark: mark, raise: mark > info.lowWaterMark, readThrough: read)
        try morePasses(&plan, cutoff: cutoff)
        return plan
    }

    /// Why this caller may not compact the store at `path` (Spec/SYNC.md §6.2 rule 1), or nil: a
    /// device's store never, a server's only by its service. Decided by the store's role (its
    /// files, `StoreRole`), so a damaged one refuses too. `jlog compact` asks it too, before a
    /// dry run as well.
    package static func syncedStoreRefusal(store path: String, fs: any FileSystem, isTheSyncService: Bool) -> QueryError? {
        switch StoreRole.of(store: path, fs: fs) {
        case .device:
            return .syncedStore(path: path, reason: "it syncs (it has \(StoreLayout.deviceStateFile)), and a device never compacts a list it syncs; the service compacts, and the next sync adopts its copy")
        case .service where !isTheSyncService:
            return .syncedStore(path: path, reason: "it is a sync server's store (it has \(StoreLayout.serviceDirectory)/), which only its service compacts, announcing each compaction to the devices")
        default:
            return nil
        }
    }

    /// An entry's time is the later of its wall time and its hybrid clock (COMPACTION.md §2).
    static func isOld(_ e: JournalEntry, cutoff: Int64) -> Bool { RetentionPlanner.time(e) < cutoff }

    /// When a decision says the rules may find more on their own result (COMPACTION.md §2.1):
    /// the zone is read again through its last decisions, and decided again, until one says
    /// nothing more, or `ListRetention.maxPasses`.
    private func morePasses(_ plan: inout Plan, cutoff: Int64) throws(QueryError) {
        plan.decisions.removeSubrange(1...)
        let (zone, through) = (plan.zone.zone, plan.readThrough)
        try RetentionPasses.more(&plan.decisions, cutoff: cutoff, mark: plan.mark) { (each: (SequenceNumber, JournalEntry) -> Void) throws(QueryError) in
            _ = try query.replayPages(zone, after: nil, until: through) { page in
                for e in page { each(e.sequence, e.entry) }
            }
        }
    }

    /// Steps 3 to 7 of COMPACTION.md §1 for one group of planned zones, with one atomic rewrite;
    /// a dry run only reports what they would do. An empty group still has the store drop the
    /// entries of deleted zones.
    private func compact(_ plans: inout [Plan], dryRun: Bool, cutoff: Int64, into report: inout ListCompactionReport) throws(QueryError) {
        if dryRun {
            for k in plans.indices { try countDry(&plans[k], into: &report) }
            report.zones += plans.map(\.zone)
            return
        }
        let store = try self.store
        var started = ContinuousClock.now
        // The chain of history pieces must be whole before anything changes (a new piece after a
        // broken one would hide the loss): each zone's next piece is started now.
        var pieces: [HistoryPieceWriter] = []
        defer { for p in pieces { p.abandon() } }
        for plan in plans { pieces.append(try startPiece(plan)) }
        try prepare(plans, pieces: pieces, store: store, into: &report)
        try rewrite(&plans, &pieces, store: store, cutoff: cutoff, started: &started, into: &report)
        try writeSnapshots(&plans, into: &report)
    }

    /// Step 4 of COMPACTION.md §1 for a group: one atomic rewrite of every zone, each entry
    /// decided as it is read again, what goes written to its zone's history piece, in place
    /// before the commit. Kept as one function (about 115 lines): the retry loop and the verdict
    /// closure share the group's plans, pieces and tallies.
    private func rewrite(_ plans: inout [Plan], _ pieces: inout [HistoryPieceWriter], store: JournalStore, cutoff: Int64,
                         started: inout ContinuousClock.Instant, into report: inout ListCompactionReport) throws(QueryError) {
        // Entries appended since the zones were read may name a chosen item (an unmark, a late
        // add after it): such an item is no longer finished, or anchors something new. Decide
        // again with them: they are above the mark, so they stay, and so does what they name.
        // One appended after this re-read makes the store refuse the rewrite at its commit point;
        // then read and decide again. A zone refused `maxAttempts` times leaves the group.
        var refusals: [String: Int] = [:]
        // Each refusal names a zone of the group, and a zone leaves it after `maxAttempts`: this
        // bound is never reached unless that breaks, but the loop cannot spin.
        let maxRefusals = Self.maxAttempts * max(plans.count, 1)
        var storage = CompactionReport()
        var chosen: [SequenceNumber] = [], rewritten: [SequenceNumber] = []
        while true {
            var readThrough: [String: SequenceNumber] = [:]
            var gone: Set<String> = []
            for k in plans.indices {
                guard let tail = try liveTail(plans[k].zone.zone, after: plans[k].readThrough, incarnation: plans[k].zone.incarnation) else {
                    gone.insert(plans[k].zone.zone)  // deleted meanwhile: its entries go with it
                    continue
                }
                // A base appended since the plan (COMPACTION.md §1.1) may make its reader refuse
                // the list: then nothing of it is purged, and it leaves the group as refused.
                if tail.contains(where: { ListBase.isBase($0.entry) }), let through = tail.last?.sequence,
                   let why = try refusal(plans[k].zone.zone, through: through) {
                    report.skipped.append((plans[k].zone.zone, .baseUnreadable(reason: why)))
                    gone.insert(plans[k].zone.zone)
                    continue
                }
                // Only what names an item: a later rename changes nothing chosen here.
                for e in tail where e.entry.operation.listItem != nil { plans[k].planner.add(e.sequence, e.entry) }
                plans[k].readThrough = tail.last?.sequence ?? plans[k].readThrough
                readThrough[plans[k].zone.zone] = plans[k].readThrough
                guard tail.contains(where: { $0.entry.operation.listItem != nil }) else { continue }
                plans[k].decisions = [plans[k].planner.decide(cutoff: cutoff, mark: plans[k].mark)]
                try morePasses(&plans[k], cutoff: cutoff)
            }
            for k in plans.indices.reversed() where gone.contains(plans[k].zone.zone) {
                plans.remove(at: k)
                pieces.remove(at: k).abandon()
            }
            // 4. One atomic rewrite for every zone of the group, each entry decided as it is read
            // again; what goes is written to its zone's history piece, in place before the commit.
            var byName: [String: [Int]] = [:]
            for k in plans.indices { byName[plans[k].zone.zone, default: []].append(k) }
            // Entries come in runs of one zone: its plan is looked up once a run. Each plan's
            // decisions are asked through their walks (the rewrite reads in sequence order),
            // mutated in place: the rewrite asks about every entry, and a copy or a closure call
            // per question (retains, releases, exclusivity checks) cost about what the answer did.
            var walks = plans.map { $0.decisions.map { $0.walk() } }
            let bounds = plans.map { (from: $0.zone.incarnation, through: $0.readThrough) }
            var lastZone = "", lastPlan: Int? = nil
            var tallies = [(purged: Int, rewritten: Int)](repeating: (0, 0), count: plans.count)
            // What devices need to follow each zone's purge (SYNC.md §6.7), as the rewrite meets it.
            // Each attempt starts from what the plan found (the follow floor and position before
            // the run), with no ids yet.
            var followed: [ZoneCompaction.Followed?] = plans.map { p in
                var f = ZoneCompaction.Followed()
                f.followFrom = p.zone.followed?.followFrom ?? p.zone.previousMark
                f.followPosition = p.zone.followed?.followPosition ?? 0
                return f
            }
            chosen = []
            rewritten = []
            var pieceError: JournalError? = nil
            let ranges = Self.union(plans.flatMap { $0.decisions.flatMap(\.ranges) })
            report.phaseMillis["prepare", default: 0] += millis(since: started)
            started = ContinuousClock.now
            defer {
                report.phaseMillis["rewrite", default: 0] += millis(since: started)
                started = ContinuousClock.now
            }
            do throws(JournalError) {
                storage = try store.compact(within: ranges, choosing: { seq, e in
                    if !sameBytes(e.zone, lastZone) {
                        lastZone = e.zone
                        lastPlan = byName[e.zone]?.first { sameBytes(plans[$0].zone.zone, e.zone) }
                    }
                    guard let k = lastPlan, seq >= bounds[k].from, seq <= bounds[k].through else { return .keep }
                    let v = walks[k].count == 1 ? walks[k][0].verdict(seq, e) : RetentionPasses.verdict(&walks[k], seq, e)
                    switch v {
                    case .keep: return .keep
                    case .purge:
                        tallies[k].purged += 1
                        chosen.append(seq)
                    case .replace:
                        tallies[k].rewritten += 1
                        rewritten.append(seq)
                    }
                    // The history keeps the event of what goes or is written over.
                    if pieceError == nil { do throws(JournalError) { try pieces[k].add(e) } catch { pieceError = error } }
                    if case .replace(let op) = v {
                        if followed[k]?.note(e, at: seq, replacement: op) == false { followed[k] = nil }
                    } else if followed[k]?.note(e, at: seq, replacement: nil) == false {
                        followed[k] = nil
                    }
                    guard case .replace(let op) = v else { return .purge }
                    var x = e
                    x.operation = op
                    return .replace(x)
                }, unchangedAfter: readThrough, beforeCommit: { () throws(JournalError) in
                    if let pieceError { throw pieceError }
                    for p in pieces { _ = try p.finish() }
                })
                for k in plans.indices {
                    plans[k].zone.chosen = tallies[k].purged
                    plans[k].zone.rewritten = tallies[k].rewritten
                    plans[k].zone.followed = followed[k]
                }
                groupDidCommit?(plans.map(\.zone))
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
                    pieces.remove(at: k).abandon()
                    let reducer = try query.materialisedReducer(zone, at: .sequence(left.zone.snapshotSequence)).reducer
                    try query.writeState(zone, reducer: reducer, incarnation: left.zone.incarnation, sequence: left.zone.snapshotSequence)
                    report.skipped.append((zone, .keptChanging))
                }
                // The pieces written for this attempt are in place: the next one adds to them.
                for p in pieces { p.abandon() }
                pieces = []
                for plan in plans {
                    pieces.append(try query.startHistoryPiece(plan.zone.zone, incarnation: plan.zone.incarnation, sequence: plan.zone.snapshotSequence))
                }
                // What was appended meanwhile may not be durable yet, and the feed serves only
                // what is: make it so before reading again.
                do { try store.sync() } catch { throw .storage(error) }
            } catch {
                throw .storage(error)
            }
        }
        report.storage.add(storage)
        report.chosen += chosen
        report.rewritten += rewritten
    }

    /// The zone's next history piece, started before anything changes. It must be in place
    /// before the log says the history reaches it and before anything is purged (COMPACTION.md
    /// §1, step 3): when it does not merge into a piece already there, an empty piece covering
    /// the zone's read position is finished first (nothing is gone yet), and the piece of what
    /// goes takes its place.
    private func startPiece(_ plan: Plan) throws(QueryError) -> HistoryPieceWriter {
        let piece = try query.startHistoryPiece(plan.zone.zone, incarnation: plan.zone.incarnation, sequence: plan.zone.snapshotSequence)
        guard !piece.isMerging else { return piece }
        do { _ = try piece.finish() } catch { throw .storage(error) }
        return try query.startHistoryPiece(plan.zone.zone, incarnation: plan.zone.incarnation, sequence: plan.zone.snapshotSequence)
    }

    /// Before the rewrite (COMPACTION.md §1, steps 3 and 5): each zone's snapshots removed but the
    /// base of the run's delta, and its mark and history reach raised, durably.
    private func prepare(_ plans: [Plan], pieces: [HistoryPieceWriter], store: JournalStore,
                         into report: inout ListCompactionReport) throws(QueryError) {
        for (plan, piece) in zip(plans, pieces) {
            purgeWillBegin?(plan.zone.zone)
            // No snapshot may outlive the entries it was made from: until the new one is written,
            // the list is a replay of the log, compacted or not. The newest whole one is kept as
            // the base of the run's delta (`.base`: never read alone, SNAPSHOT.md §6.3).
            let files = SnapshotDirectory.list(store: store.path, zone: plan.zone.zone, incarnation: plan.zone.incarnation,
                                               kinds: [.state, .delta, .base], fs: query.fs)
            let base = files.first { $0.kind != .delta }
            do {
                for f in files where f != base { try query.fs.remove(f.path) }
                if let base, base.kind == .state {
                    try query.fs.rename(base.path, SnapshotDirectory.path(of: base, as: .base))
                }
                if !files.isEmpty { try query.fs.syncDirectory(store.path + "/" + SnapshotDirectory.name) }
            } catch { throw .storage(error) }
            report.filesRemoved += files.count - (base == nil ? 0 : 1)
            // Tokens below the mark expire from here on, and the log says how far the history
            // reaches (step 5), durably, before the rewrite purges anything: a piece lost later
            // (deleted, or an older copy of `snapshots/` restored) is then an error, even when
            // this run purges below an unchanged mark.
            let reach = piece.header.sequence
            if plan.raise || reach > (store.zone(plan.zone.zone)?.historyThrough ?? 0) {
                do { try store.setLowWaterMark(plan.zone.zone, to: plan.zone.lowWaterMark, historyThrough: reach) } catch { throw .storage(error) }
            }
        }
    }

    /// The state that stays, for materialise and for expired clients to re-fetch from: a snapshot
    /// of each zone of the group, then the group is announced (`groupDidFinish`).
    private func writeSnapshots(_ plans: inout [Plan], into report: inout ListCompactionReport) throws(QueryError) {
        // The compacted log through the snapshot's sequence (the planners are let go first).
        for k in plans.indices {
            plans[k].planner = RetentionPlanner()
            plans[k].decisions = []
        }
        let started = ContinuousClock.now
        defer { report.phaseMillis["snapshot", default: 0] += millis(since: started) }
        var digests: [String: UInt64] = [:]
        for plan in plans {
            let reducer: ListReducer
            do { reducer = try query.materialisedReducer(plan.zone.zone, at: .sequence(plan.zone.snapshotSequence)).reducer } catch {
                if Self.isGone(error) { continue }  // deleted meanwhile: nothing to re-fetch
                throw error
            }
            try writeSnapshot(plan.zone.zone, reducer: reducer, incarnation: plan.zone.incarnation, sequence: plan.zone.snapshotSequence)
            digests[plan.zone.zone] = reducer.stateDigest()
        }
        // A zone a device can follow carries the digest it reaches (nil digest: not followed).
        let done = plans.map { p -> ZoneCompaction in
            var z = p.zone
            z.followed?.digest = digests[z.zone]
            if z.followed?.digest == nil { z.followed = nil }
            return z
        }
        report.zones += done
        groupDidFinish?(done)
    }
}

import Foundation
import JournalLog
import JournalQuery
import JournalService
import JournalSync
import ListModel

/// Devices across the service's compactions (Spec/SYNC.md §6.7): a device that synced within
/// the retention meets each compaction's record in the zone's feed and follows it on its own copy,
/// instead of fetching the snapshot and the whole history again. Two lines, on the two-year family
/// list (`LifecycleWorkload`, seed 43, as `refetch_after_15_days`):
/// - `sync_across_compaction`: two caught-up devices, one day's purge, then one change;
/// - `family_month`: 30 simulated days under hourly compaction, three devices syncing at their
///   own pace.
extension SyncBench {
    static let dayMillis: Int64 = 86_400_000

    func followingCompactions() {
        let n = counts.refetchListEntries
        let zone = ZoneID(owner: "alice", name: "family")!
        let entries = LifecycleWorkload.generate(n, seed: 43, zone: zone.storeName).entries
        syncAcrossCompaction(entries, zone)
        familyMonth(entries, zone)
    }

    /// A service holding `entries` up to `start`, counted as arrived 15 days before it (as
    /// `refetchAfterAway` does: its first arrival checkpoint covers them), compacted at `start`.
    /// Returns the store, its core, its clock and how many entries it holds.
    func familyService(_ name: String, _ entries: [JournalEntry], through start: Int64) throws -> (JournalStore, ServiceCore, ManualNow, Int) {
        let store = try JournalStore.open(dir + "/" + name, options: Self.storeOptions())
        let cut = entries.partitionPoint { $0.wallTime <= start }
        try Self.append(store, entries, 0..<cut)
        let clock = ManualNow(start - 15 * Self.dayMillis)
        let core = try ServiceCore(store: store, now: { clock.value })
        clock.value = start
        _ = try core.compact(now: start)
        return (store, core, clock, cut)
    }

    /// Appends `entries[range]` to the service's store in 1,000-entry batches, as the family's
    /// own devices would have uploaded them.
    static func append(_ store: JournalStore, _ entries: [JournalEntry], _ range: Range<Int>) throws {
        var k = range.lowerBound
        while k < range.upperBound {
            try store.append(batch: Array(entries[k..<min(k + 1_000, range.upperBound)]))
            k += 1_000
        }
    }

    /// Entries purged or written over in `zone` by one compaction run.
    static func purged(_ r: ListCompactionReport, _ zone: ZoneID) -> Int {
        r.zones.filter { $0.zone == zone.storeName }.reduce(0) { $0 + $1.chosen + $1.rewritten }
    }

    // MARK: sync_across_compaction

    /// What one device did in the step measured.
    struct DeviceStep: Sendable {
        var requests = 0, bytes = 0, snapshots = 0, historyPages = 0, entriesDown = 0
        var records = 0, recordWireBytes = 0, followed = 0, refetched = 0, purgedByFollowing = 0
        var ms = 0.0
        var errors: [String] = []

        init() {}
        init(_ d: FollowingDevice, _ r: SyncReport, ms: Double) {
            let m = d.meter
            (requests, bytes, snapshots, historyPages, entriesDown) = (m.calls, m.bytesUp + m.bytesDown, m.snapshots, m.historyPages, m.entriesDown)
            (records, recordWireBytes) = (m.recordsDown, m.recordBytesDown)
            (followed, refetched, purgedByFollowing) = (r.compactionsFollowed, r.refetched.count, r.purgedByFollowing)
            self.ms = ms
            errors = r.errors
        }

        func fields(_ prefix: String) -> [(String, JSON)] {
            [(prefix + "_requests", .i(requests)), (prefix + "_bytes", .i(bytes)), (prefix + "_snapshots", .i(snapshots)),
             (prefix + "_history_pages", .i(historyPages)), (prefix + "_entries_down", .i(entriesDown)),
             (prefix + "_records_down", .i(records)), (prefix + "_record_wire_bytes", .i(recordWireBytes)),
             (prefix + "_compactions_followed", .i(followed)), (prefix + "_purged_by_following", .i(purgedByFollowing)),
             (prefix + "_refetched", .i(refetched)), (prefix + "_sync_ms", .n(ms))]
                + (errors.isEmpty ? [] : [(prefix + "_errors", .s(errors.joined(separator: "; ")))])
        }
    }

    struct AcrossResult: Sendable {
        var control = (phone: DeviceStep(), tablet: DeviceStep())
        var after = (phone: DeviceStep(), tablet: DeviceStep())
        var purged = 0
        var recordBodyBytes = 0, recordPurged = 0, recordPlaced = 0
        var todayBytes = 0, todayRequests = 0, todaySnapshotBytes = 0, todayHistoryBytes = 0, todayHistoryPages = 0
        var listEntries = 0, dayEntries = 0
        /// The other way to follow: the device recomputes the purge from the service's cutoff
        /// over its own copy (its time, and how many entries it would purge or write over).
        var recomputeMS = 0.0, recomputePurged = 0
    }

    /// What recomputing the service's decision on a device costs: the list rules (`RetentionPlanner`)
    /// over the device's copy of `zone`, with the service's cutoff and every entry it holds below
    /// its horizon counted as at or below the mark (the device has no service sequences: the exact
    /// window would have to be sent). Returns the time and the entries it would purge or replace.
    static func recompute(_ store: JournalStore, _ zone: String, cutoff: Int64) throws -> (ms: Double, purged: Int) {
        let t0 = now()
        var planner = RetentionPlanner()
        var all: [FeedEntry] = []
        var token: FeedToken? = nil
        while true {
            let page = try store.changes(in: zone, since: token, limit: 4_096)
            for e in page.entries { planner.add(e.sequence, e.entry) }
            all += page.entries
            token = page.token
            if !page.moreComing { break }
        }
        var walk = planner.decide(cutoff: cutoff, mark: all.last?.sequence ?? 0).walk()
        var purged = 0
        for e in all where walk.verdict(e.sequence, e.entry) != .keep { purged += 1 }
        return ((now() - t0) * 1000, purged)
    }

    /// Two caught-up devices (phone and tablet of one account) of the family list, on a service
    /// that compacted it daily; one more day of the family's changes; the devices catch up; one
    /// change synced (the control: no compaction between); then the service compacts (one day's
    /// purge) and the same again: the phone records a change and syncs, the tablet syncs. Beside
    /// it, what today's rule (every compaction sends every device back) costs each of them: a
    /// re-fetch of the compacted list and its whole history.
    func syncAcrossCompaction(_ entries: [JournalEntry], _ zone: ZoneID) {
        let day = Self.dayMillis
        let last = entries.last!.wallTime
        let start = last - 16 * day
        log("sync: sync_across_compaction: the \(entries.count)-entry family list, two caught-up devices, one day's compaction, one change")
        let (store, core, clock, cut0): (JournalStore, ServiceCore, ManualNow, Int)
        do { (store, core, clock, cut0) = try familyService("across-service.wal", entries, through: start) } catch {
            fail("building the family list's service", error)
        }
        let dir = self.dir
        let r = blocking { () async throws -> AcrossResult in
            var out = AcrossResult()
            var k = cut0
            func advance(to t: Int64) throws {
                let next = entries.partitionPoint { $0.wallTime <= t }
                try Self.append(store, entries, k..<next)
                k = next
                clock.value = t
            }
            // Compacted daily up to "now", a day before the last entry.
            for d in 1...15 {
                try advance(to: start + Int64(d) * day)
                _ = try core.compact(now: clock.value)
            }
            let phone = try FollowingDevice("phone", core: core, dir: dir + "/across", clock: clock)
            let tablet = try FollowingDevice("tablet", core: core, dir: dir + "/across", clock: clock)
            defer { phone.close(); tablet.close() }
            // The first sync installs the list from the service's snapshot (and its history);
            // the second finds them caught up.
            for _ in 0..<2 {
                for dv in [phone, tablet] {
                    let s = await dv.engine.sync()
                    guard s.isComplete else { throw JournalError.invalidEntry("\(dv.name)'s first syncs: \(s.errors)") }
                }
            }
            // One more day of the family's changes; the devices catch up.
            let before = k
            try advance(to: last)
            out.dayEntries = k - before
            out.listEntries = k
            for dv in [phone, tablet] {
                let s = await dv.engine.sync()
                guard s.isComplete else { throw JournalError.invalidEntry("\(dv.name)'s catch-up: \(s.errors)") }
            }
            // The same step with no compaction before it: what one change costs each device.
            func change(_ i: Int) async throws -> (DeviceStep, DeviceStep) {
                try await phone.engine.record(.add(item: CompactID.random(), text: "Oat milk \(i)", after: nil), in: zone)
                var t0 = now()
                let rp = await phone.engine.sync()
                let p = DeviceStep(phone, rp, ms: (now() - t0) * 1000)
                t0 = now()
                let rt = await tablet.engine.sync()
                return (p, DeviceStep(tablet, rt, ms: (now() - t0) * 1000))
            }
            phone.meter.reset(); tablet.meter.reset()
            out.control = try await change(0)
            // The compaction: one day's purge, and its record.
            phone.meter.reset(); tablet.meter.reset()
            let compaction = try core.compact(now: clock.value)
            out.purged = Self.purged(compaction, zone)
            if out.purged == 0 {
                log("  sync_across_compaction: the compaction purged nothing of \(zone.storeName): zones \(compaction.zones.map { "\($0.zone) chosen \($0.chosen)" }), skipped \(compaction.skipped.map { "\($0.zone): \($0.reason)" })")
            }
            (out.recomputeMS, out.recomputePurged) = try Self.recompute(tablet.store, zone.storeName, cutoff: clock.value - 14 * day)
            out.after = try await change(1)
            if let e = phone.meter.lastRecord ?? tablet.meter.lastRecord, let rec = try CompactionRecord.of(e) {
                out.recordBodyBytes = rec.encoded().count
                (out.recordPurged, out.recordPlaced) = (rec.purged.count, rec.placed.count)
            }
            // Today's rule: each device fetches the compacted list anew, then its history.
            let fresh = try FollowingDevice("fresh", core: core, dir: dir + "/across", clock: clock, historyAfterRefetch: false)
            defer { fresh.close() }
            let s = await fresh.engine.sync()
            guard s.isComplete, s.firstFetched == [zone] else { throw JournalError.invalidEntry("the fresh device's re-fetch: \(s.errors)") }
            try await fresh.engine.fetchHistory(zone)
            let m = fresh.meter
            (out.todayBytes, out.todayRequests, out.todayHistoryBytes, out.todayHistoryPages) = (m.bytesUp + m.bytesDown, m.calls, m.historyBytes, m.historyPages)
            out.todaySnapshotBytes = m.lastSnapshot?.count ?? 0
            return out
        }
        try? store.close()
        removeTree(dir + "/across-service.wal")
        removeTree(dir + "/across")
        let allowance = 24 * r.purged
        func met(_ d: DeviceStep, _ c: DeviceStep) -> Bool {
            d.requests <= 2 && d.snapshots == 0 && d.historyPages == 0 && d.refetched == 0 && d.bytes <= c.bytes + allowance
        }
        let p = r.after.phone, t = r.after.tablet
        log("  sync_across_compaction: purged \(r.purged); phone \(p.requests) requests, \(p.bytes) B (control \(r.control.phone.bytes) B); tablet \(t.requests) requests, \(t.bytes) B (control \(r.control.tablet.bytes) B); today's rule \(r.todayBytes) B per device; recomputing instead: \(String(format: "%.1f", r.recomputeMS)) ms on the device, \(r.recomputePurged) entries (the record: \(r.recordPurged) + \(r.recordPlaced))")
        report.emit(Measurement(
            name: "sync_across_compaction", system: "journallog", unit: "B", runs: [Double(p.bytes + t.bytes)],
            extra: [("list_entries", .i(r.listEntries)), ("day_entries", .i(r.dayEntries)), ("purged_entries", .i(r.purged)),
                    ("record_bytes", .i(r.recordBodyBytes)), ("record_purged_ids", .i(r.recordPurged)), ("record_placed", .i(r.recordPlaced))]
                + p.fields("phone") + t.fields("tablet")
                + r.control.phone.fields("control_phone").filter { ["control_phone_requests", "control_phone_bytes"].contains($0.0) }
                + r.control.tablet.fields("control_tablet").filter { ["control_tablet_requests", "control_tablet_bytes"].contains($0.0) }
                + [("byte_allowance", .i(allowance)),
                   ("recompute_ms", .n(r.recomputeMS)), ("recompute_purged", .i(r.recomputePurged)), ("recompute_param_bytes", .i(24)),
                   ("today_rule_bytes", .i(r.todayBytes)), ("today_rule_requests", .i(r.todayRequests)),
                   ("today_rule_snapshot_bytes", .i(r.todaySnapshotBytes)), ("today_rule_history_bytes", .i(r.todayHistoryBytes)),
                   ("today_rule_history_pages", .i(r.todayHistoryPages)),
                   ("today_rule_over_following", .n(Double(r.todayBytes) / Double(max(1, max(p.bytes, t.bytes))))),
                   ("note", .s("the two-year family list on a service that compacted it daily; a phone and a tablet of one account, caught up; one more day of changes, which both fetch; the control: the phone records an add and syncs, the tablet syncs; then the service compacts (one day's purge, purged_entries = chosen + rewritten) and the same again. The median is the two devices' bytes (both ways) for that step; control_* is the same step without the compaction; the allowance is 24 B per purged entry. recompute_*: the alternative of sending only the cutoff, mark and digest (24 B) and having the device run the list rules over its copy (its time; the entries it would purge or replace, against record_purged_ids + record_placed); today_rule_*: what one device costs when a compaction sends it back (a fresh device: snapshot, entries after it, then the whole history page by page). One run: the bytes are deterministic but for random ids and tokens"))],
            goal: "per device: <= 2 requests, no snapshot, no history page, no re-fetch; bytes <= the control's + 24 per purged entry",
            // A step whose compaction purged nothing measured nothing: never reported as met.
            met: r.purged > 0 && met(p, r.control.phone) && met(t, r.control.tablet)))
    }

    // MARK: family_month

    /// One device's month.
    struct MonthDevice: Sendable {
        var name = ""
        var syncs = 0, incomplete = 0, requests = 0, bytes = 0, entriesDown = 0, entryBytes = 0, records = 0, recordBytes = 0
        var snapshots = 0, historyPages = 0, historyBytes = 0, refetched = 0, followed = 0, purgedByFollowing = 0
        var causes: [String: Int] = [:]
        var perDay: [Double] = []
        var syncMS: [Double] = []
        var errors: [String] = []
    }

    struct MonthResult: Sendable {
        var devices: [MonthDevice] = []
        var monthEntries = 0, listEntries = 0, compactions = 0, withRecord = 0, purged = 0
        var seconds = 0.0
    }

    /// Thirty days of the family list, the last thirty of the workload, replayed slot by slot
    /// (10 minutes): the service compacts every hour (14-day retention); a phone syncs every 10
    /// minutes from 07:00 to 23:00; a tablet once a day (20:00); a laptop on day 1, then not until
    /// day 21, then daily. The devices installed the list at the month's start (not counted).
    func familyMonth(_ entries: [JournalEntry], _ zone: ZoneID) {
        let day = Self.dayMillis, slot: Int64 = 600_000
        // Whole days (UTC) before the last entry's.
        let monthEnd = entries.last!.wallTime / day * day
        let monthStart = monthEnd - 30 * day
        log("sync: family_month: 30 days of the family list (hourly compaction), a phone every 10 minutes 07:00-23:00, a tablet daily, a laptop on day 1 and from day 21")
        let (store, core, clock, cut0): (JournalStore, ServiceCore, ManualNow, Int)
        do { (store, core, clock, cut0) = try familyService("month-service.wal", entries, through: monthStart) } catch {
            fail("building the family list's service", error)
        }
        let dir = self.dir
        let r = blocking { () async throws -> MonthResult in
            var out = MonthResult()
            let t0 = now()
            var k = cut0
            let phone = try FollowingDevice("phone", core: core, dir: dir + "/month", clock: clock)
            let tablet = try FollowingDevice("tablet", core: core, dir: dir + "/month", clock: clock)
            let laptop = try FollowingDevice("laptop", core: core, dir: dir + "/month", clock: clock)
            let devices = [phone, tablet, laptop]
            defer { for d in devices { d.close() } }
            for dv in devices {
                let s = await dv.engine.sync()
                guard s.isComplete, s.firstFetched == [zone] else { throw JournalError.invalidEntry("\(dv.name)'s first sync: \(s.errors)") }
                dv.meter.reset()
            }
            for d in 1...30 {
                let midnight = monthStart + Int64(d - 1) * day
                var synced = Set<String>()
                let dayStart = devices.map(\.bytes)
                for s in 1...144 {
                    let t = midnight + Int64(s) * slot
                    let next = entries.partitionPoint { $0.wallTime <= t }
                    try Self.append(store, entries, k..<next)
                    out.monthEntries += next - k
                    k = next
                    clock.value = t
                    if s % 6 == 0 {
                        let c = try core.compact(now: t)
                        out.compactions += 1
                        out.purged += Self.purged(c, zone)
                        if c.zones.contains(where: { $0.zone == zone.storeName && $0.followed != nil }) { out.withRecord += 1 }
                    }
                    var due: [FollowingDevice] = []
                    if s >= 42 && s < 138 { due.append(phone) }  // 07:00 to 22:50
                    if s == 120 {  // 20:00
                        due.append(tablet)
                        if d == 1 || d >= 21 { due.append(laptop) }
                    }
                    for dv in due {
                        await dv.sync()
                        synced.insert(dv.name)
                    }
                }
                for (i, dv) in devices.enumerated() where synced.contains(dv.name) { dv.perDay.append(Double(dv.bytes - dayStart[i])) }
                if d % 5 == 0 {
                    log("  family_month: day \(d), \(String(format: "%.0f", now() - t0)) s; " + devices.map { "\($0.name) \($0.bytes) B, \($0.followed) followed, \($0.refetched) re-fetched" }.joined(separator: "; "))
                }
            }
            out.listEntries = k
            out.devices = devices.map { $0.summary() }
            out.seconds = now() - t0
            return out
        }
        try? store.close()
        removeTree(dir + "/month-service.wal")
        removeTree(dir + "/month")
        for d in r.devices {
            let ratio = Double(d.bytes) / Double(max(1, d.entryBytes))
            let goal: String, met: Bool
            if d.name == "laptop" {
                goal = "exactly one re-fetch (after 20 days away)"
                met = d.refetched == 1 && d.incomplete == 0
            } else {
                goal = "0 snapshots, 0 history pages, bytes <= 1.5x the entries received (compaction records included)"
                met = d.snapshots == 0 && d.historyPages == 0 && ratio <= 1.5 && d.incomplete == 0
            }
            log("  family_month \(d.name): \(d.syncs) syncs, \(d.bytes) B (\(String(format: "%.2f", ratio))x its entries' \(d.entryBytes) B), \(d.snapshots) snapshots, \(d.historyPages) history pages, \(d.refetched) re-fetches \(d.causes), \(d.followed) compactions followed")
            report.emit(Measurement(
                name: "family_month", system: "journallog", unit: "B/day", runs: d.perDay,
                extra: [("device", .s(d.name)), ("days_synced", .i(d.perDay.count)), ("syncs", .i(d.syncs)), ("requests", .i(d.requests)),
                        ("bytes", .i(d.bytes)), ("entries_received", .i(d.entriesDown)), ("entry_bytes", .i(d.entryBytes)),
                        ("records_received", .i(d.records)), ("record_bytes", .i(d.recordBytes)),
                        ("bytes_over_entries", .n(ratio)), ("snapshots", .i(d.snapshots)),
                        ("history_pages", .i(d.historyPages)), ("history_bytes", .i(d.historyBytes)),
                        ("refetches", .i(d.refetched)), ("refetch_causes", .o(d.causes.sorted { $0.key < $1.key }.map { ($0.key, .i($0.value)) })),
                        ("compactions_followed", .i(d.followed)), ("purged_by_following", .i(d.purgedByFollowing)),
                        ("incomplete_syncs", .i(d.incomplete)), ("sync_ms_median", .n(medianOf(d.syncMS))),
                        ("sync_ms_max", .n(d.syncMS.max() ?? 0))]
                    + (d.errors.isEmpty ? [] : [("errors", .s(d.errors.joined(separator: "; ")))])
                    + [("month_entries", .i(r.monthEntries)), ("list_entries", .i(r.listEntries)),
                       ("service_compactions", .i(r.compactions)), ("service_records", .i(r.withRecord)),
                       ("service_purged", .i(r.purged)), ("run_seconds", .n(r.seconds)),
                       ("note", .s("the last 30 days of the two-year family list replayed in 10-minute slots onto a service that compacts it every hour (14-day retention); the phone syncs every 10 minutes from 07:00 to 22:50 (96 a day), the tablet at 20:00, the laptop at 20:00 on day 1 and on days 21-30; each installed the list at the month's start (not counted). The median is the bytes (both ways) of a day the device synced; entry_bytes: the zone pages' entries as wire batches, compaction records included; a re-fetch also fetches the history (the engine's default)"))],
                goal: goal, met: met, label: "family_month (\(d.name))"))
        }
    }
}

/// The bench's clock as a device sees it: the service's manual time.
struct ManualSyncClock: SyncClock {
    let time: SyncBench.ManualNow
    func now() -> Int64 { time.value }
    func sleep(for duration: Duration) async { try? await Task.sleep(for: duration) }
}

/// A device of the family's account, with its own store and wire meter, and what its syncs
/// reported.
final class FollowingDevice: @unchecked Sendable {
    let name: String
    let path: String
    let meter: WireMeter
    let store: JournalStore
    let engine: SyncEngine
    private(set) var syncs = 0, incomplete = 0, refetched = 0, followed = 0, purgedByFollowing = 0
    private(set) var causes: [RefetchCause: Int] = [:]
    private(set) var errors: [String] = []
    private(set) var syncMS: [Double] = []
    var perDay: [Double] = []

    init(_ name: String, core: ServiceCore, dir: String, clock: SyncBench.ManualNow, historyAfterRefetch: Bool = true) throws {
        self.name = name
        makeDirectory(dir)
        path = dir + "/\(name).wal"
        meter = WireMeter(LocalService(core: core, account: "alice"))
        store = try JournalStore.open(path, options: SyncBench.storeOptions())
        var options = SyncEngineOptions()
        options.pageLimit = 1_000
        options.fetchesHistoryAfterRefetch = historyAfterRefetch
        engine = try SyncEngine(store: store, service: meter, replica: "alice:\(name)", clock: ManualSyncClock(time: clock), options: options)
    }

    var bytes: Int { meter.bytesUp + meter.bytesDown }

    /// One sync, timed and counted.
    @discardableResult
    func sync() async -> SyncReport {
        let t0 = now()
        let r = await engine.sync()
        syncMS.append((now() - t0) * 1000)
        syncs += 1
        if !r.isComplete {
            incomplete += 1
            if errors.count < 3 { errors += r.errors.prefix(3 - errors.count) }
        }
        refetched += r.refetched.count
        for (c, k) in r.refetchCauses { causes[c, default: 0] += k }
        followed += r.compactionsFollowed
        purgedByFollowing += r.purgedByFollowing
        return r
    }

    func summary() -> SyncBench.MonthDevice {
        var d = SyncBench.MonthDevice()
        d.name = name
        (d.syncs, d.incomplete, d.requests, d.bytes, d.entriesDown) = (syncs, incomplete, meter.calls, bytes, meter.entriesDown)
        (d.entryBytes, d.records, d.recordBytes) = (meter.entryBytesDown, meter.recordsDown, meter.recordBytesDown)
        (d.snapshots, d.historyPages, d.historyBytes) = (meter.snapshots, meter.historyPages, meter.historyBytes)
        (d.refetched, d.followed, d.purgedByFollowing) = (refetched, followed, purgedByFollowing)
        d.causes = Dictionary(uniqueKeysWithValues: causes.map { ($0.key.rawValue, $0.value) })
        (d.perDay, d.syncMS, d.errors) = (perDay, syncMS, errors)
        return d
    }

    func close() {
        try? store.close()
        removeTree(path)
    }
}

import JournalLog
import JournalQuery
import JournalSync

/// The service's uploads (`SyncService.upload`): access, limits and quota checked under the
/// memory's lock, the append outside it (uploads to different zones share fsyncs), and a late
/// retry of an entry compaction purged acknowledged, never stored again (Spec/SYNC.md §6.2 rule 7).
struct ServiceUploads: Sendable {
    let context: ServiceContext
    private var store: any ServiceStorage { context.store }

    /// Stores the caller's entries in a zone: idempotent by entry id. Answers what it did (a
    /// partial failure too, for the caller to throw) and who sees the zone when it stored any
    /// entry (empty when it stored none): the caller hints them (Spec/SYNC.md §7.7).
    ///
    /// Over a shared storage the zone's row this node read last stands in for a read (one
    /// round trip fewer): the append refuses the upload if the zone's mark moved since (a
    /// compaction) or its incarnation is gone, and then, as after any refusal or failure that
    /// may come from an old row, the upload starts over from a fresh read, so it answers what
    /// it would have answered with one (and is counted once).
    func upload(caller: String, entries: [JournalEntry], to zone: ZoneID) throws(SyncError) -> (result: UploadResult, told: [String]) {
        guard let remembered = context.rememberedZone(zone) else { return try upload(caller: caller, entries: entries, to: zone, info: nil, counting: true) }
        do throws(SyncError) {
            return try upload(caller: caller, entries: entries, to: zone, info: remembered, counting: true)
        } catch {
            switch error {
            case .zoneNotFound, .zoneDeleted, .serviceBusy:
                context.locked { context.forget(zone.storeName) }
                return try upload(caller: caller, entries: entries, to: zone, info: nil, counting: false)
            default: throw error
            }
        }
    }

    /// `upload(caller:entries:to:)` with the zone's row as given (nil: read now); `counting`: the
    /// call and its entries count as received (not again when an upload starts over).
    private func upload(caller: String, entries: [JournalEntry], to zone: ZoneID, info known: ZoneInfo?,
                        counting: Bool) throws(SyncError) -> (result: UploadResult, told: [String]) {
        try context.changing(zone.storeName) { () throws(SyncError) -> (result: UploadResult, told: [String]) in
            // Read before the memory's lock (over a shared database, a round trip).
            let info: ZoneInfo?
            if let known { info = known } else { info = try context.readZone(zone) }
            let epochs = try context.zoneEpochs(zone, info: info)
            var admitted = try context.locked { () throws(SyncError) -> Admitted in
                let admitted = try admit(caller: caller, entries: entries, to: zone, info: info, epochs: epochs, counting: counting)
                if known == nil { context.remember(info, of: zone) }
                return admitted
            }
            if !admitted.stale.isEmpty { try settleStale(&admitted, in: zone.storeName) }
            if let (record, removing) = admitted.beginning, !removing.isEmpty {
                // The owner's removal with its rotation: the leaves and the record in one batch.
                try context.recordMembership(removing, zone: zone, member: false, reason: record.reason == .sharingStopped ? .sharingStopped : .removed,
                                             by: caller, epochs: epochs, keyRecord: admitted.fresh[0])
                admitted.result.saved.append(admitted.fresh[0].id)
                return (admitted.result, [])
            }
            let absent = admitted.underCurrentEpoch ? epochs?.endingIDs(zone: zone.storeName) ?? [] : []
            let stored = try append(&admitted.fresh, to: zone, expectingMark: admitted.mark, absent: absent, result: &admitted.result)
            if epochs != nil { context.noteEpochs(of: zone.storeName, admitted.fresh) }
            guard stored > 0 else { return (admitted.result, []) }
            let told = context.locked {
                context.counters.entriesStored += stored
                return context.audience(zone.storeName)
            }
            // The entries are saved; a checkpoint that cannot be written only makes a purge later.
            if !store.isShared { try? context.arrivals.note(at: context.now, force: false, write: context.appendRecord) }
            return (admitted.result, told)
        }
    }

    /// An upload sorted: what is answered already, what to store, and under what conditions.
    struct Admitted {
        var result = UploadResult()
        var fresh: [JournalEntry] = []
        /// The zone's mark the purged ids were read under.
        var mark: SequenceNumber = 0
        /// Sealed texts to store only while the zone's epoch is the one they are sealed under.
        var underCurrentEpoch = false
        /// A key record beginning the next epoch, and the members the owner's record removes.
        var beginning: (EpochKeyRecord, [String])?
        /// Entries refused for their epoch, unless the zone holds them already (a retry).
        var stale: [(JournalEntry, EntryFailure)] = []
    }

    /// Entries refused for their epoch that the zone holds already are retries, and saved; the
    /// others are refused (SEALING.md §5.1: a fresh entry under an old epoch only). One read of
    /// the zone, only when an upload holds such an entry.
    private func settleStale(_ admitted: inout Admitted, in zone: String) throws(SyncError) {
        let held = try heldEntries(zone, among: Set(admitted.stale.map(\.0.id)))
        for (e, failure) in admitted.stale {
            if let stored = held[e.id] {
                if stored == e { admitted.result.saved.append(e.id) } else { admitted.result.failed[e.id] = .conflict("the zone holds entry \(e.id) with other content") }
            } else {
                admitted.result.failed[e.id] = failure
            }
        }
        admitted.stale = []
    }

    /// Checks the caller's access, the limits and the quota, and sorts the entries: refused,
    /// acknowledged (purged retries), or fresh (to store); and the zone's mark the purged ids
    /// were read under. Under `lock`.
    private func admit(caller: String, entries: [JournalEntry], to zone: ZoneID,
                       info: ZoneInfo?, epochs: ZoneEpochs?, counting: Bool) throws(SyncError) -> Admitted {
        let limits = context.limits
        _ = try context.access(caller, zone, info: info)
        guard !entries.isEmpty else { throw .invalidRequest("an upload holds at least one entry") }
        if counting {
            context.counters.uploads += 1
            context.counters.entriesReceived += entries.count
        }
        guard entries.count <= limits.maxUploadEntries else { throw .limitExceeded }
        guard entries.reduce(0, { $0 + UploadPolicy.encodedBytes($1) }) <= limits.maxUploadBytes else { throw .limitExceeded }
        var admitted = Admitted()
        let (gone, mark) = try purgedIDs(zone.storeName, info: info)
        admitted.mark = mark
        let latest = context.now() + UploadPolicy.maxClockSkewMillis
        let sealed = epochs.map {
            SealedUploadCheck(zone: zone, caller: caller, epochs: $0, members: Set(context.audience(zone.storeName)), directory: context.directory)
        }
        for e in entries {
            if let why = UploadPolicy.refusal(e, caller: caller, zone: zone, latest: latest) {
                admitted.result.failed[e.id] = .invalid(why)
            } else if gone.contains(e.id) {
                admitted.result.saved.append(e.id)   // stored once, then purged: acknowledged
            } else if let sealed {
                switch sealed.verdict(e, alone: entries.count == 1) {
                case .take: admitted.fresh.append(e)
                case .takeUnderCurrentEpoch:
                    admitted.fresh.append(e)
                    admitted.underCurrentEpoch = true
                case .beginEpoch(let record, let removing):
                    admitted.fresh.append(e)
                    admitted.beginning = (record, removing)
                case .refuse(let failure):
                    switch failure {
                    case .staleEpoch, .rotationDue: admitted.stale.append((e, failure))
                    default: admitted.result.failed[e.id] = failure
                    }
                }
            } else {
                admitted.fresh.append(e)
            }
        }
        let fresh = admitted.fresh
        if let quota = limits.maxEntriesPerAccount, !fresh.isEmpty {
            let owned: [ZoneInfo]
            do throws(StorageError) { owned = try store.zones(ownedBy: zone.owner).filter { !$0.isDeleted } } catch { throw error.syncError }
            let used = owned.reduce(0, { $0 + $1.entryCount })
            // An id twice in the request is stored once.
            let ids = Set(fresh.map(\.id))
            // Only when it matters, since it reads the zone: a retry of ids the zone holds adds
            // nothing, so it is never refused for the quota.
            if used + ids.count > quota, used + ids.count - (try heldEntries(zone.storeName, among: ids).count) > quota {
                throw .quotaExceeded
            }
        }
        return admitted
    }

    /// Appends the fresh entries as one batch, outside the memory's lock; an entry whose id the
    /// zone holds with other content is reported and the rest appended. Returns how many the
    /// zone gained.
    /// `absent`: ids whose presence in the zone means the sealed texts among `fresh` are under an
    /// epoch that ended meanwhile (another node's key record or rotation-due marker): the
    /// append is then refused (`keysMoved`), and the upload starts over with the epochs read afresh.
    private func append(_ fresh: inout [JournalEntry], to zone: ZoneID, expectingMark mark: SequenceNumber, absent: [CompactID],
                        result: inout UploadResult) throws(SyncError) -> Int {
        var gained = 0
        while !fresh.isEmpty {
            do throws(JournalError) {
                gained = try store.appendCounting(fresh, expectingMark: mark, absent: absent)
                result.saved += fresh.map(\.id)
                break
            } catch .idConflict(_, let id, let at) {
                let record = fresh.first { $0.id == id }.flatMap { e -> EpochKeyRecord? in
                    guard case .opaque(EpochKeyRecord.kind, let body) = e.operation else { return nil }
                    return try? EpochKeyRecord(decoding: body)
                }
                if let record {
                    // The race for an epoch, lost: adopt the winner's record, and seal under it.
                    context.forgetEpochs(zone.storeName)
                    result.failed[id] = .conflict("epoch \(record.epoch) of this list began with another member's key record: adopt it")
                } else {
                    result.failed[id] = .conflict("the zone holds entry \(id) with other content" + (at.map { " (stored at \($0))" } ?? ""))
                }
                fresh.removeAll { $0.id == id }
            } catch .keysMoved {
                context.forgetEpochs(zone.storeName)
                throw .serviceBusy(retryAfter: .seconds(1))
            } catch .zoneDeleted {
                throw .zoneDeleted(reason: .deleted)
            } catch {
                throw .serviceBusy(retryAfter: .seconds(1))
            }
        }
        return gained
    }

    /// The entries of `ids` the zone's live incarnation holds, by id: one read of the zone.
    private func heldEntries(_ zone: String, among ids: Set<CompactID>) throws(SyncError) -> [CompactID: JournalEntry] {
        var held: [CompactID: JournalEntry] = [:]
        var token: FeedToken? = nil
        do throws(FeedError) {
            while true {
                let page = try store.zoneChanges(zone, since: token, limit: 10_000)
                for e in page.entries where ids.contains(e.entry.id) { held[e.entry.id] = e.entry }
                token = page.token
                if !page.moreComing { break }
            }
        } catch {
            if case .storage = error { throw .serviceBusy(retryAfter: .seconds(1)) }
            return [:]
        }
        return held
    }

    /// Ids the zone's history holds and its log does not: what compaction purged. Under `lock`
    /// (the cache is the memory's).
    /// Keyed by the zone's incarnation and mark: another node's compaction raises the mark in the
    /// transaction that purges, so a cache from before it is never used after it.
    private func purgedIDs(_ zone: String, info: ZoneInfo?) throws(SyncError) -> (ids: Set<CompactID>, mark: SequenceNumber) {
        guard let info else { return ([], 0) }
        guard info.lowWaterMark > 0 else { return ([], 0) }
        if let known = context.purged[zone], known.incarnation == info.incarnation, known.mark == info.lowWaterMark {
            return (known.ids, known.mark)
        }
        do throws(QueryError) {
            let ids = try store.purgedIDs(of: zone)
            context.purged[zone] = (info.incarnation, info.lowWaterMark, ids)
            return (ids, info.lowWaterMark)
        } catch {
            // Without the history a late retry of a purged entry cannot be told from a new one
            // (§6.2 rule 7); only an operator can repair it, so no retry is asked for.
            if case .historyIncomplete(_, let why) = error { throw ServiceContext.historyUnavailable(zone, why) }
            throw .serviceBusy(retryAfter: .seconds(1))
        }
    }
}

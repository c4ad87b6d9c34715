import JournalLog

extension SyncEngine {
    /// Uploads every zone's local changes (Spec/SYNC.md §7, push), and the deletions and leaves
    /// made here.
    func push(_ report: inout SyncReport) async {
        for name in state.zones.keys.sorted() {
            guard let z = state.zones[name] else { continue }
            if z.pendingDelete {
                do {
                    if z.zone.owner == state.account {
                        try await retrying { () async throws(SyncError) in try await service.deleteZone(z.zone) }
                    } else if let me = state.account {
                        try await retrying { () async throws(SyncError) in try await service.removeParticipant(me, from: z.zone) }
                    }
                    state.zones[name] = nil
                    try? save()
                } catch {
                    switch error {
                    case .zoneNotFound, .zoneDeleted:
                        state.zones[name] = nil
                        try? save()
                    default:
                        if stop(on: error, &report, zone: name) { return }
                    }
                }
                continue
            }
            guard z.replacing == nil else { continue }  // the pull finishes it (and pushes first)
            guard !z.localOnly else { continue }        // on this device only, until shared
            // Offline, signed out or told to wait: no other list is tried in this sync.
            if await !pushZone(name, &report) && !report.mayContinue { return }
        }
    }

    /// Local entries not yet uploaded (authored here, above the uploaded mark, not refused for
    /// good), in order, and the position through which nothing else is pending.
    func pendingLocal(_ name: String) throws(JournalError) -> (entries: [FeedEntry], safe: SequenceNumber, mark: SequenceNumber) {
        guard let info = store.zone(name), !info.isDeleted else { return ([], 0, 0) }
        let mark = uploadedMark(name, incarnation: info.incarnation)
        let rejected = Set(state.zones[name]?.rejected ?? [])
        var out: [FeedEntry] = []
        do throws(FeedError) {
            var token: FeedToken? = mark > 0 ? try store.zoneToken(name, position: min(mark, info.lastChange)) : nil
            while true {
                let page = try store.changes(in: name, since: token, limit: 4_096)
                for e in page.entries where e.entry.author == replica && !rejected.contains(e.entry.id) { out.append(e) }
                token = page.token
                if !page.moreComing { break }
            }
        } catch {
            if case .storage(let e) = error { throw e }
            return ([], mark, mark)
        }
        let safe = out.first.map { $0.sequence - 1 } ?? max(mark, info.lastChange)
        return (out, safe, mark)
    }

    func uploadedMark(_ name: String, incarnation: SequenceNumber) -> SequenceNumber {
        store.consumer(Self.consumer)?.marks.first { $0.zone == name && $0.incarnation == incarnation }?.position ?? 0
    }

    func advanceUploaded(_ name: String, to position: SequenceNumber) {
        guard let info = store.zone(name), !info.isDeleted, position > uploadedMark(name, incarnation: info.incarnation) else { return }
        _ = try? store.advanceConsumer(Self.consumer, zone: name, to: min(position, store.horizon))
    }

    /// Pushes one zone; false when something stopped it (what is left stays queued).
    func pushZone(_ name: String, _ report: inout SyncReport) async -> Bool {
        guard var z = state.zones[name] else { return true }
        let pending: [FeedEntry]
        do {
            let p = try pendingLocal(name)
            pending = p.entries
            if p.safe > p.mark { advanceUploaded(name, to: p.safe) }
        } catch {
            note("the local log cannot be read: \(error)", zone: name, &report)
            return false
        }
        // A list made here exists on the service before anything is uploaded to it (and even
        // when nothing is: it can be shared empty).
        if z.zone.owner == state.account && !z.existsOnService {
            do { try await retrying { () async throws(SyncError) in try await service.createZone(z.zone) } } catch {
                _ = stop(on: error, &report, zone: name)
                return false
            }
            z.existsOnService = true
            state.zones[name] = z
            try? save()
        }
        guard !pending.isEmpty else { return true }
        // A record an answer carried is checked once the push is over, when the place of every
        // entry saved since is known (`noteAnswer`); otherwise the fetch that brings them back
        // after the record finishes the check.
        pushFollow[name] = nil
        defer {
            if let placed = pushFollow.removeValue(forKey: name) {
                if placed {
                    checkFollowed(name, &report)
                } else {
                    state.zones[name]?.needsFetch = true
                    followChecksAwaitingFetch.insert(name)
                }
            }
        }
        var done = Set<CompactID>()
        for batch in uploadBatches(pending.map(\.entry)) {
            let outcome: SendOutcome
            do { outcome = try await send(batch, to: z.zone, carrying: true, &report) } catch {
                switch error {
                case .zoneNotFound where z.zone.owner == state.account:
                    // Gone from the service (deleted elsewhere, or never made): make it again.
                    state.zones[name]?.existsOnService = false
                    try? save()
                    note("the service had no such list; it is created again on the next push", zone: name, &report)
                    return false
                case .zoneNotFound:
                    removeLocal(name, reason: .deleted, &report)
                    return false
                case .zoneDeleted(let reason):
                    removeLocal(name, reason: reason, &report)
                    return false
                default:
                    _ = stop(on: error, &report, zone: name)
                    return false
                }
            }
            report.uploaded += outcome.saved.count
            totals.entriesUploaded += outcome.saved.count
            done.formUnion(outcome.saved)
            // A key record the service took is taken, even while changes before it wait (a
            // text refused for its epoch, kept queued): texts are sealed under it from now on.
            for e in batch where outcome.saved.contains(e.id) {
                if case .opaque(EpochKeyRecord.kind, _) = e.operation { savedKeyRecords.insert(e.id) }
            }
            // A sealed change refused for its epoch stays queued until it is made again under
            // the newest key (`reissueEpochRefusals`, after the fetch this asks for).
            let refused = keepingEpochRefusals(outcome.refused, in: name)
            if !refused.isEmpty {
                for (id, why) in refused.sorted(by: { $0.key < $1.key }) {
                    state.zones[name]?.rejected.append(id)
                    done.insert(id)
                    report.rejected.append((id, why.description))
                }
                // The refused change is in this device's copy only: the list is fetched anew
                // when it can be (Spec/SYNC.md §7.3 step 5), without it.
                state.zones[name]?.refetchWanted = true
                try? save()
            }
            // Through the longest prefix of what was pending that the service now holds.
            var through: SequenceNumber? = nil
            for e in pending {
                guard done.contains(e.entry.id) else { break }
                through = e.sequence
            }
            if let through { advanceUploaded(name, to: through) }
            if let stopped = outcome.stoppedBy {
                _ = stop(on: stopped, &report, zone: name)
                return false
            }
        }
        return true
    }

    /// `entries`, in order, cut into batches of at most `uploadBatchEntries` entries and
    /// `uploadBatchBytes` bytes of encodings; a larger entry goes alone (Spec/SYNC.md §7.3 step 4),
    /// and so does a sealed list's key record (Spec/SEALING.md §5.1).
    func uploadBatches(_ entries: [JournalEntry]) -> [[JournalEntry]] {
        var batches: [[JournalEntry]] = []
        var batch: [JournalEntry] = []
        var bytes = 0
        var alone = false
        for e in entries {
            let size = EntryCodec.encode(e).count
            let isKeyRecord = if case .opaque(EpochKeyRecord.kind, _) = e.operation { true } else { false }
            defer { alone = isKeyRecord }
            if !batch.isEmpty && (alone || isKeyRecord || batch.count == options.uploadBatchEntries || bytes + size > options.uploadBatchBytes) {
                batches.append(batch)
                batch = []
                bytes = 0
            }
            batch.append(e)
            bytes += size
        }
        if !batch.isEmpty { batches.append(batch) }
        return batches
    }

    /// What one upload achieved: what the service holds, what it refused for good, and, when it
    /// gave up before the end (a busy service, retries exhausted), why: the rest stays queued.
    struct SendOutcome {
        var saved = Set<CompactID>()
        var refused: [CompactID: EntryFailure] = [:]
        var stoppedBy: SyncError?
    }

    /// Others' entries an upload's answer carried (`UploadResult.entries`): the token sent, the
    /// token and head after them, and the upload's saved ids (which follow them in the zone).
    struct Carried {
        var since: ServiceToken
        var entries: [JournalEntry]
        var token: ServiceToken
        var head: ZoneHead?
        var saved: [CompactID]
    }

    /// Applies what an upload's answer carried, as a fetched page (a compaction record in it is
    /// followed), when the list's token is still the one sent. The upload's own entries follow
    /// the carried ones in the zone, so a followed record's digest is checked without them, once
    /// the list's push is over (what it uploaded is then no longer pending).
    /// True when a record was followed: its check is pending (`followChecks`).
    /// `continuing`: a record this push followed is being checked (the carried entries come
    /// after it); else any earlier check is stale (a fetch that stopped) and goes.
    func takeCarried(_ c: Carried, in name: String, continuing: Bool, _ report: inout SyncReport) -> Bool {
        guard let z = state.zones[name], z.token == c.since, z.replacing == nil, z.toApply.isEmpty else { return false }
        if !continuing { followChecks[name] = nil }
        guard take(c.entries, token: c.token, head: c.head, in: name, &report) else {
            followChecks[name] = nil   // what is still queued is applied by the next fetch, unchecked as there
            return false
        }
        followChecks[name]?.after.formUnion(c.saved)
        return followChecks[name] != nil
    }

    /// Takes an upload's answer: the token after the device's entries, or the entries it carried
    /// and the token after them (`takeCarried`), when the list's token is still the one sent.
    /// While this push checks a record (`pushFollow`), the entries an answer saved are after it:
    /// known to be when the answer moved the token past them, else left for a fetch to place.
    func noteAnswer(_ r: UploadResult, since: ServiceToken?, in name: String, _ report: inout SyncReport) {
        let following = pushFollow[name] != nil
        var placed = false
        if let next = r.token, let since, state.zones[name]?.token == since, state.zones[name]?.replacing == nil,
           (try? Self.checked(next)) != nil {
            if r.entries.isEmpty {
                state.zones[name]?.token = next
                state.zones[name]?.head = r.head
                // Saved with the pull's state write (or the sync's last): lost in a crash, the
                // older token only fetches this device's entries back.
                placed = true
            } else {
                let c = Carried(since: since, entries: r.entries, token: next, head: r.head, saved: r.saved)
                placed = takeCarried(c, in: name, continuing: following, &report)
                if placed && !following { pushFollow[name] = true }
                if !placed && following { pushFollow[name] = false }
                return
            }
        }
        guard following, !r.saved.isEmpty else { return }
        if placed { followChecks[name]?.after.formUnion(r.saved) } else { pushFollow[name] = false }
    }

    /// One upload, with every retry it takes (Spec/SYNC.md §7): `limitExceeded` halves the batch
    /// down to single entries; a busy or rate-limited service is waited for (its `retryAfter`, or
    /// jittered exponential backoff) up to `maxAttempts` times; a partial failure retries only the
    /// entries that may succeed. Errors that concern the whole request are thrown.
    /// `carrying`: the answer may carry others' entries (§3.11), which are taken at once.
    func send(_ entries: [JournalEntry], to zone: ZoneID, carrying: Bool, _ report: inout SyncReport) async throws(SyncError) -> SendOutcome {
        var todo = entries
        var out = SendOutcome()
        var attempt = 0
        while !todo.isEmpty {
            totals.entriesSent += todo.count
            do {
                // The token the device holds goes with the upload: when the zone holds nothing
                // after it but these entries, the answer moves the token past them (§3.11).
                // Others' entries after it come in the answer too, a few of them (a compaction
                // record among them): then this list needs no fetch.
                let since = state.zones[zone.storeName].flatMap { $0.replacing == nil && $0.toApply.isEmpty ? $0.token : nil }
                let r = try await service.upload(todo, to: zone, since: since, carrying: carrying ? options.uploadCarries : 0)
                out.saved.formUnion(r.saved)
                todo = []
                noteAnswer(r, since: since, in: zone.storeName, &report)
            } catch {
                switch error {
                case .limitExceeded where todo.count > 1:
                    let half = todo.count / 2
                    for part in [Array(todo[..<half]), Array(todo[half...])] {
                        let o = try await send(part, to: zone, carrying: carrying, &report)
                        out.saved.formUnion(o.saved)
                        out.refused.merge(o.refused) { x, _ in x }
                        if let stopped = o.stoppedBy {
                            out.stoppedBy = stopped
                            return out
                        }
                    }
                    todo = []
                case .limitExceeded:
                    out.refused[todo[0].id] = .invalid("larger than the service takes")
                    todo = []
                case .partialFailure(let r):
                    out.saved.formUnion(r.saved)
                    if !r.saved.isEmpty && pushFollow[zone.storeName] != nil { pushFollow[zone.storeName] = false }
                    var again: [JournalEntry] = []
                    for e in todo where !r.saved.contains(e.id) {
                        switch r.failed[e.id] {
                        case .retryable?, nil: again.append(e)
                        case let f?: out.refused[e.id] = f
                        }
                    }
                    todo = again
                    if !todo.isEmpty {
                        attempt += 1
                        guard attempt < options.maxAttempts else {
                            out.stoppedBy = .serviceBusy(retryAfter: nil)
                            return out
                        }
                        await backoff(attempt: attempt, retryAfter: nil)
                    }
                case .rateLimited(let after), .serviceBusy(let after):
                    attempt += 1
                    guard attempt < options.maxAttempts else {
                        out.stoppedBy = error
                        return out
                    }
                    await backoff(attempt: attempt, retryAfter: after)
                default:
                    throw error
                }
            }
        }
        return out
    }
}

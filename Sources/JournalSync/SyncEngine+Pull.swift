import JournalLog
import Logging
import JournalQuery
import ListModel

extension SyncEngine {
    /// Database changes of both scopes, then each changed zone's changes (Spec/SYNC.md §7, pull).
    /// `only`: the lists to fetch (all by default); the databases are read whole either way.
    func pull(_ report: inout SyncReport, only: Set<String>? = nil) async {
        // Both databases' first pages in one request; an expired token, or a page that asks for
        // more, goes on database by database.
        let tokens = DatabaseTokens(private: state.databaseTokens[.private], shared: state.databaseTokens[.shared])
        var first: BothDatabasesPage? = nil
        do {
            first = try await retrying { () async throws(SyncError) -> BothDatabasesPage in
                try await service.fetchDatabaseChanges(since: tokens, limit: options.databasePageLimit)
            }
            for scope in DatabaseScope.allCases { _ = try Self.checked(first![scope].token) }
        } catch {
            if case .tokenExpired = error { first = nil } else if stop(on: error, &report) { return } else { first = nil }
        }
        for scope in DatabaseScope.allCases {
            guard await pullDatabase(scope, first: first?[scope], &report) else { return }
        }
        await fetchMarked(state.zones.keys.sorted().filter { only?.contains($0) ?? true }, &report)
    }

    /// Fetches those of `names` that have something to fetch (marked, being replaced, queued to
    /// apply, or wanting a re-fetch), in order, until the sync may not continue.
    func fetchMarked(_ names: [String], _ report: inout SyncReport) async {
        for name in names {
            guard let z = state.zones[name], !z.pendingDelete,
                  z.needsFetch || z.replacing != nil || !z.toApply.isEmpty || z.refetchWanted else { continue }
            await fetchZone(name, &report)
            if !report.mayContinue { return }
        }
    }

    /// The hinted zones' changes, with no database request (`sync(hinted:)`); a hint naming a
    /// zone this device does not sync makes it the full pull.
    func pull(hinted: [ZoneHint], _ report: inout SyncReport) async {
        guard hinted.allSatisfy({ state.zones[$0.zone.storeName] != nil }) else { return await pull(&report) }
        for hint in hinted {
            let name = hint.zone.storeName
            guard let z = state.zones[name], !z.pendingDelete else { continue }
            let current = hint.head != nil && z.head == hint.head && z.token != nil && z.replacing == nil
                && store.zone(name)?.isDeleted == false
            if !current { state.zones[name]?.needsFetch = true }
        }
        await fetchMarked(Set(hinted.map(\.zone.storeName)).sorted(), &report)
    }

    /// One database's changes. Zones gone are removed locally first, then the changed ones are
    /// marked for fetching together with the new token, in one state write. False: stop.
    func pullDatabase(_ scope: DatabaseScope, first: DatabaseChangesPage? = nil, _ report: inout SyncReport) async -> Bool {
        var token = state.databaseTokens[scope]
        var changed = Set<ZoneID>()
        var heads: [ZoneID: ZoneHead] = [:]
        var gone: [ZoneGone] = []
        var fresh = token == nil
        var given = first
        while true {
            let page: DatabaseChangesPage
            do {
                if let g = given {
                    page = g
                    given = nil
                } else {
                    page = try await retrying { () async throws(SyncError) -> DatabaseChangesPage in
                        try await service.fetchDatabaseChanges(scope, since: token, limit: options.databasePageLimit)
                    }
                }
                _ = try Self.checked(page.token)
            } catch {
                if case .tokenExpired = error, !fresh {
                    // Start the database over: every zone is listed, and those not listed are gone.
                    (token, fresh, changed, gone) = (nil, true, [], [])
                    continue
                }
                return !stop(on: error, &report)
            }
            changed.formUnion(page.changed)
            heads.merge(page.heads) { _, later in later }
            gone += page.deleted
            token = page.token
            if !page.moreComing { break }
        }
        if fresh {
            // A full listing: a zone of this scope the service no longer lists is gone.
            for (name, z) in state.zones.sorted(by: { $0.key < $1.key }) where z.scope == scope && z.existsOnService && !changed.contains(z.zone) {
                if !gone.contains(where: { $0.zone.storeName == name }) { gone.append(ZoneGone(zone: z.zone, reason: .deleted)) }
            }
        }
        for g in gone where state.zones[g.zone.storeName] != nil || store.zone(g.zone.storeName)?.isDeleted == false {
            // A zone gone, then back (created again) in the same range, is fetched anew.
            if changed.contains(g.zone) { continue }
            removeLocal(g.zone.storeName, reason: g.reason, &report)
        }
        for zone in changed.sorted() {
            var z = state.zones[zone.storeName] ?? SyncState.Zone(zone: zone, scope: scope)
            if z.pendingDelete { continue }
            // The head this device's token covers already (its own upload, §3.11): nothing new.
            let current = z.head != nil && heads[zone] == z.head && z.token != nil && z.replacing == nil
                && store.zone(zone.storeName)?.isDeleted == false
            if !current { z.needsFetch = true }
            z.existsOnService = true
            state.zones[zone.storeName] = z
            if store.zone(zone.storeName)?.isDeleted != false {
                do { try store.createZone(zone.storeName) } catch {
                    note("cannot create the local list: \(error)", zone: zone.storeName, &report)
                }
            }
        }
        state.databaseTokens[scope] = token
        do { try save() } catch {
            note("\(error)", zone: nil, &report)
            return false
        }
        return true
    }

    /// Removes a zone the service no longer gives this account: its local copy and its state.
    /// Not a list this device keeps to itself (local-only): the service's copy that went is one
    /// this device took off it (§5.2).
    func removeLocal(_ name: String, reason: ZoneGoneReason, _ report: inout SyncReport) {
        if state.zones[name]?.localOnly == true { return }
        if let info = store.zone(name), !info.isDeleted {
            _ = try? store.deleteZone(name, reason: reason == .purged ? .purged : .deleted)
        }
        if let z = state.zones[name] {
            report.gone.append(ZoneGone(zone: z.zone, reason: reason))
        } else if let id = ZoneID(storeName: name) {
            report.gone.append(ZoneGone(zone: id, reason: reason))
        }
        state.zones[name] = nil
        try? save()
    }

    /// A zone's changes, page by page: each into the to-apply queue with its token, then into the
    /// log (or, while shopping, held back).
    func fetchZone(_ name: String, _ report: inout SyncReport) async {
        guard let z = state.zones[name] else { return }
        // A first fetch is a re-fetch: the service's copy, with its history (a list compacted
        // before this device joined holds purged events only there).
        // While shopping the visible list does not move: a re-fetch (which replaces it) waits
        // for shopping to end; one already under way finishes.
        if z.replacing == nil && z.token == nil && z.toApply.isEmpty && z.shopping {
            report.waitingForShopping.append(z.zone)
            return
        }
        if z.replacing == nil && z.token == nil && z.toApply.isEmpty { refetchCauses[name] = refetchCauses[name] ?? .firstFetch }
        if z.replacing != nil || (z.token == nil && z.toApply.isEmpty) { return await refetch(name, &report) }
        if followChecksAwaitingFetch.remove(name) == nil { followChecks[name] = nil }
        if !z.toApply.isEmpty {
            applyQueued(name, &report)
            // What could not be applied stays queued, and the token stays with it.
            if state.zones[name]?.toApply.isEmpty == false { return }
        }
        while true {
            guard let z = state.zones[name] else { return }
            var limit = options.pageLimit
            if z.shopping {
                // `held` is bounded: at the bound the rest waits on the service (fetched once
                // held entries are applied or shopping ends).
                let room = options.maxHeldEntries - z.held.count
                guard room > 0 else {
                    report.waitingForShopping.append(z.zone)
                    state.zones[name]?.needsFetch = true
                    try? save()
                    return
                }
                limit = min(limit, room)
            }
            let page: ZoneChangesPage
            do {
                page = try await retrying { () async throws(SyncError) -> ZoneChangesPage in
                    try await service.fetchZoneChanges(z.zone, since: z.token, limit: limit)
                }
                _ = try Self.checked(page.token)
            } catch {
                switch error {
                case .tokenExpired:
                    if z.shopping {   // after shopping (needsFetch stays set)
                        report.waitingForShopping.append(z.zone)
                        return
                    }
                    refetchCauses[name] = .tokenExpired
                    return await refetch(name, &report)
                case .zoneDeleted(let reason): return removeLocal(name, reason: reason, &report)
                case .zoneNotFound:
                    if z.zone.owner == state.account && !z.existsOnService { return }
                    return removeLocal(name, reason: .deleted, &report)
                default:
                    _ = stop(on: error, &report, zone: name)
                    return
                }
            }
            // A join or a key record may leave a member without a key (`wrapMembersWithoutKey`).
            if sealing != nil, page.entries.contains(where: \.operation.changesWhoHoldsTheKey) { wrapCheckDue.insert(name) }
            guard take(page.entries, token: page.token, head: page.moreComing ? nil : page.head, in: name, &report) else { return }
            if !page.moreComing { break }
        }
        state.zones[name]?.needsFetch = false
        state.zones[name]?.lastError = nil
        try? save()
        checkFollowed(name, &report)
        // The copy holds what the service's does not: replaced now, after the fetch from the
        // token (so a list whose pushes keep failing still receives changes), unless shopping.
        await reissueEpochRefusals(name, &report)
        await wrapMembersWithoutKey(name, &report)
        if let z = state.zones[name], z.refetchWanted, !z.shopping, !z.pendingDelete, z.replacing == nil {
            refetchCauses[name] = refetchCauses[name] ?? .conflict
            await refetch(name, &report, wanted: true)
        }
    }

    /// Takes fetched entries and the token after them (`head`: the zone's head with it, nil when
    /// more is coming): queued with the token, then applied (while shopping, others' entries are
    /// held instead). False when something stopped it: the state was not saved, or what is
    /// queued could not all be applied (it stays queued, with the token).
    func take(_ entries: [JournalEntry], token: ServiceToken, head: ZoneHead?, in name: String, _ report: inout SyncReport) -> Bool {
        guard let z = state.zones[name] else { return false }
        guard !entries.isEmpty else {
            if z.token != token || z.head != head {
                state.zones[name]?.token = token
                state.zones[name]?.head = head
                try? save()
            }
            return true
        }
        if z.shopping {
            // This device's own changes come back too: they are applied (a no-op), not held.
            // Others' changes to what the list shows apply at once; the rest is held (§7.8).
            let (_, hold) = ShoppingHold.split(entries.filter { $0.author != replica }, shown: shownItems(name),
                                               holdingARecord: z.held.contains { ShoppingHold.isBarrier($0.operation) })
            let held = Set(hold.map(\.id))
            state.zones[name]?.held += hold
            state.zones[name]?.toApply = entries.filter { !held.contains($0.id) }
            report.held += hold.count
        } else {
            state.zones[name]?.toApply = entries
        }
        state.zones[name]?.token = token
        state.zones[name]?.head = head
        guard (try? save()) != nil else { return false }
        applyQueued(name, &report)
        if !z.shopping { noteAfterFollowed(name, entries) }
        return state.zones[name]?.toApply.isEmpty != false
    }

    /// The items the list shows now (marked-off ones included); empty when it cannot be read
    /// (then every change to an item is held, as before shopping could show any).
    func shownItems(_ name: String) -> Set<CompactID> {
        guard let state = try? ListQuery(store: store, fs: store.fileSystem).materialise(name).state else { return [] }
        return Set(state.items.map(\.id))
    }

    /// Appends the to-apply queue to the local log (idempotent by id), then empties it. A
    /// compaction record in it is followed first (Spec/SYNC.md §6.7): the entries before it are
    /// appended, the purge it describes is applied to the local copy, then it and the rest go
    /// on. What is not yet appended stays queued across each step, so a crash repeats only
    /// idempotent work.
    func applyQueued(_ name: String, _ report: inout SyncReport) {
        guard let entries = state.zones[name]?.toApply, !entries.isEmpty else { return }
        guard entries.contains(where: CompactionRecord.isRecord) else {
            applyPlain(name, &report)
            return
        }
        var rest = entries[...]
        while let first = rest.first {
            var cut = rest.firstIndex(where: CompactionRecord.isRecord) ?? rest.endIndex
            if cut == rest.startIndex {
                guard follow(first, in: name, &report) else {
                    state.zones[name]?.toApply = Array(rest)
                    try? save()
                    return
                }
                cut = rest.dropFirst().firstIndex(where: CompactionRecord.isRecord) ?? rest.endIndex
            }
            state.zones[name]?.toApply = Array(rest[..<cut])
            guard applyPlain(name, then: Array(rest[cut...]), &report) else { return }
            rest = rest[cut...]
        }
    }

    /// Follows one compaction record (Spec/SYNC.md §6.7): the local copy drops what the service
    /// purged and takes its `place` entries. A record that does not read, or a copy that cannot
    /// follow it, makes the list be fetched anew, and the report says why. The state digest the
    /// record names is compared at the end of the fetch (`checkFollowed`), once no later record
    /// can have changed the entries it describes. False when the local store failed: nothing is
    /// changed, the record and what follows stay queued, and a later sync applies them (a disk
    /// that failed once is no reason to fetch the list anew).
    func follow(_ e: JournalEntry, in name: String, _ report: inout SyncReport) -> Bool {
        let record: CompactionRecord
        do throws(CodecError) {
            guard let r = try CompactionRecord.of(e) else { return true }
            record = r
        } catch {
            cannotFollow(name, "the service's compaction record \(e.id) does not read (\(error))", &report)
            return true
        }
        do throws(QueryError) {
            let outcome = try CompactionFollower(query: ListQuery(store: store)).follow(record, in: name)
            if outcome.missing > 0 {
                cannotFollow(name, "the service's compaction to \(record.to) purged \(outcome.missing) entries this copy never held: it is older than the retention", &report)
                return true
            }
            report.compactionsFollowed += 1
            options.logger.info("followed the service's compaction", metadata: ["list": "\(name)", "to": "\(record.to)", "purged": "\(outcome.purged + outcome.placed)"])
            report.purgedByFollowing += outcome.purged + outcome.placed
            // Compared at the end of the fetch, without what came after the record.
            followChecks[name] = (record.digest, record.to, [])
            return true
        } catch {
            if Self.isLocalFailure(error) {
                note("cannot follow the service's compaction to \(record.to) yet: \(error)", zone: name, &report)
                return false
            }
            cannotFollow(name, "the list cannot follow the service's compaction to \(record.to) (\(error))", &report)
            return true
        }
    }

    /// Whether following failed because the local store did (it is tried again), rather than
    /// because this copy cannot follow (it is fetched anew).
    nonisolated static func isLocalFailure(_ error: QueryError) -> Bool {
        switch error {
        case .storage, .feed(.storage): true
        default: false
        }
    }

    /// Notes the ids of a fetched page that lie after the last compaction record followed in
    /// this fetch: they are not part of the state the record's digest describes.
    func noteAfterFollowed(_ name: String, _ entries: [JournalEntry]) {
        if let last = entries.lastIndex(where: CompactionRecord.isRecord) {
            if followChecks[name] != nil { followChecks[name]!.after = Set(entries[(last + 1)...].map(\.id)) }
        } else if followChecks[name] != nil {
            followChecks[name]!.after.formUnion(entries.map(\.id))
        }
    }

    /// After a zone's whole fetch: the copy as of the last record followed in it must have the
    /// record's digest. That copy is the log without what the service holds after the record (the
    /// pages after it, this device's own uploads among them) and without what the service never
    /// took (pending or refused changes of this device).
    func checkFollowed(_ name: String, _ report: inout SyncReport) {
        guard let check = followChecks.removeValue(forKey: name) else { return }
        // A newer version's changes may change the state the record describes: not computable here.
        guard state.zones[name]?.holdsNewerChanges != true else { return }
        var skip = check.after
        skip.formUnion(((try? pendingLocal(name))?.entries ?? []).map(\.entry.id))
        skip.formUnion(state.zones[name]?.rejected ?? [])
        var reducer = ListReducer(zone: name)
        do {
            for (_, e) in try ListQuery(store: store).entries(name).entries where !skip.contains(e.id) { _ = reducer.apply(e) }
        } catch { return }
        let got = reducer.stateDigest()
        guard got != check.want else { return }
        cannotFollow(name, "after following the service's compaction to \(check.to) the list's digest is \(String(got, radix: 16)), not the service's \(String(check.want, radix: 16))", &report)
    }

    private func cannotFollow(_ name: String, _ why: String, _ report: inout SyncReport) {
        note(why + "; it is fetched anew", zone: name, &report)
        state.zones[name]?.refetchWanted = true
        refetchCauses[name] = .cannotFollow
        try? save()
    }

    /// Appends the to-apply queue to the local log (idempotent by id); then the queue is `tail`.
    /// Returns whether all of it was appended; otherwise what was not stays queued, in order,
    /// before `tail`.
    @discardableResult
    func applyPlain(_ name: String, then tail: [JournalEntry] = [], _ report: inout SyncReport) -> Bool {
        let entries = state.zones[name]?.toApply ?? []
        for e in entries { hlc.observe(e.clock) }
        if !entries.isEmpty, store.zone(name)?.isDeleted != false { _ = try? store.createZone(name) }
        var todo = entries
        while !todo.isEmpty {
            do {
                try store.append(batch: todo, replicated: true)
                report.applied += todo.count { $0.author != replica }
                todo = []
            } catch {
                if case .idConflict(_, let id, _) = error {
                    // The service and this device hold one id with two contents: keep ours, say so.
                    note("entry \(id) arrived with content other than the local entry of that id; kept the local one until the list is fetched anew", zone: name, &report)
                    todo.removeAll { $0.id == id }
                    state.zones[name]?.refetchWanted = true
                    refetchCauses[name] = .conflict
                } else if case .batchTooLarge = error, todo.count > 1 {
                    let half = todo.count / 2
                    state.zones[name]?.toApply = Array(todo[..<half])
                    guard applyPlain(name, then: Array(todo[half...]) + tail, &report) else { return false }
                    return applyPlain(name, then: tail, &report)
                } else {
                    note("cannot apply fetched entries: \(error)", zone: name, &report)
                    state.zones[name]?.toApply = todo + tail
                    try? save()
                    return false
                }
            }
        }
        if entries.contains(where: \.operation.isNewerListChange) { state.zones[name]?.holdsNewerChanges = true }
        if !entries.isEmpty || !tail.isEmpty {
            state.zones[name]?.toApply = tail
            try? save()
        }
        return true
    }

    // MARK: Re-fetch

    /// After `tokenExpired` (the service compacted the zone, or this device was away longer
    /// than it keeps changes): push what is pending, fetch the service's copy from no token into
    /// a new local incarnation, install the service's history beside it, and put local changes
    /// not yet uploaded back on top. Resumable at every step (`SyncState.Replacing`).
    /// `wanted`: asked for by `refetchWanted`, not forced by the service: while shopping it waits.
    func refetch(_ name: String, _ report: inout SyncReport, wanted: Bool = false) async {
        guard var z = state.zones[name] else { return }
        if z.replacing == nil {
            options.logger.notice("fetching the list anew", metadata: ["list": "\(name)", "cause": "\(refetchCauses[name]?.rawValue ?? "requested")"])
        }
        if z.replacing == nil {
            guard await pushZone(name, &report) else {
                note("the list must be fetched anew, after its pending changes are uploaded", zone: name, &report)
                return
            }
            // The push awaited the service: the list may have been deleted here meanwhile (its
            // deletion goes up with the next push), or shopping begun.
            guard let now = state.zones[name], !now.pendingDelete, !(wanted && now.shopping) else { return }
            let pending = ((try? pendingLocal(name))?.entries ?? []).map(\.entry)
            z = state.zones[name] ?? z
            z.replacing = SyncState.Replacing(oldIncarnation: store.zone(name).map { $0.isDeleted ? 0 : $0.incarnation } ?? 0,
                                              pendingLocal: pending)
            z.toApply = []
            z.held = []
            state.zones[name] = z
            guard (try? save()) != nil else { return }
        }
        guard var r = state.zones[name]?.replacing, state.zones[name]?.pendingDelete != true else { return }
        // From the service's snapshot when it has one: the list costs what it holds now, and its
        // history comes when asked for (`fetchHistory`).
        var based = r.token != nil && store.zone(name).map { Self.firstIsBase(store, name, $0) } == true
        if r.token == nil {
            switch await installBase(name, z.zone, &r, &report) {
            case .installed: based = true
            case .none: break
            case .stopped: return
            }
        }
        // The old copy goes (once): a new incarnation receives the service's.
        if let info = store.zone(name), !info.isDeleted, info.incarnation == r.oldIncarnation {
            do { try store.deleteZone(name, reason: .purged) } catch {
                return note("cannot replace the local copy: \(error)", zone: name, &report)
            }
        }
        if store.zone(name)?.isDeleted != false {
            do { try store.createZone(name) } catch { return note("cannot replace the local copy: \(error)", zone: name, &report) }
        }
        var lastHead: ZoneHead? = nil
        while true {
            let page: ZoneChangesPage
            do {
                page = try await retrying { () async throws(SyncError) -> ZoneChangesPage in
                    try await service.fetchZoneChanges(z.zone, since: r.token, limit: options.pageLimit)
                }
                _ = try Self.checked(page.token)
            } catch {
                switch error {
                case .tokenExpired:
                    // Compacted again meanwhile: start over into yet another incarnation.
                    r = SyncState.Replacing(oldIncarnation: store.zone(name)?.incarnation ?? 0, pendingLocal: r.pendingLocal)
                    state.zones[name]?.replacing = r
                    try? save()
                    return await refetch(name, &report)
                case .zoneDeleted(let reason): return removeLocal(name, reason: reason, &report)
                case .zoneNotFound: return removeLocal(name, reason: .deleted, &report)
                default:
                    _ = stop(on: error, &report, zone: name)
                    return
                }
            }
            if !page.entries.isEmpty {
                for e in page.entries { hlc.observe(e.clock) }
                // A compaction since the copy's token (it is followed, SYNC.md §6.7) is applied
                // before what comes after it, as in a fetch.
                var rest = page.entries[...]
                while !rest.isEmpty {
                    var cut = rest.firstIndex(where: CompactionRecord.isRecord) ?? rest.endIndex
                    if cut == rest.startIndex {
                        // Not yet (a local failure): the re-fetch resumes from its saved token.
                        guard follow(rest.first!, in: name, &report) else { return }
                        cut = rest.dropFirst().firstIndex(where: CompactionRecord.isRecord) ?? rest.endIndex
                    }
                    do { try store.append(batch: Array(rest[..<cut]), replicated: true) } catch {
                        return note("cannot store the fetched copy: \(error)", zone: name, &report)
                    }
                    rest = rest[cut...]
                }
                report.applied += page.entries.count { $0.author != replica }
                if page.entries.contains(where: \.operation.isNewerListChange) { state.zones[name]?.holdsNewerChanges = true }
            }
            r.token = page.token
            lastHead = page.moreComing ? nil : page.head
            state.zones[name]?.replacing = r
            // The last page, empty (a list installed from a snapshot, usually): its token is
            // saved with the re-fetch's end below; lost in a crash, the page is asked again.
            if !page.moreComing && page.entries.isEmpty { break }
            guard (try? save()) != nil else { return }
            if !page.moreComing { break }
        }
        // The history the service keeps (purged events live only there), with what was fetched;
        // a list installed from a snapshot fetches it when asked.
        var historyProblem: String? = nil
        if !based { do {
            if let why = try await fetchHistoryPages(name, z.zone) { return note(why, zone: name, &report) }
        } catch {
            guard case .invalidRequest(let why) = error else {
                _ = stop(on: error, &report, zone: name)
                return
            }
            // The service cannot give the history (only its operator can repair it): the copy
            // is whole without it, so the re-fetch finishes and says so, rather than holding the
            // list (and its uploads) back for good.
            historyProblem = "the list was fetched without its history: \(why)"
            note(historyProblem!, zone: name, &report)
        } }
        guard let info = store.zone(name), !info.isDeleted else { return }
        let installed = info.lastChange
        // Local changes the service has not taken go back on top (those made while the copy came
        // in are there already), and everything fetched counts as uploaded: it came from the
        // service. Never past a local change.
        var firstLocal = installed + 1
        for e in r.pendingLocal {
            do { firstLocal = min(firstLocal, try store.append(e)) } catch {
                return note("cannot put local changes back: \(error)", zone: name, &report)
            }
        }
        advanceUploaded(name, to: min(installed, firstLocal - 1))
        state.zones[name]?.token = r.token
        state.zones[name]?.head = lastHead
        state.zones[name]?.replacing = nil
        state.zones[name]?.refetchWanted = false
        // The refused changes are not in the new copy (pendingLocal left them out).
        state.zones[name]?.rejected = []
        state.zones[name]?.needsFetch = false
        state.zones[name]?.existsOnService = true
        state.zones[name]?.lastError = historyProblem.map(Self.bounded)
        let cause = refetchCauses.removeValue(forKey: name) ?? .requested
        if cause == .firstFetch { report.firstFetched.append(z.zone) } else { report.refetched.append(z.zone) }
        report.refetchCauses[cause, default: 0] += 1
        followChecks[name] = nil
        if based { historyWanted.insert(name) }
        try? save()
    }

    /// Whether the zone's live incarnation starts from a base (its first entry is one).
    nonisolated static func firstIsBase(_ store: JournalStore, _ name: String, _ info: ZoneInfo) -> Bool {
        guard !info.isDeleted, let first = try? store.changes(in: name, since: nil, limit: 1).entries.first else { return false }
        return ListBase.isBase(first.entry)
    }
}

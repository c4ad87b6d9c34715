import JournalLog
import JournalQuery
import ListModel

extension SyncEngine {
    /// What installing the service's snapshot came to (Spec/SYNC.md §7.5 step 3).
    enum BaseInstall {
        /// The new incarnation starts from the snapshot; `replacing.token` is after it.
        case installed
        /// The service has none to give, or it cannot be used: the list's entries are fetched.
        case none
        /// The re-fetch stops here (the list went away, the service is unreachable, a local failure).
        case stopped
    }

    /// Fetches the zone's snapshot and, when there is one, makes a new local incarnation whose
    /// first entry is it (a `ListBase`), and saves the token after it. From the answer on nothing
    /// awaits until the state is saved, so no local change lands in the new incarnation before
    /// its base (a base after other entries would be ignored). An incarnation an earlier attempt
    /// made (its token never saved) is replaced too: the changes made here meanwhile are in
    /// `pendingLocal` and go back on top at the end.
    func installBase(_ name: String, _ zone: ZoneID, _ r: inout SyncState.Replacing, _ report: inout SyncReport) async -> BaseInstall {
        let snapshot: ZoneSnapshot?
        do {
            snapshot = try await retrying { () async throws(SyncError) -> ZoneSnapshot? in try await service.fetchZoneSnapshot(zone) }
            if let snapshot { _ = try Self.checked(snapshot.token) }
        } catch {
            switch error {
            case .zoneDeleted(let reason): removeLocal(name, reason: reason, &report)
            case .zoneNotFound: removeLocal(name, reason: .deleted, &report)
            case .invalidRequest(let why):
                note("the service's snapshot was refused (\(why)); fetching the list's entries instead", zone: name, &report)
                return .none
            default: _ = stop(on: error, &report, zone: name)
            }
            return .stopped
        }
        guard let snapshot else { return .none }
        let checked: (header: SnapshotHeader, reducer: ListReducer)
        do { checked = try ListBase.check(snapshot.bytes, zone: name) } catch {
            note("the service's snapshot cannot be installed (\(error)); fetching the list's entries instead", zone: name, &report)
            return .none
        }
        // The list may have been deleted here, or its re-fetch finished, while the answer came.
        guard state.zones[name]?.replacing != nil, state.zones[name]?.pendingDelete != true else { return .stopped }
        let base = ListBase.entry(snapshot: snapshot.bytes, header: checked.header, zone: name, wallTime: clock.now())
        do {
            if let info = store.zone(name), !info.isDeleted { try store.deleteZone(name, reason: .purged) }
            let incarnation = try store.createZone(name)
            let at = try store.append(base, replicated: true)
            // Decoded once to check it: the list's first read starts from it.
            BaseCache.shared.put(store: store.path, zone: name, incarnation: incarnation, sequence: at, id: base.id, reducer: checked.reducer)
        } catch {
            note("cannot install the service's snapshot: \(error)", zone: name, &report)
            return .stopped
        }
        // Changes made here from now on order after everything the snapshot holds.
        hlc.observe(checked.reducer.latestClock)
        r.token = snapshot.token
        state.zones[name]?.replacing = r
        guard (try? save()) != nil else { return .stopped }
        report.applied += Int(checked.header.entryCount)
        return .installed
    }

    /// Fetches the history of a list installed from its service's snapshot (Spec/SYNC.md §7.5
    /// step 5), and installs it beside the log: until then `ListQuery.history` answers
    /// `historyNotFetched` rather than a short history. Nothing to do (no request) for a list whose
    /// history is whole here already. Errors: the service's (`SyncError`), or `invalidRequest` naming a local
    /// failure.
    public func fetchHistory(_ zone: ZoneID) async throws(SyncError) {
        let name = zone.storeName
        guard state.zones[name] != nil else { throw .zoneNotFound }
        // Whole here already: fetched before, or never installed from a snapshot.
        guard ListQuery(store: store).lacksHistoryBeforeBase(name) else {
            historyWanted.remove(name)
            return
        }
        if let why = try await fetchHistoryPages(name, zone) { throw .invalidRequest(why) }
        historyWanted.remove(name)
    }

    /// The histories of lists installed from a snapshot, fetched once the sync's lists are
    /// usable. A failure leaves the list's history wanted for a later sync and is reported; an
    /// unreachable service stops it.
    func fetchWantedHistories(_ report: inout SyncReport) async {
        for name in historyWanted.sorted() {
            guard let z = state.zones[name], z.replacing == nil, !z.pendingDelete else {
                if state.zones[name] == nil { historyWanted.remove(name) }
                continue
            }
            do { try await fetchHistory(z.zone) } catch {
                if stop(on: error, &report, zone: name) { return }
            }
        }
    }

    /// Fetches the zone's history page by page (Spec/SYNC.md §3.12) into a complete piece at the
    /// list's last change, with the list's own entries through it, and raises the local mark
    /// there, so `history` reads the piece and the log after it. Memory holds one page, never the
    /// whole history. A compaction between pages does not restart the read (the service goes on
    /// from the cursor); a list made again between them (`tokenExpired`) is read again from its
    /// start, a few times. Returns nil, or why the history could not
    /// be installed (a local failure, or pages that do not decode); the service's errors are thrown.
    func fetchHistoryPages(_ name: String, _ zone: ZoneID) async throws(SyncError) -> String? {
        var attempt = 0
        while true {
            attempt += 1
            guard let info = store.zone(name), !info.isDeleted else { return "the list is not on this device" }
            let installed = info.lastChange
            let q = ListQuery(store: store, fs: store.fileSystem)
            let install: HistoryInstall
            do { install = try HistoryInstall(q, zone: name, incarnation: info.incarnation, sequence: installed) } catch {
                return "cannot install the service's history: \(error)"
            }
            var cursor: HistoryCursor? = nil
            do {
                repeat {
                    let after = cursor
                    let page = try await retrying { () async throws(SyncError) -> HistoryPage in try await service.fetchZoneHistoryPage(zone, after: after) }
                    if let why = Self.add(page: page.bytes, of: name, to: install) {
                        install.abandon()
                        return why
                    }
                    cursor = page.next
                } while cursor != nil
            } catch {
                install.abandon()
                guard case .tokenExpired = error else { throw error }
                guard attempt < 3 else { throw .serviceBusy(retryAfter: nil) }
                continue
            }
            // The list may have been replaced or deleted while the pages came.
            guard let now = store.zone(name), !now.isDeleted, now.incarnation == info.incarnation else {
                install.abandon()
                return "the list changed while its history came"
            }
            do {
                for (s, e) in try q.entries(name).entries where s <= installed { try install.add(e) }
                try install.finish()
                if installed > now.lowWaterMark { try store.setLowWaterMark(name, to: installed) }
            } catch {
                install.abandon()
                return "cannot install the service's history: \(error)"
            }
            return nil
        }
    }

    /// Adds a page's events to the history being installed; nil, or why not.
    static func add(page bytes: [UInt8], of name: String, to install: HistoryInstall) -> String? {
        guard !bytes.isEmpty else { return nil }
        do throws(ActivityLogError) {
            guard let (header, start) = try HistoryPieceCodec.startOfEvents(bytes) else {
                return "the service sent a history page in an older encoding"
            }
            guard header.zone == name else { return "the service's history names another list" }
            var failure: QueryError? = nil
            _ = try HistoryPieceCodec.events(bytes, from: start) { e in
                do throws(QueryError) { try install.add(e) } catch {
                    failure = error
                    return false
                }
                return true
            }
            return failure.map { "cannot install the service's history: \($0)" }
        } catch {
            return "the service's history page does not decode: \(error)"
        }
    }
}

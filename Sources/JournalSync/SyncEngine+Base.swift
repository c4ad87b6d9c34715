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
        guard let info = store.zone(name), info.lowWaterMark == 0, Self.firstIsBase(store, name, info) else {
            historyWanted.remove(name)
            return
        }
        let blob = try await retrying { () async throws(SyncError) -> [UInt8] in try await service.fetchZoneHistory(zone) }
        if let why = installHistory(name, blob) { throw .invalidRequest(why) }
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

    /// Installs a history the service sent as the zone's history piece at its last change (and
    /// raises the local mark to it, so `history` reads the piece and the log after it); nil, or
    /// why it could not.
    func installHistory(_ name: String, _ blob: [UInt8]) -> String? {
        guard let info = store.zone(name), !info.isDeleted else { return "the list is not on this device" }
        let installed = info.lastChange
        let q = ListQuery(store: store, fs: store.fileSystem)
        do {
            var log = blob.isEmpty ? ActivityLog(zone: name) : try ActivityLogCodec.decode(blob)
            guard log.zone == name else { return "the service's history names another list" }
            for (s, e) in try q.entries(name).entries where s <= installed { _ = log.record(e) }
            try q.writeHistory(name, history: log, incarnation: info.incarnation, sequence: installed)
            if installed > info.lowWaterMark { try store.setLowWaterMark(name, to: installed) }
            return nil
        } catch {
            return "cannot install the service's history: \(error)"
        }
    }
}

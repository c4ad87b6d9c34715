import JournalLog
import JournalQuery
import ListModel

extension SyncEngine {
    // MARK: Lists on this device only (Spec/SYNC.md §5.2)

    /// Stops sharing a list this account owns. With `keepingItOnThisDeviceOnly`, the list leaves
    /// the service as well: every participant's devices drop it (`sharingStopped`), so do this
    /// account's other devices (`deleted`), and this device keeps it, history and all, as a list
    /// no sync sends anywhere, until `share(_:with:)` puts it on the service again. Without, the
    /// list stays on the service and on every device of this account (`stopSharing(_:)`).
    ///
    /// Changes held back while shopping are applied first: nothing another person wrote is lost.
    public func stopSharing(_ zone: ZoneID, keepingItOnThisDeviceOnly: Bool) async throws(SyncEngineError) {
        guard keepingItOnThisDeviceOnly else { return try await stopSharing(zone) }
        guard let z = state.zones[zone.storeName], !z.pendingDelete else { throw .noSuchList(zone.storeName) }
        guard zone.owner == state.account else {
            throw .invalid("only the list's owner, \(QuotedInput.quote(zone.owner)), takes \(QuotedInput.quote(zone.storeName)) off the service")
        }
        if z.shopping { try setShopping(false, in: zone) }
        var report = SyncReport()
        applyQueued(zone.storeName, &report)
        if z.existsOnService {
            do {
                try await service.stopSharing(zone)
                try await service.deleteZone(zone)
            } catch {
                switch error {
                case .zoneNotFound, .zoneDeleted: break        // gone already: nothing left to take off
                default: throw .service(error)
                }
            }
        }
        var kept = SyncState.Zone(zone: zone, scope: .private)
        kept.localOnly = true
        kept.rejected = state.zones[zone.storeName]?.rejected ?? []
        state.zones[zone.storeName] = kept
        try save()
    }

    /// Whether a local-only list must start again as this device's own copy before it goes up:
    /// it holds entries this device may not upload (others' and other devices', §3.2) or sent
    /// already (to the zone the service no longer has).
    func needsOwnCopy(_ zone: ZoneID) -> Bool {
        guard let info = store.zone(zone.storeName), !info.isDeleted else { return false }
        if uploadedMark(zone.storeName, incarnation: info.incarnation) > 0 { return true }
        guard let all = try? ListQuery(store: store, fs: store.fileSystem).entries(zone.storeName) else { return true }
        return all.entries.contains { $0.1.author != replica }
    }

    /// Starts the list again, on this device, as this device's own entries of the list as it
    /// stands: its name, colour, and items in order with their marks (the same item ids). A list
    /// shared again is this copy; the history of who did what before stays with the people who
    /// saw it (SYNC.md §5.2). Crash-safe: the new entries are saved in the engine's state (its
    /// to-apply queue) before the old copy is dropped, and a restart appends them to the new
    /// incarnation (or, had the old copy not been dropped yet, to it: the same items, and the next
    /// share starts again).
    func startAgainAsOwnCopy(_ zone: ZoneID) throws(SyncEngineError) {
        let list = try state(of: zone)
        var operations: [EntryOperation] = []
        if !list.name.isEmpty { operations.append(.rename(name: list.name)) }
        if !list.colour.isEmpty { operations.append(.recolour(colour: list.colour)) }
        var previous: CompactID?
        for item in list.items {
            operations.append(.add(item: item.id, text: item.text, after: previous))
            if item.state == .markedOff { operations.append(.markOff(item: item.id)) }
            previous = item.id
        }
        let entries = operations.map { operation in
            let now = clock.now()
            return JournalEntry(id: CompactID.random(using: &rng), zone: zone.storeName, author: replica, wallTime: now,
                                clock: hlc.tick(wallMillis: now), operation: operation)
        }
        state.zones[zone.storeName]?.toApply = entries
        try save()
        do { try store.deleteZone(zone.storeName) } catch { throw .storage(error) }
        var report = SyncReport()
        guard applyPlain(zone.storeName, &report) else { throw .invalid(report.errors.joined(separator: "; ")) }
        totals.localChanges += entries.count
    }
}

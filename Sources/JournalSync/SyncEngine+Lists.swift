import JournalLog
import JournalQuery
import ListModel

extension SyncEngine {
    // MARK: Sharing (Spec/SYNC.md §5)

    /// Invites `participant` to a list this account owns (the service must hold it: pushes first).
    /// A participant that is no account name is refused here, before anything is sent (offline
    /// too), with the name quoted and the rule.
    public func share(_ zone: ZoneID, with participant: String) async throws(SyncEngineError) -> ShareInvitation {
        try await share(zone, with: participant, preview: nil)
    }

    /// `share(_:with:)` whose invitation shows `preview` (nil: the list's name as this device
    /// holds it): a sealed list's owner gives the name it opened and its key fingerprint
    /// (`InvitationPreview.ownerKeys`, Spec/SEALING.md §4.4), which only the invitee reads.
    public func share(_ zone: ZoneID, with participant: String, preview: InvitationPreview?) async throws(SyncEngineError) -> ShareInvitation {
        if let rule = SyncNames.accountRefusal(participant) {
            throw .invalid("\(QuotedInput.quote(participant)) is not an account name: \(rule)")
        }
        var report = SyncReport()
        if state.zones[zone.storeName]?.existsOnService != true {
            // A list kept here after sharing stopped goes up as this device's copy (§5.2).
            if state.zones[zone.storeName]?.localOnly == true, needsOwnCopy(zone) { try startAgainAsOwnCopy(zone) }
            state.zones[zone.storeName]?.localOnly = false   // a local-only list goes up when shared
            _ = await pushZone(zone.storeName, &report)
        }
        let invitation: ShareInvitation
        do { invitation = try await service.shareZone(zone, with: participant) } catch { throw .service(error) }
        if let preview { return preview.attached(to: invitation) }
        let name = (try? ListQuery(store: store).materialise(zone.storeName).state.name).flatMap { $0.isEmpty ? nil : $0 } ?? zone.name
        return InvitationPreview(owner: zone.owner, listName: name).attached(to: invitation)
    }

    /// What an invitation says before it is accepted (`InvitationPreview`): who invites, to which
    /// list. Read here, with no request; nil when the invitation carries none.
    public nonisolated static func preview(of invitation: ShareInvitation) -> InvitationPreview? {
        InvitationPreview(of: invitation)
    }

    /// Accepts an invitation: the list joins this device (fetched by the next pull).
    public func accept(_ invitation: ShareInvitation) async throws(SyncEngineError) -> ZoneID {
        let zone: ZoneID
        do { zone = try await service.acceptShare(InvitationPreview.detached(invitation)) } catch { throw .service(error) }
        var z = state.zones[zone.storeName] ?? SyncState.Zone(zone: zone, scope: .shared)
        z.needsFetch = true
        z.existsOnService = true
        z.pendingDelete = false
        state.zones[zone.storeName] = z
        if store.zone(zone.storeName)?.isDeleted != false {
            do { try store.createZone(zone.storeName) } catch { throw .storage(error) }
        }
        try save()
        return zone
    }

    /// Removes a participant from a list this account owns.
    public func remove(_ participant: String, from zone: ZoneID) async throws(SyncEngineError) {
        do { try await service.removeParticipant(participant, from: zone) } catch { throw .service(error) }
    }

    /// Who a list this account owns is shared with: members, and those invited who have not
    /// accepted yet (Spec/SYNC.md §5.2). `remove(_:from:)` withdraws one's invitation.
    public func participants(of zone: ZoneID) async throws(SyncEngineError) -> [ShareParticipant] {
        do { return try await service.fetchParticipants(zone) } catch { throw .service(error) }
    }

    /// Stops sharing a list this account owns: it leaves every participant's devices.
    public func stopSharing(_ zone: ZoneID) async throws(SyncEngineError) {
        do { try await service.stopSharing(zone) } catch { throw .service(error) }
    }

    // MARK: Shopping mode (MERGE.md §7)

    /// While shopping, remote changes to the list are stored (durably, in the engine's state) but
    /// held back from the visible list; local changes push as usual. Ending it applies them.
    public func setShopping(_ on: Bool, in zone: ZoneID) throws(SyncEngineError) {
        guard state.zones[zone.storeName] != nil else { throw .noSuchList(zone.storeName) }
        state.zones[zone.storeName]!.shopping = on
        if !on { moveHeldToApply(zone.storeName) { _ in true } }
        try save()
        if !on {
            var report = SyncReport()
            applyQueued(zone.storeName, &report)
        }
    }

    /// The held-back additions, offered as notifications (oldest first): adds from others of
    /// items the list does not show already (Spec/SYNC.md §7.8).
    public func notifications(in zone: ZoneID) -> [PendingNotification] {
        guard let held = state.zones[zone.storeName]?.held else { return [] }
        // This device's own changes come back from the service too: they are not news; nor is
        // an add of an item the local list already shows (its add is in the log, or another's).
        var pending = held.filter { $0.author != replica }
        if pending.contains(where: { $0.operation.listAdd != nil }),
           let shown = try? ListQuery(store: store, fs: store.fileSystem).materialise(zone.storeName).state {
            let items = Set(shown.items.map(\.id))
            pending.removeAll { $0.operation.listAdd.map { items.contains($0.item) } ?? false }
        }
        return ShoppingSession(applied: ListReducer(zone: zone.storeName), pending: pending).notifications
    }

    /// What the list holds back while shopping, by kind (Spec/SYNC.md §7.8): others' new items
    /// (offered as `notifications(in:)`), changes to items not shown yet, and what this version
    /// does not apply while shopping (a compaction record, and whatever follows it).
    public func heldChanges(in zone: ZoneID) -> HeldChanges {
        HeldChanges(state.zones[zone.storeName]?.held ?? [])
    }

    /// Applies the chosen held entries (by entry id) now, while shopping goes on, with the held
    /// changes to the items they add (a mark-off of a new item comes with it).
    public func applyHeld(_ ids: Set<CompactID>, in zone: ZoneID) throws(SyncEngineError) {
        guard let z = state.zones[zone.storeName] else { throw .noSuchList(zone.storeName) }
        var items = Set<CompactID>()
        for e in z.held where ids.contains(e.id) { if let add = e.operation.listAdd { items.insert(add.item) } }
        moveHeldToApply(zone.storeName) { e in
            if ids.contains(e.id) { return true }
            switch e.operation {
            case .markOff(let item), .unmark(let item), .delete(let item), .move(let item, _): return items.contains(item)
            default: return false
            }
        }
        try save()
        var report = SyncReport()
        applyQueued(zone.storeName, &report)
    }

    private func moveHeldToApply(_ name: String, where chosen: (JournalEntry) -> Bool) {
        guard var z = state.zones[name] else { return }
        let take = z.held.filter(chosen)
        z.held.removeAll(where: chosen)
        z.toApply += take
        state.zones[name] = z
    }

    // MARK: Status

    /// What `jlog sync-status` prints: queues, tokens and errors per list.
    public func status() -> SyncStatus { SyncStatus(state: state, store: store) }
}

import JournalLog
import JournalSync

/// The service's zones and sharing (`SyncService.createZone`, `.deleteZone`, `.shareZone`,
/// `.acceptShare`, `.removeParticipant`, `.stopSharing`): membership changes are written as a
/// `join`/`leave` entry in the zone and a record in `_service/members`, outside the memory's lock
/// and applied under it once durable (Spec/SYNC.md §5).
struct ServiceSharing: Sendable {
    let context: ServiceContext
    /// Signs invitations, and checks them.
    let invitations: InvitationSigner
    /// Whether an account exists (a participant must, to be invited).
    let accountExists: @Sendable (String) throws(StorageError) -> Bool
    private var store: any ServiceStorage { context.store }

    /// Creates a zone the caller owns: idempotent, within the account's zone quota.
    func createZone(caller: String, zone: ZoneID) throws(SyncError) {
        guard zone.owner == caller else { throw .invalidRequest("an account creates zones it owns (\(caller)/…) only") }
        try context.changing(zone.storeName) { () throws(SyncError) in
            try context.creatingZone(of: caller) { () throws(SyncError) in
                // A storage that does not answer is busy, never a zone to make or a quota left.
                if let info = try context.readZone(zone), !info.isDeleted { return }
                let owned: Int
                do throws(StorageError) { owned = try store.zones(ownedBy: caller).filter { !$0.isDeleted }.count } catch { throw error.syncError }
                guard owned < context.limits.maxZonesPerAccount else { throw .quotaExceeded }
                do { try store.makeZone(zone.storeName) } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
                context.hints.changed(zone.storeName, for: [caller])
            }
        }
    }

    /// Deletes a zone the caller owns: its participants leave with it, so a zone created again
    /// under the name is not shared.
    func deleteZone(caller: String, zone: ZoneID) throws(SyncError) {
        try context.changing(zone.storeName) { () throws(SyncError) in
            let read = try context.readZone(zone)   // before the memory's lock: a round trip over a database
            let (told, members) = try context.locked { () throws(SyncError) -> ([String], [String]) in
                let (kind, _) = try context.access(caller, zone, info: read)
                guard kind == .owner else { throw .invalidRequest("only the owner deletes a zone; a participant leaves it (removeParticipant)") }
                return (context.audience(zone.storeName), context.membership.members(of: zone.storeName))
            }
            for p in members { try recordMembership(p, zone: zone, member: false, reason: .deleted, by: caller) }
            do { try store.removeZone(zone.storeName) } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
            context.locked { context.purged[zone.storeName] = nil }
            context.hints.changed(zone.storeName, for: told)
        }
    }

    /// The owner's signed invitation of `participant` to a zone.
    func shareZone(caller: String, zone: ZoneID, with participant: String) throws(SyncError) -> ShareInvitation {
        // What the storage and the accounts say is read before the memory's lock (over a shared
        // database, round trips); the caller's access is checked first, so a zone it may not see
        // still answers like one that does not exist.
        let read = try context.readZone(zone)
        let (kind, info) = try context.locked { () throws(SyncError) in try context.access(caller, zone, info: read) }
        guard kind == .owner else { throw .invalidRequest("only the owner shares a zone") }
        // A lookup that failed is busy, never "no such account".
        let exists: Bool
        do throws(StorageError) { exists = participant != caller ? try accountExists(participant) : false } catch { throw error.syncError }
        guard exists else { throw .invalidRequest("no account named \(participant) to share with") }
        let full = context.locked { context.membership.members(of: zone.storeName).count >= context.limits.maxParticipants }
        if full && !context.locked({ context.membership.isMember(participant, of: zone.storeName) }) {
            throw .tooManyParticipants(limit: context.limits.maxParticipants)
        }
        let issuedAt: SequenceNumber
        do throws(StorageError) { issuedAt = try store.readHorizon() } catch { throw error.syncError }
        // Recorded, so the owner sees who is invited and has not accepted (§5.2).
        do {
            try context.appendOwnRecord(Membership.zone, kind: Membership.invitationKind,
                                        body: Membership.encodeWithdrawal(zone: zone.storeName, account: participant)) { at in
                context.membership.invite(participant, to: zone.storeName, at: at)
            }
        } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
        return invitations.issue(.init(zone: zone.storeName, incarnation: info.incarnation, participant: participant, issuedAt: issuedAt))
    }

    /// The zone's members and pending invitations, for its owner (`SyncService.fetchParticipants`).
    func participants(caller: String, zone: ZoneID) throws(SyncError) -> [ShareParticipant] {
        let read = try context.readZone(zone)
        return try context.locked { () throws(SyncError) -> [ShareParticipant] in
            let (kind, _) = try context.access(caller, zone, info: read)
            guard kind == .owner else { throw .invalidRequest("only the owner lists a zone's participants") }
            let members = context.membership.members(of: zone.storeName).map { ShareParticipant(account: $0, status: .member) }
            let invited = context.membership.pendingInvitations(of: zone.storeName).map { ShareParticipant(account: $0, status: .invited) }
            return (members + invited).sorted { $0.account < $1.account }
        }
    }

    /// Joins the caller to the zone its invitation names, recorded as a `join` entry in the zone.
    func acceptShare(caller: String, invitation: ShareInvitation) throws(SyncError) -> ZoneID {
        guard let i = invitations.parse(invitation), let zone = ZoneID(storeName: i.zone) else {
            throw .invalidRequest("not an invitation of this service")
        }
        // Membership changes of one zone run one at a time (`changing`): nothing of the zone's
        // membership changes between the checks and the join.
        return try context.changing(zone.storeName) { () throws(SyncError) -> ZoneID in
            // Read before the memory's lock; a storage that does not answer is busy, never an
            // invitation to a list that is gone.
            let read = try context.readZone(zone)
            let joined = try context.locked { () throws(SyncError) -> Bool in
                guard i.participant == caller else { throw .zoneNotFound }
                guard let info = read, !info.isDeleted, info.incarnation == i.incarnation else { throw .zoneNotFound }
                if let last = context.membership.latest(caller, in: i.zone) {
                    if last.member { return true }
                    // Issued before the owner removed it: void. One who left comes back with it.
                    guard i.issuedAt >= last.sequence || last.reason == .left else { throw .zoneNotFound }
                }
                guard !context.membership.isWithdrawn(caller, from: i.zone, issuedAt: i.issuedAt) else { throw .zoneNotFound }
                guard context.membership.members(of: i.zone).count < context.limits.maxParticipants else {
                    throw .tooManyParticipants(limit: context.limits.maxParticipants)
                }
                return false
            }
            if !joined { try recordMembership(caller, zone: zone, member: true, reason: nil, by: caller) }
            return zone
        }
    }

    /// Removes a participant, or lets one leave, recorded as a `leave` entry; the owner naming
    /// one not yet a member withdraws its invitations.
    func removeParticipant(caller: String, participant: String, from zone: ZoneID) throws(SyncError) {
        try context.changing(zone.storeName) { () throws(SyncError) in
            let read = try context.readZone(zone)   // before the memory's lock: a round trip over a database
            let (kind, isMember) = try context.locked { () throws(SyncError) -> (ServiceContext.Access, Bool) in
                let (kind, _) = try context.access(caller, zone, info: read)
                guard kind == .owner || participant == caller else { throw .invalidRequest("only the owner removes another participant") }
                return (kind, context.membership.isMember(participant, of: zone.storeName))
            }
            guard isMember else {
                // Not a member (yet): the owner withdraws any invitation it holds.
                if kind == .owner { try recordWithdrawal(of: participant, from: zone) }
                return
            }
            let reason: ZoneGoneReason = kind != .owner && participant == caller ? .left : .removed
            try recordMembership(participant, zone: zone, member: false, reason: reason, by: caller)
            // The last participant gone: the list is no longer shared, and the invitations still
            // outstanding are void (Part 7; stopSharing does the same).
            if kind == .owner && context.locked({ context.membership.members(of: zone.storeName).isEmpty }) {
                try recordWithdrawal(of: nil, from: zone)
            }
        }
    }

    /// Removes every participant of a zone the caller owns and voids every invitation issued so far.
    func stopSharing(caller: String, zone: ZoneID) throws(SyncError) {
        try context.changing(zone.storeName) { () throws(SyncError) in
            let read = try context.readZone(zone)   // before the memory's lock: a round trip over a database
            let members = try context.locked { () throws(SyncError) -> [String] in
                let (kind, _) = try context.access(caller, zone, info: read)
                guard kind == .owner else { throw .invalidRequest("only the owner stops sharing a zone") }
                return context.membership.members(of: zone.storeName)
            }
            for p in members { try recordMembership(p, zone: zone, member: false, reason: .sharingStopped, by: caller) }
            try recordWithdrawal(of: nil, from: zone)
        }
    }

    /// `ServiceContext.recordMembership` for one account; a departure from a sealed zone, or a
    /// join while a link key of its epoch is in it, marks its epoch as owing a rotation in the same
    /// batch.
    private func recordMembership(_ account: String, zone: ZoneID, member: Bool, reason: ZoneGoneReason?, by actor: String) throws(SyncError) {
        // Only a sealed zone's membership reads its epochs (and, for them, the zone's row); a
        // join reads them afresh: another node may have taken the link key.
        let sealed = SealedZone.isSealed(storeName: zone.storeName)
        if sealed && member { context.forgetEpochs(zone.storeName) }
        let epochs = sealed ? try context.zoneEpochs(zone, info: try context.readZone(zone)) : nil
        try context.recordMembership([account], zone: zone, member: member, reason: reason, by: actor, epochs: epochs)
    }

    /// Voids the invitations to `zone` issued so far: of `account`, or of everyone when nil.
    private func recordWithdrawal(of account: String?, from zone: ZoneID) throws(SyncError) {
        do {
            try context.appendOwnRecord(Membership.zone, kind: Membership.withdrawalKind,
                                        body: Membership.encodeWithdrawal(zone: zone.storeName, account: account)) { at in
                context.membership.withdraw(account, from: zone.storeName, at: at)
            }
        } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
    }
}

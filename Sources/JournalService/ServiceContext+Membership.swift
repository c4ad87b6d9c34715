import JournalLog
import JournalSync

extension ServiceContext {
    /// One atomic batch: for each account, the `join`/`leave` entry in the shared zone (its
    /// history shows it) and the membership record in `_service/members` (what the service
    /// answers from); then, for a departure from a sealed zone, the key record that begins the
    /// next epoch without the accounts (the owner's removal, SEALING.md §5.1), or else the marker
    /// that the current epoch owes a rotation (`epochs`: the zone's, nil when not sealed); for a
    /// join while a link key of the current epoch is in the zone, that marker too (§4.8).
    /// Appended outside `lock`, applied under it once durable; a leave takes the account's access
    /// away before it is written.
    func recordMembership(_ accounts: [String], zone: ZoneID, member: Bool, reason: ZoneGoneReason?, by actor: String,
                          epochs: ZoneEpochs? = nil, keyRecord: JournalEntry? = nil) throws(SyncError) {
        let assigned: SequenceNumber
        do { assigned = try assignedPosition() } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
        let (batch, sealed, recordAt): ([JournalEntry], [JournalEntry], [Int]) = locked {
            var batch: [JournalEntry] = []
            // Where each account's record lands in the batch (its last entry): the memory keeps
            // the record's own position, as a read of `_service/members` finds it.
            var recordAt: [Int] = []
            for account in accounts {
                batch += membershipEntries(account, zone: zone, member: member, reason: reason, by: actor)
                recordAt.append(batch.count - 1)
            }
            for account in accounts where !member { pending.begin(assigned: assigned, leaving: account, zone: zone.storeName, reason: reason ?? .removed) }
            if member { pending.begin(assigned: assigned) }
            let owed = member ? (epochs?.linkOpen == true ? rotationDueMarker(zone, epochs) : nil) : keyRecord ?? rotationDueMarker(zone, epochs)
            let sealed = owed.map { [$0] } ?? []
            return (batch + sealed, sealed, recordAt)
        }
        let range: ClosedRange<SequenceNumber>
        do { range = try store.appendBatch(batch) } catch {
            locked {
                endPending(accounts, zone: zone, member: member)
                ownRecordsUncertain = true
            }
            // A marker or record another node wrote meanwhile conflicts: read the epochs afresh.
            if !sealed.isEmpty { forgetEpochs(zone.storeName) }
            throw .serviceBusy(retryAfter: .seconds(1))
        }
        if !sealed.isEmpty { noteEpochs(of: zone.storeName, sealed) }
        let told: [String] = locked {
            let told = audience(zone.storeName) + accounts
            // The batch takes consecutive positions (its ids are new: derived from fresh clocks).
            let contiguous = range.upperBound - range.lowerBound + 1 == SequenceNumber(batch.count)
            for (account, at) in zip(accounts, recordAt) {
                membership.record(.init(account: account, zone: zone.storeName, member: member, reason: member ? nil : reason,
                                        sequence: contiguous ? range.lowerBound + SequenceNumber(at) : range.upperBound))
            }
            endPending(accounts, zone: zone, member: member)
            return told
        }
        hints.changed(zone.storeName, for: told)
    }

    /// Under `lock`: the pending writes `recordMembership` began, ended.
    private func endPending(_ accounts: [String], zone: ZoneID, member: Bool) {
        if member { pending.end() }
        for account in accounts where !member { pending.end(leaving: account, zone: zone.storeName) }
    }

    /// Under `lock`: one account's entries of a membership batch: the visible `join`/`leave`, the
    /// record, and before the record of a participant's own leave a mark (the record says `removed`).
    private func membershipEntries(_ account: String, zone: ZoneID, member: Bool, reason: ZoneGoneReason?, by actor: String) -> [JournalEntry] {
        let wall = now()
        let t1 = clock.tick(wallMillis: wall), t2 = clock.tick(wallMillis: wall)
        var visible = JournalEntry(id: CompactID("-")!, zone: zone.storeName, author: actor, wallTime: wall, clock: t1,
                                   operation: member ? .join(participant: account) : .leave(participant: account))
        visible.id = CompactID.derived(from: visible)
        var record = JournalEntry(id: CompactID("-")!, zone: Membership.zone, author: Membership.author, wallTime: wall, clock: t2,
                                  operation: .opaque(kind: Membership.kind, body: Membership.encode(account: account, zone: zone.storeName,
                                                                                                     member: member, reason: reason)))
        record.id = CompactID.derived(from: record)
        guard reason == .left else { return [visible, record] }
        var mark = JournalEntry(id: CompactID("-")!, zone: Membership.zone, author: Membership.author, wallTime: wall,
                                clock: clock.tick(wallMillis: wall),
                                operation: .opaque(kind: Membership.leftKind, body: Membership.encodeWithdrawal(zone: zone.storeName, account: account)))
        mark.id = CompactID.derived(from: mark)
        // The record's clock after the mark's, as their order in the batch.
        record.clock = clock.tick(wallMillis: wall)
        record.id = CompactID.derived(from: record)
        return [visible, mark, record]
    }
}

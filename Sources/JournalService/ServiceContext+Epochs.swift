import JournalLog
import JournalSync

extension ServiceContext {
    /// A sealed zone's epochs as this node knows them, read from the zone the first time (and
    /// after `forgetEpochs`); nil for a zone that is not sealed, or not live. Not under `lock`:
    /// a first read reads the zone.
    func zoneEpochs(_ zone: ZoneID, info: ZoneInfo?) throws(SyncError) -> ZoneEpochs? {
        guard SealedZone.isSealed(storeName: zone.storeName), let info, !info.isDeleted else { return nil }
        if let known = locked({ epochs[zone.storeName] }), known.incarnation == info.incarnation { return known }
        let read = try ZoneEpochs.read(zone.storeName, incarnation: info.incarnation, from: store)
        locked { epochs[zone.storeName] = read }
        return read
    }

    /// Notes what this node appended to a sealed zone (a key record, a rotation-due marker).
    func noteEpochs(of zone: String, _ appended: [JournalEntry]) {
        locked {
            guard var known = epochs[zone] else { return }
            for e in appended { known.observe(e) }
            epochs[zone] = known
        }
    }

    /// Forgets a zone's epochs: another node moved them, or an append failed; the next call reads them.
    func forgetEpochs(_ zone: String) { locked { epochs[zone] = nil } }

    /// The marker that the zone's current epoch owes a rotation, for a departure that did not
    /// rotate (a leave, a removal without a key record, sharing stopped); nil when the zone is
    /// not sealed, has no epoch yet, or owes one already. Under `lock`.
    func rotationDueMarker(_ zone: ZoneID, _ epochs: ZoneEpochs?) -> JournalEntry? {
        guard let epochs, epochs.epoch > 0, !epochs.rotationDue else { return nil }
        let wall = now()
        return JournalEntry(id: SealedZone.rotationDueID(zone: zone.storeName, epoch: epochs.epoch), zone: zone.storeName,
                            author: Membership.author, wallTime: wall, clock: clock.tick(wallMillis: wall),
                            operation: .opaque(kind: SealedZone.rotationDueKind, body: SealedZone.rotationDueBody(epoch: epochs.epoch)))
    }
}

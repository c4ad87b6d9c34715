import JournalCodec
import JournalLog
import JournalSync

/// An account's sealing for its engine (`SyncEngine.useSealing(_:)`, Spec/SEALING.md §5.2): it
/// makes a change the service refused for its epoch again under the list's newest key, and
/// begins the next epoch when a departure owes one, from the list's key records and the
/// account's own keys. Other accounts' public keys come from `pinned`, the keys this device
/// pinned for each account on first contact: a member whose published keys are not the pinned
/// ones is never wrapped to (the service could otherwise slip its own key in).
public struct SealedListKeys: SealedListSealing {
    /// This device's account keys.
    public let account: AccountKeys
    /// The public keys this device pinned for an account, nil for one it has not met.
    public let pinned: @Sendable (String) -> AccountPublicKeys?

    /// The sealing of `account`'s devices, wrapping only to the keys `pinned` gives.
    public init(account: AccountKeys, pinned: @escaping @Sendable (String) -> AccountPublicKeys?) {
        self.account = account
        self.pinned = pinned
    }

    /// The refused change opened with the key of its epoch and sealed again for `stamp` under
    /// the newest epoch of `records` this account holds.
    public func reseal(_ refused: JournalEntry, for stamp: EntryStamp, records: [EpochKeyRecord]) -> EntryOperation? {
        guard let ring = try? ListKeyring(zone: stamp.zone, records: records, account: account, publicKeys: pinned),
              let change = try? SealedChange(refused.operation), let old = ring.sealer(epoch: change.text.epoch),
              let text = try? old.open(change, in: refused), let new = ring.sealer() else { return nil }
        switch change {
        case .add(let item, let after, _):
            return try? new.add(text, item: item, after: after, entry: stamp.id, author: stamp.author, clock: stamp.clock, wallTime: stamp.wallTime).operation
        case .rename:
            return try? new.rename(to: text, entry: stamp.id, author: stamp.author, clock: stamp.clock, wallTime: stamp.wallTime).operation
        case .recolour:
            return try? new.rename(to: text, colour: true, entry: stamp.id, author: stamp.author, clock: stamp.clock, wallTime: stamp.wallTime).operation
        }
    }

    /// The next epoch's record, wrapping to `members` only if each one's keys are the pinned ones.
    public func nextEpoch(after records: [EpochKeyRecord], in zone: ZoneID, members: [PublishedAccountKeys],
                          reason: EpochKeyRecord.Reason) -> EpochKeyRecord? {
        guard let ring = try? ListKeyring(zone: zone.storeName, records: records, account: account, publicKeys: pinned),
              let current = ring.keys[ring.currentEpoch] else { return nil }
        var keys: [AccountPublicKeys] = []
        for m in members {
            guard let pin = pinned(m.account), pin.identity == m.identity, pin.wrap == m.wrap else { return nil }
            keys.append(pin)
        }
        return try? EpochKeys.record(for: ListKey.random(epoch: current.epoch + 1), previous: current, reason: reason,
                                     zone: zone.storeName, members: keys, creator: account)
    }
}

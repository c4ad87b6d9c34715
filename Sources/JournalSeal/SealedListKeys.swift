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
    /// An account's keys of a key id pinned before its current ones (`KeyPins.keys(of:keyID:)`).
    public let formerKeys: @Sendable (String, [UInt8]) -> AccountPublicKeys?
    /// This account's own keys before `account`, kept after a vouched change (SEALING.md §4.7):
    /// lists still wrapped to them open, so this device rotates them away from those keys itself.
    public let formerAccountKeys: [AccountKeys]

    /// The sealing of `account`'s devices, wrapping only to the keys `pinned` gives (or keys
    /// they vouched for).
    public init(account: AccountKeys, pinned: @escaping @Sendable (String) -> AccountPublicKeys?,
                formerKeys: @escaping @Sendable (String, [UInt8]) -> AccountPublicKeys? = { _, _ in nil },
                formerAccountKeys: [AccountKeys] = []) {
        self.account = account
        self.pinned = pinned
        self.formerKeys = formerKeys
        self.formerAccountKeys = formerAccountKeys
    }

    /// The sealing of `account`'s devices over the pins `pins` reads (the app's, as it keeps them);
    /// `formerAccountKeys`: the account's own keys before `account`, if it still holds them.
    public init(account: AccountKeys, pins: @escaping @Sendable () -> KeyPins, formerAccountKeys: [AccountKeys] = []) {
        self.init(account: account, pinned: { pins().pinned($0) }, formerKeys: { pins().keys(of: $0, keyID: $1) },
                  formerAccountKeys: formerAccountKeys)
    }

    func keyring(_ zone: String, _ records: [EpochKeyRecord]) -> ListKeyring? {
        try? ListKeyring(zone: zone, records: records, account: account, publicKeys: { $0 == account.account ? account.publicKeys : pinned($0) },
                         formerKeys: { a, id in
                             a == account.account ? formerAccountKeys.map(\.publicKeys).first { $0.keyID == id } ?? formerKeys(a, id) : formerKeys(a, id)
                         },
                         formerAccountKeys: formerAccountKeys)
    }

    /// The refused change opened with the key of its epoch and sealed again for `stamp` under
    /// the newest epoch of `records` this account holds.
    public func reseal(_ refused: JournalEntry, for stamp: EntryStamp, records: [EpochKeyRecord]) -> EntryOperation? {
        guard let ring = keyring(stamp.zone, records),
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

    /// The next epoch's record, wrapping to each of `members` under the keys this device pinned
    /// for it, or under new keys those vouched for (SEALING.md §4.7). A member whose keys were
    /// reset (new keys no pinned key vouched for) is left out, to be wrapped to once a person
    /// re-verified them (`KeyPins.repin`, then `SyncEngine.rotateKeys`); nil when a member has
    /// no keys pinned, or keys vouched for by keys other than the pinned ones.
    public func nextEpoch(after records: [EpochKeyRecord], in zone: ZoneID, members: [PublishedAccountKeys],
                          reason: EpochKeyRecord.Reason) -> EpochKeyRecord? {
        guard let ring = keyring(zone.storeName, records), let current = ring.keys[ring.currentEpoch] else { return nil }
        var keys: [AccountPublicKeys] = []
        for m in members {
            if m.account == account.account {
                // This device's own account: its own keys, which the directory must be giving.
                guard account.published.sameKeys(as: m) else { return nil }
                keys.append(account.publicKeys)
                continue
            }
            guard let pin = pinned(m.account) else { return nil }
            if pin.identity == m.identity, pin.wrap == m.wrap {
                keys.append(pin)
            } else if pin.vouches(for: m), let next = AccountPublicKeys(m) {
                keys.append(next)
            } else if m.vouch != nil {
                return nil
            }
        }
        return try? EpochKeys.record(for: ListKey.random(epoch: current.epoch + 1), previous: current, reason: reason,
                                     zone: zone.storeName, members: keys, creator: account)
    }
}

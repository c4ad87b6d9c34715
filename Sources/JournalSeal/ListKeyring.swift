import JournalCodec

/// The keys of one sealed list an account's device holds (Spec/SEALING.md §4.3): read from the
/// list's key records in their order, each checked (epochs 1, 2, … with none skipped; signed by
/// its creator, who was a member when it began: the owner for epoch 1, a member of the epoch
/// before after it), then the newest epoch wrapped to this account opened and the back links
/// followed down to epoch 1. An account removed at some epoch holds the keys before it only.
public struct ListKeyring: Sendable {
    /// The list whose keys these are.
    public let zone: String
    /// The list's current epoch: its newest record's.
    public let currentEpoch: UInt64
    /// The keys this account holds, by epoch.
    public let keys: [UInt64: ListKey]

    /// `records` in the list's order; `publicKeys` gives a member account's public keys as this
    /// device knows them (pinned on first contact, SEALING.md §4.1), nil for one it does not;
    /// `formerKeys` an account's keys of a key id it had before (`KeyPins.keys(of:keyID:)`), so
    /// that records signed before an account changed its keys still verify (§4.7); `linked` an
    /// epoch key a link invitation left for this device (`LinkSecret.newestKey(in:zone:)`, §4.8),
    /// which opens that epoch and, through the back links, every one before it;
    /// `formerAccountKeys` this account's own keys before `account`, which a device that replaced
    /// them with a vouch still holds (§4.7): wraps to them open too, so that it rotates its lists
    /// away from them by itself.
    public init(zone: String, records: [EpochKeyRecord], account: AccountKeys,
                publicKeys: (String) -> AccountPublicKeys?,
                formerKeys: (String, [UInt8]) -> AccountPublicKeys? = { _, _ in nil }, linked: ListKey? = nil,
                formerAccountKeys: [AccountKeys] = []) throws(SealError) {
        guard !records.isEmpty else { throw .brokenChain("a sealed list has a record for epoch 1") }
        let owner = zone.split(separator: "/", maxSplits: 1).first.map(String.init) ?? ""
        var members: Set<String> = []
        for (i, record) in records.enumerated() {
            guard record.epoch == UInt64(i + 1) else { throw .brokenChain("record \(i + 1) is of epoch \(record.epoch)") }
            let entitled = record.epoch == 1 ? record.creator == owner : members.contains(record.creator)
            let current = publicKeys(record.creator)
            let signer = current?.keyID == record.creatorKeyID ? current : formerKeys(record.creator, record.creatorKeyID)
            guard entitled, let creator = signer, EpochKeys.isSigned(record, zone: zone, by: creator) else {
                throw .badSignature(epoch: record.epoch)
            }
            members = Set(record.wraps.map(\.account))
        }
        var keys: [UInt64: ListKey] = [:]
        let held = [account] + formerAccountKeys.filter { $0.account == account.account }
        let wrappedToAccount = records.last { $0.wraps.contains { $0.account == account.account } }
        func holder(_ r: EpochKeyRecord) -> AccountKeys? {
            held.first { k in r.wraps.contains { $0.account == k.account && $0.keyID == k.publicKeys.keyID } }
        }
        if let newest = records.last(where: { holder($0) != nil }), let keysOfIt = holder(newest) {
            var key = try EpochKeys.open(newest, zone: zone, with: keysOfIt)
            keys[key.epoch] = key
            while key.epoch > 1, let link = records[Int(key.epoch) - 1].backLink {
                key = try key.openBackLink(link, zone: zone)
                keys[key.epoch] = key
            }
        }
        if var key = linked, key.epoch <= UInt64(records.count), keys[key.epoch] == nil {
            keys[key.epoch] = key
            while key.epoch > 1, keys[key.epoch - 1] == nil, let link = records[Int(key.epoch) - 1].backLink {
                key = try key.openBackLink(link, zone: zone)
                keys[key.epoch] = key
            }
        }
        self.zone = zone
        currentEpoch = records.last!.epoch
        self.keys = keys
        if keys[currentEpoch] != nil {
            standing = .member
        } else if let newest = wrappedToAccount, holder(newest) == nil {
            standing = .keysLost
        } else if let last = keys.keys.max() {
            standing = .former(lastEpoch: last)
        } else {
            standing = .never
        }
    }

    /// Whether this account may write to the list now: it holds the current epoch's key.
    public var isMember: Bool { keys[currentEpoch] != nil }

    /// Where this account stands with the list's keys (Spec/SEALING.md §4.5), said, never
    /// guessed from a text that does not open.
    public enum Standing: Sendable, Equatable {
        /// It holds the current epoch's key.
        case member
        /// It was wrapped to up to `lastEpoch`, not since: it left or was removed.
        case former(lastEpoch: UInt64)
        /// The list wraps to this account, but under keys this device does not hold (the
        /// account's keys were replaced, or lost): recover them (a recovery code, another of the
        /// person's devices) or ask a member to wrap to the new ones; until then nothing opens.
        case keysLost
        /// The list never wrapped to this account.
        case never
    }

    /// This account's standing, from the records the keyring was made from.
    public let standing: Standing

    /// The sealer of `epoch` (the current one unless given), nil when this account does not
    /// hold its key.
    public func sealer(epoch: UInt64? = nil) -> TextSealer? {
        keys[epoch ?? currentEpoch].map { TextSealer(key: $0, zone: zone) }
    }

    /// The text `value` holds, sealed for `binding` (a list item's, name's or colour's, as the
    /// list model hands them over: `ListItem.sealedText`), under its own epoch's key.
    /// `notAMember` when this account holds no key of that epoch.
    public func open(_ value: SealedValue, for binding: SealBinding) throws(SealError) -> String {
        guard let sealer = sealer(epoch: value.epoch) else { throw .notAMember(epoch: value.epoch) }
        return try sealer.open(value, for: binding)
    }
}

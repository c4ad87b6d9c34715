import JournalSync

extension AccountKeys {
    /// These keys as the account publishes them first (`SyncService.publishAccountKeys`).
    public var published: PublishedAccountKeys {
        let p = publicKeys
        return PublishedAccountKeys(account: account, identity: p.identity, wrap: p.wrap)
    }

    /// `next`, this account's new keys, as published to replace these, vouched for by this
    /// identity key (Spec/SEALING.md §4.7): what an account does when it retires keys it still
    /// holds (a device lost or sold). Every device that pinned these keys follows the change by
    /// itself (`KeyPins.follow`), and every sealed list the account belongs to rotates away from
    /// them.
    public func vouching(for next: AccountKeys) throws(SealError) -> PublishedAccountKeys {
        guard next.account == account else { throw .badKey("\(account)'s keys vouch for \(account)'s new keys only, not \(next.account)'s") }
        var p = next.published
        do { p.vouch = Array(try identityKey.signature(for: p.vouchedBytes)) } catch {
            throw .badKey("the vouch could not be signed: \(error)")
        }
        return p
    }
}

extension AccountPublicKeys {
    /// These keys as `published` names them.
    public init?(_ published: PublishedAccountKeys) {
        self.init(account: published.account, identity: published.identity, wrap: published.wrap)
    }

    /// Whether `published` (another key pair of this account) carries this identity key's vouch.
    public func vouches(for published: PublishedAccountKeys) -> Bool {
        guard published.account == account, let vouch = published.vouch else { return false }
        return signed(vouch, published.vouchedBytes)
    }
}

import JournalLog
import JournalSync

/// The service's key directory (`SyncService.publishAccountKeys`, `.fetchAccountKeys`; Spec/SYNC.md
/// §5.6): each account publishes its public keys once, as a record of `_service/keys` appended
/// outside the memory's lock and applied under it once durable; any account may read them.
struct ServiceKeyDirectory: Sendable {
    let context: ServiceContext

    /// Publishes the caller's keys: its first; the same again (done); or keys that replace its
    /// current ones, vouched for by them or not (a reset; Spec/SEALING.md §4.7).
    func publish(caller: String, _ keys: PublishedAccountKeys) throws(SyncError) {
        guard keys.account == caller else { throw .invalidRequest("an account publishes its own keys (\(caller)), not \(keys.account)'s") }
        if let why = AccountKeyDirectory.refusal(keys) { throw .invalidRequest(why) }
        let known = context.locked { context.directory.published(caller) }
        if let known {
            if known.sameKeys(as: keys) { return }
            if let vouch = keys.vouch, !AccountKeyDirectory.vouches(known.identity, vouch, for: keys) {
                throw .invalidRequest("the vouch is not \(caller)'s current identity key's signature over the new keys")
            }
        } else if keys.vouch != nil {
            throw .invalidRequest("\(caller) has no keys yet to vouch for new ones")
        }
        let replacing = known != nil
        do {
            try context.appendOwnRecord(AccountKeyDirectory.zone, kind: AccountKeyDirectory.kind,
                                        body: AccountKeyDirectory.encode(keys, replacing: replacing)) { at in
                context.directory.note(keys, replacing: replacing)
            }
        } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
        // Two devices of the account publishing different keys at once: the first stays.
        guard context.locked({ context.directory.published(caller) })?.sameKeys(as: keys) == true else {
            throw .invalidRequest("\(caller)'s keys changed meanwhile (another device published others): fetch them and try again")
        }
    }

    /// The keys `account` published, or nil.
    func keys(of account: String) throws(SyncError) -> PublishedAccountKeys? {
        if let why = SyncNames.accountRefusal(account) { throw .invalidRequest(why) }
        return context.locked { context.directory.published(account) }
    }
}

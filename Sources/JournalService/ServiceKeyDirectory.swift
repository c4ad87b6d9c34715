import JournalLog
import JournalSync

/// The service's key directory (`SyncService.publishAccountKeys`, `.fetchAccountKeys`; Spec/SYNC.md
/// §5.6): each account publishes its public keys once, as a record of `_service/keys` appended
/// outside the memory's lock and applied under it once durable; any account may read them.
struct ServiceKeyDirectory: Sendable {
    let context: ServiceContext

    /// Publishes the caller's keys: idempotent; keys other than those published are refused.
    func publish(caller: String, _ keys: PublishedAccountKeys) throws(SyncError) {
        guard keys.account == caller else { throw .invalidRequest("an account publishes its own keys (\(caller)), not \(keys.account)'s") }
        if let why = AccountKeyDirectory.refusal(keys) { throw .invalidRequest(why) }
        if let known = context.locked({ context.directory.published(caller) }) {
            guard known == keys else {
                throw .invalidRequest("\(caller) published other keys already: an account's keys, once published, stay its keys")
            }
            return
        }
        do {
            try context.appendOwnRecord(AccountKeyDirectory.zone, kind: AccountKeyDirectory.kind, body: AccountKeyDirectory.encode(keys)) { at in
                context.directory.note(keys)
            }
        } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
        // Two devices of the account publishing different keys at once: the first stays.
        guard context.locked({ context.directory.published(caller) }) == keys else {
            throw .invalidRequest("\(caller) published other keys already: an account's keys, once published, stay its keys")
        }
    }

    /// The keys `account` published, or nil.
    func keys(of account: String) throws(SyncError) -> PublishedAccountKeys? {
        if let why = SyncNames.accountRefusal(account) { throw .invalidRequest(why) }
        return context.locked { context.directory.published(account) }
    }
}

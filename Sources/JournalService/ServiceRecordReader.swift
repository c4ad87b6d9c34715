import Foundation
import JournalLog

/// Reads the service's own records into its memory: membership (`_service/members`), the
/// compaction announcements (`_service/compactions`), the key directory (`_service/keys`) and
/// the recovery kits (`_service/recovery`) and device links (`_service/links`). All of them when
/// the service starts; and,
/// over a storage other nodes write too (`ServiceStorage.isShared`), what they wrote since,
/// before this node answers a call (`catchUp`): a device that joined a list through one node is
/// a member on the next node it reaches. Applying a record twice changes nothing, so a node
/// reading back its own records is harmless.
final class ServiceRecordReader: @unchecked Sendable {
    static let zones = [Membership.zone, ServiceCompaction.zone, AccountKeyDirectory.zone, RecoveryKits.zone, DeviceLinks.zone]
    private let context: ServiceContext
    /// One read at a time; guards `tokens` and `through`.
    private let lock = NSLock()
    /// Where each zone's next read starts.
    private var tokens: [String: FeedToken] = [:]
    /// The newest last change of the zones read through.
    private var through: SequenceNumber = 0

    init(context: ServiceContext) { self.context = context }

    /// Reads what the service's zones hold that this node has not read yet. With `hinting`, each
    /// membership change and compaction announcement it had not applied yet (another node's) is
    /// hinted to the accounts it concerns, as the node that wrote it hinted its own devices
    /// (SYNC.md §7.7): the account that joined or left, and the zone's audience.
    func readNew(hinting: Bool = false) throws(StorageError) {
        var told: [(zone: String, accounts: [String])] = []
        lock.lock()
        do {
            defer { lock.unlock() }
            let last = try context.store.lastChange(ofAny: Self.zones)
            for zone in Self.zones { try read(zone, told: &told) }
            through = max(through, last)
        }
        guard hinting else { return }
        for t in told { context.hints.changed(t.zone, for: t.accounts) }
    }

    /// Over a shared storage: reads what other nodes wrote since the last read, when the
    /// zones changed (one look at their last changes otherwise), hinting what it had not applied.
    /// Over any storage, after an append of the service's own records failed: such an append
    /// may have landed (its answer lost), and the memory must not stay behind the store until
    /// the next start (a removal it did not apply would refuse every key record without the
    /// removed member).
    func catchUp() throws(StorageError) {
        let uncertain = context.locked { () -> Bool in
            defer { context.ownRecordsUncertain = false }
            return context.ownRecordsUncertain
        }
        guard context.store.isShared || uncertain else { return }
        do {
            let last = try context.store.lastChange(ofAny: Self.zones)
            guard last > lock.withLock({ through }) else { return }
            try readNew(hinting: true)
        } catch {
            if uncertain { context.locked { context.ownRecordsUncertain = true } }
            throw error
        }
    }

    /// Under `lock`: one zone's records after its token, applied; the hints they call for added
    /// to `told`.
    private func read(_ zone: String, told: inout [(zone: String, accounts: [String])]) throws(StorageError) {
        // A storage that does not answer fails the read: never taken for a zone not made yet,
        // which would let `readNew` count records it did not read as read.
        guard try context.store.zoneInfo(zone) != nil else { return }
        while true {
            let page: ZoneChanges
            do throws(FeedError) { page = try context.store.zoneChanges(zone, since: tokens[zone], limit: 10_000) } catch {
                // A read that failed may pass (the backend counted its kind); a record that cannot
                // be read at all is damage.
                if case .storage(let e) = error { throw .unavailable(e.description) }
                throw .damaged("the service's records (\(zone)) cannot be read: \(error)")
            }
            context.locked { for e in page.entries { if let t = apply(e) { told.append(t) } } }
            tokens[zone] = page.token
            if !page.moreComing { break }
        }
    }

    /// Under the memory's lock: one record; the zone and accounts to hint when it changed what
    /// the service knew.
    private func apply(_ e: FeedEntry) -> (zone: String, accounts: [String])? {
        context.clock.observe(e.entry.clock)
        if e.entry.zone == AccountKeyDirectory.zone {
            context.directory.observe(e.entry)
            return nil
        }
        if e.entry.zone == RecoveryKits.zone {
            context.recovery.observe(e.entry, at: e.sequence)
            return nil
        }
        if e.entry.zone == DeviceLinks.zone {
            context.links.observe(e.entry, now: context.now())
            return nil
        }
        if e.entry.zone == Membership.zone {
            guard let event = context.membership.observe(e.entry, at: e.sequence) else { return nil }
            return (event.zone, context.audience(event.zone) + [event.account])
        } else if case .opaque(ServiceCompaction.kind, let body) = e.entry.operation,
                  let (zone, mark) = ServiceCompaction.decodeAnnouncement(body),
                  (context.announced[zone]?.at ?? 0) < e.sequence {
            context.announced[zone] = (mark, e.sequence)
            return (zone, context.audience(zone))
        }
        return nil
    }
}

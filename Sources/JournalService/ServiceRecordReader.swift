import Foundation
import JournalLog

/// Reads the service's own records into its memory: membership (`_service/members`) and the
/// compaction announcements (`_service/compactions`). All of them when the service starts; and,
/// over a storage other nodes write too (`ServiceStorage.isShared`), what they wrote since,
/// before this node answers a call (`catchUp`): a device that joined a list through one node is
/// a member on the next node it reaches. Applying a record twice changes nothing, so a node
/// reading back its own records is harmless.
final class ServiceRecordReader: @unchecked Sendable {
    static let zones = [Membership.zone, ServiceCompaction.zone]
    private let context: ServiceContext
    /// One read at a time; guards `tokens` and `through`.
    private let lock = NSLock()
    /// Where each zone's next read starts.
    private var tokens: [String: FeedToken] = [:]
    /// The newest last change of the zones read through.
    private var through: SequenceNumber = 0

    init(context: ServiceContext) { self.context = context }

    /// Reads what the service's zones hold that this node has not read yet.
    func readNew() throws(JournalError) {
        lock.lock()
        defer { lock.unlock() }
        let last = context.store.lastChange(ofAny: Self.zones)
        for zone in Self.zones { try read(zone) }
        through = max(through, last)
    }

    /// Over a shared storage: reads what other nodes wrote since the last read, when the
    /// zones changed (one look at their last changes otherwise).
    func catchUp() throws(JournalError) {
        guard context.store.isShared else { return }
        let last = context.store.lastChange(ofAny: Self.zones)
        guard last > lock.withLock({ through }) else { return }
        try readNew()
    }

    /// Under `lock`: one zone's records after its token, applied.
    private func read(_ zone: String) throws(JournalError) {
        // A storage that does not answer fails the read: never taken for a zone not made yet,
        // which would let `readNew` count records it did not read as read.
        guard try context.store.checkedZone(zone) != nil else { return }
        do {
            while true {
                let page = try context.store.zoneChanges(zone, since: tokens[zone], limit: 10_000)
                context.locked { for e in page.entries { apply(e) } }
                tokens[zone] = page.token
                if !page.moreComing { break }
            }
        } catch { throw JournalError.invalidEntry("the service's records (\(zone)) cannot be read: \(error)") }
    }

    /// Under the memory's lock: one record.
    private func apply(_ e: FeedEntry) {
        context.clock.observe(e.entry.clock)
        if e.entry.zone == Membership.zone {
            context.membership.observe(e.entry, at: e.sequence)
        } else if case .opaque(ServiceCompaction.kind, let body) = e.entry.operation,
                  let (zone, mark) = ServiceCompaction.decodeAnnouncement(body),
                  (context.announced[zone]?.at ?? 0) < e.sequence {
            context.announced[zone] = (mark, e.sequence)
        }
    }
}

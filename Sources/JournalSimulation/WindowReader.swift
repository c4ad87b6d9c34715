import Foundation
import JournalLog
import JournalQuery
import JournalService
import JournalSync
import ListModel

/// A reader of the service that starts paging one list while a compaction rewrites the log (the
/// first rewritten segment is opened) and finishes after it, following any compaction record it
/// meets as a device does. Whatever the run did, it must end holding exactly the service's
/// entries of the list, or be told to wait (`serviceBusy`) or to start over (`tokenExpired`):
/// never entries from before a purge mixed with entries after it (Spec/SYNC.md §6.2 rule 3).
final class WindowReader: @unchecked Sendable {
    let core: ServiceCore
    let zone: ZoneID
    private let lock = NSLock()
    private var started = false
    private var token: ServiceToken?
    private var ids: [CompactID] = []

    init(core: ServiceCore, zone: ZoneID) {
        self.core = core
        self.zone = zone
    }

    /// The first page (a few entries), once: called from inside the run.
    func fetchOnce() {
        lock.lock()
        defer { lock.unlock() }
        guard !started else { return }
        started = true
        do {
            let page = try core.fetchZoneChanges(caller: zone.owner, zone: zone, since: nil, limit: 3)
            ids = page.entries.map(\.id)
            token = page.token
        } catch {
            token = nil  // refused: nothing to compare
        }
    }

    /// What paging on after the run found.
    enum Outcome: Equatable {
        /// Not started, or a fetch was refused (`serviceBusy`, `tokenExpired`, the list gone).
        case refused
        /// It ended with exactly the service's entries.
        case same
        /// It did not: what differs.
        case differs(String)
    }

    /// Pages on to the end after the run, and compares what it holds with the service's entries.
    func finish() -> Outcome {
        // No token: the run never reached a rewrite, or the first fetch was refused.
        guard var token = lock.withLock({ self.token }) else { return .refused }
        var ids = lock.withLock { self.ids }
        while true {
            let page: ZoneChangesPage
            do { page = try core.fetchZoneChanges(caller: zone.owner, zone: zone, since: token, limit: 50) } catch {
                return .refused  // told to start over, or the list went: no answer to check
            }
            // A compaction record met on the way is followed as a device follows it (SYNC.md
            // §6.7): the ids it purged leave what the reader holds.
            for e in page.entries {
                if let record = try? CompactionRecord.of(e) {
                    let purged = Set(record.purged)
                    ids.removeAll { purged.contains($0) }
                }
                ids.append(e.id)
            }
            token = page.token
            if !page.moreComing { break }
        }
        var held: [CompactID] = []
        var at: FeedToken? = nil
        do {
            while true {
                let page = try core.storage.zoneChanges(zone.storeName, since: at, limit: 10_000)
                held += page.entries.map(\.entry.id)
                at = page.token
                if !page.moreComing { break }
            }
        } catch { return .refused }
        guard ids != held else { return .same }
        let gone = Set(ids).subtracting(held).count, missing = Set(held).subtracting(ids).count
        return .differs("a fetch of \(zone.storeName) paged across a compaction and kept \(gone) entries the service purged, lacking \(missing)")
    }
}

import Foundation
import JournalLog
import ListModel

/// The state of the list base a sync engine installed last (`ListBase`), as it decoded it to
/// check it: the first read of the list after the install (the app showing it) starts from it
/// instead of decoding the snapshot again. One list at a time, in memory; a read uses it only
/// when the list's live incarnation still starts with that very base entry.
package final class BaseCache: @unchecked Sendable {
    package static let shared = BaseCache()

    struct Entry {
        var store: String
        var zone: String
        var incarnation: SequenceNumber
        var sequence: SequenceNumber
        var id: CompactID
        var reducer: ListReducer
    }

    private let lock = NSLock()
    private var entry: Entry?

    /// Keeps `reducer` as the state of the base entry `id` at `sequence`, the first entry of
    /// `zone`'s incarnation `incarnation` in the store at `store`.
    package func put(store: String, zone: String, incarnation: SequenceNumber, sequence: SequenceNumber, id: CompactID, reducer: ListReducer) {
        lock.withLock { entry = Entry(store: store, zone: zone, incarnation: incarnation, sequence: sequence, id: id, reducer: reducer) }
    }

    /// Forgets the base kept for `zone` in the store at `store`: its entry was rewritten in place
    /// (a followed compaction, `CompactionFollower`), under the same id and sequence.
    package func forget(store: String, zone: String) {
        lock.withLock { if entry?.store == store && entry?.zone == zone { entry = nil } }
    }

    /// The base kept for that list incarnation, if any.
    func lookup(store: String, zone: String, incarnation: SequenceNumber) -> Entry? {
        lock.withLock {
            guard let e = entry, e.store == store, e.zone == zone, e.incarnation == incarnation else { return nil }
            return e
        }
    }
}

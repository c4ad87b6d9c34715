import Foundation
import JournalLog
import ListModel

/// Which tokens of each zone can still follow its compactions (Spec/SYNC.md §6.7): a token issued
/// under a mark at or above the zone's **follow floor** is answered with the compaction records
/// after it instead of `tokenExpired`. The floor is the `followFrom` of the record the last
/// compaction wrote, which is the zone's first entry above its mark; a zone whose last raise left
/// no record (a crash between the raise and the record, a run too large to describe, a zone
/// compacted before records existed) has its mark as its floor: every older token expires, as
/// before.
///
/// Read through the storage once per zone and mark, then kept: a record never changes, and a
/// new mark is a new key.
final class FollowFloors: @unchecked Sendable {
    private let store: any ServiceStorage
    private let lock = NSLock()
    private var known: [String: (incarnation: SequenceNumber, mark: SequenceNumber, floor: Floor)] = [:]

    /// The lowest token floor and position that can follow the zone under its current mark.
    struct Floor: Sendable, Equatable {
        var mark: SequenceNumber
        var position: SequenceNumber
    }
    /// Zones remembered at once; past it the cache starts again (a read per zone rebuilds it).
    private static let maxZones = 100_000

    init(store: any ServiceStorage) { self.store = store }

    /// How a fetch of `zone` expires tokens now: tokens under the current mark stay valid, and
    /// so do tokens under any mark from the follow floor on. A storage that does not answer
    /// fails the fetch (`FeedError.storage`, answered busy), never expires a token it could keep.
    func expiry(_ zone: String) throws(FeedError) -> TokenExpiry {
        let info: ZoneInfo?
        do throws(StorageError) { info = try store.zoneInfo(zone) } catch { throw .storage(.writerFailed(error.description)) }
        guard let info, !info.isDeleted, info.lowWaterMark > 0 else { return .issuedUnderAnOlderMark }
        let floor = try floor(info)
        return .followable(from: floor.mark, position: floor.position, mark: info.lowWaterMark)
    }

    /// The zone's follow floor under its current mark.
    func floor(_ info: ZoneInfo) throws(FeedError) -> Floor {
        lock.lock()
        let cached = known[info.name]
        lock.unlock()
        if let cached, cached.incarnation == info.incarnation, cached.mark == info.lowWaterMark { return cached.floor }
        let floor = try read(info)
        lock.lock()
        if known.count >= Self.maxZones { known.removeAll() }
        known[info.name] = (info.incarnation, info.lowWaterMark, floor)
        lock.unlock()
        return floor
    }

    /// The zone's entries above a mark read for its record: the record is the first of them,
    /// unless a run that failed wrote it late, after uploads its zone took meanwhile.
    static let recordSearch = 256

    /// The record of a compaction to `position` (the zone's mark when nil): the first record among
    /// the zone's first `recordSearch` entries above it whose `to` is `position`.
    func record(_ info: ZoneInfo, at position: SequenceNumber? = nil) throws(FeedError) -> CompactionRecord? {
        let at = position ?? info.lowWaterMark
        let token = try store.zoneToken(info.name, position: at)
        let page = try store.zoneChanges(info.name, since: token, limit: Self.recordSearch)
        guard page.incarnation == info.incarnation else { return nil }
        for e in page.entries where CompactionRecord.isRecord(e.entry) {
            if let record = try? CompactionRecord.of(e.entry), record.to == at { return record }
        }
        return nil
    }

    private func read(_ info: ZoneInfo) throws(FeedError) -> Floor {
        guard let r = try record(info) else { return Floor(mark: info.lowWaterMark, position: 0) }
        return Floor(mark: r.followFrom, position: r.followPosition)
    }
}

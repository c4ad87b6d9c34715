import JournalLog
import JournalSync

/// The service's own records (membership, withdrawals, compaction announcements) that are being
/// appended: they are written outside the lock that fetches take (SYNC.md §2), and applied to the
/// service's memory under it once durable. Meanwhile:
/// - a database page's token covers nothing from `floor` on, since the page cannot see in memory
///   what those records say: the next fetch reads them (a zone listed twice is fetched twice,
///   never skipped);
/// - an account leaving a zone has lost access from before its `leave` is written, so no fetch
///   serves it an entry appended after it.
/// Guarded by the service's lock.
struct PendingWrites {
    private var count = 0
    /// The last position assigned before the oldest pending record began: every pending record
    /// lies above it.
    private(set) var floor: SequenceNumber?
    /// zone → account → why: leaves being written.
    private var leaving: [String: [String: ZoneGoneReason]] = [:]

    /// A record is about to be appended; `assigned` is the store's last assigned position now.
    mutating func begin(assigned: SequenceNumber, leaving account: String? = nil, zone: String = "", reason: ZoneGoneReason = .removed) {
        if count == 0 { floor = assigned }
        count += 1
        if let account { leaving[zone, default: [:]][account] = reason }
    }

    /// The record was applied (or its append failed).
    mutating func end(leaving account: String? = nil, zone: String = "") {
        precondition(count > 0, "a pending write ended twice")
        count -= 1
        if count == 0 { floor = nil }
        if let account {
            leaving[zone]?[account] = nil
            if leaving[zone]?.isEmpty == true { leaving[zone] = nil }
        }
    }

    /// Why `account` is losing `zone`, while its leave is being written.
    func leave(of account: String, in zone: String) -> ZoneGoneReason? { leaving[zone]?[account] }
}

import JournalCodec

/// The sibling-run rule of MERGE.md §3.2, in one place for the reducer (which places runs) and
/// the retention planner (which keeps or purges them whole): items added after the same anchor
/// by the same author, consecutive in change order, form one run while each is at most
/// `windowMillis` of physical time after the one before.
package enum SiblingRun {
    /// Consecutive same-author siblings at most this far apart (physical milliseconds) form one
    /// run, kept together.
    package static let windowMillis: UInt64 = 300_000

    /// Whether a run of the same anchor and author ends between two consecutive members, by
    /// their hybrid clocks' raw values (earlier first in change order).
    @inlinable @inline(__always)
    package static func breaks(after earlier: UInt64, before later: UInt64) -> Bool {
        HybridTime(rawValue: later).physicalMillis &- HybridTime(rawValue: earlier).physicalMillis > windowMillis
    }
}

import CoreMetrics

/// The storage failures a node met, by kind (`jlog_storage_failures_total{kind="unavailable"}`,
/// `{kind="damaged"}`; SYNC.md §11.6): what an operator watches while a database restarts, and
/// what tells a failover from damage. Counted where the failure is first seen (the storage, the
/// credential check), once each.
package enum StorageFailures {
    /// The series' name.
    package static let label = "jlog_storage_failures_total"

    /// Counts one failure of `error`'s kind.
    package static func note(_ error: StorageError) {
        Counter(label: label, dimensions: [("kind", error.kind)]).increment()
    }
}

/// What another node's writes tell this one over a shared storage (Spec/SYNC.md §11.4): a
/// signal only, never data. A node turns them into its devices' hints (`ServiceNode` in
/// JournalServer).
public enum NodeSignal: Sendable, Equatable {
    /// Listening began, or began again after the connection was lost: something may have changed
    /// unheard, so a node re-reads and tells its devices to fetch.
    case listening
    /// A write to this zone committed.
    case zone(String)
}

import JournalCodec

/// What the engine draws for a local change before its operation exists (`SyncEngine.record(in:making:)`):
/// the entry's id, zone, author and clocks. A sealed list's text is sealed for exactly these
/// (Spec/SEALING.md §2.3).
public struct EntryStamp: Sendable, Hashable {
    /// The new entry's id (random).
    public let id: CompactID
    /// The zone's name in the store (`ZoneID.storeName`).
    public let zone: String
    /// This device (`SyncEngine.replica`).
    public let author: String
    /// The entry's hybrid clock.
    public let clock: HybridTime
    /// The entry's wall-clock milliseconds.
    public let wallTime: Int64

    /// The entry with `operation`.
    func entry(_ operation: EntryOperation) -> JournalEntry {
        JournalEntry(id: id, zone: zone, author: author, wallTime: wallTime, clock: clock, operation: operation)
    }
}

import JournalLog

/// What an engine asks of the app's sealing for its sealed lists (Spec/SEALING.md §5.2), so that
/// a change the service refused for its epoch is made again by itself: to seal the change again
/// under the list's newest key, and to begin the next epoch when a departure owes one. The engine
/// never holds a key: it hands over the list's key records and the members' published keys, and
/// writes what comes back. `JournalSeal`'s `SealedListKeys` is the implementation
/// (`SyncEngine.useSealing(_:)`).
public protocol SealedListSealing: Sendable {
    /// `refused`'s change made again for `stamp` (a new entry's id, author and clocks), sealed
    /// under the newest epoch of `records` (the list's key records, in epoch order); nil when
    /// this device holds no key to open the refused change or to seal under the newest epoch.
    func reseal(_ refused: JournalEntry, for stamp: EntryStamp, records: [EpochKeyRecord]) -> EntryOperation?

    /// The key record that begins the epoch after `records`' newest in `zone`, made by this
    /// device's account and wrapping to `members` (the owner and every participant, each with
    /// the keys the service's directory gave); nil when this device holds no key of the newest
    /// epoch, or a member's keys are not the ones it pinned.
    func nextEpoch(after records: [EpochKeyRecord], in zone: ZoneID, members: [PublishedAccountKeys],
                   reason: EpochKeyRecord.Reason) -> EpochKeyRecord?
}

import ListModel

/// What one service accepts (Spec/SYNC.md §4): requests over these get `limitExceeded` or
/// `quotaExceeded`, never unbounded work.
public struct ServiceLimits: Sendable {
    /// Entries per upload (CloudKit allows 400 records per modify operation).
    public var maxUploadEntries = 400
    /// Encoded bytes per upload (the entry encodings, FORMAT.md §6).
    public var maxUploadBytes = 1 << 20
    /// Entries per zone-changes page, whatever the client asks.
    public var maxPageEntries = 1_000
    /// Encoded bytes per zone-changes page (the entry encodings, FORMAT.md §6), whatever the
    /// client asks; a page holds at least one entry. A page's wire batch must stay under the 4 MiB
    /// a client takes (`Limits.maxPayloadBytes`): a page bounded by count alone could not, once
    /// a few members uploaded large entries, and every device would fail that page for ever.
    public var maxPageBytes = 2 << 20
    /// Bytes of one zone's encoded history (`fetchZoneHistory`, SYNC.md §3.5), below the 64 MiB a
    /// client takes in one answer: a longer history is refused with the reason, so the device
    /// installs the list without it (and says so) instead of retrying an answer it cannot take.
    public var maxHistoryBytes = 48 << 20
    /// Events per history page (`fetchZoneHistoryPage`, SYNC.md §3.12), whatever the history's size.
    public var maxHistoryPageEvents = 16_384
    /// Encoded bytes per history page, past which the page ends (an event is at most a few KiB
    /// more): a device holds one page at a time.
    public var maxHistoryPageBytes = 1 << 20
    /// Zones an account may own.
    public var maxZonesPerAccount = 1_000
    /// Participants of one shared zone, its owner not counted (CloudKit's limit for a share):
    /// one more is refused `tooManyParticipants`, at sharing and at accepting.
    public var maxParticipants = 100
    /// Fetches of an account's recovery kit per hour, per node (SYNC.md §5.7): guessing a
    /// recovery code needs the kit, and a person who lost every device needs it once.
    public var maxRecoveryFetchesPerHour = 10
    /// Device links an account leaves per hour, per node (SYNC.md §5.8): a person links a new
    /// device now and then; the bound keeps `_service/links` small.
    public var maxDeviceLinksPerHour = 10
    /// Entries in the zones an account owns (nil: no quota).
    public var maxEntriesPerAccount: Int? = nil
    /// How long finished lifecycles stay before the service compacts them (COMPACTION.md §2).
    public var retentionMillis: Int64 = ListRetention.defaultRetentionMillis
    /// Entries a compaction plans at once (`ListCompactor.maxEntriesPerGroup`): each group's zones
    /// are answered again as soon as the group is done (SYNC.md §6.2 rule 3). Tests and the
    /// simulation make it small, so that a run has several groups.
    public var compactionGroupEntries = 1_000_000

    /// The default limits; set any field to change it.
    public init() {}
}

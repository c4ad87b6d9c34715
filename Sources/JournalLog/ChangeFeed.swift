/// An opaque position in a store's change feed (Spec/TOKENS.md). Clients keep it and hand it
/// back; only the store that issued it can read it.
public struct FeedToken: Hashable, Sendable, CustomStringConvertible {
    /// The token's text form (TOKENS.md §5), as a client stores it and sends it back.
    public let text: String
    /// Wraps a token's text as a client handed it back; the store checks it when it is used.
    public init(_ text: String) { self.text = text }
    public var description: String { text }
}

/// One zone incarnation as the feed serves it.
public struct ZoneInfo: Sendable, Equatable {
    /// The zone's name.
    public var name: String
    /// The sequence that started this incarnation (its `zoneCreate`, or its first entry).
    public var incarnation: SequenceNumber
    /// The sequence at which this incarnation was deleted (nil: it is live).
    public var deletedAt: SequenceNumber?
    /// Whether the incarnation was deleted or purged (nil: it is live).
    public var deletionReason: ZoneDeletionReason?
    /// How many entries the incarnation holds (fewer once a compaction has purged some).
    public var entryCount: Int
    /// The last sequence of a record in this incarnation (entry, creation or deletion).
    public var lastChange: SequenceNumber
    /// Entries at or below this may have been purged; a token below it may expire (TOKENS.md §6).
    public var lowWaterMark: SequenceNumber
    /// How far this incarnation's history pieces reach, as the log says (the highest `history`
    /// of its `lowWaterMark` records; 0: none says). Once the mark is above 0, a newest piece
    /// below `max(lowWaterMark, historyThrough)` means a newer piece is missing (COMPACTION.md §4).
    public var historyThrough: SequenceNumber = 0
    /// Whether the incarnation has been deleted (`deletedAt` is set).
    public var isDeleted: Bool { deletedAt != nil }

    package init(name: String, incarnation: SequenceNumber, deletedAt: SequenceNumber?, deletionReason: ZoneDeletionReason?,
                 entryCount: Int, lastChange: SequenceNumber, lowWaterMark: SequenceNumber, historyThrough: SequenceNumber = 0) {
        self.name = name
        self.incarnation = incarnation
        self.deletedAt = deletedAt
        self.deletionReason = deletionReason
        self.entryCount = entryCount
        self.lastChange = lastChange
        self.lowWaterMark = lowWaterMark
        self.historyThrough = historyThrough
    }
}

/// `changedZones(since:)`: the zones with changes, and the zones deleted, after the token.
public struct DatabaseChanges: Sendable {
    /// The live zones with changes after the token: fetch each one's changes.
    public var changed: [ZoneInfo]
    /// The zone incarnations deleted after the token: delete their local copies.
    public var deleted: [ZoneInfo]
    /// A database token at the horizon, for the next `changedZones(since:)`.
    public var token: FeedToken

    package init(changed: [ZoneInfo], deleted: [ZoneInfo], token: FeedToken) {
        self.changed = changed
        self.deleted = deleted
        self.token = token
    }
}

/// One entry of a zone's change feed, with the sequence it was stored at.
public struct FeedEntry: Sendable, Equatable {
    /// The entry's sequence in the store's log.
    public var sequence: SequenceNumber
    /// The entry itself.
    public var entry: JournalEntry

    package init(sequence: SequenceNumber, entry: JournalEntry) {
        self.sequence = sequence
        self.entry = entry
    }
}

/// `changes(in:since:limit:)`: the next page of a zone's entries, in order.
public struct ZoneChanges: Sendable {
    /// The zone the page is from.
    public var zone: String
    /// The incarnation the entries belong to (the sequence that started it).
    public var incarnation: SequenceNumber
    /// The page's entries, in sequence order.
    public var entries: [FeedEntry]
    /// Where the next call continues. Never past a record that is not yet durable.
    public var token: FeedToken
    /// More entries are ready now: call again with `token`. Every page makes progress.
    public var moreComing: Bool

    package init(zone: String, incarnation: SequenceNumber, entries: [FeedEntry], token: FeedToken, moreComing: Bool) {
        self.zone = zone
        self.incarnation = incarnation
        self.entries = entries
        self.token = token
        self.moreComing = moreComing
    }
}

/// What a client needs after `tokenExpired`: the incarnation to re-fetch, and the newest
/// snapshot to start from (nil: re-fetch with a nil token, a full read of what remains).
public struct Refetch: Sendable, Equatable {
    /// The zone to re-fetch.
    public var zone: String
    /// The incarnation to re-fetch (the sequence that started it).
    public var incarnation: SequenceNumber
    /// The newest snapshot to start from (nil: re-fetch with a nil token).
    public var snapshotSequence: SequenceNumber?

    /// Names the incarnation to re-fetch and the snapshot to start from.
    public init(zone: String, incarnation: SequenceNumber, snapshotSequence: SequenceNumber?) {
        self.zone = zone
        self.incarnation = incarnation
        self.snapshotSequence = snapshotSequence
    }
}

/// The feed's answers other than a page of changes. Each says what the client does next.
public enum FeedError: Error, Sendable, CustomStringConvertible {
    /// The token is older than the zone's low-water mark: entries it would need may be gone.
    case tokenExpired(zone: String, lowWaterMark: SequenceNumber, refetch: Refetch)
    /// The zone (or the incarnation the token names) was deleted.
    case zoneDeleted(zone: String, at: SequenceNumber, reason: ZoneDeletionReason)
    /// Garbled, tampered, from another store or zone, of the wrong kind, or ahead of this store.
    case invalidToken(String)
    /// No zone has this name.
    case zoneNotFound(String)
    /// A page of fewer than one entry was asked for: paging could not make progress.
    case invalidLimit(Int)
    /// The store failed underneath the feed (I/O, damage, a closed store).
    case storage(JournalError)

    public var description: String {
        switch self {
        case .tokenExpired(let z, let mark, let r):
            "the token for zone \(z) is older than its low-water mark \(mark): re-fetch the zone "
                + (r.snapshotSequence.map { "from the snapshot at sequence \($0)" } ?? "with no token") + " and replace local data"
        case .zoneDeleted(let z, let at, let reason):
            "zone \(z) was \(reason == .purged ? "purged" : "deleted") at sequence \(at): delete the local copy"
        case .invalidToken(let why): "invalid change token: \(why); fetch again with no token"
        case .zoneNotFound(let z): "no zone named \(z) (`zones()` lists the store's zones)"
        case .invalidLimit(let n): "a page holds at least one entry (limit \(n) asked for)"
        case .storage(let e): e.description
        }
    }
}

/// When a zone token expires (TOKENS.md §6, rule 3).
package enum TokenExpiry: Sendable {
    /// Below the zone's low-water mark and issued under a lower one: entries it has not seen
    /// may have been purged. A store's own readers use this.
    case belowMark
    /// Issued under a lower mark, wherever it points: every holder re-fetches after each purge,
    /// so every replica adopts the same compacted copy (a sync service, Spec/SYNC.md §6).
    case issuedUnderAnOlderMark
    /// As `issuedUnderAnOlderMark`, except a token whose floor is at or above `from` while the
    /// zone's mark is still `mark`: its holder can follow every compaction since its floor from
    /// the records the zone still holds (Spec/SYNC.md §6.7). A mark that moved since the caller
    /// read it expires every older token, as `issuedUnderAnOlderMark` does: stricter, never laxer.
    /// A token whose position is below `position` may have missed an entry a record purged
    /// before it saw it: it expires too.
    case followable(from: SequenceNumber, position: SequenceNumber, mark: SequenceNumber)

    /// Whether a zone token with `floor` and `position` has expired under a zone mark of `lowWaterMark`.
    package func expires(floor: SequenceNumber, position: SequenceNumber, lowWaterMark: SequenceNumber) -> Bool {
        guard floor < lowWaterMark else { return false }
        switch self {
        case .belowMark: return position < lowWaterMark
        case .issuedUnderAnOlderMark: return true
        case .followable(let from, let held, let mark): return lowWaterMark != mark || floor < from || position < held
        }
    }
}

/// A reader whose files live on a `FileSystem` of the project's (a store, a store reader).
package protocol FileSystemBacked {
    var fileSystem: any FileSystem { get }
}

/// What reads a store's change feed, list state and history: the writer itself (`JournalStore`),
/// or a reader that never takes its lock (`StoreReader`), in this process or another one.
public protocol StoreReading: AnyObject, Sendable {
    /// The store directory.
    var path: String { get }
    /// The highest sequence the feed serves (TOKENS.md §3).
    var horizon: SequenceNumber { get }
    /// Every zone's newest incarnation, by name.
    func zones() -> [ZoneInfo]
    /// The zone's newest incarnation (nil: no zone has this name).
    func zone(_ name: String) -> ZoneInfo?
    /// The zones changed and deleted since `token` (nil: every zone), and a new token.
    func changedZones(since token: FeedToken?) throws(FeedError) -> DatabaseChanges
    /// The zone's entries after `token` (nil: all of them), at most `limit`, in order.
    func changes(in zone: String, since token: FeedToken?, limit: Int) throws(FeedError) -> ZoneChanges
    /// A token at `position` (the horizon when nil) for the zone's newest incarnation.
    func zoneToken(_ zone: String, position: SequenceNumber?) throws(FeedError) -> FeedToken
    /// Compaction runs committed under this store since it was opened (a reader: the ones its
    /// refreshes found). A read of many pages that sees it change may hold entries from before a
    /// rewrite and after it (an add whose purged mark-off it never met), and reads again.
    var rewrites: UInt64 { get }
}

extension StoreReading {
    /// The file system the store's snapshot and history files are read through: the store's own
    /// for the project's readers (which may live in memory), the real one for any other reader.
    package var storeFileSystem: any FileSystem {
        (self as? any FileSystemBacked)?.fileSystem ?? PosixFileSystem()
    }

    /// `changes(in:since:limit:)` with pages of at most 1,000 entries.
    public func changes(in zone: String, since token: FeedToken?) throws(FeedError) -> ZoneChanges {
        try changes(in: zone, since: token, limit: 1_000)
    }

    /// A token at the horizon for the zone's newest incarnation: its changes from now on.
    public func zoneToken(_ zone: String) throws(FeedError) -> FeedToken { try zoneToken(zone, position: nil) }
}

extension JournalStore: StoreReading, FileSystemBacked {
    package var fileSystem: any FileSystem { fs }

    /// The highest sequence the feed serves: the durable point (the written point for a store
    /// whose durability is `none`, where nothing is ever synced). A token never passes it.
    public var horizon: SequenceNumber {
        cond.lock()
        defer { cond.unlock() }
        return horizonLocked
    }

    var horizonLocked: SequenceNumber { options.durability == .none ? writtenThrough : durableThrough }


    public func zones() -> [ZoneInfo] {
        cond.lock()
        defer { cond.unlock() }
        return ZoneFeed.zones(catalog, horizon: horizonLocked)
    }

    /// The zone's newest incarnation as the feed serves it (nil: no zone has this name).
    public func zone(_ name: String) -> ZoneInfo? {
        cond.lock()
        defer { cond.unlock() }
        return ZoneFeed.zone(name, catalog, horizon: horizonLocked)
    }

    public func changedZones(since token: FeedToken?) throws(FeedError) -> DatabaseChanges {
        cond.lock()
        defer { cond.unlock() }
        return try ZoneFeed.changedZones(since: token, catalog, horizon: horizonLocked, seen: writtenThrough, signer: signer)
    }

    /// Costs O(entries returned): the zone index says where they are.
    public func changes(in zone: String, since token: FeedToken?, limit: Int = 1_000) throws(FeedError) -> ZoneChanges {
        try changes(in: zone, since: token, limit: limit, expiry: .belowMark)
    }

    /// `changes(in:since:limit:)` with a choice of when a token expires.
    package func changes(in zone: String, since token: FeedToken?, limit: Int, expiry: TokenExpiry) throws(FeedError) -> ZoneChanges {
        try ZoneFeed.changes(limit: limit) { slack throws(FeedError) in
            try changes(in: zone, since: token, limit: limit, frameSlack: slack, expiry: expiry)
        }
    }

    private func changes(in zone: String, since token: FeedToken?, limit: Int, frameSlack: Int, expiry: TokenExpiry) throws(FeedError) -> ZoneChanges {
        cond.lock()
        // A compaction swap is renaming a segment: its frame offsets are about to change.
        while gate.swapWaiting { cond.wait() }
        let plan: ZoneFeed.PagePlan
        do throws(FeedError) {
            do { try readableLocked() } catch { throw FeedError.storage(error) }
            plan = try ZoneFeed.plan(zone, since: token, limit: limit, frameSlack: frameSlack, catalog, horizon: horizonLocked,
                                     seen: writtenThrough, expiry: expiry, signer: signer) { z, inc in
                SnapshotDirectory.list(store: path, zone: z, incarnation: inc, kinds: SnapshotFile.Kind.states, fs: fs)
            }
        } catch {
            cond.unlock()
            throw error
        }
        // Until the frames are read, no swap may move them.
        gate.feedReaders += 1
        cond.unlock()
        defer {
            cond.lock()
            gate.feedReaders -= 1
            if gate.feedReaders == 0 { cond.broadcast() }
            cond.unlock()
        }
        return try ZoneFeed.read(plan, fetcher: FrameFetcher(store: path, fs: fs, segments: plan.segments), signer: signer)
    }

    /// The position a database token of this store stands at, or nil when it is not one.
    package func databaseTokenPosition(_ token: FeedToken) -> SequenceNumber? {
        try? signer.parse(token, kind: .database, horizon: .max).position
    }

    /// A token at the feed's current end for `zone` (or at `position`): what a client that just
    /// loaded a snapshot at `position` continues from.
    public func zoneToken(_ zone: String, position: SequenceNumber? = nil) throws(FeedError) -> FeedToken {
        cond.lock()
        defer { cond.unlock() }
        return try ZoneFeed.zoneToken(zone, position: position, catalog, horizon: horizonLocked, signer: signer)
    }
}

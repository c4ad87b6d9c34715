import Foundation

/// The ids each zone incarnation holds, loaded from the log on first use: what makes an append
/// idempotent (an id the zone holds returns its stored sequence) and finds a conflict (the same
/// id with other content). Reading them grows with the zone, so appends load them with the
/// writer's lock released.
extension JournalStore {
    /// Under `cond`: the live incarnation an entry for `zone` joins; nil when the zone has never
    /// existed (the entry starts it). A deleted zone must be created again first.
    func trackAcceptingLocked(_ zone: String, at seq: SequenceNumber) throws(JournalError) -> Int? {
        if let live = catalog.live(zone) { return live }
        if let latest = catalog.latest(zone), let deleted = catalog.tracks[latest].deletedAt {
            throw JournalError.zoneDeleted(zone: zone, at: deleted)
        }
        return nil
    }

    /// Under `cond`: where (and what) the zone incarnation stored under this id, if it did.
    func storedIDLocked(_ id: CompactID, track: Int) throws(JournalError) -> StoredID? {
        if catalog.ids[track] == nil { try loadIDsLocked(track) }
        return catalog.ids[track]![id]
    }

    /// Under `cond`: reads the ids a zone incarnation holds from the log, on first use, holding
    /// the lock (for `appendRecord`, a tool's path; appends load them with `loadIDsUnlocked`).
    func loadIDsLocked(_ track: Int) throws(JournalError) {
        // Every frame of this incarnation is on disk: nothing was enqueued for it since open
        // without loading its ids first.
        catalog.ids[track] = try Self.readIDs(catalog.tracks[track], store: path, fs: fs, segments: catalog.segments)
    }

    /// Loads the ids a zone incarnation holds with the writer's lock released: reading them grows
    /// with the zone, and appends to other zones go on meanwhile. Appends to this zone wait for
    /// it (they need its ids), as does a compaction's swap (the read is a feed read: no frame may
    /// move under it). Nothing can be enqueued for the zone before its ids are in place, so the
    /// frames it reads are all it holds.
    func loadIDsUnlocked(_ track: Int) throws(JournalError) {
        cond.lock()
        while catalog.ids[track] == nil && (loadingIDs.contains(track) || gate.swapWaiting) { cond.wait() }
        guard catalog.ids[track] == nil, catalog.tracks[track].deletedAt == nil else {
            cond.unlock()
            return
        }
        do { try readableLocked() } catch {
            cond.unlock()
            throw error
        }
        loadingIDs.insert(track)
        gate.feedReaders += 1
        let t = catalog.tracks[track], segments = catalog.segments
        cond.unlock()
        let read: Result<IDIndex, JournalError>
        do { read = .success(try Self.readIDs(t, store: path, fs: fs, segments: segments)) } catch { read = .failure(error) }
        cond.lock()
        loadingIDs.remove(track)
        gate.feedReaders -= 1
        if case .success(let ids) = read, catalog.ids[track] == nil, catalog.tracks[track].deletedAt == nil { catalog.ids[track] = ids }
        cond.broadcast()
        cond.unlock()
        _ = try read.get()
    }

    /// The ids a zone incarnation's frames hold, each with where and what it stored.
    private static func readIDs(_ t: ZoneTrack, store path: String, fs: any FileSystem, segments: [SequenceNumber]) throws(JournalError) -> IDIndex {
        var ids = IDIndex()
        ids.reserveCapacity(t.entryCount)
        let fetcher = FrameFetcher(store: path, fs: fs, segments: segments)
        let zone = Array(t.name.utf8)
        for loc in t.frameLocations {
            _ = try fetcher.forEachEntry(at: loc, after: 0, zone: zone) { s, e, encoding in
                guard e.zone == t.name, ids[e.id] == nil else { return true }
                if case .place = e.operation {
                    ids[e.id] = StoredID(sequence: s, fingerprint: EntryFingerprint.any)
                } else {
                    ids[e.id] = StoredID(sequence: s, fingerprint: EntryFingerprint.of(encoding))
                }
                return true
            }
        }
        return ids
    }
}

import JournalLog
import ListModel

/// Applies a service's compaction record to a device's own copy of the zone (Spec/SYNC.md §6.7),
/// so the device holds exactly the service's set without fetching it again: the entries the
/// service purged go, the entries it wrote over become the same `place`, and a base the device
/// installed earlier is rewritten to what it would hold had the service's snapshot been taken
/// after the purge (`ListBase.following`). What goes moves into the device's own history, in a
/// piece after its newest, as the service's compactor moves it into its own.
///
/// The device decides nothing: every id comes from the record. One atomic rewrite (FORMAT.md
/// §9.4), with the piece in place before it commits, so a crash leaves the copy before or after,
/// never between; applying a record again, or to a copy that already holds its result, changes
/// nothing.
package struct CompactionFollower {
    package let query: ListQuery

    package init(query: ListQuery) { self.query = query }

    /// What following one record did.
    package struct Outcome: Sendable, Equatable {
        /// Entries the device held that went, and that were written over.
        package var purged = 0
        package var placed = 0
        /// Whether the device's base was rewritten.
        package var baseRewritten = false
        /// Entries the record purged that the copy never held (and no base of it folds in): its
        /// token is older than the retention (an entry goes only once it has been on the service
        /// for the retention, so a device that synced since holds it). Then nothing is changed:
        /// the copy's history would lack their events, so it is fetched anew.
        package var missing = 0
    }

    /// Follows `record` in `zone`. Throws what the store throws; a zone that keeps changing under
    /// the rewrite (a local append between the read and the commit) is read again, at most
    /// `ListCompactor.maxAttempts` times.
    package func follow(_ record: CompactionRecord, in zone: String) throws(QueryError) -> Outcome {
        var attempt = 0
        while true {
            attempt += 1
            do { return try followOnce(record, in: zone) } catch {
                guard case .storage(.compactionConflict) = error, attempt < ListCompactor.maxAttempts else { throw error }
            }
        }
    }

    /// One entry of the zone the record names, and what becomes of it.
    private enum Change {
        case purge
        case replace(JournalEntry)
    }

    private func followOnce(_ record: CompactionRecord, in zone: String) throws(QueryError) -> Outcome {
        guard let writer = query.writer else { throw .storage(.readOnly("following a compaction needs the store's writer")) }
        guard let info = writer.zone(zone), !info.isDeleted else { return Outcome() }
        let purged = Set(record.purged)
        var placed: [CompactID: CompactionRecord.Placement] = [:]
        for p in record.placed { placed[p.entry] = p }
        // Which of the zone's entries the record names (and the base, if the list starts with one).
        var changes: [SequenceNumber: Change] = [:]
        var outcome = Outcome()
        var heldPurged = Set<CompactID>()
        var first = true
        var base: (sequence: SequenceNumber, entry: JournalEntry)? = nil
        let (_, read) = try query.replayPages(zone, after: nil) { page in
            for e in page {
                defer { first = false }
                if first, ListBase.isBase(e.entry) { base = (e.sequence, e.entry) }
                if purged.contains(e.entry.id) {
                    changes[e.sequence] = .purge
                    outcome.purged += 1
                    heldPurged.insert(e.entry.id)
                } else if let p = placed[e.entry.id] {
                    var x = e.entry
                    x.operation = .place(item: p.item, after: p.anchor)
                    guard x != e.entry else { continue }  // written over already
                    changes[e.sequence] = .replace(x)
                    outcome.placed += 1
                }
            }
        }
        if base == nil, heldPurged.count < purged.count {
            // Purged here already (a follow whose rewrite committed before a crash, or a record
            // met again) when the history pieces hold them; otherwise never held. Read only then.
            let moved = Set(try query.storedHistory(zone).log.allEvents().map(\.entryID))
            let missing = purged.subtracting(heldPurged).subtracting(moved).count
            if missing > 0 {
                outcome.missing = missing
                return outcome
            }
        }
        if let base, case .opaque(let kind, let body) = base.entry.operation {
            let rewritten: [UInt8]?
            do { rewritten = try ListBase.following(body, record: record) } catch {
                throw .baseUnreadable(zone: zone, reason: "its base cannot follow the service's compaction to \(record.to): \(error)")
            }
            if let rewritten {
                var x = base.entry
                x.operation = .opaque(kind: kind, body: rewritten)
                changes[base.sequence] = .replace(x)
                outcome.baseRewritten = true
                BaseCache.shared.forget(store: query.store.path, zone: zone)
            }
        }
        guard let last = changes.keys.max() else { return outcome }
        try removeSnapshots(zone, incarnation: info.incarnation)
        do {
            if last > writer.sealedThrough { _ = try writer.sealActiveSegment() }
        } catch { throw .storage(error) }
        // The history reaches the zone's read position before anything goes (COMPACTION.md §1
        // step 3), and the piece of what goes takes the empty one's place before the commit.
        var piece = try query.startHistoryPiece(zone, incarnation: info.incarnation, sequence: read)
        defer { piece.abandon() }
        if !piece.isMerging {
            do { _ = try piece.finish() } catch { throw .storage(error) }
            piece = try query.startHistoryPiece(zone, incarnation: info.incarnation, sequence: read)
        }
        do {
            try writer.setLowWaterMark(zone, to: max(last, info.lowWaterMark), historyThrough: piece.header.sequence)
        } catch { throw .storage(error) }
        var pieceError: JournalError? = nil
        let ranges = changes.keys.sorted().map { $0...$0 }
        do {
            _ = try writer.compact(within: ranges, choosing: { seq, e in
                guard e.zone == zone, let change = changes[seq] else { return .keep }
                // A base is no event; everything else that goes or is written over is kept in the history.
                if !ListBase.isBase(e), pieceError == nil {
                    do throws(JournalError) { try piece.add(e) } catch { pieceError = error }
                }
                switch change {
                case .purge: return .purge
                case .replace(let x): return .replace(x)
                }
            }, purgeDeletedZones: false, unchangedAfter: [zone: read], beforeCommit: { () throws(JournalError) in
                if let pieceError { throw pieceError }
                _ = try piece.finish()
            })
        } catch { throw .storage(error) }
        return outcome
    }

    /// The zone's snapshot files: each rests on entries about to change (COMPACTION.md §1 step 4).
    private func removeSnapshots(_ zone: String, incarnation: SequenceNumber) throws(QueryError) {
        let files = SnapshotDirectory.list(store: query.store.path, zone: zone, incarnation: incarnation,
                                           kinds: [.state, .delta, .base], fs: query.fs)
        guard !files.isEmpty else { return }
        do {
            for f in files { try query.fs.remove(f.path) }
            try query.fs.syncDirectory(query.store.path + "/" + SnapshotDirectory.name)
        } catch { throw .storage(error) }
    }
}

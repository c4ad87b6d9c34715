// The storage side of compaction (Spec/COMPACTION.md §6, FORMAT.md §9.4): which sequences a run may
// purge, the run itself (rewrites written beside their segments) and its commit, which swaps
// them in with the lock released for everything but the zones it touches.

extension JournalStore {
    /// Every sequence below this lies in a sealed segment, which the compactor may rewrite; the
    /// active segment is never rewritten.
    package var sealedThrough: SequenceNumber {
        cond.lock()
        defer { cond.unlock() }
        return activeBase - 1
    }

    /// Whether a durably deleted zone incarnation may still hold entries in the active segment,
    /// which no compaction rewrites: a compaction seals it first, so that a deleted list's
    /// contents leave the disk (COMPACTION.md §1).
    package var deletedZoneEntriesInActiveSegment: Bool {
        cond.lock()
        defer { cond.unlock() }
        return catalog.deletedEntries(above: activeBase - 1, deletedThrough: durableThrough)
    }

    /// Rewrites sealed segments without the entries in `purging` that lie at or below their zone's
    /// low-water mark, and (when `purgeDeletedZones`) without the entries of deleted zone
    /// incarnations. Sequences are never renumbered. Atomic and crash-safe: every rewrite is
    /// written and synced as `.cleaned`, then all are renamed to `.swap` and over their segments;
    /// open finishes a run that reached its first `.swap`, and discards one that did not. Appends
    /// go on meanwhile; feed reads pause only for the renames.
    ///
    /// `replacing` writes each entry at its sequence instead of the stored one (the list rules
    /// write `place` entries this way, COMPACTION.md §2), under the same rules as a purge: only at
    /// or below the zone's mark (the entry that started an implicit zone is purged, its
    /// `zoneCreate` written in its place, and never replaced); otherwise the stored entry is kept
    /// and counted in `entriesKept`. A replacement must name a stored entry
    /// with its id and zone, and no sequence may be both purged and replaced: those are caller
    /// bugs, thrown as `invalidEntry` before anything changes.
    ///
    /// Which entries to purge or replace is the caller's policy (the list model's lifecycles, for
    /// example): the store only guarantees that nothing above a zone's mark is ever changed.
    ///
    /// A policy decided from entries read through some sequence can be undone by one appended
    /// after it (an unmark of an item it chose). `unchangedAfter` maps a zone to the sequence it
    /// was read through; if an entry of that zone was enqueued after it, or a new incarnation of
    /// the zone started after it, the run throws `compactionConflict` at its commit point, under
    /// the lock appends take, and changes nothing. Zone records alone (a repeated create, a
    /// delete) are not a change.
    package func compact(purging: some Sequence<SequenceNumber>, replacing: [SequenceNumber: JournalEntry] = [:],
                        purgeDeletedZones: Bool = true,
                        unchangedAfter: [String: SequenceNumber] = [:]) throws(JournalError) -> CompactionReport {
        let purge = Set(purging)
        if let both = replacing.keys.filter(purge.contains).min() {
            throw JournalError.invalidEntry("sequence \(both) is asked to be both purged and replaced; pass it in one of `purging` or `replacing` (nothing was compacted)")
        }
        for (seq, e) in replacing {
            if let why = EntryCodec.validate(e) { throw JournalError.invalidEntry("the replacement for sequence \(seq): \(why) (nothing was compacted)") }
        }
        // Every sequence asked for, purged or replaced: only segments holding one are read.
        let sorted = (purge.union(replacing.keys)).sorted()
        var found: Set<SequenceNumber> = []
        let purgeSorted = purge.sorted()
        var (report, sealedLimit) = try compactRun(within: sorted.map { $0...$0 }, choosing: { seq, _ in
            let i = purgeSorted.partitionPoint { $0 < seq }
            if i < purgeSorted.count && purgeSorted[i] == seq { return .purge }
            guard !replacing.isEmpty, let r = replacing[seq] else { return .keep }
            found.insert(seq)
            return .replace(r)
        }, purgeDeletedZones: purgeDeletedZones, unchangedAfter: unchangedAfter, beforeCommit: { sealedLimit throws(JournalError) in
            // A replacement with no stored entry to replace (a zone record's sequence, one purged
            // before, or none in a sealed segment) is a caller bug, as a mismatched id is.
            if let missing = replacing.keys.filter({ $0 <= sealedLimit && !found.contains($0) }).min() {
                throw JournalError.invalidEntry("no stored entry at sequence \(missing) to replace; replace only entries read from the store (nothing was compacted)")
            }
        })
        // Entries asked for (purged or replaced) in the active segment were kept too.
        report.entriesKept += sorted.count - sorted.partitionPoint { $0 <= sealedLimit }
        _ = sealedLimit
        return report
    }

    /// Rewrites sealed segments as `choose` says, entry by entry: the general form of
    /// `compact(purging:replacing:)`, for a caller that decides as the entries go by (the list
    /// compactor reads each entry once more here, not into memory). `choose` is asked about every
    /// entry of the sealed segments that overlap `ranges` (all of them when nil), in log order;
    /// the store's own rules apply on top (FORMAT.md §9.4): nothing above its zone's low-water
    /// mark changes, the entry that started an implicit zone becomes its `zoneCreate`, entries of
    /// deleted zones go. `beforeCommit` runs once every rewrite is written and synced, before the
    /// commit point (the list compactor puts the history piece of what goes in place there); if it
    /// throws, nothing changes. Then the run commits as `compact(purging:replacing:)` does.
    package func compact(within ranges: [ClosedRange<SequenceNumber>]?, choosing choose: (SequenceNumber, JournalEntry) -> CompactionChoice,
                        purgeDeletedZones: Bool = true, unchangedAfter: [String: SequenceNumber] = [:],
                        beforeCommit: () throws(JournalError) -> Void = {}) throws(JournalError) -> CompactionReport {
        try compactRun(within: ranges, choosing: choose, purgeDeletedZones: purgeDeletedZones, unchangedAfter: unchangedAfter,
                       beforeCommit: { _ throws(JournalError) in try beforeCommit() }).report
    }

    private func compactRun(within ranges: [ClosedRange<SequenceNumber>]?, choosing choose: (SequenceNumber, JournalEntry) -> CompactionChoice,
                            purgeDeletedZones: Bool, unchangedAfter: [String: SequenceNumber],
                            beforeCommit: (SequenceNumber) throws(JournalError) -> Void) throws(JournalError) -> (report: CompactionReport, sealedLimit: SequenceNumber) {
        try locked { () throws(JournalError) in
            try checkWritableLocked()
            guard !gate.running else { throw JournalError.compactionRunning }
            // A checkpoint being written names today's offsets; let it land, then take no other
            // until the run is over (the one that fell due would name offsets about to change).
            while checkpointWriting { cond.wait() }
            dropDueCheckpointLocked()
            gate.running = true
        }
        defer {
            cond.lock()
            gate.running = false
            // The checkpoint was removed before the swap: take a new one at the next sync.
            forceCheckpointLocked()
            cond.broadcast()
            cond.unlock()
        }
        try CompactionFiles.removeLeftovers(store: path, fs: fs)
        var report = CompactionReport()
        let sealedLimit = sealedThrough
        let (deletedRanges, catalogNow, durable) = try locked { () -> ([ClosedRange<SequenceNumber>], ZoneCatalog, SequenceNumber) in
            let ranges = catalog.tracks.compactMap { t -> ClosedRange<SequenceNumber>? in
                guard purgeDeletedZones, let d = t.deletedAt, d <= durableThrough, t.entryCount > 0 else { return nil }
                return t.incarnation...d
            }
            return (ranges, catalog, durableThrough)
        }
        var staged: [StagedRewrite] = []
        let tracks = TrackLookup(catalogNow)
        do throws(JournalError) {
            let bases = try StoreLayout.segmentPaths(path, fs: fs).compactMap { SegmentName(fileName: String($0.split(separator: "/").last!))?.base }
            for (k, base) in bases.enumerated() where base <= sealedLimit {
                let end = k + 1 < bases.count ? bases[k + 1] : sealedLimit + 1
                guard end - 1 <= sealedLimit else { break }
                // Look only at segments that can hold something to purge or replace.
                let asked = ranges.map { r in
                    let i = r.partitionPoint { $0.upperBound < base }
                    return i < r.count && r[i].lowerBound <= end - 1
                } ?? true
                guard asked || deletedRanges.contains(where: { $0.overlaps(base...(end - 1)) }) else { continue }
                report.segmentsExamined += 1
                let name = SegmentName(base: base).fileName
                let segmentPath = path + "/" + name
                let old = try readWhole(segmentPath)
                let rewriter = SegmentRewriter(name: name, trackOf: { zone, seq in tracks.track(zone, atOrBelow: seq) },
                                               compress: options.compressBatches)
                let rewrite = try rewriter.rewrite(old) { seq, track, e in
                    let choice = choose(seq, e)
                    // A replacement for another entry than the stored one is the caller's bug.
                    if case .replace(let r) = choice, r.id != e.id || r.zone != e.zone {
                        return .refused(.invalidEntry("the replacement for sequence \(seq) has id \(r.id) in zone \(r.zone), but the stored entry has id \(e.id) in zone \(e.zone); a replacement keeps the id and zone of the entry it replaces (nothing was compacted)"))
                    }
                    guard let track else { return .keep }
                    let t = catalogNow.tracks[track]
                    // The entry that started an implicit incarnation is its identity (TOKENS.md
                    // §1): without it a rebuilt index would start the zone elsewhere.
                    let startsIncarnation = t.isImplicit && seq == t.incarnation
                    // Only a durable deletion: one that a crash could undo purges nothing.
                    if purgeDeletedZones, let d = t.deletedAt, d <= durable {
                        return startsIncarnation ? .createInstead(deletedZone: true) : .purgeDeletedZone
                    }
                    switch choice {
                    case .keep: return .keep
                    case .purge:
                        guard seq <= t.lowWaterMark else { return .keptAboveMark }
                        return startsIncarnation ? .createInstead(deletedZone: false) : .purge
                    case .replace(let r): return seq <= t.lowWaterMark ? .replace(r) : .keptAboveMark
                    }
                }
                report.entriesKept += rewrite.kept
                guard rewrite.changed else { continue }
                staged.append(StagedRewrite(base: base, segmentPath: segmentPath, frames: rewrite.frames, entriesBefore: rewrite.entriesBefore))
                let file = try fs.openFile(segmentPath + CompactionFiles.cleaned, create: true, truncate: true)
                do throws(JournalError) {
                    try file.write(rewrite.bytes, at: 0)
                    try file.sync()
                    file.close()
                } catch {
                    file.close()
                    throw error
                }
                report.segmentsRewritten += 1
                report.entriesPurged += rewrite.purged
                report.entriesReplaced += rewrite.replaced
                report.deletedZoneEntriesPurged += rewrite.deletedZonePurged
                report.bytesBefore += Int64(old.count)
                report.bytesAfter += Int64(rewrite.bytes.count)
            }
            try beforeCommit(sealedLimit)
            if !staged.isEmpty { try fs.syncDirectory(path) }
        } catch {
            for s in staged { try? fs.remove(s.segmentPath + CompactionFiles.cleaned) }
            throw error
        }
        if !staged.isEmpty { try commit(staged, unchangedAfter: unchangedAfter) }
        return (report, sealedLimit)
    }

    struct StagedRewrite {
        var base: SequenceNumber
        var segmentPath: String
        var frames: [(offset: Int64, touches: [FrameTouch])]
        var entriesBefore: [Int: Int]
    }

    /// Swaps every staged rewrite in at once and updates the zone index, with no feed read
    /// between choosing frame locations and reading them. The check that no zone of the run
    /// changed is made holding `cond`; the renames and directory syncs are made with it released,
    /// while appends to those zones wait (`gate.swappingZones`) and appends to every other zone go on
    /// (they go to the active segment, which no run rewrites); the index is updated holding it
    /// again. Before the first `.swap` a failure leaves the log as it was; after it the writer
    /// stops (what reached the disk is unknown) and reopening rolls the run forward.
    private func commit(_ staged: [StagedRewrite], unchangedAfter: [String: SequenceNumber]) throws(JournalError) {
        cond.lock()
        defer { cond.unlock() }
        gate.swapWaiting = true
        while gate.feedReaders > 0 { cond.wait() }
        defer {
            gate.swapWaiting = false
            gate.swappingZones = []
            cond.broadcast()
        }
        do throws(JournalError) {
            // A store closing (it waits for this run) or failed takes no swap: the run is dropped.
            try checkWritableLocked()
            for (zone, through) in unchangedAfter.sorted(by: { $0.key < $1.key }) {
                guard let t = catalog.latest(zone) else { continue }
                // A newer incarnation (deleted and created again) counts as a change; a deletion
                // alone does not (the zone's entries are purged with it anyway).
                let last = max(catalog.tracks[t].incarnation, t < lastEnqueued.count ? lastEnqueued[t] : 0)
                if last > through { throw JournalError.compactionConflict(zone: zone, appended: last, readThrough: through) }
            }
        } catch {
            for s in staged { try? fs.remove(s.segmentPath + CompactionFiles.cleaned) }
            throw error
        }
        // From here until the index is updated, nothing may be appended to these zones.
        gate.swappingZones = Set(unchangedAfter.keys)
        markCheckpointRemovedLocked()
        cond.unlock()
        var ioError: JournalError? = nil
        var swapped = false
        do throws(JournalError) {
            // A checkpoint names frame offsets the swap changes: remove it first, so a crash after
            // the swap rebuilds the index rather than trusting stale offsets.
            let indexFiles = [StoreLayout.indexFile, StoreLayout.indexJournalFile].filter { fs.kind(of: path + "/" + $0) != .missing }
            for f in indexFiles { try fs.remove(path + "/" + f) }
            if !indexFiles.isEmpty { try fs.syncDirectory(path + "/" + StoreLayout.indexDirectory) }
            swapped = true
            for s in staged { try fs.rename(s.segmentPath + CompactionFiles.cleaned, s.segmentPath + CompactionFiles.swap) }
            try fs.syncDirectory(path)
            for s in staged { try fs.rename(s.segmentPath + CompactionFiles.swap, s.segmentPath) }
            try fs.syncDirectory(path)
        } catch {
            ioError = error
        }
        cond.lock()
        if let ioError {
            if swapped {
                if failure == nil { failure = ioError }
                gate.swapFailure = ioError
            } else {
                for s in staged { try? fs.remove(s.segmentPath + CompactionFiles.cleaned) }
            }
            throw ioError
        }
        // Segments in base order: an earlier one's new locations are in place before a later
        // one's tracks may need to read its last frame.
        for s in staged.sorted(by: { $0.base < $1.base }) {
            let fetcher = FrameFetcher(store: path, fs: fs, segments: catalog.segments)
            catalog.replaceSegment(base: s.base, frames: s.frames, entriesBefore: s.entriesBefore) { location in
                try? fetcher.lastSequence(at: location)
            }
        }
        gate.rewritesCommitted += 1
    }

    public var rewrites: UInt64 {
        cond.lock()
        defer { cond.unlock() }
        return gate.rewritesCommitted
    }

    private func readWhole(_ path: String) throws(JournalError) -> [UInt8] {
        let file = try fs.openFile(path, create: false, truncate: false)
        defer { file.close() }
        let size = try file.size()
        guard size <= Int64(options.segmentSize) + Int64(Frame.overhead + Limits.maxPayloadBytes) else {
            throw JournalError.notAStore(path: path, reason: "a sealed segment of \(size) bytes is larger than any writer makes")
        }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        let result: Result<Int, JournalError> = bytes.withUnsafeMutableBytes { b in
            do throws(JournalError) { return .success(try file.read(into: b, at: 0)) } catch { return .failure(error) }
        }
        guard try result.get() == Int(size) else { throw JournalError.io(operation: "read (file shrank)", path: path, errno: 5) }
        return bytes
    }
}

/// `ZoneCatalog.latest(_:atOrBelow:)` for entries read in a row: a run of one zone's entries
/// looks its name up once.
final class TrackLookup {
    let catalog: ZoneCatalog
    private var zone = ""
    private var candidates: [Int] = []

    init(_ catalog: ZoneCatalog) { self.catalog = catalog }

    func track(_ zone: String, atOrBelow seq: SequenceNumber) -> Int? {
        if !sameBytes(zone, self.zone) {
            self.zone = zone
            candidates = catalog.byName[zone] ?? []
        }
        return candidates.last { catalog.tracks[$0].incarnation <= seq }
    }
}

extension ZoneCatalog {
    /// Whether an incarnation deleted at or below `deletedThrough` holds an entry above `sealed`
    /// (in the active segment, which no compaction rewrites).
    func deletedEntries(above sealed: SequenceNumber, deletedThrough: SequenceNumber) -> Bool {
        tracks.contains { t in
            guard let d = t.deletedAt, d <= deletedThrough, t.entryCount > 0 else { return false }
            // A track loaded from an index checkpoint has no frames once deleted (INDEX.md):
            // then any of its sequences above the sealed log may hold an entry.
            guard !t.frameSequences.isEmpty else { return max(t.incarnation, sealed + 1) < d }
            return t.frameSequences.contains { $0 > sealed && $0 != d }
        }
    }

    /// After a segment was rewritten: its frames in every incarnation's lists are replaced by the
    /// new ones (same sequences, new offsets, purged frames gone).
    /// `lastSequenceOfFrame` reads the last sequence of the frame at a location, for a track whose
    /// last records went with the rewrite: its `lastSequence` is then what a rebuild would find.
    mutating func replaceSegment(base: SequenceNumber, frames: [(offset: Int64, touches: [FrameTouch])], entriesBefore: [Int: Int],
                                 lastSequenceOfFrame: (UInt64) -> SequenceNumber? = { _ in nil }) {
        guard let k = segments.firstIndex(of: base) else { return }
        var fresh: [Int: (seqs: [SequenceNumber], locs: [UInt64], entries: Int, last: SequenceNumber)] = [:]
        for (offset, touches) in frames {
            for t in touches {
                fresh[t.track, default: ([], [], 0, 0)].seqs.append(t.firstSequence)
                fresh[t.track]!.locs.append(ZoneTrack.location(segmentOrdinal: k, offset: offset))
                fresh[t.track]!.entries += t.entries
                fresh[t.track]!.last = max(fresh[t.track]!.last, t.lastSequence)
            }
        }
        let lo = UInt64(k) << 32, hi = UInt64(k + 1) << 32
        for i in tracks.indices {
            let n = fresh[i]
            guard n != nil || entriesBefore[i] != nil || tracks[i].frameLocations.contains(where: { $0 >= lo && $0 < hi }) else { continue }
            var t = tracks[i]
            let a = t.frameLocations.partitionPoint { $0 < lo }
            let b = t.frameLocations.partitionPoint { $0 < hi }
            let lastWasHere = b == t.frameLocations.count && b > a
            t.frameLocations.replaceSubrange(a..<b, with: n?.locs ?? [])
            t.frameSequences.replaceSubrange(a..<b, with: n?.seqs ?? [])
            t.entryCount += (n?.entries ?? 0) - (entriesBefore[i] ?? 0)
            if lastWasHere && t.deletedAt == nil {
                // The incarnation's last records were in this segment: its last change is now the
                // last record kept, here or in the frame before (what a rebuilt index finds).
                if let n, !n.seqs.isEmpty {
                    t.lastSequence = n.last
                } else if let before = t.frameLocations.last {
                    t.lastSequence = lastSequenceOfFrame(before) ?? t.lastSequence
                } else {
                    t.lastSequence = t.incarnation
                }
            }
            // The entry that started an implicit incarnation became its zoneCreate record.
            if t.isImplicit, let seqs = n?.seqs, seqs.contains(t.incarnation),
               n!.entries == 0 || !frames.contains(where: { $0.touches.contains { $0.track == i && $0.firstSequence == t.incarnation && $0.entries > 0 } }) {
                t.isImplicit = false
            }
            tracks[i] = t
        }
    }
}

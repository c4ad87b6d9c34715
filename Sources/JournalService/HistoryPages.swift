import JournalLog
import JournalQuery
import JournalSync
import ListModel

/// The service's paged history reads (`SyncService.fetchZoneHistoryPage`, Spec/SYNC.md §3.12):
/// the zone's history pieces newest first along their chain, then the events of its log, in
/// pages of at most `maxHistoryPageEvents` events and about `maxHistoryPageBytes` bytes. A page
/// reads one piece (or a few feed pages of the log), never the whole history; the reader keeps
/// where each page ended in a piece, so the next resumes there instead of decoding the piece's
/// start again.
struct HistoryPages: Sendable {
    let context: ServiceContext
    let resumes = HistoryResumes()
    private var store: any ServiceStorage { context.store }

    func page(caller: String, zone: ZoneID, after cursor: HistoryCursor?) throws(SyncError) -> HistoryPage {
        let read = try context.readZone(zone)
        let (info, begun) = try context.locked { () throws(SyncError) in
            let (_, info) = try context.access(caller, zone, info: read)
            return (info, try context.unpurged(zone))
        }
        guard info.lowWaterMark > 0 else { return HistoryPage(bytes: [], next: nil) }
        var at: HistoryPosition? = try start(info, cursor)
        // The first page's chain check read the newest piece against its CRC already.
        let checkedHead = cursor == nil ? at?.head : nil
        var page = HistoryPieceEncoder(HistoryPieceHeader(zone: info.name, incarnation: info.incarnation, sequence: info.incarnation, complete: false))
        while let position = at, !isFull(page) {
            switch position.step {
            case .piece(let sequence, let crc, let index):
                at = try pieceEvents(info, position, sequence: sequence, crc: crc, index: index, checked: sequence == checkedHead, into: &page)
            case .log(let token):
                at = try logEvents(info, position, floor: position.floor, token: token, into: &page)
            }
        }
        // A purge that began meanwhile may have moved what the log held into a piece not read.
        _ = try context.locked { () throws(SyncError) in try context.unpurged(zone, since: begun) }
        page.finish()
        return HistoryPage(bytes: page.takeChunk(), next: at?.cursor)
    }

    /// Where the page starts: the cursor's position, or the newest piece (the chain checked by
    /// headers), or the log when there is none. A read that was in the log when pieces were
    /// written (a compaction moved entries it had not read yet into them) reads those pieces
    /// first, then the log again from its start.
    private func start(_ info: ZoneInfo, _ cursor: HistoryCursor?) throws(SyncError) -> HistoryPosition {
        if let cursor {
            guard let p = HistoryPosition(cursor) else { throw .invalidRequest("not a history cursor this service wrote") }
            // The zone was made again since the first page: its history is another one.
            guard p.incarnation == info.incarnation else { throw .tokenExpired }
            if case .log = p.step { return try piecesSince(info, p) ?? p }
            return p
        }
        let head: (sequence: SequenceNumber, crc: UInt32)?
        do throws(QueryError) { head = try store.historyChainHead(of: info.name) } catch { throw historyError(error, info.name) }
        let step: HistoryPosition.Step = head.map { .piece(sequence: $0.sequence, crc: $0.crc, index: 0) } ?? .log(token: nil)
        return HistoryPosition(incarnation: info.incarnation, head: head?.sequence ?? 0, step: step)
    }

    /// The pieces written since the read reached `p.head`, newest first down to it, or nil when
    /// there are none. Pieces are only ever added on top of the chain (SNAPSHOT.md §5.1), so the
    /// ones read stay read; a chain whose head went back is not this read's any more.
    private func piecesSince(_ info: ZoneInfo, _ p: HistoryPosition) throws(SyncError) -> HistoryPosition? {
        // A head that could not be read is busy, never a history that moved.
        let newest: SequenceNumber
        do throws(StorageError) { newest = try store.newestHistory(of: info) } catch { throw error.syncError }
        guard newest != p.head else { return nil }
        guard newest > p.head else { throw .tokenExpired }
        let head: (sequence: SequenceNumber, crc: UInt32)?
        do throws(QueryError) { head = try store.historyChainHead(of: info.name) } catch { throw historyError(error, info.name) }
        guard let head, head.sequence > p.head else { throw .tokenExpired }
        return HistoryPosition(incarnation: p.incarnation, head: head.sequence, stop: p.head, floor: p.floor,
                               step: .piece(sequence: head.sequence, crc: head.crc, index: 0))
    }

    private func isFull(_ page: HistoryPieceEncoder) -> Bool {
        page.events >= context.limits.maxHistoryPageEvents || page.pending.bytes.count >= context.limits.maxHistoryPageBytes
    }

    /// Adds the piece's events from `index` on until the page is full; where the read goes on:
    /// the same piece, the piece before it, or the log. A piece this service has not resumed
    /// inside before is checked whole against its CRC first (a chunk at a time), unless this
    /// request's chain check just did (`checked`).
    private func pieceEvents(_ info: ZoneInfo, _ position: HistoryPosition, sequence: SequenceNumber, crc: UInt32, index: Int,
                             checked: Bool, into page: inout HistoryPieceEncoder) throws(SyncError) -> HistoryPosition? {
        let piece = try PieceWindows(store: store, zone: info, sequence: sequence, crc: crc)
        guard let header = try piece.header() else {
            return try olderWholeHistory(info, position, piece, sequence: sequence, index: index, into: &page)
        }
        let key = HistoryResumes.Key(zone: info.name, incarnation: info.incarnation, sequence: sequence, crc: crc, index: index)
        var from: HistoryPieceResume
        if let resumed = resumes.take(key) {
            from = resumed
        } else {
            if !checked { try piece.checkWhole(crc: crc) }
            from = HistoryPieceCodec.firstEvent(of: header)
            if index > 0 {
                var skipped = 0
                let (at, ended) = try piece.walk(from: from) { _ in skipped += 1; return skipped < index }
                guard !ended || at.index == index else { throw .invalidRequest("a history cursor past the piece's events") }
                from = at
            }
        }
        let (rest, ended) = try piece.walk(from: from) { e in page.add(e); return !isFull(page) }
        var next = position
        if !ended {
            resumes.put(HistoryResumes.Key(zone: info.name, incarnation: info.incarnation, sequence: sequence, crc: crc, index: rest.index), rest)
            next.step = .piece(sequence: sequence, crc: crc, index: rest.index)
        } else if header.complete || header.previous == 0 || header.previous == position.stop {
            // The end of the stretch: the pieces written since it began, or the log.
            if header.complete && position.stop == 0 { next.floor = sequence }
            next.step = .log(token: nil)
            return try piecesSince(info, next) ?? next
        } else {
            next.step = .piece(sequence: header.previous, crc: header.previousCRC, index: 0)
        }
        return next
    }

    /// An older writer's whole history (major 1) ends the chain: its events from `index` on,
    /// decoded whole (such a file is what one run wrote, and rare).
    private func olderWholeHistory(_ info: ZoneInfo, _ position: HistoryPosition, _ piece: PieceWindows, sequence: SequenceNumber, index: Int,
                                   into page: inout HistoryPieceEncoder) throws(SyncError) -> HistoryPosition {
        let bytes = try piece.whole()
        let log: ActivityLog
        do { log = try ActivityLogCodec.decode(bytes) } catch {
            throw ServiceContext.historyUnavailable(info.name, "history file at \(sequence): damaged (\(error))")
        }
        guard log.zone == info.name else { throw ServiceContext.historyUnavailable(info.name, "history file at \(sequence) names another zone") }
        let events = log.pieceEvents()
        guard index <= events.count else { throw .invalidRequest("a history cursor past the history's events") }
        var i = index
        while i < events.count, !isFull(page) {
            page.add(events[i])
            i += 1
        }
        var next = position
        next.step = i < events.count ? .piece(sequence: sequence, crc: bytes.withUnsafeBytes { HistoryPieceCodec.storedCRC($0)! }, index: i)
            : .log(token: nil)
        if i == events.count {
            next.floor = position.stop == 0 ? sequence : next.floor
            return try piecesSince(info, next) ?? next
        }
        return next
    }

    /// Adds the events of the log's entries after `floor`, a feed page at a time, until the page
    /// is full or the log ends (nil: the last page).
    private func logEvents(_ info: ZoneInfo, _ position: HistoryPosition, floor: SequenceNumber, token: String?,
                           into page: inout HistoryPieceEncoder) throws(SyncError) -> HistoryPosition? {
        var token = token
        while !isFull(page) {
            let changes: ZoneChanges
            do throws(FeedError) {
                // No more entries than the page has room for events: the token is after the last read.
                let room = max(1, min(256, context.limits.maxHistoryPageEvents - page.events))
                changes = try store.zoneChanges(info.name, since: token.map { FeedToken($0) }, limit: room)
            } catch {
                if case .storage = error { throw .serviceBusy(retryAfter: .seconds(1)) }
                // The mark rose under the token: the log is read again from its start (its events
                // sent twice are kept once); what the rise purged is in a piece the next request
                // reads first (`piecesSince`), or this one reports the purge as busy.
                guard token == nil else {
                    token = nil
                    continue
                }
                throw .tokenExpired
            }
            for e in changes.entries where e.sequence > floor { page.add(e.entry) }
            guard changes.moreComing else { return nil }
            token = changes.token.text
        }
        var next = position
        next.step = .log(token: token)
        return next
    }

    private func historyError(_ error: QueryError, _ zone: String) -> SyncError {
        switch error {
        case .historyIncomplete(_, let why): ServiceContext.historyUnavailable(zone, why)
        case .feed(.zoneNotFound), .feed(.zoneDeleted): .zoneNotFound
        default: .serviceBusy(retryAfter: .seconds(1))
        }
    }
}

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
            case .log(let floor, let token):
                at = try logEvents(info, position, floor: floor, token: token, into: &page)
            }
        }
        // A purge that began meanwhile may have moved what the log held into a piece not read.
        _ = try context.locked { () throws(SyncError) in try context.unpurged(zone, since: begun) }
        page.finish()
        return HistoryPage(bytes: page.takeChunk(), next: at?.cursor)
    }

    /// Where the page starts: the cursor's position, checked against the zone as it stands, or
    /// the newest piece (the chain checked by headers), or the log when there is none.
    private func start(_ info: ZoneInfo, _ cursor: HistoryCursor?) throws(SyncError) -> HistoryPosition {
        if let cursor {
            guard let p = HistoryPosition(cursor) else { throw .invalidRequest("not a history cursor this service wrote") }
            // The history moved since the first page (a compaction, a new incarnation): start again.
            // A head that could not be read is busy, never a history that moved (the device
            // would start its pages over).
            let newest: SequenceNumber
            do throws(StorageError) { newest = try store.newestHistory(of: info) } catch { throw error.syncError }
            guard p.incarnation == info.incarnation, p.mark == info.lowWaterMark, p.head == newest else {
                throw .tokenExpired
            }
            return p
        }
        let head: (sequence: SequenceNumber, crc: UInt32)?
        do throws(QueryError) { head = try store.historyChainHead(of: info.name) } catch { throw historyError(error, info.name) }
        let step: HistoryPosition.Step = head.map { .piece(sequence: $0.sequence, crc: $0.crc, index: 0) } ?? .log(floor: 0, token: nil)
        return HistoryPosition(incarnation: info.incarnation, mark: info.lowWaterMark, head: head?.sequence ?? 0, step: step)
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
        } else if header.complete || header.previous == 0 {
            next.step = .log(floor: header.complete ? sequence : 0, token: nil)
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
            : .log(floor: sequence, token: nil)
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
                throw .tokenExpired  // the zone moved on (a purge, a new incarnation): start again
            }
            for e in changes.entries where e.sequence > floor { page.add(e.entry) }
            guard changes.moreComing else { return nil }
            token = changes.token.text
        }
        var next = position
        next.step = .log(floor: floor, token: token)
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

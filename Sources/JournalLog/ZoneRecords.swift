/// Zone records (Spec/FORMAT.md §5.3–5.6, TOKENS.md §1): creating and deleting a zone, and
/// raising its low-water mark. Each is one synced record.
extension JournalStore {
    /// Creates the zone (a `zoneCreate` record, synced) unless it is live; returns its incarnation.
    @discardableResult
    public func createZone(_ name: String) throws(JournalError) -> SequenceNumber {
        if let why = JournalStore.zoneNameRefusal(name) { throw JournalError.invalidEntry(why) }
        let (seq, ticket) = try locked { () throws(JournalError) -> (SequenceNumber, Int) in
            waitForSwapLocked(name)
            if let live = catalog.live(name) { return (catalog.tracks[live].incarnation, lastTicketLocked) }
            try checkWritableLocked()
            let seq = lastAssigned + 1
            let t = catalog.create(name, at: seq, implicit: false, idsLoaded: true)
            _ = enqueueLocked(type: RecordType.zoneCreate.rawValue, payload: ZoneRecordCodec.encodeCreate(zone: name), count: 1,
                              touches: [FrameTouch(track: t, firstSequence: seq, lastSequence: seq, entries: 0)])
            return (seq, lastTicketLocked)
        }
        try commit(ticket: ticket, durability: .always)
        return seq
    }

    /// Deletes the zone and all its entries atomically (one synced `zoneDelete` record).
    @discardableResult
    public func deleteZone(_ name: String, reason: ZoneDeletionReason = .deleted) throws(JournalError) -> SequenceNumber {
        let (seq, ticket) = try locked { () throws(JournalError) -> (SequenceNumber, Int) in
            waitForSwapLocked(name)
            try checkWritableLocked()
            guard let t = catalog.live(name) else {
                if let latest = catalog.latest(name), let at = catalog.tracks[latest].deletedAt { throw JournalError.zoneDeleted(zone: name, at: at) }
                throw JournalError.zoneNotFound(name)
            }
            let seq = lastAssigned + 1
            catalog.delete(track: t, at: seq, reason: reason)
            _ = enqueueLocked(type: RecordType.zoneDelete.rawValue, payload: ZoneRecordCodec.encodeDelete(zone: name, reason: reason),
                              count: 1, touches: [FrameTouch(track: t, firstSequence: seq, lastSequence: seq, entries: 0)])
            return (seq, lastTicketLocked)
        }
        try commit(ticket: ticket, durability: .always)
        return seq
    }

    /// Raises the zone's low-water mark (a synced `lowWaterMark` record): tokens below it get
    /// `tokenExpired`. The compactor sets it once it may purge entries up to `mark`. The mark
    /// takes effect only once its record is durable, so no token is judged by a mark a crash
    /// could still undo.
    ///
    /// `historyThrough` (above 0) records in the same record that the zone's history pieces
    /// reach through that sequence (FORMAT.md §5.6): the compactor says so once the piece is in
    /// place and before it purges anything, so that losing the piece later is an error
    /// (`historyIncomplete`), not a shorter history. A record is written even when neither
    /// rises (it then changes nothing).
    public func setLowWaterMark(_ name: String, to mark: SequenceNumber, historyThrough: SequenceNumber = 0) throws(JournalError) {
        let ticket = try locked { () throws(JournalError) -> Int in
            try checkWritableLocked()
            guard let t = catalog.live(name) else { throw JournalError.zoneNotFound(name) }
            guard mark <= lastAssigned else { throw JournalError.invalidEntry("low-water mark \(mark) is past the last sequence \(lastAssigned)") }
            guard historyThrough <= lastAssigned else {
                throw JournalError.invalidEntry("history reach \(historyThrough) is past the last sequence \(lastAssigned)")
            }
            let inc = catalog.tracks[t].incarnation
            let payload = LowWaterCodec.encode(zone: name, incarnation: inc, mark: mark, history: historyThrough)
            _ = enqueueLocked(type: SkippableRecordType.lowWaterMark, payload: payload, count: 0, touches: [],
                              lowWater: LowWater(zone: name, incarnation: inc, mark: mark, history: historyThrough))
            return lastTicketLocked
        }
        try commit(ticket: ticket, durability: .always)
    }
}

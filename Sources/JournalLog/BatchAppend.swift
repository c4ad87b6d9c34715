import Foundation

/// Appending a batch: the entries are checked, encoded once into one record, de-duplicated
/// against what the zones already hold, and acknowledged together (Spec/FORMAT.md §5.2).
extension JournalStore {
    /// Appends entries atomically: after a crash either all of them are recovered or none;
    /// acknowledged under the store's durability. `replicated`: entries another store wrote,
    /// copied as they are (see `refusal`).
    @discardableResult
    public func append(batch: [JournalEntry], replicated: Bool = false) throws(JournalError) -> ClosedRange<SequenceNumber> {
        try append(batch: batch, durabilityOrDefault: nil, replicated: replicated)
    }

    /// `append(batch:)` acknowledged under `durability` (not optional: `.none` is `Durability.none`).
    @discardableResult
    public func append(batch: [JournalEntry], durability: Durability, replicated: Bool = false) throws(JournalError) -> ClosedRange<SequenceNumber> {
        try append(batch: batch, durabilityOrDefault: durability, replicated: replicated)
    }

    private func append(batch: [JournalEntry], durabilityOrDefault durability: Durability?, replicated: Bool) throws(JournalError) -> ClosedRange<SequenceNumber> {
        guard !batch.isEmpty else { throw JournalError.invalidEntry("an empty batch") }
        let mode = durability ?? options.durability
        if batch.count == 1 {
            // A one-entry batch is still a batch: synced under onBatch.
            let s = try append(batch[0], durability: mode == .none ? Durability.none : .always, replicated: replicated)
            return s...s
        }
        guard batch.count <= Limits.maxBatchEntries else {
            throw JournalError.invalidEntry("a batch holds at most \(Limits.maxBatchEntries) entries")
        }
        try batch.withUnsafeBufferPointer { b throws(JournalError) in
            for k in b.indices {
                if let why = Self.refusal(b.baseAddress! + k, replicated: replicated) { throw JournalError.invalidEntry(why) }
            }
        }
        var fresh = batch
        // Each entry's fingerprint, by index in `batch`, taken while the first encode writes it.
        var fingerprints = [UInt64](repeating: 0, count: batch.count)
        var firstPass = true
        while true {
            let payload = firstPass
                ? fingerprints.withUnsafeMutableBufferPointer { BatchCodec.encode(journalEntries: fresh, compress: options.compressBatches, fingerprints: $0) }
                : BatchCodec.encode(journalEntries: fresh, compress: options.compressBatches)
            if firstPass && replicated {
                // A place matches any retry of the add it replaced (TOKENS.md §2).
                for k in batch.indices where batch[k].operation.isPlace { fingerprints[k] = EntryFingerprint.any }
            }
            firstPass = false
            // The encoded body (before compression) must fit a frame too, so any reader can decode it.
            let raw = payload.withUnsafeBytes { (try? BatchCodec.summary($0))?.rawLength } ?? payload.count
            guard raw + 32 <= Limits.maxPayloadBytes, payload.count <= Limits.maxPayloadBytes else {
                throw JournalError.batchTooLarge(bytes: raw, limit: Limits.maxPayloadBytes)
            }
            switch try locked({ () throws(JournalError) in try enqueueBatchLocked(batch, fingerprints: fingerprints, fresh: fresh, payload: payload) }) {
            case .retry(let remaining):
                // Some entries turned out to be stored already: encode only the new ones.
                fresh = remaining
            case .needsIDs(let t):
                try loadIDsUnlocked(t)
            case .done(let range, let ticket):
                try commit(ticket: ticket, sync: mode != .none)
                return range
            }
        }
    }

    private enum BatchOutcome {
        case retry([JournalEntry])
        /// As `Enqueued.needsIDs`.
        case needsIDs(track: Int)
        case done(ClosedRange<SequenceNumber>, ticket: Int)
    }

    /// Under `cond`: enqueues `payload` (which encodes `fresh`) when `fresh` is exactly the
    /// entries of `batch` not stored yet; otherwise says which ones to encode instead. One id
    /// lookup per entry: new ids are entered at once with the sequence they will get, and taken
    /// out again in the rare case that the batch must be re-encoded without duplicates.
    private func enqueueBatchLocked(_ batch: [JournalEntry], fingerprints: [UInt64], fresh: [JournalEntry],
                                    payload: [UInt8]) throws(JournalError) -> BatchOutcome {
        if !gate.swappingZones.isEmpty { for k in batch.indices { waitForSwapLocked(batch[k].zone) } }
        try checkWritableLocked()
        let first = lastAssigned + 1
        // Pass 1, which may throw and changes nothing: resolve each zone once (batches rarely span
        // more than a few) and load the id sets of the zones involved.
        // Entries are read in place (batch[k].zone): binding each entry would copy it whole.
        var zones: [(name: String, track: Int?, touch: FrameTouch?)] = []
        var zoneOf = [Int](repeating: 0, count: batch.count)
        for k in batch.indices {
            var z = 0
            while z < zones.count && zones[z].name != batch[k].zone { z += 1 }
            if z == zones.count {
                let t = try trackAcceptingLocked(batch[k].zone, at: first)
                if let t, catalog.ids[t] == nil { return .needsIDs(track: t) }
                zones.append((batch[k].zone, t, nil))
            }
            zoneOf[k] = z
        }
        // Pass 2: one id lookup per entry; new ids are entered with the sequence they will get,
        // and taken out again if the batch must be re-encoded or an id conflicts.
        var newZoneIDs: [Int: [CompactID: UInt64]] = [:]
        var provisional: [(Int, CompactID)] = []
        provisional.reserveCapacity(batch.count)
        // The new entries, by index in `batch`.
        var remaining: [Int] = []
        remaining.reserveCapacity(batch.count)
        var existing: [SequenceNumber] = []
        var seq = first
        var conflict: JournalError? = nil
        for k in batch.indices {
            let z = zoneOf[k]
            let id = batch[k].id
            if let t = zones[z].track {
                if let stored = catalog.ids[t]![id] {
                    guard EntryFingerprint.matches(stored: stored.fingerprint, new: fingerprints[k]) else {
                        conflict = .idConflict(zone: zones[z].name, id: id, storedAt: stored.sequence < first ? stored.sequence : nil)
                        break
                    }
                    if stored.sequence < first { existing.append(stored.sequence) }  // else a duplicate inside this batch
                    continue
                }
                catalog.ids[t]![id] = StoredID(sequence: seq, fingerprint: fingerprints[k])
                provisional.append((t, id))
            } else if let earlier = newZoneIDs[z, default: [:]][id] {
                guard earlier == fingerprints[k] else {
                    conflict = .idConflict(zone: zones[z].name, id: id, storedAt: nil)
                    break
                }
                continue
            } else {
                newZoneIDs[z, default: [:]][id] = fingerprints[k]
            }
            if zones[z].touch == nil { zones[z].touch = FrameTouch(track: zones[z].track ?? -1, firstSequence: seq, lastSequence: seq, entries: 0) }
            zones[z].touch!.entries += 1
            zones[z].touch!.lastSequence = seq
            remaining.append(k)
            seq += 1
        }
        if let conflict {
            for (t, id) in provisional { catalog.ids[t]![id] = nil }
            throw conflict
        }
        // `fresh` must be exactly the new entries, in order, or the payload encodes the wrong ones.
        guard remaining.count == fresh.count,
              zip(remaining, fresh.indices).allSatisfy({ batch[$0].id == fresh[$1].id && batch[$0].zone == fresh[$1].zone }) else {
            for (t, id) in provisional { catalog.ids[t]![id] = nil }
            if remaining.isEmpty {
                let known = existing.sorted()
                return .done(known.first!...known.last!, ticket: lastTicketLocked)
            }
            return .retry(remaining.map { batch[$0] })
        }
        // A zone that never existed starts with this batch (an implicit creation).
        var touches: [FrameTouch] = []
        for z in zones.indices {
            guard var touch = zones[z].touch else { continue }
            if zones[z].track == nil {
                let t = catalog.create(zones[z].name, at: touch.firstSequence, implicit: true, idsLoaded: true)
                touch.track = t
                var s = first
                for (j, k) in remaining.enumerated() {
                    if fresh[j].zone == zones[z].name { catalog.ids[t]![fresh[j].id] = StoredID(sequence: s, fingerprint: fingerprints[k]) }
                    s += 1
                }
            }
            touches.append(touch)
        }
        touches.sort { $0.firstSequence < $1.firstSequence }
        let type = fresh.count == 1 ? RecordType.entry.rawValue : RecordType.batch.rawValue
        let body = fresh.count == 1 ? EntryCodec.encode(fresh[0]) : payload
        let last = enqueueLocked(type: type, payload: body, count: fresh.count, touches: touches)
        assert(last == seq - 1)
        return .done(first...last, ticket: lastTicketLocked)
    }

}

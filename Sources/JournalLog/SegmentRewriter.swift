/// The compactor's file names (Spec/FORMAT.md §9.4). Every rewrite of a run is written and synced
/// as `.cleaned`; the run commits by renaming them all to `.swap`, then over their segments. The
/// first `.swap` on disk is the commit point: a run is applied whole or not at all.
enum CompactionFiles {
    static let cleaned = ".cleaned"
    static let swap = ".swap"

    /// The segment file name of `name` if it is `<segment>.seg<suffix>`.
    static func segment(of name: String, suffix: String) -> String? {
        guard name.hasSuffix(SegmentName.suffix + suffix) else { return nil }
        let seg = String(name.dropLast(suffix.count))
        return SegmentName(fileName: seg) == nil ? nil : seg
    }

    /// Finishes what a crash interrupted, before open scans the log. If any `.swap` exists the
    /// run had committed: every `.swap` and `.cleaned` (all complete and synced before the first
    /// `.swap`) replaces its segment. Otherwise the run had not committed: `.cleaned` files go.
    static func recover(store: String, fs: any FileSystem) throws(JournalError) {
        let names = try fs.listDirectory(store)
        let committed = names.contains { segment(of: $0, suffix: swap) != nil }
        let cleanedNames = names.filter { segment(of: $0, suffix: cleaned) != nil }
        guard committed else {
            for name in cleanedNames { try fs.remove(store + "/" + name) }
            if !cleanedNames.isEmpty { try fs.syncDirectory(store) }
            return
        }
        // Roll forward in the run's own two steps, so an open interrupted here leaves a `.swap`
        // for the next one and never half a run: every `.cleaned` becomes `.swap` first.
        for name in cleanedNames { try fs.rename(store + "/" + name, store + "/" + segment(of: name, suffix: cleaned)! + swap) }
        if !cleanedNames.isEmpty { try fs.syncDirectory(store) }
        for name in try fs.listDirectory(store) {
            if let seg = segment(of: name, suffix: swap) { try fs.rename(store + "/" + name, store + "/" + seg) }
        }
        try fs.syncDirectory(store)
    }

    /// Removes what a failed run left (a run that failed before its commit point): a later run's
    /// commit must never carry a stale `.cleaned` forward.
    static func removeLeftovers(store: String, fs: any FileSystem) throws(JournalError) {
        let leftovers = try fs.listDirectory(store).filter { segment(of: $0, suffix: cleaned) != nil }
        for name in leftovers { try fs.remove(store + "/" + name) }
        if !leftovers.isEmpty { try fs.syncDirectory(store) }
    }
}

/// A sealed segment rewritten without the purged entries and with the replaced ones, ready to be
/// swapped in.
struct SegmentRewrite {
    var bytes: [UInt8] = []
    var purged = 0
    var deletedZonePurged = 0
    var replaced = 0
    var kept = 0
    /// The new frames and the zone incarnations each touches, for the zone index.
    var frames: [(offset: Int64, touches: [FrameTouch])] = []
    /// Entries per zone incarnation (track) the segment held before.
    var entriesBefore: [Int: Int] = [:]
    var changed: Bool { purged + deletedZonePurged + replaced > 0 }
}

/// Rewrites one sealed segment (FORMAT.md §5.5): the same header (flagged `compacted`), the kept
/// records re-chained with their sequences unchanged, and a closing `seal` that carries the
/// original end chain and last sequence, so the next segment still links and numbering goes on.
struct SegmentRewriter {
    /// `replace` writes the entry instead of the stored one (same id and zone). `createInstead`
    /// purges the entry that started an implicitly created zone incarnation, writing a
    /// `zoneCreate` at its sequence: the incarnation keeps its identity (TOKENS.md §1) without
    /// pinning the entry and its item (COMPACTION.md §2).
    /// `refused`: the caller asked for something it never may (a replacement with another id or
    /// zone); the run stops.
    enum Verdict { case keep, purge, purgeDeletedZone, keptAboveMark, createInstead(deletedZone: Bool); indirect case replace(JournalEntry), refused(JournalError) }

    /// The minor version that defines `place`, the kind replacements are written for: a segment
    /// holding a replaced entry is stamped at least this (FORMAT.md §1, §9.4).
    static let replacementMinor: UInt16 = 2

    let name: String
    /// Which incarnation (track) a zone's record at a sequence belongs to.
    let trackOf: (String, SequenceNumber) -> Int?
    let compress: Bool

    /// What a rewrite carries from frame to frame: the output, the chains in and out, and the
    /// last sequence read and kept.
    struct Pass {
        var out = SegmentRewrite()
        var outChain: UInt32
        var inChain: UInt32
        var endChain: UInt32
        var lastSequence: SequenceNumber
        var lastKept: SequenceNumber

        /// Appends a frame to the output, noting which zone incarnations it touches.
        mutating func emit(_ type: UInt8, _ seq: SequenceNumber, _ payload: UnsafeRawBufferPointer, touches: [FrameTouch]) {
            let at = Int64(out.bytes.count)
            outChain = Frame.append(type: type, sequence: seq, payload: payload, chain: outChain, to: &out.bytes)
            if !touches.isEmpty { out.frames.append((at, touches)) }
        }
    }

    /// `verdict` says what becomes of the entry at a sequence, of a zone incarnation (track).
    func rewrite(_ old: [UInt8], verdict: (SequenceNumber, Int?, JournalEntry) -> Verdict) throws(JournalError) -> SegmentRewrite {
        let headerResult: Result<SegmentHeader, SegmentHeader.DecodeError> = old.withUnsafeBytes { b in
            do throws(SegmentHeader.DecodeError) { return .success(try SegmentHeader.decode(b)) } catch { return .failure(error) }
        }
        var header: SegmentHeader
        switch headerResult {
        case .success(let h): header = h
        case .failure(let e): throw damaged(0, 0, .badSegmentHeader(e))
        }
        header.flags.insert(.compacted)
        var pass = Pass(outChain: header.previousChain, inChain: header.previousChain, endChain: header.previousChain,
                        lastSequence: header.baseSequence - 1, lastKept: header.baseSequence - 1)
        pass.out.bytes = header.encoded()
        pass.out.bytes.reserveCapacity(old.count)
        let failure = old.withUnsafeBytes { b in frames(b, verdict: verdict, &pass) }
        if let failure { throw failure }
        let seal = SealCodec.encode(endChain: pass.endChain, lastSequence: pass.lastSequence)
        seal.withUnsafeBytes { pass.emit(RecordType.seal.rawValue, pass.lastKept, $0, touches: []) }
        if pass.out.replaced > 0 && header.minor < Self.replacementMinor {
            // A replacement may be a `place` entry; frames chain from `previousChain`, not from
            // the header, so only the header (and its CRC) changes.
            header.minor = Self.replacementMinor
            pass.out.bytes.replaceSubrange(0..<SegmentHeader.size, with: header.encoded())
        }
        return pass.out
    }

    private func damaged(_ offset: Int, _ seq: SequenceNumber, _ p: Corruption.Problem) -> JournalError {
        .corruption(Corruption(segment: name, offset: Int64(offset), lastGoodSequence: seq, problem: p, isTornTail: false))
    }

    private func tooLarge(_ seq: SequenceNumber, _ bytes: Int) -> JournalError {
        .invalidEntry("replacing in the frame at sequence \(seq) makes it \(bytes) bytes, over the \(Limits.maxPayloadBytes)-byte frame limit; use a smaller replacement (nothing was compacted)")
    }

    /// The zone incarnations `records` touch, each with its first and last sequence and entries.
    private func touches(_ records: [(SequenceNumber, String, entries: Int)]) -> [FrameTouch] {
        var result: [FrameTouch] = []
        for (seq, zone, n) in records {
            guard let t = trackOf(zone, seq) else { continue }
            if let i = result.firstIndex(where: { $0.track == t }) {
                result[i].lastSequence = seq
                result[i].entries += n
            } else {
                result.append(FrameTouch(track: t, firstSequence: seq, lastSequence: seq, entries: n))
            }
        }
        return result
    }

    /// Every frame of the segment after its header, rewritten into `pass`; the failure, if any.
    private func frames(_ b: UnsafeRawBufferPointer, verdict: (SequenceNumber, Int?, JournalEntry) -> Verdict,
                        _ pass: inout Pass) -> JournalError? {
        var pos = SegmentHeader.size
        while pos < b.count {
            switch Frame.scan(b, at: pos, chain: pass.inChain) {
            case .zero:
                return nil
            case .frame(let h, let range, let crc):
                let payload = UnsafeRawBufferPointer(rebasing: b[range])
                pass.inChain = crc
                pass.endChain = crc
                do throws(CodecError) {
                    let (failure, sealed) = try record(h, payload, verdict: verdict, &pass)
                    if let failure { return failure }
                    if sealed { return nil }
                } catch {
                    return damaged(pos, pass.lastSequence, .badPayload(error))
                }
                pos = range.upperBound + 4
            case .crcMismatch(_, let stored, let computed):
                return damaged(pos, pass.lastSequence, .crcMismatch(stored: stored, computed: computed))
            case .badLength(let h):
                return damaged(pos, pass.lastSequence, .badLength(h.length))
            case .truncated:
                return damaged(pos, pass.lastSequence, .lengthPastEOF(length: 0, available: Int64(b.count - pos)))
            }
        }
        return nil
    }

    /// One record rewritten into `pass`: the failure, if any, and whether it was the seal of an
    /// earlier rewrite (which ends the frames).
    private func record(_ h: Frame.Header, _ payload: UnsafeRawBufferPointer, verdict: (SequenceNumber, Int?, JournalEntry) -> Verdict,
                        _ pass: inout Pass) throws(CodecError) -> (JournalError?, sealed: Bool) {
        switch RecordType(rawValue: h.type) {
        case .entry:
            return (try entry(h, payload, verdict: verdict, &pass), false)
        case .batch:
            return (try batch(h, payload, verdict: verdict, &pass), false)
        case .zoneCreate:
            let zone = try ZoneRecordCodec.decodeCreate(payload)
            pass.lastSequence = h.sequence
            pass.emit(h.type, h.sequence, payload, touches: touches([(h.sequence, zone, 0)]))
            pass.lastKept = h.sequence
        case .zoneDelete:
            let (zone, _) = try ZoneRecordCodec.decodeDelete(payload)
            pass.lastSequence = h.sequence
            pass.emit(h.type, h.sequence, payload, touches: touches([(h.sequence, zone, 0)]))
            pass.lastKept = h.sequence
        case .seal:
            // An earlier rewrite: its seal already carries the original end.
            let s = try SealCodec.decode(payload)
            pass.endChain = s.endChain
            pass.lastSequence = s.lastSequence
            return (nil, true)
        case nil:
            // Skippable records take no sequence: they follow the last kept one.
            guard RecordType.isSkippable(h.type) else { throw CodecError(.invalidValue(field: "record type"), at: 0) }
            pass.emit(h.type, pass.lastKept, payload, touches: [])
        }
        return (nil, false)
    }

    /// A single-entry frame: kept, purged, written over, or replaced by its zone's creation.
    private func entry(_ h: Frame.Header, _ payload: UnsafeRawBufferPointer, verdict: (SequenceNumber, Int?, JournalEntry) -> Verdict,
                       _ pass: inout Pass) throws(CodecError) -> JournalError? {
        let e = try EntryCodec.decode(payload)
        pass.lastSequence = h.sequence
        let t = trackOf(e.zone, h.sequence)
        if let t { pass.out.entriesBefore[t, default: 0] += 1 }
        switch verdict(h.sequence, t, e) {
        case .purge: pass.out.purged += 1
        case .purgeDeletedZone: pass.out.deletedZonePurged += 1
        case .createInstead(let deletedZone):
            if deletedZone { pass.out.deletedZonePurged += 1 } else { pass.out.purged += 1 }
            ZoneRecordCodec.encodeCreate(zone: e.zone).withUnsafeBytes {
                pass.emit(RecordType.zoneCreate.rawValue, h.sequence, $0, touches: touches([(h.sequence, e.zone, 0)]))
            }
            pass.lastKept = h.sequence
        case .refused(let why): return why
        case .replace(let r):
            let bytes = EntryCodec.encode(r)
            guard bytes.count <= Limits.maxPayloadBytes else { return tooLarge(h.sequence, bytes.count) }
            pass.out.replaced += 1
            bytes.withUnsafeBytes { pass.emit(h.type, h.sequence, $0, touches: touches([(h.sequence, e.zone, 1)])) }
            pass.lastKept = h.sequence
        case let v:
            if case .keptAboveMark = v { pass.out.kept += 1 }
            pass.emit(h.type, h.sequence, payload, touches: touches([(h.sequence, e.zone, 1)]))
            pass.lastKept = h.sequence
        }
        return nil
    }

    /// A batch frame. Kept entries go out in runs, as stored (their encodings copied, not decoded
    /// and encoded again): a zoneCreate written in place of an entry splits the frame around it.
    private func batch(_ h: Frame.Header, _ payload: UnsafeRawBufferPointer, verdict: (SequenceNumber, Int?, JournalEntry) -> Verdict,
                       _ pass: inout Pass) throws(CodecError) -> JournalError? {
        let summary = try BatchCodec.summary(payload)
        pass.lastSequence = h.sequence + summary.lastDelta
        var keep = BatchBuilder()
        var kept: [(SequenceNumber, String)] = []
        var replacedHere = false
        var split = false
        var failure: JournalError? = nil
        func flush() -> JournalError? {
            guard let first = kept.first else { return nil }
            defer {
                kept.removeAll(keepingCapacity: true)
                keep = BatchBuilder()
            }
            let t = touches(kept.map { ($0.0, $0.1, 1) })
            if kept.count == summary.count && !replacedHere {
                pass.emit(h.type, h.sequence, payload, touches: t)
            } else {
                let rebuilt = keep.encoded(compress: compress)
                if replacedHere {
                    // A larger replacement can outgrow the frame; purges only shrink it. The body
                    // before compression must fit too, as for an append.
                    guard keep.bodyBytes + 32 <= Limits.maxPayloadBytes, rebuilt.count <= Limits.maxPayloadBytes else {
                        return tooLarge(h.sequence, max(keep.bodyBytes + 32, rebuilt.count))
                    }
                }
                rebuilt.withUnsafeBytes { pass.emit(h.type, first.0, $0, touches: t) }
            }
            pass.lastKept = kept.last!.0
            return nil
        }
        // Counted a run of one track at a time: a dictionary update per entry cost more.
        var counting = (track: -1, entries: 0)
        try BatchCodec.decode(payload, firstSequence: h.sequence, withEncoding: { s, e, encoding in
            let t = trackOf(e.zone, s)
            if let t {
                if t != counting.track {
                    if counting.entries > 0 { pass.out.entriesBefore[counting.track, default: 0] += counting.entries }
                    counting = (t, 0)
                }
                counting.entries += 1
            }
            switch verdict(s, t, e) {
            case .purge: pass.out.purged += 1
            case .purgeDeletedZone: pass.out.deletedZonePurged += 1
            case .createInstead(let deletedZone):
                if deletedZone { pass.out.deletedZonePurged += 1 } else { pass.out.purged += 1 }
                split = true
                if let f = flush() { failure = f; return false }
                ZoneRecordCodec.encodeCreate(zone: e.zone).withUnsafeBytes {
                    pass.emit(RecordType.zoneCreate.rawValue, s, $0, touches: touches([(s, e.zone, 0)]))
                }
                pass.lastKept = s
            case .refused(let why):
                failure = why
                return false
            case .replace(let r):
                pass.out.replaced += 1
                replacedHere = true
                EntryCodec.encode(r).withUnsafeBytes { keep.append(sequence: s, encoding: $0) }
                kept.append((s, e.zone))
            case let v:
                if case .keptAboveMark = v { pass.out.kept += 1 }
                keep.append(sequence: s, encoding: encoding)
                kept.append((s, e.zone))
            }
            return true
        })
        if counting.entries > 0 { pass.out.entriesBefore[counting.track, default: 0] += counting.entries }
        if let failure { return failure }
        if split { replacedHere = true }  // a run is never the whole frame as stored
        return flush()
    }
}

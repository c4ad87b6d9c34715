import JournalCodec

/// Passes of the retention rules over their own result (COMPACTION.md §2.1), whichever storage
/// the entries come from: the engine's compactor replays its log for each pass, the PostgreSQL
/// backend its rows. Pure: the caller hands the entries in.
package enum RetentionPasses {
    /// While the last decision says the rules may find more on their result: the entries read
    /// again through every decision so far (`replay` gives them in order), decided again at
    /// `cutoff` and `mark`, until one finds nothing more, or `ListRetention.maxPasses`.
    package static func more<E: Error>(_ decisions: inout [RetentionDecision], cutoff: Int64, mark: SequenceNumber,
                                      replay: (_ each: (SequenceNumber, JournalEntry) -> Void) throws(E) -> Void) throws(E) {
        while decisions.last!.needsAnotherPass && !decisions.last!.isEmpty && decisions.count < ListRetention.maxPasses {
            var next = RetentionPlanner()
            var walks = decisions.map { $0.walk() }
            try replay { seq, e in
                switch verdict(&walks, seq, e) {
                case .purge: return
                case .keep: next.add(seq, e)
                case .replace(let op):
                    var x = e
                    x.operation = op
                    next.add(seq, x)
                }
            }
            let d = next.decide(cutoff: cutoff, mark: mark)
            if d.isEmpty { break }
            decisions.append(d)
        }
    }

    /// What the passes decided for one entry, one after another (each pass's walk asked in
    /// ascending order): purged if any pass purges it, else written over by the last operation a
    /// pass gives it.
    package static func verdict(_ walks: inout [RetentionDecision.Walk], _ seq: SequenceNumber, _ e: JournalEntry) -> EntryVerdict {
        var current: JournalEntry? = nil
        for k in walks.indices {
            let v = current.map { walks[k].verdict(seq, $0) } ?? walks[k].verdict(seq, e)
            switch v {
            case .keep: continue
            case .purge: return .purge
            case .replace(let op):
                if current == nil { current = e }
                current!.operation = op
            }
        }
        return current.map { .replace($0.operation) } ?? .keep
    }
}

extension ListReducer {
    /// The ids a snapshot of this state writes once each (SNAPSHOT.md §3): every item record's
    /// own, and the entry id ending each winning add, place and mark key. Anchors repeat ids
    /// written already and are not counted. Random ids do not compress, so while the merge rules
    /// order by keys that end in entry ids (MERGE.md §2), their bytes are the least any encoding
    /// of this state carries (the sync bench reports it beside the snapshot's size).
    package var idsWritten: Int {
        var n = 0
        for rec in records where rec.flags & ItemFlag.stored != 0 {
            n += 1
            if rec.flags & ItemFlag.added != 0 { n += 1 }
            if rec.flags & ItemFlag.marked != 0 { n += 1 }
        }
        return n + placements.count
    }
}

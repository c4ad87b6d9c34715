// JournalLog (layer 2): storage — segments, the writer and its group commit, recovery, the zone
// index and its checkpoints, the change feed and its tokens, consumers, compaction's rewrite and
// swap, readers in other processes, backups (Spec/FORMAT.md, INDEX.md, TOKENS.md). It knows
// entries, not lists. It imports JournalCodec (re-exported: the entry types an app names) and
// swift-system; never ListModel, JournalQuery, the sync layer, SwiftNIO or crypto.

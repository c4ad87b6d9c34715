// ListModel: the shopping-list domain over JournalCodec entries (Spec/MERGE.md, Spec/SNAPSHOT.md).
//
// - `ListReducer` folds a zone's entries (any order, duplicates) into a `ListState`.
// - `ActivityLog` answers who did what and when, and survives compaction in `ActivityLogCodec` form.
// - `ShoppingSession` and `ListState.hidingDone(now:horizon:)` are the two views of a list.
// - `SnapshotCodec` stores a reducer so that `decode + apply(tail)` equals a full replay.
// - `RetentionPlanner` and `RetentionPass` decide what compaction may purge (Spec/COMPACTION.md §2).
//
// Layer 1, pure like the codec: no I/O, no Foundation, no threads (a caller may lend threads
// through `ReducerHelpers`). It imports JournalCodec only; never JournalLog or anything above.
import JournalCodec

import JournalLog
import ListModel

/// What `jlog verify` checks beyond the log: the snapshot and history files (SNAPSHOT.md).
package struct StoreFileCheck: Sendable {
    /// A compacted zone whose history cannot be read whole: an error (COMPACTION.md §4).
    package var problems: [String] = []
    /// Damaged or stray files that nothing needs (an older snapshot, a second history).
    package var notes: [String] = []
    package var snapshotFiles = 0
    package var historyFiles = 0

    package static func run(_ store: any StoreReading, fs: (any FileSystem)? = nil) -> StoreFileCheck {
        let fs = fs ?? store.storeFileSystem
        var c = StoreFileCheck()
        let query = ListQuery(reader: store, fs: fs)
        for f in SnapshotDirectory.list(store: store.path, fs: fs) {
            if f.kind == .history {
                c.historyFiles += 1
                do {
                    _ = try HistoryPieceCodec.decode(try SnapshotDirectory.read(f.path, limit: ActivityLogCodec.maxBytes, fs: fs))
                } catch { c.notes.append("snapshots/\(f.name): damaged (\(error))") }
                continue
            }
            c.snapshotFiles += 1
            do { _ = try query.readState(f) } catch {
                c.notes.append("snapshots/\(f.name): damaged or unreadable (\(error)); materialise passes over it")
            }
        }
        for z in store.zones() where !z.isDeleted && z.lowWaterMark > 0 {
            do { _ = try query.storedHistory(z.name) } catch {
                if case .historyIncomplete = error { c.problems.append(error.description) }
            }
        }
        return c
    }
}

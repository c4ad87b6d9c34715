import JournalLog
import JournalQuery

extension SyncEngine {
    /// Clears `holdsNewerChanges` from each list whose log no longer holds a kind this version
    /// does not read (Spec/SYNC.md §7.9): the flag is kept in the state, so a device that got a
    /// list's moves or sealed changes before it was updated to a version that reads them would
    /// otherwise say "update the app" for that list forever. Reads the flagged lists' entries
    /// (flagged lists are rare); a list that cannot be read keeps its flag.
    func clearNewerChangesThisVersionReads() {
        var changed = false
        for name in state.zones.keys.sorted() where state.zones[name]?.holdsNewerChanges == true {
            guard let entries = try? ListQuery(store: store, fs: store.fileSystem).entries(name).entries else { continue }
            if !entries.contains(where: { $0.1.operation.isNewerListChange }) {
                state.zones[name]?.holdsNewerChanges = false
                changed = true
            }
        }
        if changed { try? save() }
    }
}

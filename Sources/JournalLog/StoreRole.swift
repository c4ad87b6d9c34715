/// What a store is for, as its files say: the sync layer sets it by writing them (a device's
/// engine its state, a service its directory), and the storage and query layers read it without
/// knowing the sync layer. A list compaction is refused on a store that syncs unless its service
/// runs it (SYNC.md §6.2 rule 1): replicas that purge on their own diverge for ever.
package enum StoreRole: Sendable, Equatable {
    /// Nothing syncs it.
    case standalone
    /// A device's store: a sync engine keeps its state in it (`StoreLayout.deviceStateFile`).
    case device
    /// A sync service's store (`StoreLayout.serviceDirectory`).
    case service

    /// The role the files of the store at `path` give it; one that cannot be read counts as a
    /// device's (damaged state still means the store syncs).
    package static func of(store path: String, fs: any FileSystem) -> StoreRole {
        if fs.kind(of: path + "/" + StoreLayout.deviceStateFile) != .missing { return .device }
        if fs.kind(of: path + "/" + StoreLayout.serviceDirectory) == .directory { return .service }
        return .standalone
    }
}

extension StoreLayout {
    /// A device's sync engine state (SYNC.md §7.2): its presence makes the store a device's.
    package static let deviceStateFile = "sync/state"
    /// A sync service's files (accounts, keys): its presence makes the store a service's.
    package static let serviceDirectory = "service"
}

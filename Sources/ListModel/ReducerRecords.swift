import JournalCodec

/// A last-writer-wins value (name, colour, a participant's membership).
struct Register<Value: Sendable & Equatable>: Sendable, Equatable {
    var key: ChangeKey
    var value: Value

    /// Takes `value` when `key` is later than the current one.
    @inline(__always)
    mutating func offer(_ key: ChangeKey, _ value: Value) {
        if self.key < key {
            self.key = key
            self.value = value
        }
    }
}

/// Item record flags.
enum ItemFlag {
    /// The winning (first) add has arrived.
    static let added: UInt8 = 1
    /// A delete has arrived: final. A tombstone keeps only what ordering needs (its add key and
    /// anchor), never its text, added time or mark.
    static let deleted: UInt8 = 2
    /// A markOff or unmark has arrived (never set on a tombstone).
    static let marked: UInt8 = 4
    /// That winner is a markOff (needs `marked`).
    static let markedOff: UInt8 = 8
    /// A `place` entry has arrived (MERGE.md §3.4): the item sits in the tree by that entry's
    /// anchor and key (held in `ListReducer.placements`), whatever its add says. Visible only
    /// with an add and no delete.
    static let placed: UInt8 = 16
    /// A `move` entry has arrived (MERGE.md §3.5): the item's moves are in `ListReducer.moves`.
    static let moved: UInt8 = 32
    /// In the tree: placed, or added.
    static let inTree: UInt8 = added | placed
    /// The flags a snapshot stores (SNAPSHOT.md §3); the others are in memory only.
    static let stored: UInt8 = 63
    /// In memory only: the tombstone's delete entry is known (it is held in `markEntry`, which a
    /// tombstone does not otherwise use). Not known for tombstones decoded from a snapshot.
    static let deleteKnown: UInt8 = 64
}

/// One item record: plain data (no references), so records live in one contiguous array that
/// costs no retain or release to copy, and an entry touches one or two cache lines of it.
struct ItemRecord: Sendable {
    var id: RID
    var flags: UInt8 = 0
    var addAuthor: Int32 = 0
    var addClock: UInt64 = 0
    var addEntry: RID = .none
    /// Record number of the anchor in the tree (the placement's when placed, else the winning
    /// add's), or -1 for the head.
    var anchor: Int32 = -1
    var addedAt: Int64 = 0
    var markClock: UInt64 = 0
    /// The winning markOff/unmark; on a tombstone, the delete that made it (`deleteKnown`).
    var markEntry: RID = .none
    var markAuthor: Int32 = 0
    var markedAt: Int64 = 0

    init(id: RID) { self.id = id }
}

/// The winning (least) `place` entry's key of a placed record: rare (only the compactor writes
/// them), so it lives beside the records rather than in each.
struct Placement: Sendable, Equatable {
    var clock: UInt64
    var author: Int32
    var entry: RID
}

/// One `move` of an item (MERGE.md §3.5): its key and the record it names as anchor. Every move
/// of an item is kept, not only the winner (the latest): each is a place in the tree, where the
/// items added after the moved item while it stood there stay.
struct ItemMove: Sendable, Equatable {
    var clock: UInt64
    var author: Int32
    var entry: RID
    /// Record number of the anchor the move names, or -1 for the head.
    var anchor: Int32
}

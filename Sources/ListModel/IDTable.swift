import JournalCodec

/// Entry and item ids to dense `Int32` values for the reducer (see `IDMap`).
typealias IDTable = IDMap<Int32>

extension IDMap where Value == Int32 {
    /// The value stored for `id`, or nil.
    @inline(__always) func find(_ id: CompactID) -> Int32? { self[id] }

    /// Inserts `id` (as a set); false when it was already there.
    @inline(__always) mutating func insert(_ id: CompactID) -> Bool { insert(id, 0) }
}

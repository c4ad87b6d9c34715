/// An `IDMap` split into 64 by a seeded hash of the id: the same lookups, but growing it rehashes
/// one sixty-fourth of it at a time. Why: the store's id index of a zone grows under the writer's
/// lock, and rehashing one table of 700k ids there stalled every append for ~120 ms; a shard of
/// it takes ~2 ms. Ids that are not UUIDs all go to the first shard (its Dictionary), as they
/// are rare.
@usableFromInline package struct ShardedIDMap<Value> {
    @usableFromInline static var shardBits: Int { 6 }
    @usableFromInline var shards: [IDMap<Value>]

    @inlinable package init() {
        shards = Array(repeating: IDMap<Value>(), count: 1 << Self.shardBits)
    }

    /// Number of ids stored.
    @inlinable package var count: Int { shards.reduce(0) { $0 + $1.count } }

    /// Makes room for `n` ids in total (spread evenly, as the hash spreads them).
    @inlinable package mutating func reserveCapacity(_ n: Int) {
        let each = n / shards.count + n / (4 * shards.count) + 16
        for k in shards.indices { shards[k].reserveCapacity(each) }
    }

    /// The shard of an id: the top bits of the seeded hash (each shard's table uses the low ones).
    @inlinable @inline(__always)
    static func shard(_ id: CompactID) -> Int {
        guard let (high, low) = id.uuidHalves else { return 0 }
        return Int(truncatingIfNeeded: UInt64(bitPattern: Int64(IDMap<Value>.hash(high, low))) >> (64 - UInt64(shardBits)))
    }

    /// The value stored for `id`, or nil. Setting nil removes the id.
    @inlinable package subscript(id: CompactID) -> Value? {
        get { shards[Self.shard(id)][id] }
        set { shards[Self.shard(id)][id] = newValue }
    }
}

/// Sendable exactly when its values are.
extension ShardedIDMap: Sendable where Value: Sendable {}

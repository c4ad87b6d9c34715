/// Per-process seed for `IDMap`'s hash, so ids crafted to collide cannot be precomputed.
@usableFromInline package let idMapSeed: UInt64 = UInt64.random(in: 1 ... .max)

/// A map from entry or item ids to values. UUID ids (the usual case) live in an open-addressing
/// table keyed on their 128 bits: a seeded multiply-xorshift hash, one slot per probe, linear
/// probing with backward-shift deletion (no tombstones). Other ids go to a Dictionary. Why: the
/// store's idempotency check and the reducer both do a lookup per entry, and Dictionary's
/// hasher seeding and rehashing dominated both profiles. Iteration order is never exposed.
@usableFromInline package struct IDMap<Value> {
    @usableFromInline struct Slot {
        @usableFromInline var high: UInt64
        @usableFromInline var low: UInt64
        @usableFromInline var value: Value?
        @inlinable init(high: UInt64, low: UInt64, value: Value?) {
            self.high = high
            self.low = low
            self.value = value
        }
    }

    @usableFromInline var slots: [Slot] = []
    @usableFromInline var uuidCount = 0
    @usableFromInline var text: [CompactID: Value] = [:]

    @inlinable package init() {}

    /// Number of ids stored.
    @inlinable package var count: Int { uuidCount + text.count }

    /// Makes room for `n` ids in total without rehashing.
    @inlinable package mutating func reserveCapacity(_ n: Int) {
        var capacity = max(16, slots.count)
        while capacity * 7 / 10 < n { capacity *= 2 }
        if capacity > slots.count { rehash(capacity) }
    }

    @inlinable @inline(__always)
    static func hash(_ high: UInt64, _ low: UInt64) -> Int {
        var x = (high ^ idMapSeed) &* 0x9E37_79B9_7F4A_7C15
        x ^= low
        x ^= x >> 31
        x = x &* 0xBF58_476D_1CE4_E5B9
        x ^= x >> 29
        return Int(truncatingIfNeeded: x)
    }

    @inlinable mutating func rehash(_ capacity: Int) {
        assert(capacity & (capacity - 1) == 0, "capacity is a power of two")
        let old = slots
        slots = [Slot](repeating: Slot(high: 0, low: 0, value: nil), count: capacity)
        let mask = capacity - 1
        slots.withUnsafeMutableBufferPointer { s in
            for o in old where o.value != nil {
                var i = Self.hash(o.high, o.low) & mask
                while s[i].value != nil { i = (i + 1) & mask }
                s[i] = o
            }
        }
    }

    /// The slot holding (high, low), or the empty slot where it would go.
    @inlinable @inline(__always)
    func slot(_ high: UInt64, _ low: UInt64) -> Int {
        slots.withUnsafeBufferPointer { s in
            let mask = s.count - 1
            var i = Self.hash(high, low) & mask
            while s[i].value != nil && (s[i].high != high || s[i].low != low) { i = (i + 1) & mask }
            return i
        }
    }

    /// The value stored for `id`, or nil. Setting nil removes the id.
    @inlinable package subscript(id: CompactID) -> Value? {
        get {
            guard let (high, low) = id.uuidHalves else { return text[id] }
            guard !slots.isEmpty else { return nil }
            return slots[slot(high, low)].value
        }
        set {
            guard let (high, low) = id.uuidHalves else { text[id] = newValue; return }
            guard let newValue else { remove(high, low); return }
            if (uuidCount + 1) * 10 > slots.count * 7 { rehash(max(16, slots.count * 2)) }
            let i = slot(high, low)
            if slots[i].value == nil { uuidCount += 1 }
            slots[i] = Slot(high: high, low: low, value: newValue)
        }
    }

    /// The value stored for `id`; when absent, stores `value` and returns it.
    @inlinable @inline(__always)
    package mutating func findOrInsert(_ id: CompactID, _ value: Value) -> Value {
        guard let (high, low) = id.uuidHalves else {
            if let v = text[id] { return v }
            text[id] = value
            return value
        }
        if (uuidCount + 1) * 10 > slots.count * 7 { rehash(max(16, slots.count * 2)) }
        let i = slot(high, low)
        if let v = slots[i].value { return v }
        slots[i] = Slot(high: high, low: low, value: value)
        uuidCount += 1
        return value
    }

    /// Stores `value` for `id` unless present; true when it was inserted.
    @inlinable @inline(__always)
    package mutating func insert(_ id: CompactID, _ value: Value) -> Bool {
        let before = count
        _ = findOrInsert(id, value)
        return count != before
    }

    /// Linear probing's backward-shift deletion: no tombstones, so lookups stay short.
    @inlinable mutating func remove(_ high: UInt64, _ low: UInt64) {
        guard !slots.isEmpty else { return }
        var hole = slot(high, low)
        guard slots[hole].value != nil else { return }
        uuidCount -= 1
        let mask = slots.count - 1
        var s = hole
        while true {
            slots[hole].value = nil
            while true {
                s = (s + 1) & mask
                if slots[s].value == nil { return }
                let home = Self.hash(slots[s].high, slots[s].low) & mask
                // The entry at s may fill the hole unless its home lies cyclically in (hole, s].
                let stays = hole <= s ? (home > hole && home <= s) : (home > hole || home <= s)
                if !stays { break }
            }
            slots[hole] = slots[s]
            hole = s
        }
    }
}

/// Plain values all the way down: sendable exactly when its values are.
extension IDMap: Sendable where Value: Sendable {}
extension IDMap.Slot: Sendable where Value: Sendable {}

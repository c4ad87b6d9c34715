import JournalCodec

/// An id as the reducer stores it: plain data, so records hold no references and copying one
/// costs no retain. A UUID keeps its 128 bits; a text id (rare) is numbered in `ReducerTextIDs`
/// and flagged by `text`, so the two can never collide.
struct RID: Equatable, Sendable {
    var high: UInt64
    var low: UInt64
    var text: Bool

    static let none = RID(high: 0, low: 0, text: false)
}

/// Text ids interned to numbers (`RID.low`), in first-seen order. Their numbers are internal:
/// every order and every encoding goes through the `CompactID`.
struct ReducerTextIDs: Sendable {
    var ids: [CompactID] = []
    var numbers: [CompactID: UInt64] = [:]

    @inline(__always)
    mutating func rid(_ id: CompactID) -> RID {
        if let (h, l) = id.uuidHalves { return RID(high: h, low: l, text: false) }
        if let k = numbers[id] { return RID(high: 0, low: k, text: true) }
        let k = UInt64(ids.count)
        ids.append(id)
        numbers[id] = k
        return RID(high: 0, low: k, text: true)
    }

    /// The id's RID if it was ever interned (nil: no record or entry can hold it).
    func existing(_ id: CompactID) -> RID? {
        if let (h, l) = id.uuidHalves { return RID(high: h, low: l, text: false) }
        return numbers[id].map { RID(high: 0, low: $0, text: true) }
    }

    @inline(__always)
    func compact(_ r: RID) -> CompactID { r.text ? ids[Int(r.low)] : CompactID(uuidHigh: r.high, low: r.low) }

    /// The id order of MERGE.md §2 (UUIDs by their 128 bits, otherwise by their text).
    @inline(__always)
    func less(_ a: RID, _ b: RID) -> Bool {
        if !a.text && !b.text { return a.high != b.high ? a.high < b.high : a.low < b.low }
        return compact(a) < compact(b)
    }

    /// The id's encoding (FORMAT.md §6).
    @inline(__always)
    func encode(_ r: RID, into w: inout ByteWriter) {
        if r.text { return ids[Int(r.low)].encoded(into: &w) }
        w.u8(1)
        w.u64BigEndian(r.high)
        w.u64BigEndian(r.low)
    }
}

/// An open-addressing hash index from ids to dense `Int32` numbers, whose ids live elsewhere
/// (the reducer's records, or the seen-set's id array). Each slot is 8 bytes, `tag << 32 |
/// (value + 1)` with 0 for empty, so a table for half a million ids is a third of `IDMap`'s and
/// misses the cache less often; a tag match is confirmed against the stored id by the caller.
/// The home slot comes from the tag, so growing needs no ids. Linear probing, no deletion.
/// Seeded like `IDMap` (`idMapSeed`), so crafted ids cannot be made to collide.
struct ReducerIndex: Sendable {
    var slots: [UInt64] = []
    private(set) var count = 0
    let seed = idMapSeed

    /// The 64-bit hash of `id`; its upper 32 bits are the tag.
    @inline(__always)
    func hash(_ id: RID) -> UInt64 {
        var x = (id.high ^ seed) &* 0x9E37_79B9_7F4A_7C15
        x ^= id.low ^ (id.text ? 0x5BD1_E995_5BD1_E995 : 0)
        x ^= x >> 31
        x = x &* 0xBF58_476D_1CE4_E5B9
        x ^= x >> 29
        return x | 1 << 32  // a tag is never 0, so a slot is never 0
    }

    /// Makes room for `n` ids in total without growing.
    mutating func reserveCapacity(_ n: Int) {
        var capacity = max(16, slots.count)
        while capacity * 7 / 10 < n { capacity *= 2 }
        if capacity > slots.count { resize(capacity) }
    }

    /// Call before a probe that may insert: keeps the load at most 0.7.
    @inline(__always)
    mutating func prepareInsert() {
        if (count + 1) * 10 > slots.count * 7 { resize(max(16, slots.count * 2)) }
    }

    private mutating func resize(_ capacity: Int) {
        precondition(capacity <= 1 << 32, "reducer index too large")
        let old = slots
        slots = [UInt64](repeating: 0, count: capacity)
        let mask = capacity - 1
        slots.withUnsafeMutableBufferPointer { s in
            for o in old where o != 0 {
                var i = Int(o >> 32) & mask
                while s[i] != 0 { i = (i + 1) & mask }
                s[i] = o
            }
        }
    }

    /// The value of the id with hash `h` (confirmed by `matches`), or the empty slot where it
    /// would go (as `-1 - slot`). The table must not be empty.
    @inline(__always)
    func find(_ h: UInt64, _ matches: (Int32) -> Bool) -> Int {
        slots.withUnsafeBufferPointer { s in
            let mask = s.count - 1
            let tag = h >> 32
            var i = Int(tag) & mask
            while true {
                let v = s[i]
                if v == 0 { return -1 - i }
                if v >> 32 == tag, matches(Int32(truncatingIfNeeded: v) - 1) { return Int(Int32(truncatingIfNeeded: v) - 1) }
                i = (i + 1) & mask
            }
        }
    }

    /// Loads the home slot of each hash (0: none) and returns their sum. Called for a chunk of
    /// ids before probing for them one by one: these loads are independent, so their cache
    /// misses overlap, and the probes that follow find the slots in cache.
    func warm(_ hashes: UnsafeBufferPointer<UInt64>) -> UInt64 {
        guard !slots.isEmpty else { return 0 }
        return slots.withUnsafeBufferPointer { s in
            let mask = s.count - 1
            var sum: UInt64 = 0
            for h in hashes where h != 0 { sum &+= s[Int(h >> 32) & mask] }
            return sum
        }
    }

    /// Fills the empty slot `find` returned (after `prepareInsert`).
    @inline(__always)
    mutating func insert(at notFound: Int, _ h: UInt64, _ value: Int32) {
        slots[-1 - notFound] = h & 0xFFFF_FFFF_0000_0000 | UInt64(UInt32(value) + 1)
        count += 1
    }

    /// Inserts the values `first ..< first + hashes.count` (skipping any whose id, by `same`, is
    /// there already), loading every home slot before the first insert, so the misses overlap.
    mutating func insertBatch(_ hashes: UnsafeBufferPointer<UInt64>, first: Int32, _ same: (Int32, Int32) -> Bool) {
        reserveCapacity(count + hashes.count)
        let mask = slots.count - 1
        var added = 0
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: hashes.count) { home in
            slots.withUnsafeMutableBufferPointer { s in
                for j in 0..<hashes.count { home[j] = s[Int(hashes[j] >> 32) & mask] }
                for j in 0..<hashes.count {
                    let tag = hashes[j] >> 32, value = first + Int32(j)
                    var i = Int(tag) & mask
                    // A filled slot never empties: a home slot loaded as filled still is.
                    var v = home[j] != 0 ? home[j] : s[i]
                    var present = false
                    while v != 0 {
                        if v >> 32 == tag, same(Int32(truncatingIfNeeded: v) - 1, value) {
                            present = true
                            break
                        }
                        i = (i + 1) & mask
                        v = s[i]
                    }
                    if !present {
                        s[i] = tag << 32 | UInt64(UInt32(value) + 1)
                        added += 1
                    }
                }
            }
        }
        count += added
    }

    /// Builds the table for values `0..<hashes.count` at once (decoding a snapshot): the entries
    /// are bucketed by home slot first, so the table fills front to back instead of missing the
    /// cache once per id. Returns the first pair of values found to have equal ids, if any.
    mutating func build(_ hashes: [UInt64], _ same: (Int32, Int32) -> Bool) -> (Int32, Int32)? {
        precondition(count == 0, "bulk build into an empty index")
        reserveCapacity(hashes.count)
        let mask = slots.count - 1
        let bucketBits = min(12, slots.count.trailingZeroBitCount)
        let shift = slots.count.trailingZeroBitCount - bucketBits
        var start = [Int](repeating: 0, count: (1 << bucketBits) + 1)
        for h in hashes { start[(Int(h >> 32) & mask) >> shift + 1] += 1 }
        for b in 0..<(1 << bucketBits) { start[b + 1] += start[b] }
        var sorted = [UInt64](repeating: 0, count: hashes.count)
        for (v, h) in hashes.enumerated() {
            let b = (Int(h >> 32) & mask) >> shift
            sorted[start[b]] = h & 0xFFFF_FFFF_0000_0000 | UInt64(UInt32(v) + 1)
            start[b] += 1
        }
        var clash: (Int32, Int32)? = nil
        slots.withUnsafeMutableBufferPointer { s in
            for e in sorted {
                let tag = e >> 32
                var i = Int(tag) & mask
                while s[i] != 0 {
                    if s[i] >> 32 == tag, clash == nil {
                        let a = Int32(truncatingIfNeeded: s[i]) - 1, b = Int32(truncatingIfNeeded: e) - 1
                        if same(a, b) { clash = (min(a, b), max(a, b)) }
                    }
                    i = (i + 1) & mask
                }
                s[i] = e
            }
        }
        count = hashes.count
        return clash
    }
}

/// The ids of applied entries that the state does not hold as winners (MERGE.md §9): an id
/// array and an index over it. Ids whose presence nobody asks about (superseded winners, which
/// are most insertions) wait in a small batch, and a batch is indexed at once, so that its cache
/// misses overlap instead of stalling one entry at a time.
struct ReducerSeenSet: Sendable {
    /// Every id added; the last `pending` of them are not indexed yet. (An id added twice, only
    /// possible when one entry id is reused for different entries, is indexed once.)
    var ids: [RID] = []
    var index = ReducerIndex()
    private var pending = 0
    private static let batch = 64

    var count: Int { ids.count }

    mutating func reserveCapacity(_ n: Int) {
        ids.reserveCapacity(n)
        index.reserveCapacity(n)
    }

    /// Adds `id` without reporting whether it was there.
    @inline(__always)
    mutating func add(_ id: RID) {
        ids.append(id)
        pending += 1
        if pending == Self.batch { flush() }
    }

    /// Inserts `id`; false when it was already there.
    @inline(__always)
    mutating func insert(_ id: RID) -> Bool {
        if contains(id) { return false }
        add(id)
        return true
    }

    func contains(_ id: RID) -> Bool {
        for k in (ids.count - pending)..<ids.count where ids[k] == id { return true }
        guard index.count > 0 else { return false }
        return index.find(index.hash(id)) { ids[Int($0)] == id } >= 0
    }

    private mutating func flush() {
        let first = ids.count - pending
        let ids = self.ids
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: pending) { hashes in
            for j in 0..<pending { hashes[j] = index.hash(ids[first + j]) }
            index.insertBatch(UnsafeBufferPointer(hashes), first: Int32(first)) { ids[Int($0)] == ids[Int($1)] }
        }
        pending = 0
    }
}

/// Entry id to sequence for one zone incarnation: what makes appends idempotent. UUID ids (the
/// usual case) live in an open-addressing table keyed on their 128 bits, with a keyed
/// multiply-xorshift hash (the key is random per process, so ids chosen to collide cannot be
/// precomputed); other ids go to a Dictionary. Swift's Dictionary spent most of an append's
/// bookkeeping time seeding its hasher and rehashing on growth.
struct IDIndex {
    private static let key: (UInt64, UInt64) = {
        var g = SystemRandomNumberGenerator()
        return (g.next() | 1, g.next())
    }()

    /// Two words per slot (high, low); `sequences[slot] == 0` marks an empty slot (sequences start at 1).
    private var words: [UInt64] = []
    private var sequences: [SequenceNumber] = []
    private var mask = -1
    private var uuidCount = 0
    private var others: [CompactID: SequenceNumber] = [:]

    var count: Int { uuidCount + others.count }

    init(minimumCapacity: Int = 0) {
        if minimumCapacity > 0 { grow(to: minimumCapacity) }
    }

    @inline(__always) private static func slot(_ hi: UInt64, _ lo: UInt64, _ mask: Int) -> Int {
        var h = (hi ^ key.1) &* 0x9E37_79B9_7F4A_7C15
        h ^= (lo &+ key.0) &* 0xC2B2_AE3D_27D4_EB4F
        h ^= h >> 29
        return Int(truncatingIfNeeded: h) & mask
    }

    private mutating func grow(to minimum: Int) {
        var capacity = 16
        while capacity * 3 < minimum * 4 { capacity <<= 1 }
        guard capacity > sequences.count else { return }
        let oldWords = words, oldSequences = sequences
        words = [UInt64](repeating: 0, count: capacity * 2)
        sequences = [SequenceNumber](repeating: 0, count: capacity)
        mask = capacity - 1
        for i in oldSequences.indices where oldSequences[i] != 0 {
            var s = Self.slot(oldWords[2 * i], oldWords[2 * i + 1], mask)
            while sequences[s] != 0 { s = (s + 1) & mask }
            words[2 * s] = oldWords[2 * i]
            words[2 * s + 1] = oldWords[2 * i + 1]
            sequences[s] = oldSequences[i]
        }
    }

    /// The slot holding the id, or the empty slot where it would go.
    @inline(__always) private func find(_ hi: UInt64, _ lo: UInt64) -> Int {
        var s = Self.slot(hi, lo, mask)
        while sequences[s] != 0 && (words[2 * s] != hi || words[2 * s + 1] != lo) { s = (s + 1) & mask }
        return s
    }

    subscript(id: CompactID) -> SequenceNumber? {
        get {
            guard let (hi, lo) = id.uuidHalves else { return others[id] }
            guard mask >= 0 else { return nil }
            let s = find(hi, lo)
            return sequences[s] == 0 ? nil : sequences[s]
        }
        set {
            guard let (hi, lo) = id.uuidHalves else { others[id] = newValue; return }
            guard let newValue else { remove(hi, lo); return }
            precondition(newValue > 0, "sequences start at 1")
            if (uuidCount + 1) * 4 > (mask + 1) * 3 { grow(to: max(16, (uuidCount + 1) * 2)) }
            let s = find(hi, lo)
            if sequences[s] == 0 {
                uuidCount += 1
                words[2 * s] = hi
                words[2 * s + 1] = lo
            }
            sequences[s] = newValue
        }
    }

    /// Linear probing's backward-shift deletion: no tombstones, so lookups stay short.
    private mutating func remove(_ hi: UInt64, _ lo: UInt64) {
        guard mask >= 0 else { return }
        var hole = find(hi, lo)
        guard sequences[hole] != 0 else { return }
        uuidCount -= 1
        var s = hole
        while true {
            sequences[hole] = 0
            repeat {
                s = (s + 1) & mask
                if sequences[s] == 0 { return }
                let home = Self.slot(words[2 * s], words[2 * s + 1], mask)
                // Move the entry at s back into the hole unless its home lies cyclically in (hole, s].
                let stays = hole <= s ? (home > hole && home <= s) : (home > hole || home <= s)
                if !stays { break }
            } while true
            words[2 * hole] = words[2 * s]
            words[2 * hole + 1] = words[2 * s + 1]
            sequences[hole] = sequences[s]
            hole = s
        }
    }
}

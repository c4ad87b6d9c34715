import JournalCodec

/// The zone index's incarnations (`ZoneCatalog.tracks`), in chunks of 256: a copy of the table
/// (an index checkpoint being taken under the writer's lock) shares the chunks, and a later
/// change under the lock copies only the chunk it touches. Why: a plain array of 20,000 tracks
/// was copied whole, under the lock, for every checkpoint (~1 ms per checkpoint in the tail
/// benchmark), which is work that grows with the store on the append path.
struct TrackTable: RandomAccessCollection, MutableCollection {
    static let chunkBits = 8
    static let chunkSize = 1 << chunkBits
    private var chunks: [[ZoneTrack]] = []
    private(set) var count = 0

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(i: Int) -> ZoneTrack {
        get {
            precondition(i >= 0 && i < count, "track index out of range")
            return chunks[i >> Self.chunkBits][i & (Self.chunkSize - 1)]
        }
        _modify {
            precondition(i >= 0 && i < count, "track index out of range")
            touch(i)
            yield &chunks[i >> Self.chunkBits][i & (Self.chunkSize - 1)]
        }
    }

    mutating func append(_ t: ZoneTrack) {
        if count & (Self.chunkSize - 1) == 0 {
            var chunk: [ZoneTrack] = []
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(t)
        count += 1
        touch(count - 1)
    }

    /// Tracks changed or added since `takeTouched()`, each once (`isTouched` marks them). An
    /// index journal record compares only these: O(what changed), not O(zones).
    private var touched: [Int] = []
    private var isTouched: [UInt64] = []

    private mutating func touch(_ i: Int) {
        let word = i >> 6, bit = UInt64(1) << UInt64(i & 63)
        if word >= isTouched.count { isTouched.append(contentsOf: repeatElement(0, count: word + 1 - isTouched.count)) }
        guard isTouched[word] & bit == 0 else { return }
        isTouched[word] |= bit
        touched.append(i)
    }

    /// The tracks touched since the last call, ascending, and a fresh start.
    mutating func takeTouched() -> [Int] {
        for i in touched { isTouched[i >> 6] &= ~(UInt64(1) << UInt64(i & 63)) }
        defer { touched = [] }
        return touched.sorted()
    }
}

/// A store's identity: 128 random bits chosen when it is created, carried by every segment
/// header and change token (FORMAT.md §3.1, TOKENS.md §4), so that a segment or a token of
/// another store is recognised. Printed as 32 lowercase hex digits, as `jlog inspect` does.
public struct StoreID: Hashable, Sendable, CustomStringConvertible {
    /// The first of the two u64 a segment header holds (`storeID.0` in FORMAT.md §3.1).
    public let high: UInt64
    /// The second.
    public let low: UInt64

    /// The identity from its two halves, as a segment header holds them.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    init(_ pair: (UInt64, UInt64)) { self.init(high: pair.0, low: pair.1) }

    var pair: (UInt64, UInt64) { (high, low) }

    public var description: String {
        func hex(_ v: UInt64) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: 16 - s.count) + s
        }
        return hex(high) + hex(low)
    }
}

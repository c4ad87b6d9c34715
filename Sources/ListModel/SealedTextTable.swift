import JournalCodec

/// A reducer's sealed texts by record number: the winning add's sealed value (SEALING.md §5) of
/// each record that has one. One slot per record up to the last that has one, looked up by
/// index: a sealed list's items nearly all have one, and a table costs a re-fetch no hashing.
/// A plain list's table is empty and allocates nothing.
struct SealedTextTable: Sendable {
    private var slots: [SealedValue?] = []
    /// How many slots hold a value.
    private(set) var count = 0

    /// Whether no record has a sealed text.
    var isEmpty: Bool { count == 0 }

    subscript(record: Int32) -> SealedValue? {
        get {
            let i = Int(record)
            return i < slots.count ? slots[i] : nil
        }
        set {
            let i = Int(record)
            if i >= slots.count {
                guard newValue != nil else { return }
                // Records decode in order: nearly always the next slot.
                while slots.count < i { slots.append(nil) }
                slots.append(nil)
            }
            count += (newValue == nil ? 0 : 1) - (slots[i] == nil ? 0 : 1)
            slots[i] = newValue
        }
    }

    /// Room for `n` records' slots.
    mutating func reserveCapacity(_ n: Int) { slots.reserveCapacity(n) }
}

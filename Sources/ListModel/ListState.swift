import JournalCodec

/// One visible item of a list.
public struct ListItem: Hashable, Sendable {
    /// Whether an item is still to do or has been ticked off.
    public enum State: UInt8, Hashable, Sendable {
        /// Not marked off: still to do.
        case active = 0
        /// Marked off (done), but still shown in the list.
        case markedOff = 1
    }

    // `state` follows `id` to fill the padding after the id's one-byte tag: 96 bytes an item,
    // not 104, for state() to write.
    public var id: CompactID
    /// Whether the item is active or marked off.
    public var state: State
    /// The item's text, from the add that won.
    public var text: String
    /// The author of the add that won.
    public var addedBy: String
    /// Wall-clock milliseconds of the add that won (MERGE.md §5).
    public var addedAt: Int64
    /// Set exactly when `state == .markedOff`.
    public var markedOffBy: String?
    /// Wall-clock milliseconds of the mark-off; set exactly when `state == .markedOff`.
    public var markedOffAt: Int64?
}

extension ListItem {
    // In an extension, so the compiler still synthesises the memberwise initialiser, which
    // `state()` uses: it builds the value in one piece, where this one's stores to `self` left a
    // copy and a destroy of the whole item that the optimiser did not cancel.
    /// Creates an item; the mark-off fields default to nil, as for an active item.
    public init(id: CompactID, text: String, state: State, addedBy: String, addedAt: Int64,
                markedOffBy: String? = nil, markedOffAt: Int64? = nil) {
        self.init(id: id, state: state, text: text, addedBy: addedBy, addedAt: addedAt,
                  markedOffBy: markedOffBy, markedOffAt: markedOffAt)
    }
}

/// What a list looks like: the same on every replica that holds the same set of entries.
public struct ListState: Hashable, Sendable {
    /// "" until the first rename.
    public var name: String
    /// "" until the first recolour.
    public var colour: String
    /// Visible (not deleted) items in list order.
    public var items: [ListItem]
    /// Current participants, sorted by UTF-8 bytes.
    public var participants: [String]

    /// A list state from its parts; by default an empty, unnamed list.
    public init(name: String = "", colour: String = "", items: [ListItem] = [], participants: [String] = []) {
        self.name = name
        self.colour = colour
        self.items = items
        self.participants = participants
    }

    /// The SipHash-2-4 key of `digest` (MERGE.md §8): fixed, so digests compare across replicas.
    package static let digestKey: (UInt64, UInt64) = (0x6A6C_6973_7464_6731, 0x7374_6174_6532_3031)

    /// A 64-bit digest of the canonical encoding of the visible state (MERGE.md §8): two replicas
    /// agree on it exactly when they show the same list.
    /// Hashed as the encoding is produced (`ReducerDigest`), without building it.
    public var digest: UInt64 {
        ReducerDigest.hash { encodeCanonical(into: &$0) }
    }

    /// The canonical encoding that `digest` hashes.
    package func canonicalBytes() -> [UInt8] {
        var w = ByteWriter(capacity: 64 + items.count * 48)
        encodeCanonical(into: &w)
        return w.bytes
    }

    private func encodeCanonical<W: ByteSink>(into w: inout W) {
        w.u8(1)
        w.string(name)
        w.string(colour)
        w.varint(UInt64(items.count))
        for item in items {
            w.id(item.id)
            w.string(item.text)
            w.u8(item.state.rawValue)
            w.string(item.addedBy)
            w.zigzag(item.addedAt)
            if item.state == .markedOff {
                w.string(item.markedOffBy ?? "")
                w.zigzag(item.markedOffAt ?? 0)
            }
        }
        w.varint(UInt64(participants.count))
        for p in participants { w.string(p) }
    }
}

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
    /// The winning add's text sealed for the list's members, when it was a sealed add
    /// (Spec/SEALING.md §5); `text` is then "". A member's device opens it (`ListKeyring`).
    public var sealedText: SealedText? = nil

    /// The item's text as the list holds it: plain, or sealed.
    public var listText: ListText { sealedText.map { .sealed($0) } ?? .plain(text) }
}

extension ListItem {
    // In an extension, so the compiler still synthesises the memberwise initialiser, which
    // `state()` uses: it builds the value in one piece, where this one's stores to `self` left a
    // copy and a destroy of the whole item that the optimiser did not cancel.
    /// Creates an item; the mark-off fields default to nil, as for an active item, and the text
    /// is plain unless `sealedText` is given (`text` is then "").
    public init(id: CompactID, text: String, state: State, addedBy: String, addedAt: Int64,
                markedOffBy: String? = nil, markedOffAt: Int64? = nil, sealedText: SealedText? = nil) {
        self.init(id: id, state: state, text: text, addedBy: addedBy, addedAt: addedAt,
                  markedOffBy: markedOffBy, markedOffAt: markedOffAt, sealedText: sealedText)
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
    /// The name, when the winning rename was sealed (Spec/SEALING.md §5); `name` is then "".
    public var sealedName: SealedText?
    /// The colour, when the winning recolour was sealed; `colour` is then "".
    public var sealedColour: SealedText?
    /// A sealed list's key records (Spec/SEALING.md §4), in epoch order: what a member's device
    /// builds its keyring from (`ListKeyring(zone:records:…)`), whether the list's entries came
    /// one by one or in a snapshot. Not part of `digest`. Empty for a plain list.
    public var keyRecords: [EpochKeyRecord] = []

    /// A list state from its parts; by default an empty, unnamed list.
    public init(name: String = "", colour: String = "", items: [ListItem] = [], participants: [String] = [],
                sealedName: SealedText? = nil, sealedColour: SealedText? = nil) {
        self.name = name
        self.colour = colour
        self.items = items
        self.participants = participants
        self.sealedName = sealedName
        self.sealedColour = sealedColour
    }

    /// Whether any text of the state is sealed: its digest then takes the form of MERGE.md §8
    /// version 2.
    var holdsSealedText: Bool { sealedName != nil || sealedColour != nil || items.contains { $0.sealedText != nil } }

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
        let sealed = holdsSealedText
        w.u8(sealed ? 2 : 1)
        if sealed {
            Self.text(sealedName.map { .sealed($0) } ?? .plain(name), into: &w)
            Self.text(sealedColour.map { .sealed($0) } ?? .plain(colour), into: &w)
        } else {
            w.string(name)
            w.string(colour)
        }
        w.varint(UInt64(items.count))
        for item in items {
            w.id(item.id)
            if sealed { Self.text(item.listText, into: &w) } else { w.string(item.text) }
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

    /// A text in a version-2 digest (MERGE.md §8): `0 | string` or `1 | sealed bytes`.
    static func text<W: ByteSink>(_ t: ListText, into w: inout W) {
        switch t {
        case .plain(let s):
            w.u8(0)
            w.string(s)
        case .sealed(let v): sealed(v.value, into: &w)
        }
    }

    /// A sealed text in a version-2 digest: `1 | sealed bytes` (its value only: the binding is
    /// the entry's, which the rest of the state pins).
    static func sealed<W: ByteSink>(_ v: SealedValue, into w: inout W) {
        w.u8(1)
        let bytes = v.encoded
        w.varint(UInt64(bytes.count))
        bytes.withUnsafeBytes { w.raw($0) }
    }
}

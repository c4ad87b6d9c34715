/// A sealed list's change that carries a sealed text (Spec/SEALING.md §5), as the body of its
/// entry: an add of an item, a rename or a recolour of the list. Its kind lies in the range of a
/// newer version's list changes (FORMAT.md §6), so a reader that does not interpret it still
/// stores, syncs and serves it byte for byte. The format only: `JournalSeal` makes the sealed
/// values.
public enum SealedChange: Sendable, Hashable {
    /// `item id | hasAfter u8 | [after id] | sealed bytes` (kind 0x41).
    case add(item: CompactID, after: CompactID?, text: SealedValue)
    /// `sealed bytes` (kind 0x42): the list's name.
    case rename(SealedValue)
    /// `sealed bytes` (kind 0x43): the list's colour.
    case recolour(SealedValue)

    /// The kind of a sealed add.
    public static let addKind: UInt8 = 0x41
    /// The kind of a sealed rename.
    public static let renameKind: UInt8 = 0x42
    /// The kind of a sealed recolour.
    public static let recolourKind: UInt8 = 0x43

    /// The entry kind that carries it.
    public var kind: UInt8 {
        switch self {
        case .add: Self.addKind
        case .rename: Self.renameKind
        case .recolour: Self.recolourKind
        }
    }

    /// The sealed text it carries.
    public var text: SealedValue {
        switch self {
        case .add(_, _, let text), .rename(let text), .recolour(let text): text
        }
    }

    /// The item an add adds (the binding's item); nil for a rename or recolour.
    public var item: CompactID? {
        if case .add(let item, _, _) = self { return item }
        return nil
    }

    /// The entry operation that carries it (an opaque kind, until a version interprets it).
    public var operation: EntryOperation { .opaque(kind: kind, body: body) }

    /// Its body, as the entry holds it after the kind; `sealed bytes` is `length varint | sealed`.
    public var body: [UInt8] {
        var w = ByteWriter()
        if case .add(let item, let after, _) = self {
            item.encoded(into: &w)
            w.u8(after == nil ? 0 : 1)
            after?.encoded(into: &w)
        }
        let sealed = text.encoded
        w.varint(UInt64(sealed.count))
        w.append(contentsOf: sealed)
        return w.bytes
    }

    /// The change an entry's operation carries; nil for an operation of another kind, or why its
    /// body is not one (malformed ids, a sealed value that does not read, bytes after it).
    public init?(_ operation: EntryOperation) throws(CodecError) {
        guard case .opaque(let kind, let body) = operation, (Self.addKind...Self.recolourKind).contains(kind) else { return nil }
        var change: SealedChange?
        var failure: CodecError?
        body.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            do throws(CodecError) {
                var item: CompactID?, after: CompactID?
                if kind == Self.addKind {
                    item = try CompactID.decoded(&r, field: "item")
                    let at = r.offset
                    switch try r.u8() {
                    case 0: after = nil
                    case 1: after = try CompactID.decoded(&r, field: "after")
                    default: throw CodecError(.invalidValue(field: "hasAfter"), at: at)
                    }
                }
                let length = try r.length("sealed", limit: SealedValue.maxBytes)
                let value = try SealedValue(decoding: Array(try r.bytes(length)))
                guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
                change = switch kind {
                case Self.addKind: .add(item: item!, after: after, text: value)
                case Self.renameKind: .rename(value)
                default: .recolour(value)
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        self = change!
    }
}

import JournalCodec

/// A list's text (an item's, or its name or colour): plain, or sealed for the list's members
/// (Spec/SEALING.md §2), which only a member's device opens. The list model orders, merges,
/// compacts and snapshots a sealed text exactly as a plain one, carrying its bytes as they are:
/// nothing it decides reads a text (MERGE.md §11).
public enum ListText: Hashable, Sendable {
    /// A text anyone holding the list reads.
    case plain(String)
    /// A text sealed for the list's members (`JournalSeal`'s `ListKeyring` opens it).
    case sealed(SealedText)

    /// The plain text; nil for a sealed one.
    public var plain: String? {
        if case .plain(let s) = self { return s }
        return nil
    }

    /// The sealed text; nil for a plain one.
    public var sealedText: SealedText? {
        if case .sealed(let v) = self { return v }
        return nil
    }
}

/// A text sealed for a list's members as a list's state or history holds it: the sealed value,
/// and the binding it was sealed for (SEALING.md §2.3: the zone, and the id, kind, item, author
/// and clocks of the entry that carried it), which is all a member's keys need to open it.
public struct SealedText: Hashable, Sendable {
    /// The sealed bytes.
    public var value: SealedValue
    /// What the value is bound to: its entry, as the list holds it.
    public var binding: SealBinding

    /// A sealed text and its binding.
    public init(value: SealedValue, binding: SealBinding) {
        self.value = value
        self.binding = binding
    }

    /// `value` as carried by `entry` (of kind `kind`, adding `item` when an add).
    package init(_ value: SealedValue, in entry: JournalEntry, kind: UInt8, item: CompactID?) {
        self.init(value: value, binding: SealBinding(zone: entry.zone, entry: entry.id, kind: kind, item: item, author: entry.author,
                                                      clock: entry.clock, wallTime: entry.wallTime, epoch: value.epoch))
    }

    /// `value` bound to an entry given by its parts.
    package init(_ value: SealedValue, zone: String, entry: CompactID, kind: UInt8, item: CompactID?, author: String,
                 clock: HybridTime, wallTime: Int64) {
        self.init(value: value, binding: SealBinding(zone: zone, entry: entry, kind: kind, item: item, author: author,
                                                      clock: clock, wallTime: wallTime, epoch: value.epoch))
    }
}

extension EntryOperation {
    /// The item a list change acts on, a sealed add's included (MERGE.md §11); nil for a
    /// list-level change, an opaque kind, or a sealed body that does not read.
    package var listItem: CompactID? {
        item ?? listAdd?.item
    }
}

extension EntryOperation {
    /// An add, plain or sealed (MERGE.md §11): its item, anchor and text ("" and the sealed
    /// value for a sealed one); nil for any other operation, or a sealed body that does not read.
    package var listAdd: (item: CompactID, after: CompactID?, text: String, sealed: SealedValue?)? {
        switch self {
        case .add(let item, let text, let after): return (item, after, text, nil)
        case .opaque(SealedChange.addKind, _):
            guard case .add(let item, let after, let text)? = try? SealedChange(self) else { return nil }
            return (item, after, "", text)
        default: return nil
        }
    }

    /// Whether this is a sealed rename or recolour whose body reads.
    package var isSealedListChange: Bool {
        guard case .opaque(SealedChange.renameKind...SealedChange.recolourKind, _) = self else { return false }
        return ((try? SealedChange(self)) ?? nil) != nil
    }
}

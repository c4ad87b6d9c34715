import JournalCodec

/// Why a local edit was refused before anything was written. Only what this device is about to
/// write is checked, against the list it holds: entries from other devices keep being merged as
/// MERGE.md says (a mark-off of an item this device never saw is legal there).
public enum ListEditError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An item's text, a list's name or colour that is empty (or only white space).
    case emptyText(field: String)
    /// Text longer than `ListEdit.maxTextBytes` bytes of UTF-8.
    case textTooLong(field: String, bytes: Int)
    /// An item the list does not show: never added here, or deleted.
    case unknownItem(CompactID)
    /// An anchor (`after:`) the list does not show.
    case anchorNotOnList(CompactID)
    /// An item placed after itself.
    case anchoredToItself(CompactID)
    /// An operation a device never records itself (a compactor's `place`, a membership change,
    /// a list's base): what it is.
    case notAnEdit(String)

    public var description: String {
        switch self {
        case .emptyText(let field): "the \(field) is empty: an item needs some text, a list a name and a colour"
        case .textTooLong(let field, let bytes):
            "the \(field) is \(bytes) bytes of UTF-8, over the limit of \(ListEdit.maxTextBytes)"
        case .unknownItem(let id): "no item \(QuotedInput.quote(id.description)) on the list: it was never added on this device, or it was deleted"
        case .anchorNotOnList(let id): "the item to put it after, \(QuotedInput.quote(id.description)), is not on the list"
        case .anchoredToItself(let id): "the item \(QuotedInput.quote(id.description)) cannot be placed after itself"
        case .notAnEdit(let what): "\(what) is not an edit a device records: the service or the compactor writes it"
        }
    }
}

/// The checks a local edit passes before it is written (Spec/SYNC.md §7.1): text present and
/// within the codec's limit (FORMAT.md §8), items and anchors on the list as this device holds it.
public enum ListEdit {
    /// The most bytes of UTF-8 an item's text, a list's name or colour may have (FORMAT.md §8).
    public static let maxTextBytes = Limits.maxTextBytes

    /// Nil when `operation` may be written to a list whose state is `list`, or why not.
    public static func refusal(of operation: EntryOperation, on list: ListState) -> ListEditError? {
        refusal(of: operation) { id in list.items.contains { $0.id == id } }
    }

    /// Nil when every one of `operations` may be written, in order, to a list whose state is
    /// `list`: each is checked against the list as the ones before it leave it (an add may
    /// follow an item added earlier in the batch; nothing may name an item deleted earlier in
    /// it). Else the first refused, by its offset in `operations`, and why.
    public static func refusal(ofBatch operations: [EntryOperation], on list: ListState) -> (offset: Int, why: ListEditError)? {
        var onList = Set(list.items.map(\.id))
        for (offset, operation) in operations.enumerated() {
            if let why = refusal(of: operation, isOnList: { onList.contains($0) }) { return (offset, why) }
            if let add = operation.listAdd { onList.insert(add.item) }
            if case .delete(let item) = operation { onList.remove(item) }
        }
        return nil
    }

    /// `refusal(of:on:)` with the list's items given by `isOnList`.
    private static func refusal(of operation: EntryOperation, isOnList: (CompactID) -> Bool) -> ListEditError? {
        switch operation {
        case .add(let item, let text, let after):
            if let bad = checkText(text, field: "item's text") { return bad }
            guard let after else { return nil }
            if after == item { return .anchoredToItself(item) }
            return isOnList(after) ? nil : .anchorNotOnList(after)
        case .markOff(let item), .unmark(let item), .delete(let item):
            return isOnList(item) ? nil : .unknownItem(item)
        case .move(let item, let after):
            guard isOnList(item) else { return .unknownItem(item) }
            guard let after else { return nil }
            if after == item { return .anchoredToItself(item) }
            return isOnList(after) ? nil : .anchorNotOnList(after)
        case .rename(let name): return checkText(name, field: "list's name")
        case .recolour(let colour): return checkText(colour, field: "list's colour")
        case .place: return .notAnEdit("a place")
        case .join, .leave: return .notAnEdit("a change of who shares the list")
        case .opaque(let kind, _) where kind == ListBase.kind: return .notAnEdit("a list's base")
        case .opaque(SealedChange.addKind, _):
            // A sealed add's text was checked before it was sealed; its anchor is checked here.
            guard let add = operation.listAdd, let after = add.after else { return nil }
            if after == add.item { return .anchoredToItself(add.item) }
            return isOnList(after) ? nil : .anchorNotOnList(after)
        case .opaque: return nil
        }
    }

    private static func checkText(_ text: String, field: String) -> ListEditError? {
        if text.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }) { return .emptyText(field: field) }
        let bytes = text.utf8.count
        return bytes > maxTextBytes ? .textTooLong(field: field, bytes: bytes) : nil
    }
}

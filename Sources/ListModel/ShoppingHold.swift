import JournalCodec

/// Which of others' changes a list applies at once while a person shops, and which it holds
/// back (Spec/SYNC.md §7.8, MERGE.md §7). The list stays still where a shopper relies on it:
/// new items wait as notifications to tap, and nothing moves an item's place (a move waits too). What only changes
/// the state of an item already on screen applies at once, so that two people who split up in
/// the shop do not both buy the milk: a mark-off, an unmark or a delete of a shown item, and a
/// rename or recolour of the list (joins and leaves too: they move nothing).
///
/// From a held compaction record on, everything is held: the record describes the list as of
/// its place in the zone, and is followed in that order when shopping ends (SYNC.md §6.7).
package enum ShoppingHold {
    /// Splits others' entries (in the zone's order) into those applied now and those held.
    /// `shown`: the items the list shows (marked-off ones included); `holdingARecord`: the list
    /// already holds a compaction record (or another entry this rule does not apply at once).
    package static func split(_ remote: [JournalEntry], shown: Set<CompactID>,
                              holdingARecord: Bool) -> (now: [JournalEntry], held: [JournalEntry]) {
        var now: [JournalEntry] = [], held: [JournalEntry] = []
        var holdingAll = holdingARecord
        for e in remote {
            if (!holdingAll && appliesAtOnce(e.operation, shown: shown)) || isKeyEntry(e.operation) {
                now.append(e)
            } else {
                if isBarrier(e.operation) { holdingAll = true }
                held.append(e)
            }
        }
        return (now, held)
    }

    /// Whether `operation` only changes the state of what the list shows.
    package static func appliesAtOnce(_ operation: EntryOperation, shown: Set<CompactID>) -> Bool {
        switch operation {
        case .markOff(let item), .unmark(let item), .delete(let item): shown.contains(item)
        case .rename, .recolour, .join, .leave: true
        case .opaque where operation.isSealedListChange: true
        case .opaque where isKeyEntry(operation): true
        case .add, .place, .move, .opaque: false
        }
    }

    /// A sealed list's key record or rotation-due marker: applied at once whatever is held
    /// (they change nothing shown, nothing depends on their order, and a device needs the
    /// newest key to write: Spec/SEALING.md §5.2).
    package static func isKeyEntry(_ operation: EntryOperation) -> Bool {
        guard case .opaque(let kind, _) = operation else { return false }
        return kind == EpochKeyRecord.kind || kind == SealedZone.rotationDueKind
    }

    /// Whether an entry held makes every later one wait too: one that is no list change this
    /// version reads (a compaction record, a base, a newer version's kind).
    package static func isBarrier(_ operation: EntryOperation) -> Bool {
        guard case .opaque = operation else { return false }
        // A sealed add is an add (held, offered); a sealed rename or recolour applies at once.
        return operation.listAdd == nil && !operation.isSealedListChange
    }
}

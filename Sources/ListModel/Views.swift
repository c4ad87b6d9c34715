import JournalCodec

/// An item someone else added that has not been shown yet (shopping mode).
public struct PendingNotification: Hashable, Sendable {
    /// Pass this to `ShoppingSession.apply(_:)` to show the item.
    public var entryID: CompactID
    /// The item that was added.
    public var item: CompactID
    /// The added item's text ("" when it is sealed: `sealedText`).
    public var text: String
    /// Who added it.
    public var addedBy: String
    /// Wall-clock milliseconds of the add, as the author's device saw it.
    public var addedAt: Int64
    /// The add's hybrid time, which orders notifications oldest first.
    public var clock: HybridTime
    /// The added item's text sealed for the list's members, for a sealed add (SEALING.md §5).
    public var sealedText: SealedText? = nil
}

/// Shopping mode: while someone is in the shop, remote changes do not move the list under their
/// finger. The list shows `applied`; remote entries wait in `pending`, adds are offered as
/// notifications, and the user applies the ones they want (or all).
package struct ShoppingSession: Sendable {
    package private(set) var applied: ListReducer
    /// Received but not yet shown, in arrival order, without duplicates of applied entries.
    package private(set) var pending: [JournalEntry] = []

    package init(applied: ListReducer, pending: [JournalEntry] = []) {
        self.applied = applied
        for e in pending { enqueue(e) }
    }

    /// Queues a remote entry. Entries already applied or queued, and other zones' entries, are ignored.
    package mutating func enqueue(_ e: JournalEntry) {
        guard e.zone.utf8.elementsEqual(applied.zone.utf8), !applied.contains(entry: e.id), !pending.contains(where: { $0.id == e.id }) else { return }
        pending.append(e)
    }

    /// The list as shown.
    package var state: ListState { applied.state() }

    /// The pending adds, oldest first by (hlc, author, id).
    package var notifications: [PendingNotification] {
        pending.compactMap { e -> PendingNotification? in
            guard let add = e.operation.listAdd else { return nil }
            return PendingNotification(entryID: e.id, item: add.item, text: add.text, addedBy: e.author, addedAt: e.wallTime, clock: e.clock,
                                       sealedText: add.sealed.map { SealedText($0, in: e, kind: SealedChange.addKind, item: add.item) })
        }.sorted { ChangeKey(clock: $0.clock, author: $0.addedBy, entry: $0.entryID) < ChangeKey(clock: $1.clock, author: $1.addedBy, entry: $1.entryID) }
    }

    /// Applies the chosen pending entries (by entry id) and returns the new state.
    @discardableResult
    package mutating func apply(_ entryIDs: Set<CompactID>) -> ListState {
        var rest: [JournalEntry] = []
        for e in pending {
            if entryIDs.contains(e.id) { applied.apply(e) } else { rest.append(e) }
        }
        pending = rest
        return applied.state()
    }

    /// Applies everything pending (leaving shopping mode) and returns the new state.
    @discardableResult
    package mutating func applyAll() -> ListState {
        applied.apply(contentsOf: pending)
        pending = []
        return applied.state()
    }
}

extension ListState {
    /// Three hours: done items older than this drop out of the horizon view.
    public static let defaultHorizonMillis: Int64 = 3 * 60 * 60 * 1000

    /// The horizon view: hides items whose add and mark-off are both older than `horizon` before
    /// `now` (wall ms). Active items always show.
    public func hidingDone(now: Int64, horizon: Int64 = ListState.defaultHorizonMillis) -> ListState {
        let cutoff = now &- horizon
        var out = self
        out.items = items.filter { item in
            guard item.state == .markedOff, let done = item.markedOffAt else { return true }
            return !(item.addedAt < cutoff && done < cutoff)
        }
        return out
    }
}

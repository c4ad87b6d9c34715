import JournalCodec

extension TextSealer {
    /// An add of `item` (after `after`) whose text is sealed for the entry that will carry it:
    /// its id, author and clocks are bound into the value (SEALING.md §2.3), so the entry must be
    /// written with exactly these.
    public func add(_ text: String, item: CompactID, after: CompactID?, entry: CompactID, author: String,
                    clock: HybridTime, wallTime: Int64) throws(SealError) -> SealedChange {
        let binding = SealBinding(zone: zone, entry: entry, kind: SealedChange.addKind, item: item, author: author,
                                  clock: clock, wallTime: wallTime, epoch: epoch)
        return .add(item: item, after: after, text: try seal(text, for: binding))
    }

    /// A rename (or, with `colour`, a recolour) of the list, sealed for the entry that will carry it.
    public func rename(to name: String, colour: Bool = false, entry: CompactID, author: String,
                       clock: HybridTime, wallTime: Int64) throws(SealError) -> SealedChange {
        let kind = colour ? SealedChange.recolourKind : SealedChange.renameKind
        let binding = SealBinding(zone: zone, entry: entry, kind: kind, item: nil, author: author,
                                  clock: clock, wallTime: wallTime, epoch: epoch)
        let value = try seal(name, for: binding)
        return colour ? .recolour(value) : .rename(value)
    }

    /// The text a sealed change in `entry` holds: bound to that entry, under this sealer's epoch.
    public func open(_ change: SealedChange, in entry: JournalEntry) throws(SealError) -> String {
        guard entry.zone == zone else { throw .cannotOpen }
        let binding = SealBinding(zone: entry.zone, entry: entry.id, kind: change.kind, item: change.item, author: entry.author,
                                  clock: entry.clock, wallTime: entry.wallTime, epoch: change.text.epoch)
        return try open(change.text, for: binding)
    }
}

import JournalCodec

extension ListBase {
    /// A base's snapshot after a compaction its device follows (Spec/MERGE.md §10.1): the bytes of
    /// a whole snapshot (SNAPSHOT.md §2–§4, same zone, incarnation and sequence, compressed when
    /// the input was) that holds what `snapshot` holds less what `record` removed, or nil when the
    /// record changes nothing the snapshot holds. Pure: no I/O.
    ///
    /// A device that follows a compaction (`CompactionRecord`) purges the entries it holds by id
    /// and writes the `place`s over the ones it holds. Its base is no such entry: it folds in
    /// entries by their winners only (SNAPSHOT.md §3: each item's winning add key, anchor, winning
    /// place key, winning mark key; no other entry id). So the base is followed by those winners:
    ///
    /// 1. For each id in `purged` and in `placed` (each placement's `entry`): every item record
    ///    whose winning add or winning place is that entry loses that winner (its key, hlc |
    ///    author | id, is remembered); every record whose winning mark is a purged entry loses its
    ///    mark; every move that is a purged entry is dropped (a record keeps all its moves).
    /// 2. For each placement `X → place(item I, after: A)` whose `X` was a winner in step 1: `I`
    ///    gets a winning place with `X`'s key and anchor `A` (a record is made for `I` when the
    ///    snapshot has none), unless `I` holds a place with a lesser key (the first place wins,
    ///    MERGE.md §3.4).
    /// 3. A record that lost its add in step 1: its item left the list (the compactor removes an
    ///    add only with its item), so every entry of it went but the one written over. With a
    ///    place (step 2, or one it held) it is a placement: its deleted and mark bits, text and
    ///    added time are cleared; without one it is removed. A record that lost only its place
    ///    and now has neither an add nor a place is removed too (its item left whole), unless a
    ///    placement of the record names its item: that is the bottom of a fold whose top's entry
    ///    lies after the base, which keeps its marks and delete (only its places went) and is
    ///    placed again when the device writes that entry over.
    /// 4. The entry count drops by the number of purged entries that were winners in step 1.
    ///
    /// Why this is exact, with the entries after the base (the tail) purged and written over by
    /// the same record: the compactor writes a `place` over an item's winning add or place (the
    /// least key in the whole list, so also the least among the base's entries: when it lies
    /// before the base, the base holds it as that winner), and removes an item's other entries
    /// only when the item leaves the list (whole, as a placement, or folded into the item after
    /// it), or the places of the item a fold ends in. Any such entry folded into the base is its
    /// item's winner there (steps 1 and 3 follow it), or is superseded by a winner the tail brings
    /// (which the device purges or writes over as an entry). `BaseFollowingTests` checks the claim
    /// as a property over random lists, bases at random points and the compactor's own decisions:
    /// the device's state, digest and internal state (MERGE.md §9; but for the entry count and
    /// the deletes below) equal the compacted list's.
    /// The first rule for step 3 removed every record left with no add and no place; the property
    /// found a fold's bottom known to the base only by its place and its mark-off, whose mark that
    /// rule dropped (`theBottomOfAFoldWhoseTopLiesAfterTheBaseKeepsItsMark`).
    ///
    /// What it leaves alone, and why:
    /// - The name, colour and participant registers. The compactor purges only a superseded rename
    ///   or recolour, and never the winner: a register winner in the base that was purged is
    ///   superseded by a later one in the tail, which the device holds and applies. (Cleared, the
    ///   base alone would show no name; counted, applying the record again would count it again.)
    /// - A delete of an item the base holds with no add (one known only from a dangling delete,
    ///   or a placement): a tombstone keeps no delete key, so the base cannot tell a delete
    ///   purged with its item from one that stays. Nothing shows it (an item with no add is never
    ///   shown); it would hide a later add of that item id, which the service would show. The
    ///   property counts these (under one in a hundred of its lists); an honest writer's order
    ///   makes one only by a late delete of a placement (an item an earlier compaction left
    ///   without its add) that the next compaction keeps as a placement.
    /// - The anchor of a record that lost its place and kept its add (the bottom of a fold whose
    ///   top's entry lies in the tail): the base never held its add's anchor (MERGE.md §9); the
    ///   tail's written-over entry places it again.
    ///
    /// The entry count after following is the base's less the purged winners it held: the base
    /// keeps no other entry id, so a purged entry it superseded is still counted. A device's
    /// `entryCount` may therefore exceed the service's; the digest (MERGE.md §8) does not include
    /// it, and the state does not depend on it.
    ///
    /// Idempotent: the output holds no purged id as a winner, and each placement's entry is held
    /// as its item's place with its anchor, so the record applied again, or to a snapshot of the
    /// compacted list, changes nothing (nil). A snapshot that does not decode (any check of
    /// SNAPSHOT.md §4, the digest included), or a delta, throws.
    package static func following(_ snapshot: [UInt8], record: CompactionRecord) throws(SnapshotError) -> [UInt8]? {
        let (header, original) = try SnapshotCodec.decode(snapshot)
        var r = original
        guard r.follow(record) else { return nil }
        guard r != original else { return nil }
        return SnapshotCodec.encode(reducer: r, incarnation: header.incarnation, sequence: header.sequence,
                                    compress: header.flags & SnapshotCodec.flagLZ4 != 0)
    }
}

extension ListReducer {
    /// An entry id as a set key (`RID` itself is not `Hashable`).
    private struct EntryKey: Hashable {
        var high: UInt64
        var low: UInt64
        var text: Bool

        init(_ r: RID) {
            high = r.high
            low = r.low
            text = r.text
        }
    }

    /// A winner's change key, as the records hold it.
    private struct WinnerKey {
        var clock: UInt64
        var author: Int32
        var entry: RID
    }

    /// Steps 1–4 of `ListBase.following` on a decoded snapshot's reducer. Returns whether any
    /// record held an id of the record as a winner (false: nothing changed).
    mutating func follow(_ record: CompactionRecord) -> Bool {
        // Ids no record or key can hold were never interned: they match nothing.
        var purged = Set<EntryKey>()
        for id in record.purged { if let r = textIDs.existing(id) { purged.insert(EntryKey(r)) } }
        var placed = Set<EntryKey>()
        for p in record.placed { if let r = textIDs.existing(p.entry) { placed.insert(EntryKey(r)) } }
        guard !purged.isEmpty || !placed.isEmpty else { return false }

        // Step 1.
        var found: [EntryKey: WinnerKey] = [:]
        var lostAdd: [Int] = [], lostPlace: [Int] = []
        var purgedWinners = Set<EntryKey>()
        func matches(_ e: RID) -> Bool {
            let k = EntryKey(e)
            if purged.contains(k) {
                purgedWinners.insert(k)
                return true
            }
            return placed.contains(k)
        }
        var touched = false
        for i in records.indices where records[i].flags != 0 {
            var rec = records[i]
            if rec.flags & ItemFlag.added != 0, matches(rec.addEntry) {
                found[EntryKey(rec.addEntry)] = WinnerKey(clock: rec.addClock, author: rec.addAuthor, entry: rec.addEntry)
                rec.flags &= ~ItemFlag.added
                rec.addClock = 0
                rec.addAuthor = 0
                rec.addEntry = .none
                lostAdd.append(i)
            }
            if rec.flags & ItemFlag.placed != 0, let p = placements[Int32(i)], matches(p.entry) {
                found[EntryKey(p.entry)] = WinnerKey(clock: p.clock, author: p.author, entry: p.entry)
                rec.flags &= ~ItemFlag.placed
                placements[Int32(i)] = nil
                lostPlace.append(i)
            }
            if rec.flags & ItemFlag.marked != 0, purged.contains(EntryKey(rec.markEntry)) {
                purgedWinners.insert(EntryKey(rec.markEntry))
                rec.flags &= ~(ItemFlag.marked | ItemFlag.markedOff)
                Self.clearMark(&rec)
                touched = true
            }
            records[i] = rec
            // Every move is held (MERGE.md §3.5), so every purged one is dropped here; the
            // compactor removes a moved item only whole (COMPACTION.md §2.2).
            if rec.flags & ItemFlag.moved != 0, var list = moves[Int32(i)] {
                let before = list.count
                list.removeAll { m in
                    guard purged.contains(EntryKey(m.entry)) else { return false }
                    purgedWinners.insert(EntryKey(m.entry))
                    return true
                }
                if list.count != before {
                    touched = true
                    moves[Int32(i)] = list.isEmpty ? nil : list
                    if list.isEmpty { records[i].flags &= ~ItemFlag.moved }
                }
            }
        }
        guard touched || !found.isEmpty else { return false }

        // Step 2.
        for p in record.placed {
            guard let x = textIDs.existing(p.entry), let key = found[EntryKey(x)] else { continue }
            let i = slot(p.item)
            if records[i].flags & ItemFlag.placed != 0, let q = placements[Int32(i)],
               keyLess(q.clock, q.author, q.entry, key.clock, key.author, key.entry) { continue }
            placements[Int32(i)] = Placement(clock: key.clock, author: key.author, entry: key.entry)
            records[i].anchor = p.anchor.map { Int32(slot($0)) } ?? -1
            records[i].flags |= ItemFlag.placed
        }

        // Step 3. A record that lost its add: its item left the list (an add goes with its item
        // only), so every entry of it went but the one written over, which is now a place.
        for i in lostAdd {
            if records[i].flags & ItemFlag.placed != 0 {
                records[i].flags = ItemFlag.placed
            } else {
                records[i].flags = 0
                records[i].anchor = -1
            }
            Self.clearTombstone(&records[i])
            texts[i] = ""
            sealedTexts[Int32(i)] = nil
        }
        // A record that lost only its place: the item left the list, unless a placement names it
        // (the bottom of a fold, which keeps its marks and delete and is placed again by the entry
        // written over, here in step 2 or after the base). A placement of itself had its other
        // entries purged, marks among them (step 1).
        var targets = Set<EntryKey>()
        for p in record.placed { if let r = textIDs.existing(p.item) { targets.insert(EntryKey(r)) } }
        for i in lostPlace where records[i].flags & ItemFlag.inTree == 0 && !targets.contains(EntryKey(records[i].id)) {
            records[i].flags = 0
            records[i].anchor = -1
            Self.clearTombstone(&records[i])
            texts[i] = ""
            sealedTexts[Int32(i)] = nil
        }
        // A bottom of a fold left out of the tree until its place comes holds no anchor meanwhile.
        for i in lostPlace where records[i].flags & ItemFlag.inTree == 0 { records[i].anchor = -1 }

        // Step 4.
        folded = max(0, folded - purgedWinners.count)
        return true
    }

    /// Drops a record's mark.
    private static func clearMark(_ r: inout ItemRecord) {
        r.markClock = 0
        r.markAuthor = 0
        r.markEntry = .none
        r.markedAt = 0
    }
}

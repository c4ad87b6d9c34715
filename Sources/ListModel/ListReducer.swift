import JournalCodec

/// Folds the entries of one zone, in any order and with duplicates, into a `ListState` that
/// depends only on the set of distinct entries (Spec/MERGE.md). Pure: no I/O, no Foundation, and
/// no thread unless the caller gives it some (`helpers`).
///
/// Items live in one array of plain records indexed by a dense record number; ids are plain
/// 128-bit values (`RID`) found through an 8-byte-slot hash index (`ReducerIndex`), authors
/// through a small table: applying an entry does one or two probes and no allocation beyond
/// amortised array growth.
/// Every operation is idempotent and order-independent (a join-semilattice), so duplicate
/// detection only keeps `apply`'s return value and `entryCount` exact (MERGE.md §9). It costs no
/// lookup for most entries: an entry that wins (a first add, a later mark or register value, a
/// first delete) cannot have been applied before, since winners only move one way; the id of
/// every applied entry is either held by the state as a winner or kept in `seen`, where it goes
/// when it loses or is superseded. Entry ids are never part of snapshots.
package struct ListReducer: Sendable {
    /// Entries of other zones are ignored.
    package let zone: String
    /// Entries folded in before this value was decoded from a snapshot (their ids are not kept).
    var folded = 0
    /// Entries applied since this value was created or decoded.
    var applied = 0
    /// Threads a large bulk apply may prefault the room reserved for it on, and `state()` build a
    /// large list's items in two halves on (`ReducerHelpers`; the query layer has them). None by
    /// default: a library call takes no thread unless its caller asks, and only replays of
    /// hundreds of thousands of entries gain (a list of 1M entries: ~20% faster to materialise on
    /// two cores). Not part of the value (`==` ignores it).
    package var helpers: (any ReducerHelpers)? = nil
    /// Ids of applied entries that the state does not hold as winners (in memory only).
    var seen = ReducerSeenSet()
    /// Text ids (item and entry) interned to numbers.
    var textIDs = ReducerTextIDs()
    /// Item id → record number.
    var index = ReducerIndex()
    /// The sum of the index slots `apply(contentsOf:)` loaded ahead: kept only so that the
    /// loads are not optimised away.
    var warmed: UInt64 = 0

    /// Why a base entry (`ListBase`) was not adopted, if one was not: the state is then not the
    /// list's, and a reader must say so rather than show it.
    package var baseProblem: String?

    /// Interned authors, in first-seen order (their UTF-8 order is computed when needed).
    var authors = AuthorTable()

    /// A record exists for every item id an operation or an add's anchor names; records with
    /// flags 0 (anchors only) are not part of the state.
    var records: [ItemRecord] = []
    /// Each record's text (the winning add's; "" for tombstones), beside the plain records.
    var texts: [String] = []
    /// Record number → its winning `place` key, for records flagged `placed`.
    var placements: [Int32: Placement] = [:]
    /// Record number → every move of the item, in change-key order, for records flagged `moved`
    /// (MERGE.md §3.5).
    var moves: [Int32: [ItemMove]] = [:]

    var name: Register<ListText>?
    var colour: Register<ListText>?
    /// The list's key records (SEALING.md §4, kind 0x87) by their bodies, sorted by bytes: never
    /// purged, they are part of what a device needs to continue (MERGE.md §11), so a snapshot
    /// carries them. A set of bodies: the same record in two entries is one.
    var keyRecords: [[UInt8]] = []
    /// Record number → its winning add's sealed text, for records whose winning add is a sealed
    /// one (SEALING.md §5) and that are not deleted; `texts` holds "" for them.
    var sealedTexts = SealedTextTable()
    /// Participant → whether the latest join/leave was a join.
    var participants: [ExactString: Register<Bool>] = [:]

    package init(zone: String) { self.zone = zone }

    /// Reserves room for about `entries` more entries, to avoid rehashing during a bulk replay.
    package mutating func reserveCapacity(_ entries: Int) {
        seen.reserveCapacity(seen.count + entries / 4)
        reserveItems(records.count + entries / 2)
    }

    /// Reserves room for `items` item records in total.
    mutating func reserveItems(_ items: Int) {
        index.reserveCapacity(items)
        records.reserveCapacity(items)
        texts.reserveCapacity(items)
    }

    /// How many distinct entries have been folded in (the store never holds two with one id).
    package var entryCount: Int { folded + applied }

    /// Item records held: visible items, tombstones, and ids known only as anchors or from
    /// dangling operations. What a snapshot's size and its decoding time follow.
    package var recordCount: Int { records.count }

    /// Whether the entry with this id has been applied since this reducer was created or decoded,
    /// or is a winner folded into a snapshot (a snapshot keeps only the count of its entries).
    /// O(items) when the id is not in `seen`: meant for single entries (shopping mode).
    package func contains(entry id: CompactID) -> Bool {
        if name?.key.entry == id || colour?.key.entry == id { return true }
        if participants.values.contains(where: { $0.key.entry == id }) { return true }
        // An id never interned is held by no record and is not in `seen`.
        guard let e = textIDs.existing(id) else { return false }
        if seen.contains(e) { return true }
        if placements.values.contains(where: { $0.entry == e }) { return true }
        if moves.values.contains(where: { $0.contains { $0.entry == e } }) { return true }
        for r in records {
            if r.flags & ItemFlag.added != 0, r.addEntry == e { return true }
            if r.flags & ItemFlag.marked != 0, r.markEntry == e { return true }
            if r.flags & ItemFlag.deleteKnown != 0, r.markEntry == e { return true }
        }
        return false
    }

    /// Applies one entry. Returns false (and changes nothing) for a duplicate or another zone's entry.
    @discardableResult
    package mutating func apply(_ e: JournalEntry) -> Bool { withUnsafePointer(to: e) { applyEntry($0) } }

    /// `apply`, reading the entry in place: a caller passing it by value copies it first
    /// (retaining its strings), since a mutating call could, for all the compiler knows, change it.
    @inline(__always)
    mutating func applyEntry(_ e: UnsafePointer<JournalEntry>) -> Bool {
        guard sameUTF8(e.pointee.zone, zone) else { return false }
        let new: Bool
        switch e.pointee.operation {
        case .add(let item, let text, let after):
            new = add(slot(item), e, text, after)
        case .markOff(let item):
            new = mark(slot(item), e, markedOff: true)
        case .unmark(let item):
            new = mark(slot(item), e, markedOff: false)
        case .delete(let item):
            new = delete(slot(item), e)
        case .rename(let newName):
            new = Self.offer(&name, &seen, &textIDs, ChangeKey(e.pointee), .plain(newName))
        case .recolour(let newColour):
            new = Self.offer(&colour, &seen, &textIDs, ChangeKey(e.pointee), .plain(newColour))
        case .join(let p):
            new = Self.offer(&participants[ExactString(p)], &seen, &textIDs, ChangeKey(e.pointee), true)
        case .leave(let p):
            new = Self.offer(&participants[ExactString(p)], &seen, &textIDs, ChangeKey(e.pointee), false)
        case .place(let item, let after):
            new = place(slot(item), e, after)
        case .move(let item, let after):
            new = move(slot(item), e, after)
        case .opaque(ListBase.kind, let snapshot):
            // Not an entry of the list: its state (ListBase), adopted once or reported.
            guard !seen.contains(entryRID(e)) else { return false }
            if adoptBase(snapshot) { _ = seen.insert(entryRID(e)) }
            return false
        case .opaque(SealedChange.addKind...SealedChange.recolourKind, _):
            new = applySealed(e)
        case .opaque(EpochKeyRecord.kind, let body):
            new = seen.insert(entryRID(e))
            if new { Self.insertSorted(body, into: &keyRecords) }
        case .opaque:
            new = seen.insert(entryRID(e))
        }
        if new { applied += 1 }
        return new
    }

    /// Applies entries in order; returns how many were new.
    @discardableResult @inlinable
    package mutating func apply<S: Sequence>(contentsOf entries: S) -> Int where S.Element == JournalEntry {
        var n = 0
        for e in entries where apply(e) { n += 1 }
        return n
    }

    /// Applies an array of entries in order; returns how many were new. Three things make a
    /// replay faster than `apply(_:)` one entry at a time: each entry is read in place (copying
    /// one retains its strings); a chunk's item slots are loaded in one tight loop before the
    /// chunk is applied, so that their cache misses overlap instead of stalling each entry; and
    /// when room has been reserved (`reserveCapacity`), as much of it as these entries can fill
    /// is backed by the kernel on another core meanwhile, with `helpers` (`ReducerHelpers.warm`).
    @discardableResult
    package mutating func apply(contentsOf entries: [JournalEntry]) -> Int {
        entries.withUnsafeBufferPointer { buf in
            applyInPlace(UnsafeRawPointer(buf.baseAddress), count: buf.count, stride: MemoryLayout<JournalEntry>.stride)
        }
    }

    /// `apply(contentsOf:)` for the entries that elements hold at `entry` (a change-feed page's
    /// entries, with their sequences beside them), read in place where they lie: collecting them
    /// into an array of their own would copy each one and retain its strings.
    @discardableResult
    package mutating func apply<Element>(contentsOf elements: [Element], entry: KeyPath<Element, JournalEntry>) -> Int {
        // A computed property has no offset: its entries are applied one at a time.
        guard let offset = MemoryLayout<Element>.offset(of: entry) else {
            var n = 0
            for e in elements where apply(e[keyPath: entry]) { n += 1 }
            return n
        }
        return elements.withUnsafeBufferPointer { buf in
            applyInPlace(UnsafeRawPointer(buf.baseAddress).map { $0 + offset }, count: buf.count, stride: MemoryLayout<Element>.stride)
        }
    }

    /// The bulk path: `count` entries, the first at `first` and each `stride` bytes after the
    /// last, all valid for the call.
    private mutating func applyInPlace(_ first: UnsafeRawPointer?, count: Int, stride: Int) -> Int {
        guard let first, count > 0 else { return 0 }
        @inline(__always) func entry(_ j: Int) -> UnsafePointer<JournalEntry> {
            (first + j * stride).assumingMemoryBound(to: JournalEntry.self)
        }
        var n = 0
        let chunk = 128
        // An entry adds at most two records (its item and its anchor) and one seen id. Too little
        // room to be worth a thread: no warmer, and no array made unique for one.
        let room = Self.spareBytes(records, upTo: 2 * count) + Self.spareBytes(texts, upTo: 2 * count)
            + Self.spareBytes(seen.ids, upTo: count)
        let warmer = helpers.flatMap { h in
            room < h.minimumWarmBytes ? nil
                : h.warm([Self.spareCapacity(&records, upTo: 2 * count),
                          Self.spareCapacity(&texts, upTo: 2 * count),
                          Self.spareCapacity(&seen.ids, upTo: count)])
        }
        defer { warmer?.finish() }
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: chunk) { hashes in
            var k = 0
            while k < count {
                let m = min(chunk, count - k)
                // An array that may outgrow its room in this chunk moves: the helper must be
                // done with the old place first.
                if let warmer, records.capacity - records.count < 2 * m || texts.capacity - texts.count < 2 * m
                    || seen.ids.capacity - seen.ids.count < m {
                    warmer.finish()
                }
                for j in 0..<m {
                    // Text item ids are rare: they are not warmed.
                    if let item = entry(k + j).pointee.operation.item, let (h, l) = item.uuidHalves {
                        hashes[j] = index.hash(RID(high: h, low: l, text: false))
                    } else {
                        hashes[j] = 0
                    }
                }
                warmed &+= index.warm(UnsafeBufferPointer(rebasing: hashes[0..<m]))
                for j in k..<(k + m) where applyEntry(entry(j)) { n += 1 }
                k += m
            }
        }
        return n
    }

    /// The bytes of `a`'s unused capacity that its next `limit` elements could fill.
    private static func spareBytes<T>(_ a: [T], upTo limit: Int) -> Int {
        min(a.capacity - a.count, limit) * MemoryLayout<T>.stride
    }

    /// The unused capacity of `a`, where its next elements (at most `limit`) will go: only for
    /// the page warmer (`ReducerHelpers.warm`), which never reads or writes it, and is finished before `a` can move. `a` is
    /// made unique first (as its next append would), so the buffer is this reducer's alone: one
    /// shared with a copy could be freed by that copy meanwhile.
    private static func spareCapacity<T>(_ a: inout [T], upTo limit: Int) -> UnsafeMutableRawBufferPointer {
        a.withUnsafeMutableBufferPointer { _ in }
        let bytes = spareBytes(a, upTo: limit)
        return a.withUnsafeBufferPointer { b in
            guard bytes > 0, let base = b.baseAddress else { return UnsafeMutableRawBufferPointer(start: nil, count: 0) }
            return UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(mutating: base + b.count), count: bytes)
        }
    }

    /// Adds `body` to a sorted set of byte strings.
    static func insertSorted(_ body: [UInt8], into set: inout [[UInt8]]) {
        let at = set.partitionPoint { $0.lexicographicallyPrecedes(body) }
        if at < set.count, set[at] == body { return }
        set.insert(body, at: at)
    }

    /// A sealed add, rename or recolour (MERGE.md §11): the same rule as its plain kind, its text
    /// carried sealed. One whose body does not read is an opaque entry, like any unread kind.
    private mutating func applySealed(_ e: UnsafePointer<JournalEntry>) -> Bool {
        guard let change = (try? SealedChange(e.pointee.operation)) ?? nil else { return seen.insert(entryRID(e)) }
        switch change {
        case .add(let item, let after, let text): return add(slot(item), e, "", after, sealed: text)
        case .rename(let text):
            let sealed = SealedText(text, in: e.pointee, kind: SealedChange.renameKind, item: nil)
            return Self.offer(&name, &seen, &textIDs, ChangeKey(e.pointee), .sealed(sealed))
        case .recolour(let text):
            let sealed = SealedText(text, in: e.pointee, kind: SealedChange.recolourKind, item: nil)
            return Self.offer(&colour, &seen, &textIDs, ChangeKey(e.pointee), .sealed(sealed))
        }
    }

    /// The first add wins (MERGE.md §5). Returns whether the entry is new.
    @inline(__always)
    private mutating func add(_ i: Int, _ e: UnsafePointer<JournalEntry>, _ text: String, _ after: CompactID?,
                              sealed: SealedValue? = nil) -> Bool {
        let a = intern(authorOf: e)
        let id = entryRID(e)
        var r = records[i]
        if r.flags & ItemFlag.added != 0 {
            if r.addEntry == id { return false }
            // A losing add: new unless seen before. (A winning one was never applied: the winner
            // only ever gets earlier.)
            guard keyLess(e.pointee.clock.rawValue, a, id, r.addClock, r.addAuthor, r.addEntry) else { return seen.insert(id) }
            seen.add(r.addEntry)
        }
        // A placement fixes the place for good (MERGE.md §3.4): the add's anchor no longer matters.
        if r.flags & ItemFlag.placed == 0 { r.anchor = after.map { Int32(slot($0)) } ?? -1 }
        r.flags |= ItemFlag.added
        r.addClock = e.pointee.clock.rawValue
        r.addAuthor = a
        r.addEntry = id
        if r.flags & ItemFlag.deleted == 0 {
            texts[i] = text
            if let sealed { sealedTexts[Int32(i)] = sealed } else if !sealedTexts.isEmpty { sealedTexts[Int32(i)] = nil }
            r.addedAt = e.pointee.wallTime
        }
        records[i] = r
        return true
    }

    /// The least `place` wins (MERGE.md §3.4) and fixes the record's place in the tree.
    @inline(__always)
    private mutating func place(_ i: Int, _ e: UnsafePointer<JournalEntry>, _ after: CompactID?) -> Bool {
        let a = intern(authorOf: e)
        let id = entryRID(e)
        if let p = placements[Int32(i)] {
            if p.entry == id { return false }
            guard keyLess(e.pointee.clock.rawValue, a, id, p.clock, p.author, p.entry) else { return seen.insert(id) }
            seen.add(p.entry)
        }
        placements[Int32(i)] = Placement(clock: e.pointee.clock.rawValue, author: a, entry: id)
        let anchor = after.map { Int32(slot($0)) } ?? -1
        records[i].anchor = anchor
        records[i].flags |= ItemFlag.placed
        return true
    }

    /// The last markOff or unmark wins; a tombstone keeps no mark (delete is final).
    @inline(__always)
    private mutating func mark(_ i: Int, _ e: UnsafePointer<JournalEntry>, markedOff: Bool) -> Bool {
        var r = records[i]
        guard r.flags & ItemFlag.deleted == 0 else { return seen.insert(entryRID(e)) }
        let a = intern(authorOf: e)
        let id = entryRID(e)
        if r.flags & ItemFlag.marked != 0 {
            if r.markEntry == id { return false }
            // The winner only ever gets later (a delete, which clears it, is final).
            guard keyLess(r.markClock, r.markAuthor, r.markEntry, e.pointee.clock.rawValue, a, id) else { return seen.insert(id) }
            seen.add(r.markEntry)
        }
        r.flags = (r.flags | ItemFlag.marked) & ~ItemFlag.markedOff | (markedOff ? ItemFlag.markedOff : 0)
        r.markClock = e.pointee.clock.rawValue
        r.markAuthor = a
        r.markEntry = id
        r.markedAt = e.pointee.wallTime
        records[i] = r
        return true
    }

    /// Delete is final: the record becomes a tombstone.
    @inline(__always)
    private mutating func delete(_ i: Int, _ e: UnsafePointer<JournalEntry>) -> Bool {
        var r = records[i]
        let id = entryRID(e)
        if r.flags & ItemFlag.deleted != 0 {
            if r.flags & ItemFlag.deleteKnown != 0, r.markEntry == id { return false }
            return seen.insert(id)
        }
        if r.flags & ItemFlag.marked != 0 { seen.add(r.markEntry) }
        r.flags = (r.flags | ItemFlag.deleted | ItemFlag.deleteKnown) & ~(ItemFlag.marked | ItemFlag.markedOff)
        Self.clearTombstone(&r)
        r.markEntry = id
        records[i] = r
        texts[i] = ""
        if !sealedTexts.isEmpty { sealedTexts[Int32(i)] = nil }
        return true
    }

    /// Drops what a tombstone no longer needs, so its fields depend only on the entry set.
    @inline(__always)
    static func clearTombstone(_ r: inout ItemRecord) {
        r.addedAt = 0
        r.markClock = 0
        r.markAuthor = 0
        r.markEntry = .none
        r.markedAt = 0
    }

    /// Last writer wins. Returns whether the entry is new.
    @inline(__always)
    private static func offer<V>(_ r: inout Register<V>?, _ seen: inout ReducerSeenSet, _ textIDs: inout ReducerTextIDs,
                                 _ key: ChangeKey, _ value: V) -> Bool {
        // Read in place: binding the register (`if let`), or comparing it with nil (`!=` on an
        // Equatable optional), would copy it.
        if case .none = r {
            r = Register(key: key, value: value)
            return true
        }
        if r!.key.entry == key.entry { return false }
        guard r!.key < key else { return seen.insert(textIDs.rid(key.entry)) }
        seen.add(textIDs.rid(r!.key.entry))
        // Field by field: replacing the whole register destroys the old one through its generic
        // value witness.
        r!.key = key
        r!.value = value
        return true
    }

    /// The entry's id as stored: a UUID read in place (copying the id would retain its storage).
    @inline(__always)
    mutating func entryRID(_ e: UnsafePointer<JournalEntry>) -> RID {
        if let (h, l) = e.pointee.id.uuidHalves { return RID(high: h, low: l, text: false) }
        return textIDs.rid(e.pointee.id)
    }

    /// The record number for `id`, creating an empty record (flags 0) on first sight.
    @inline(__always)
    mutating func slot(_ id: CompactID) -> Int { slot(textIDs.rid(id)) }

    @inline(__always)
    mutating func slot(_ id: RID) -> Int {
        index.prepareInsert()
        let h = index.hash(id)
        let at = index.find(h) { records[Int($0)].id == id }
        if at >= 0 { return at }
        let n = records.count
        precondition(n < Int(Int32.max), "too many items for one reducer")
        index.insert(at: at, h, Int32(n))
        records.append(ItemRecord(id: id))
        texts.append("")
        return n
    }

    /// The record number of `id`, if it has one.
    func find(_ id: CompactID) -> Int? {
        guard let r = textIDs.existing(id), index.count > 0 else { return nil }
        let at = index.find(index.hash(r)) { records[Int($0)].id == r }
        return at >= 0 ? at : nil
    }

    /// The author's interned number (`AuthorTable`).
    @inline(__always)
    mutating func intern(_ author: String) -> Int32 { authors.intern(author) }

    /// The entry's author's interned number. The lookup writes nothing, so the author is read
    /// where it lies; a mutating call would make the compiler copy (and retain) it first.
    @inline(__always)
    mutating func intern(authorOf e: UnsafePointer<JournalEntry>) -> Int32 {
        authors.recent(e.pointee.author) ?? authors.internNew(e.pointee.author)
    }

    /// The change-key order (MERGE.md §2) on interned authors: bytes only compared on a clock tie.
    @inline(__always)
    func keyLess(_ ca: UInt64, _ aa: Int32, _ ea: RID, _ cb: UInt64, _ ab: Int32, _ eb: RID) -> Bool {
        changeKeyLess(ca, aa, ea, cb, ab, eb, authors: authors.strings, ids: textIDs)
    }

    func addKey(_ i: Int) -> ChangeKey? {
        let r = records[i]
        guard r.flags & ItemFlag.added != 0 else { return nil }
        return ChangeKey(clock: HybridTime(rawValue: r.addClock), author: authors[Int(r.addAuthor)], entry: textIDs.compact(r.addEntry))
    }

    func placeKey(_ i: Int) -> ChangeKey? {
        guard records[i].flags & ItemFlag.placed != 0, let p = placements[Int32(i)] else { return nil }
        return ChangeKey(clock: HybridTime(rawValue: p.clock), author: authors[Int(p.author)], entry: textIDs.compact(p.entry))
    }

    /// Each move's key and anchor id, in change-key order (MERGE.md §3.5).
    func moveKeys(_ i: Int) -> [(ChangeKey, CompactID?)] {
        (moves[Int32(i)] ?? []).map { m in
            (ChangeKey(clock: HybridTime(rawValue: m.clock), author: authors[Int(m.author)], entry: textIDs.compact(m.entry)),
             m.anchor < 0 ? nil : textIDs.compact(records[Int(m.anchor)].id))
        }
    }

    func markKey(_ i: Int) -> ChangeKey? {
        let r = records[i]
        guard r.flags & ItemFlag.marked != 0 else { return nil }
        return ChangeKey(clock: HybridTime(rawValue: r.markClock), author: authors[Int(r.markAuthor)], entry: textIDs.compact(r.markEntry))
    }
}

extension ListReducer: Equatable {
    /// Same set of entries folded in, hence the same internal state (record numbering, author
    /// interning and the in-memory seen-set aside).
    package static func == (a: ListReducer, b: ListReducer) -> Bool {
        guard sameUTF8(a.zone, b.zone), a.entryCount == b.entryCount, a.name == b.name, a.colour == b.colour,
              a.participants == b.participants, a.keyRecords == b.keyRecords else { return false }
        func records(_ r: ListReducer) -> Int { r.records.reduce(0) { $0 + ($1.flags != 0 ? 1 : 0) } }
        guard records(a) == records(b) else { return false }
        for i in a.records.indices where a.records[i].flags != 0 {
            guard let j = b.find(a.textIDs.compact(a.records[i].id)) else { return false }
            let x = a.records[i], y = b.records[j]
            guard x.flags & ItemFlag.stored == y.flags & ItemFlag.stored, a.addKey(i) == b.addKey(j), a.markKey(i) == b.markKey(j),
                  a.placeKey(i) == b.placeKey(j), a.moveKeys(i).elementsEqual(b.moveKeys(j), by: { $0 == $1 }),
                  sameUTF8(a.texts[i], b.texts[j]), a.sealedTexts[Int32(i)] == b.sealedTexts[Int32(j)], x.addedAt == y.addedAt, x.markedAt == y.markedAt else { return false }
            guard (x.anchor < 0) == (y.anchor < 0),
                  x.anchor < 0 || a.textIDs.compact(a.records[Int(x.anchor)].id) == b.textIDs.compact(b.records[Int(y.anchor)].id) else { return false }
        }
        return true
    }
}

/// Whether two strings have identical representations (the same small string, or the same
/// storage), which hold the same bytes. False says nothing.
@inline(__always)
func sameRepresentation(_ a: String, _ b: String) -> Bool {
    MemoryLayout<String>.size == 16 && withUnsafeBytes(of: a) { p in
        withUnsafeBytes(of: b) { q in
            p.loadUnaligned(as: UInt64.self) == q.loadUnaligned(as: UInt64.self)
                && p.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == q.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
        }
    }
}

/// Byte-wise string equality (not Unicode canonical equivalence), with the length checked first.
@inline(__always)
func sameUTF8(_ a: String, _ b: String) -> Bool {
    if sameRepresentation(a, b) { return true }
    let x = a.utf8, y = b.utf8
    guard x.count == y.count else { return false }
    if let r = x.withContiguousStorageIfAvailable({ p in y.withContiguousStorageIfAvailable { q in p.elementsEqual(q) } }), let r {
        return r
    }
    return x.elementsEqual(y)
}

/// `records` sorted by their ids' order (MERGE.md §2): UUIDs by their integer halves, text ids
/// by `<`, then the two runs merged.
func sortedByID(_ records: [Int], _ recs: [ItemRecord], _ textIDs: ReducerTextIDs) -> [Int] {
    var uuids: [(high: UInt64, low: UInt64, record: Int)] = []
    uuids.reserveCapacity(records.count)
    var texts: [Int] = []
    for i in records {
        let id = recs[i].id
        if id.text { texts.append(i) } else { uuids.append((id.high, id.low, i)) }
    }
    uuids.sort { $0.high != $1.high ? $0.high < $1.high : $0.low < $1.low }
    if texts.isEmpty { return uuids.map(\.record) }
    texts.sort { textIDs.less(recs[$0].id, recs[$1].id) }
    var out: [Int] = []
    out.reserveCapacity(records.count)
    var u = 0, t = 0
    while u < uuids.count || t < texts.count {
        if t == texts.count || (u < uuids.count && textIDs.less(recs[uuids[u].record].id, recs[texts[t]].id)) {
            out.append(uuids[u].record)
            u += 1
        } else {
            out.append(texts[t])
            t += 1
        }
    }
    return out
}

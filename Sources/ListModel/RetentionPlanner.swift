import JournalCodec

/// A change key as the planner keeps it (MERGE.md §2): the clock, the author as a number in the
/// planner's author table, and the entry id, with no references.
struct PlannerKey {
    var clock: UInt64
    var entry: RID
    var author: Int32
}

/// Reads one zone incarnation's entries once, in any order, keeping per item only what the list
/// rules need (COMPACTION.md §2): whether it has an add, its winning add's key, anchor and
/// sequence, its winning place's, its winning mark, whether it is deleted, how many entries it
/// has and their range of sequences and times. Then `decide` applies the rules for a mark and a
/// cutoff, and the decision says what becomes of each entry as the entries go by again (the
/// compactor's rewrite reads them anyway). Memory follows the items, not the entries: a list's
/// history is read through, never held; only 8 bytes per entry that names an item are kept (its
/// sequence and item number), so that a `Walk` asking about the entries again in order finds
/// each one's item without hashing its id a second time.
package struct RetentionPlanner: Sendable {
    /// An entry that stays whatever it is, with its item (see `ListRetention.pinned`).
    package let pinned: SequenceNumber?

    // Items, by number (first appearance, anchors included), in flat arrays.
    var index = ReducerIndex()
    var textIDs = ReducerTextIDs()
    var ids: [RID] = []
    /// What every entry of an item updates, together (32 bytes): an entry naming an old item
    /// misses the cache once for them, not once per field.
    var tallies: [ItemTally] = []
    /// The winning (least) add's key, anchor (item number, -1 for none) and sequence.
    var firstKey: [PlannerKey] = []
    var firstAfter: [Int32] = []
    var firstSeq: [UInt64] = []
    /// The winning (greatest) mark-off or unmark.
    var markKey: [PlannerKey] = []
    /// Index into the place table, or -1.
    var placeSlot: [Int32] = []
    /// Anchors of every add but the winning one (each add with an anchor anchors its item,
    /// unless a place fixes it): (item, anchor).
    var otherAnchors: [(Int32, Int32)] = []
    /// Items with a place.
    var places: [PlaceInfo] = []
    /// Every move: its item, its anchor (-1 for the head) and its key, for the tree of nodes
    /// moves make (MERGE.md §3.5), in which an item is rooted only when all its nodes are.
    var moves: [(item: Int32, anchor: Int32, key: PlannerKey)] = []
    var authors = AuthorTable()
    /// Each move's item and the anchor it names, for moves that name another item: that anchor
    /// goes only with the moved item (COMPACTION.md §2.2).
    var moveAnchors: [(Int32, Int32)] { moves.compactMap { $0.anchor >= 0 && $0.anchor != $0.item ? ($0.item, $0.anchor) : nil } }
    /// Renames and recolours: the winners, and each one's sequence and time.
    var rename: (key: PlannerKey, seq: UInt64)?
    var recolour: (key: PlannerKey, seq: UInt64)?
    var renames: [(seq: UInt64, time: Int64)] = []
    var recolours: [(seq: UInt64, time: Int64)] = []
    /// Compaction records (`CompactionRecord.isRecord`): each one's sequence and time. They name
    /// no item and go when old (COMPACTION.md §2); about one per compaction of the zone.
    var records: [(seq: UInt64, time: Int64)] = []
    package private(set) var entries = 0
    /// Entries of a newer version's list change kind (FORMAT.md §6): with any, nothing is purged.
    package private(set) var newerChanges = 0
    /// Base entries read (`ListBase`, Spec/MERGE.md §10). A list with one may be a list its
    /// reader refuses (a base after other entries, or one that does not decode), which compaction
    /// leaves whole (COMPACTION.md §1.1): only such a list needs the reducer's verdict.
    package private(set) var bases = 0
    /// The earliest time (`time(_:)`) of any entry read.
    package private(set) var oldestTime = Int64.max
    /// The sum of what `add(contentsOf:)` loaded ahead: kept so the loads are not optimised away.
    private var warmed: UInt64 = 0
    /// Entries naming an item, in ascending sequence order as added: the sequence (less `recordBase`)
    /// and the item number. Recording stops at the first entry that cannot be appended in order
    /// (added out of order, or 2³² past the first): a `Walk` hashes the id of any entry it lacks.
    var recordBase: UInt64? = nil
    var recordedSeqs: [UInt32] = []
    var recordedItems: [Int32] = []
    private var recording = true

    struct ItemTally {
        var minSeq: UInt64 = .max
        var maxSeq: UInt64 = 0
        var maxTime: Int64 = .min
        var entryCount: UInt32 = 0
        var flags: UInt8 = 0
    }

    struct PlaceInfo {
        var key: PlannerKey
        var after: Int32
        var seq: UInt64
        var count: UInt32
        var maxSeq: UInt64
        var maxTime: Int64
        var pinned: Bool
    }

    static let hasAdd: UInt8 = 1, deleted: UInt8 = 2, markedOff: UInt8 = 4, hasMark: UInt8 = 8, pinnedHere: UInt8 = 16
    /// The item has a `move` (MERGE.md §3.5).
    static let hasMove: UInt8 = 32

    package init(pinned: SequenceNumber? = nil) {
        self.pinned = pinned
    }

    /// An entry's time: the later of its wall time and its hybrid clock (COMPACTION.md §2).
    @inline(__always)
    package static func time(_ e: JournalEntry) -> Int64 { max(e.wallTime, Int64(clamping: e.clock.physicalMillis)) }

    /// The item number of `id`, adding the item if new.
    mutating func intern(_ id: CompactID) -> Int32 {
        let r = textIDs.rid(id)
        index.prepareInsert()
        let h = index.hash(r)
        let at = index.find(h) { ids[Int($0)] == r }
        if at >= 0 { return Int32(at) }
        let n = Int32(ids.count)
        index.insert(at: at, h, n)
        ids.append(r)
        tallies.append(ItemTally())
        firstKey.append(PlannerKey(clock: 0, entry: .none, author: -1))
        firstAfter.append(-1)
        firstSeq.append(0)
        markKey.append(PlannerKey(clock: 0, entry: .none, author: -1))
        placeSlot.append(-1)
        return n
    }

    /// The item number of `id`, if it has one.
    func number(of id: CompactID) -> Int32? {
        guard let r = textIDs.existing(id), !index.slots.isEmpty else { return nil }
        let at = index.find(index.hash(r)) { ids[Int($0)] == r }
        return at >= 0 ? Int32(at) : nil
    }

    private mutating func author(_ a: String) -> Int32 { authors.intern(a) }

    private mutating func key(_ e: JournalEntry) -> PlannerKey {
        PlannerKey(clock: e.clock.rawValue, entry: textIDs.rid(e.id), author: author(e.author))
    }

    /// The change-key order (MERGE.md §2): clock, then the author's UTF-8 bytes, then the entry id.
    func less(_ a: PlannerKey, _ b: PlannerKey) -> Bool {
        changeKeyLess(a.clock, a.author, a.entry, b.clock, b.author, b.entry, authors: authors.strings, ids: textIDs)
    }

    /// Counts an entry of item `i`.
    private mutating func note(_ i: Int, _ seq: SequenceNumber, _ time: Int64) {
        record(seq, i)
        tallies[i].entryCount += 1
        tallies[i].minSeq = min(tallies[i].minSeq, seq)
        tallies[i].maxSeq = max(tallies[i].maxSeq, seq)
        tallies[i].maxTime = max(tallies[i].maxTime, time)
        if seq == pinned { tallies[i].flags |= Self.pinnedHere }
    }

    /// Reads one entry (each entry once; any order).
    package mutating func add(_ seq: SequenceNumber, _ e: JournalEntry) {
        // A sealed change counts as its plain kind (MERGE.md §11): the rules never read a text.
        if case .opaque(SealedChange.addKind...SealedChange.recolourKind, _) = e.operation, let plain = Self.plainForm(e) {
            return add(seq, plain)
        }
        entries += 1
        let time = Self.time(e)
        oldestTime = min(oldestTime, time)
        switch e.operation {
        case .add(let item, _, let after):
            let i = Int(intern(item))
            let a = after.map { intern($0) } ?? -1
            note(i, seq, time)
            let k = key(e)
            if tallies[i].flags & Self.hasAdd == 0 || less(k, firstKey[i]) {
                if tallies[i].flags & Self.hasAdd != 0 { otherAnchor(i, firstAfter[i]) }
                tallies[i].flags |= Self.hasAdd
                firstKey[i] = k
                firstAfter[i] = a
                firstSeq[i] = seq
            } else {
                otherAnchor(i, a)
            }
        case .place(let item, let after):
            let i = Int(intern(item))
            let a = after.map { intern($0) } ?? -1
            note(i, seq, time)
            let k = key(e)
            let isPinned = seq == pinned
            if placeSlot[i] < 0 {
                placeSlot[i] = Int32(places.count)
                places.append(PlaceInfo(key: k, after: a, seq: seq, count: 1, maxSeq: seq, maxTime: time, pinned: isPinned))
            } else {
                let p = Int(placeSlot[i])
                places[p].count += 1
                places[p].maxSeq = max(places[p].maxSeq, seq)
                places[p].maxTime = max(places[p].maxTime, time)
                places[p].pinned = places[p].pinned || isPinned
                if less(k, places[p].key) {
                    places[p].key = k
                    places[p].after = a
                    places[p].seq = seq
                }
            }
        case .move(let item, let after):
            let i = Int(intern(item))
            note(i, seq, time)
            tallies[i].flags |= Self.hasMove
            let a = after.map { intern($0) } ?? -1
            moves.append((Int32(i), a, key(e)))
        case .markOff(let item), .unmark(let item):
            let i = Int(intern(item))
            note(i, seq, time)
            let k = key(e)
            if tallies[i].flags & Self.hasMark == 0 || less(markKey[i], k) {
                markKey[i] = k
                tallies[i].flags |= Self.hasMark
                if case .markOff = e.operation { tallies[i].flags |= Self.markedOff } else { tallies[i].flags &= ~Self.markedOff }
            }
        case .delete(let item):
            let i = Int(intern(item))
            note(i, seq, time)
            tallies[i].flags |= Self.deleted
        case .rename:
            let k = key(e)
            if rename.map({ less($0.key, k) }) ?? true { rename = (k, seq) }
            renames.append((seq, time))
        case .recolour:
            let k = key(e)
            if recolour.map({ less($0.key, k) }) ?? true { recolour = (k, seq) }
            recolours.append((seq, time))
        case .opaque(ListBase.kind, _):
            bases += 1
        case .opaque where CompactionRecord.isRecord(e):
            records.append((seq, time))
        case .opaque where e.operation.isNewerListChange:
            newerChanges += 1
        case .join, .leave, .opaque:
            return
        }
    }

    /// `add` for each of `elements` (a change-feed page): its sequence at `sequence`, its entry
    /// at `entry`. A chunk's item ids are hashed first and their index slots, ids and tallies
    /// loaded, all independent loads whose cache misses overlap, before the entries are added one
    /// by one (a large list's items do not fit in the cache: one miss after another was most of
    /// the time a read took).
    package mutating func add<Element>(contentsOf elements: [Element], sequence: KeyPath<Element, UInt64>,
                                      entry: KeyPath<Element, JournalEntry>) {
        // A computed property has no offset: its entries are added one at a time.
        guard let so = MemoryLayout<Element>.offset(of: sequence), let eo = MemoryLayout<Element>.offset(of: entry) else {
            for x in elements { add(x[keyPath: sequence], x[keyPath: entry]) }
            return
        }
        let stride = MemoryLayout<Element>.stride
        let chunk = 64
        elements.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress else { return }
            let raw = UnsafeRawPointer(base)
            // Each entry's item and, for an add or a place, its anchor.
            withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 2 * chunk) { hashes in
                @inline(__always) func hash(_ id: CompactID?) -> UInt64 {
                    // Text ids are rare: they are not loaded ahead.
                    guard let (h, l) = id?.uuidHalves else { return 0 }
                    return index.hash(RID(high: h, low: l, text: false))
                }
                var k = 0
                while k < buf.count {
                    let m = min(chunk, buf.count - k)
                    for j in 0..<m {
                        let e = (raw + (k + j) * stride + eo).assumingMemoryBound(to: JournalEntry.self)
                        switch e.pointee.operation {
                        case .add(let item, _, let after), .place(let item, let after), .move(let item, let after):
                            hashes[2 * j] = hash(item)
                            hashes[2 * j + 1] = hash(after)
                        case .markOff(let item), .unmark(let item), .delete(let item):
                            hashes[2 * j] = hash(item)
                            hashes[2 * j + 1] = 0
                        default:
                            hashes[2 * j] = 0
                            hashes[2 * j + 1] = 0
                        }
                    }
                    let chunkHashes = UnsafeBufferPointer(rebasing: hashes[0..<(2 * m)])
                    warmed &+= index.warm(chunkHashes)
                    warmed &+= warmItems(chunkHashes)
                    for j in k..<(k + m) {
                        let p = raw + j * stride
                        add(p.load(fromByteOffset: so, as: UInt64.self), (p + eo).assumingMemoryBound(to: JournalEntry.self).pointee)
                    }
                    k += m
                }
            }
        }
    }

    /// Loads the id and tally of the item each hash most likely names (their slots in cache):
    /// the first slot whose tag matches, unconfirmed.
    private func warmItems(_ hashes: UnsafeBufferPointer<UInt64>) -> UInt64 {
        guard !index.slots.isEmpty else { return 0 }
        return ids.withUnsafeBufferPointer { idp in
            tallies.withUnsafeBufferPointer { tp in
                var sum: UInt64 = 0
                for h in hashes where h != 0 {
                    let v = index.find(h) { _ in true }
                    if v >= 0 && v < idp.count { sum &+= idp[v].low &+ tp[v].maxSeq }
                }
                return sum
            }
        }
    }

    /// Keeps the entry's item number for a `Walk` while entries come in ascending order.
    @inline(__always)
    private mutating func record(_ seq: SequenceNumber, _ i: Int) {
        guard recording else { return }
        let base = recordBase ?? seq
        recordBase = base
        let off = seq &- base
        guard seq >= base, off <= UInt64(UInt32.max), recordedSeqs.last.map({ UInt64($0) < off }) ?? true else {
            recording = false
            return
        }
        recordedSeqs.append(UInt32(off))
        recordedItems.append(Int32(i))
    }

    /// A sealed add, rename or recolour with its text left out: what the rules read of it. Nil
    /// for a body that does not read (an opaque entry, which stays).
    private static func plainForm(_ e: JournalEntry) -> JournalEntry? {
        guard let change = (try? SealedChange(e.operation)) ?? nil else { return nil }
        var plain = e
        switch change {
        case .add(let item, let after, _): plain.operation = .add(item: item, text: "", after: after)
        case .rename: plain.operation = .rename(name: "")
        case .recolour: plain.operation = .recolour(colour: "")
        }
        return plain
    }

    private mutating func otherAnchor(_ i: Int, _ a: Int32) {
        if a >= 0 && Int(a) != i { otherAnchors.append((Int32(i), a)) }
    }
}

/// What the list rules decided for one zone incarnation (COMPACTION.md §2): per item, whether it
/// stays, goes whole, or leaves a placement (folded into the item after it, or not), and which
/// entries are written over by a `place`. `verdict` says what becomes of each entry.
package struct RetentionDecision: Sendable {
    /// Per item. 0: stays as it is.
    enum ItemVerdict: UInt8 {
        case stays = 0
        /// Every entry goes.
        case goes
        /// A placement folded into the item after it: every entry goes (its key entry is written
        /// over by that item's place when it tops the chain).
        case folded
        /// A placement taking the place of the chain folded above it: every entry goes.
        case placementUnderFold
        /// An item that stays and takes the place of the chain folded above it: its places go.
        case staysUnderFold
        /// A placement: every entry but its key entry goes; that one becomes its `place`.
        case placement
    }

    package let cutoff: Int64
    package let mark: SequenceNumber
    package let pinned: SequenceNumber?
    var index: ReducerIndex
    var textIDs: ReducerTextIDs
    var ids: [RID]
    var verdicts: [ItemVerdict]
    /// Entries written over, ascending by sequence: the item (number) whose key entry it is, and
    /// the place written there (item, anchor: item numbers, -1 for none).
    var targetSeqs: [UInt64] = []
    var targets: [(owner: Int32, item: Int32, after: Int32)] = []
    let renameWinner: UInt64?
    let recolourWinner: UInt64?
    /// Entries the rules purge, and entries they write over (with another operation).
    package internal(set) var purgeCount = 0
    package internal(set) var rewriteCount = 0
    /// Whether another pass of the rules over the result may find more (COMPACTION.md §2.1): an
    /// item given a place, or folded, had an add anchored to a placement that does not fold, which
    /// it no longer anchors; or the item at the bottom of a folded chain was already a child of the
    /// placement above the chain (by another add), which it now is once only.
    package internal(set) var needsAnotherPass = false
    /// Sequence ranges holding every entry the decision changes, ascending and disjoint: only
    /// segments they overlap need reading again.
    package internal(set) var ranges: [ClosedRange<SequenceNumber>] = []

    /// The planner's record of the entries it read (`RetentionPlanner.recordedSeqs`).
    var recordBase: UInt64 = 0
    var recordedSeqs: [UInt32] = []
    var recordedItems: [Int32] = []

    package var isEmpty: Bool { purgeCount == 0 && rewriteCount == 0 }

    @inline(__always)
    func isOld(_ seq: SequenceNumber, _ e: JournalEntry) -> Bool {
        seq <= mark && seq != pinned && RetentionPlanner.time(e) < cutoff
    }

    /// What becomes of the entry at `seq` (one the planner read, or one appended since: those
    /// are above the mark and stay).
    package func verdict(_ seq: SequenceNumber, _ e: JournalEntry) -> EntryVerdict {
        let item: CompactID
        switch e.operation {
        case .rename: return isOld(seq, e) && seq != renameWinner ? .purge : .keep
        case .recolour: return isOld(seq, e) && seq != recolourWinner ? .purge : .keep
        case .opaque where CompactionRecord.isRecord(e): return isOld(seq, e) ? .purge : .keep
        case .add(let x, _, _), .place(let x, _), .move(let x, _), .markOff(let x), .unmark(let x), .delete(let x): item = x
        case .opaque(SealedChange.addKind...SealedChange.recolourKind, _):
            switch (try? SealedChange(e.operation)) ?? nil {
            case .add(let x, _, _)?: item = x
            case .rename?: return isOld(seq, e) && seq != renameWinner ? .purge : .keep
            case .recolour?: return isOld(seq, e) && seq != recolourWinner ? .purge : .keep
            case nil: return .keep
            }
        case .join, .leave, .opaque: return .keep
        }
        guard seq <= mark, let i = number(of: item) else { return .keep }
        return verdict(seq, e, item: i, target: target(seq))
    }

    /// The item number of `id`, by its hash.
    private func number(of id: CompactID) -> Int? {
        guard let r = textIDs.existing(id), !index.slots.isEmpty else { return nil }
        let found = index.find(index.hash(r)) { ids[Int($0)] == r }
        return found >= 0 ? Int(found) : nil
    }

    /// What becomes of the entry at `seq` of item number `i`; `t`, the entry written over there.
    @inline(__always)
    private func verdict(_ seq: SequenceNumber, _ e: JournalEntry, item i: Int, target t: Int?) -> EntryVerdict {
        if let t, Int(targets[t].owner) == i {
            let op = EntryOperation.place(item: textIDs.compact(ids[Int(targets[t].item)]),
                                     after: targets[t].after < 0 ? nil : textIDs.compact(ids[Int(targets[t].after)]))
            return e.operation == op ? .keep : .replace(op)
        }
        switch verdicts[i] {
        case .stays: return .keep
        case .goes, .folded, .placementUnderFold, .placement: return .purge
        case .staysUnderFold:
            if case .place = e.operation { return .purge }
            return .keep
        }
    }

    private func target(_ seq: UInt64) -> Int? {
        let lo = targetSeqs.partitionPoint { $0 < seq }
        return lo < targetSeqs.count && targetSeqs[lo] == seq ? lo : nil
    }

    /// Asks about entries in ascending sequence order (a rewrite's, a dry run's): the same
    /// answers as `verdict`, each entry's item taken from the planner's record of it, not found
    /// again by its id's hash (on a large list, the lookup that missed the cache on every entry).
    package func walk() -> Walk { Walk(self) }

    package struct Walk: Sendable {
        let decision: RetentionDecision
        /// Positions in the record and in the targets: nothing before them is asked again.
        private var next = 0
        private var nextTarget = 0
        private var last: UInt64 = 0

        init(_ d: RetentionDecision) { decision = d }

        /// `RetentionDecision.verdict`; asked out of order, it finds its place again by search.
        package mutating func verdict(_ seq: SequenceNumber, _ e: JournalEntry) -> EntryVerdict {
            let d = decision
            switch e.operation {
            case .add, .place, .move, .markOff, .unmark, .delete, .opaque(SealedChange.addKind, _): break
            default: return d.verdict(seq, e)
            }
            guard seq <= d.mark else { return .keep }
            if seq < last {
                next = 0
                nextTarget = 0
                let off = seq &- d.recordBase
                if seq >= d.recordBase && off <= UInt64(UInt32.max) { next = d.recordedSeqs.partitionPoint { UInt64($0) < off } }
                else if seq >= d.recordBase { next = d.recordedSeqs.count }
                nextTarget = d.targetSeqs.partitionPoint { $0 < seq }
            }
            last = seq
            var i = -1
            if seq >= d.recordBase {
                let off = seq &- d.recordBase
                while next < d.recordedSeqs.count && UInt64(d.recordedSeqs[next]) < off { next += 1 }
                if next < d.recordedSeqs.count && UInt64(d.recordedSeqs[next]) == off { i = Int(d.recordedItems[next]) }
            }
            if i < 0 {
                guard let item = e.operation.listItem, let found = d.number(of: item) else { return .keep }
                i = found
            }
            assert(i == e.operation.listItem.flatMap { d.number(of: $0) }, "the planner's record names another item at \(seq)")
            while nextTarget < d.targetSeqs.count && d.targetSeqs[nextTarget] < seq { nextTarget += 1 }
            let t = nextTarget < d.targetSeqs.count && d.targetSeqs[nextTarget] == seq ? nextTarget : nil
            return d.verdict(seq, e, item: i, target: t)
        }
    }
}

extension RetentionPlanner {
    /// Applies the rules (COMPACTION.md §2) to what was read, for entries old at `cutoff` and at
    /// or below `mark`. May be called again with another mark or cutoff.
    /// A list holding a newer version's change (FORMAT.md §6, 0x40–0x7F) is not compacted: what
    /// that change does to an item's lifecycle or place is not known here. Nothing is old.
    package func decide(cutoff: Int64, mark: SequenceNumber) -> RetentionDecision {
        let pass = newerChanges > 0 ? RetentionPass(self, cutoff: .min, mark: 0) : RetentionPass(self, cutoff: cutoff, mark: mark)
        let graph = pass.graph()
        var leaves = pass.leaves()
        var goes = pass.wholeItems(leaves: leaves, graph)
        pass.keepRuns(&goes, graph)
        let keptMoved = pass.keepMovedItems(&leaves, goes: goes)
        let folds = pass.folds(leaves: leaves, goes: goes, graph)
        return pass.decision(leaves: leaves, goes: goes, folds: folds, keptMoved: keptMoved, graph)
    }
}

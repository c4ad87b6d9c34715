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
    var authors: [String] = []
    private var lastAuthor: Int32 = -1
    /// Renames and recolours: the winners, and each one's sequence and time.
    var rename: (key: PlannerKey, seq: UInt64)?
    var recolour: (key: PlannerKey, seq: UInt64)?
    var renames: [(seq: UInt64, time: Int64)] = []
    var recolours: [(seq: UInt64, time: Int64)] = []
    package private(set) var entries = 0
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

    private mutating func author(_ a: String) -> Int32 {
        if lastAuthor >= 0, sameBytes(authors[Int(lastAuthor)], a) { return lastAuthor }
        if let i = authors.firstIndex(where: { sameBytes($0, a) }) {
            // The copy just read is kept: the entries after it in its batch share its storage,
            // and `sameBytes` answers for the same storage at once.
            authors[i] = a
            lastAuthor = Int32(i)
            return lastAuthor
        }
        authors.append(a)
        lastAuthor = Int32(authors.count - 1)
        return lastAuthor
    }

    private mutating func key(_ e: JournalEntry) -> PlannerKey {
        PlannerKey(clock: e.clock.rawValue, entry: textIDs.rid(e.id), author: author(e.author))
    }

    /// The change-key order (MERGE.md §2): clock, then the author's UTF-8 bytes, then the entry id.
    func less(_ a: PlannerKey, _ b: PlannerKey) -> Bool {
        changeKeyLess(a.clock, a.author, a.entry, b.clock, b.author, b.entry, authors: authors, ids: textIDs)
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
                        case .add(let item, _, let after), .place(let item, let after):
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
        case .add(let x, _, _), .place(let x, _), .markOff(let x), .unmark(let x), .delete(let x): item = x
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
            case .add, .place, .markOff, .unmark, .delete: break
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
                guard let found = d.number(of: e.operation.item!) else { return .keep }
                i = found
            }
            assert(i == d.number(of: e.operation.item!), "the planner's record names another item at \(seq)")
            while nextTarget < d.targetSeqs.count && d.targetSeqs[nextTarget] < seq { nextTarget += 1 }
            let t = nextTarget < d.targetSeqs.count && d.targetSeqs[nextTarget] == seq ? nextTarget : nil
            return d.verdict(seq, e, item: i, target: t)
        }
    }
}

extension RetentionPlanner {
    /// Applies the rules (COMPACTION.md §2) to what was read, for entries old at `cutoff` and at
    /// or below `mark`. May be called again with another mark or cutoff.
    package func decide(cutoff: Int64, mark: SequenceNumber) -> RetentionDecision {
        let n = ids.count
        func placed(_ i: Int) -> Bool { placeSlot[i] >= 0 }
        func inTree(_ i: Int) -> Bool { tallies[i].flags & Self.hasAdd != 0 || placed(i) }
        func treeAfter(_ i: Int) -> Int32 { placed(i) ? places[Int(placeSlot[i])].after : firstAfter[i] }
        func treeKey(_ i: Int) -> PlannerKey { placed(i) ? places[Int(placeSlot[i])].key : firstKey[i] }
        func treeSeq(_ i: Int) -> UInt64 { placed(i) ? places[Int(placeSlot[i])].seq : firstSeq[i] }
        /// The item's parent in the tree, or -1 for the head or an orphan.
        func treeParent(_ i: Int) -> Int {
            let a = treeAfter(i)
            return a >= 0 && inTree(Int(a)) ? Int(a) : -1
        }
        func allOld(_ i: Int) -> Bool { tallies[i].maxSeq <= mark && tallies[i].maxTime < cutoff && tallies[i].flags & Self.pinnedHere == 0 }
        /// Whether every place the item has is old (true with none).
        func placesOld(_ i: Int) -> Bool {
            guard placed(i) else { return true }
            let p = places[Int(placeSlot[i])]
            return p.maxSeq <= mark && p.maxTime < cutoff && !p.pinned
        }

        // Children and parents (CSR): a placed item's place anchor, every other item's every
        // add's anchor.
        var edges: [(child: Int32, parent: Int32)] = []
        edges.reserveCapacity(n)
        for c in 0..<n where !placed(c) && firstAfter[c] >= 0 && Int(firstAfter[c]) != c { edges.append((Int32(c), firstAfter[c])) }
        for (c, a) in otherAnchors where !placed(Int(c)) { edges.append((c, a)) }
        for c in 0..<n where placed(c) {
            let a = places[Int(placeSlot[c])].after
            if a >= 0 && Int(a) != c { edges.append((Int32(c), a)) }
        }
        var childCount = [Int32](repeating: 0, count: n + 1)
        var parentCount = [Int32](repeating: 0, count: n + 1)
        for (c, p) in edges {
            childCount[Int(p) + 1] += 1
            parentCount[Int(c) + 1] += 1
        }
        for k in 0..<n { childCount[k + 1] += childCount[k]; parentCount[k + 1] += parentCount[k] }
        var children = [Int32](repeating: 0, count: edges.count)
        var parents = [Int32](repeating: 0, count: edges.count)
        do {
            var cFill = childCount, pFill = parentCount
            for (c, p) in edges {
                children[Int(cFill[Int(p)])] = c; cFill[Int(p)] += 1
                parents[Int(pFill[Int(c)])] = p; pFill[Int(c)] += 1
            }
        }
        edges = []

        // Items whose tree parents lead to the head or the orphans (not into an anchor cycle,
        // MERGE.md §3.3): only those may leave.
        var rooted = [UInt8](repeating: 0, count: n)  // 0 unknown, 1 on the walk, 2 rooted, 3 not
        var walk: [Int] = []
        for i in 0..<n where rooted[i] == 0 && inTree(i) {
            var v = i
            var verdict: UInt8 = 2
            while true {
                if rooted[v] >= 2 { verdict = rooted[v]; break }
                if rooted[v] == 1 { verdict = 3; break }
                rooted[v] = 1
                walk.append(v)
                let p = treeParent(v)
                if p < 0 { verdict = 2; break }
                v = p
            }
            for w in walk { rooted[w] = verdict }
            walk.removeAll(keepingCapacity: true)
        }
        var leaves = [Bool](repeating: false, count: n)
        for i in 0..<n where rooted[i] == 2 && allOld(i) {
            let hasAdd = tallies[i].flags & Self.hasAdd != 0
            leaves[i] = placed(i) && !hasAdd || hasAdd && tallies[i].flags & (Self.deleted | Self.markedOff) != 0
        }
        rooted = []

        // Whole: decide children first (iteratively: runs of adds make deep trees); an item
        // whose child is still on the path (a cycle through add anchors) stays.
        var goes = [Bool](repeating: false, count: n)
        do {
            var state = [UInt8](repeating: 0, count: n)  // 0 new, 1 on the path, 2 decided
            var stack: [(Int32, Int32)] = []
            for root in 0..<n where state[root] == 0 {
                stack.append((Int32(root), childCount[root]))
                state[root] = 1
                while let (v, next) = stack.last {
                    let vi = Int(v)
                    if next < childCount[vi + 1] {
                        stack[stack.count - 1].1 += 1
                        let c = Int(children[Int(next)])
                        if state[c] == 0 {
                            state[c] = 1
                            stack.append((Int32(c), childCount[c]))
                        }
                        continue
                    }
                    stack.removeLast()
                    state[vi] = 2
                    var ok = leaves[vi]
                    if ok {
                        for k in Int(childCount[vi])..<Int(childCount[vi + 1]) {
                            let c = Int(children[k])
                            if state[c] != 2 || !goes[c] { ok = false; break }
                        }
                    }
                    goes[vi] = ok
                }
            }
        }

        // Sibling runs (MERGE.md §3.2) as the reducer forms them: per anchor and author, in
        // change order, split where consecutive members are more than the run window apart. An
        // orphan (its anchor not in the tree) is placed by its own key, in no run.
        // Grouped by anchor (a counting sort: most groups hold one or two items), then each group
        // sorted by what the run order compares (author, clock) held in the member, so that only
        // a tie reads the items' keys.
        typealias Member = (anchor: Int32, author: Int32, clock: UInt64, item: Int32)
        var anchorOf = [Int32](repeating: -2, count: n)  // -2: not a member
        var groupStart = [Int32](repeating: 0, count: n + 2)
        for i in 0..<n where inTree(i) {
            var anchor: Int32 = -1
            if treeAfter(i) >= 0 {
                let p = treeParent(i)
                guard p >= 0 else { continue }
                anchor = Int32(p)
            }
            anchorOf[i] = anchor
            groupStart[Int(anchor) + 2] += 1
        }
        for g in 0..<(n + 1) { groupStart[g + 1] += groupStart[g] }
        let memberTotal = Int(groupStart[n + 1])
        var members = [Member](repeating: (0, 0, 0, 0), count: memberTotal)
        do {
            var fill = groupStart
            for i in 0..<n where anchorOf[i] != -2 {
                let g = Int(anchorOf[i]) + 1
                let k = treeKey(i)
                members[Int(fill[g])] = (anchorOf[i], k.author, k.clock, Int32(i))
                fill[g] += 1
            }
        }
        anchorOf = []
        func before(_ x: Member, _ y: Member) -> Bool {
            if x.author != y.author { return x.author < y.author }
            if x.clock != y.clock { return x.clock < y.clock }
            return textIDs.less(treeKey(Int(x.item)).entry, treeKey(Int(y.item)).entry)
        }
        members.withUnsafeMutableBufferPointer { all in
            for g in 0...n where groupStart[g + 1] - groupStart[g] > 1 {
                var group = UnsafeMutableBufferPointer(rebasing: all[Int(groupStart[g])..<Int(groupStart[g + 1])])
                if group.count > 16 {
                    group.sort(by: before)
                    continue
                }
                for k in 1..<group.count {  // insertion sort: a handful of siblings
                    let m = group[k]
                    var j = k
                    while j > 0 && before(m, group[j - 1]) {
                        group[j] = group[j - 1]
                        j -= 1
                    }
                    group[j] = m
                }
            }
        }
        groupStart = []
        var runOf = [Int32](repeating: -1, count: n)
        var runStart: [Int32] = [0]
        for (k, m) in members.enumerated() {
            if k > 0 {
                let p = members[k - 1]
                if p.anchor != m.anchor || p.author != m.author || SiblingRun.breaks(after: p.clock, before: m.clock) {
                    runStart.append(Int32(k))
                }
            }
            runOf[Int(m.item)] = Int32(runStart.count - 1)
        }
        runStart.append(Int32(members.count))

        // An item goes whole only with its whole run: a run with a member that stays keeps every
        // member, and an item that stays keeps its anchors (ancestors). Propagate to a fixpoint.
        var work: [Int32] = []
        for r in 0..<(runStart.count - 1) {
            let range = Int(runStart[r])..<Int(runStart[r + 1])
            if range.contains(where: { !goes[Int(members[$0].item)] }) && range.contains(where: { goes[Int(members[$0].item)] }) {
                work.append(Int32(r))
            }
        }
        var up: [Int32] = []
        while let r = work.popLast() {
            for k in Int(runStart[Int(r)])..<Int(runStart[Int(r) + 1]) {
                let m = Int(members[k].item)
                guard goes[m] else { continue }
                goes[m] = false
                up.append(Int32(m))
                while let v = up.popLast() {
                    for q in Int(parentCount[Int(v)])..<Int(parentCount[Int(v) + 1]) {
                        let p = Int(parents[q])
                        guard goes[p] else { continue }
                        goes[p] = false
                        up.append(Int32(p))
                        if runOf[p] >= 0 { work.append(runOf[p]) }
                    }
                }
            }
        }
        members = []
        runOf = []

        // The rest of the leaving items become placements. One whose only remaining child sits
        // under it in the tree folds into that child, when every place the child has is old.
        var folds = [Bool](repeating: false, count: n)
        for v in 0..<n where leaves[v] && !goes[v] {
            // Distinct items: an item re-added after the same anchor is one child.
            var only = -1, count = 0
            for k in Int(childCount[v])..<Int(childCount[v + 1]) where !goes[Int(children[k])] && Int(children[k]) != only {
                count += 1
                only = Int(children[k])
                if count > 1 { break }
            }
            guard count == 1, treeParent(only) == v else { continue }
            folds[v] = placesOld(only)
        }
        func placement(_ i: Int) -> Bool { leaves[i] && !goes[i] }
        func folded(_ i: Int) -> Bool { placement(i) && folds[i] }

        var d = RetentionDecision(cutoff: cutoff, mark: mark, pinned: pinned, index: index, textIDs: textIDs, ids: ids,
                                  verdicts: [RetentionDecision.ItemVerdict](repeating: .stays, count: n),
                                  renameWinner: rename?.seq, recolourWinner: recolour?.seq)
        d.recordBase = recordBase ?? 0
        d.recordedSeqs = recordedSeqs
        d.recordedItems = recordedItems
        var targets: [(seq: UInt64, owner: Int32, item: Int32, after: Int32)] = []
        var changed: [ClosedRange<SequenceNumber>] = []
        /// Item `c` leaves the tree of the next pass (folded), or is anchored only at `a` there
        /// (given a place): does a placement that does not fold lose it as a child? Then that
        /// item may go or fold in another pass. An item that is not a placement cannot: what makes
        /// one (rooted, old, finished or only placed) is the same in the next pass (COMPACTION.md
        /// §2.1).
        func losesAnchor(_ c: Int, _ a: Int) {
            guard !d.needsAnotherPass else { return }
            for q in Int(parentCount[c])..<Int(parentCount[c + 1]) {
                let p = Int(parents[q])
                if p != a && placement(p) && !folded(p) { d.needsAnotherPass = true }
            }
        }
        for i in 0..<n {
            if goes[i] {
                d.verdicts[i] = .goes
                d.purgeCount += Int(tallies[i].entryCount)
                changed.append(tallies[i].minSeq...tallies[i].maxSeq)
                continue
            }
            guard inTree(i), !folded(i) else {
                if folded(i) {
                    losesAnchor(i, treeParent(i))
                    d.verdicts[i] = .folded
                    let p = treeParent(i)
                    // The top of a chain keeps its key entry for the item under the chain.
                    let top = !(p >= 0 && folded(p))
                    d.purgeCount += Int(tallies[i].entryCount) - (top ? 1 : 0)
                    changed.append(tallies[i].minSeq...tallies[i].maxSeq)
                }
                continue
            }
            // The top of the folded chain above `i`, if any.
            var top = i
            while true {
                let p = treeParent(top)
                guard p >= 0, folded(p) else { break }
                top = p
            }
            if top != i {
                // `i` takes the chain's place: its own places go (a placement's every entry).
                if placement(i) {
                    d.verdicts[i] = .placementUnderFold
                    d.purgeCount += Int(tallies[i].entryCount)
                    changed.append(tallies[i].minSeq...tallies[i].maxSeq)
                } else {
                    d.verdicts[i] = .staysUnderFold
                    if placed(i) {
                        let pl = places[Int(placeSlot[i])]
                        d.purgeCount += Int(pl.count)
                        changed.append(tallies[i].minSeq...pl.maxSeq)
                    }
                }
                targets.append((treeSeq(top), Int32(top), Int32(i), treeAfter(top)))
                d.rewriteCount += 1
                losesAnchor(i, Int(treeAfter(top)))
                // `i` takes the top's place under the top's parent. When `i` was a child of that
                // parent already (by another add), the parent is left with one child fewer: a
                // placement there may fold in another pass.
                let tp = treeParent(top)
                if tp >= 0 && placement(tp) && !d.needsAnotherPass {
                    for q in Int(parentCount[i])..<Int(parentCount[i + 1]) where Int(parents[q]) == tp { d.needsAnotherPass = true }
                }
            } else if placement(i) {
                d.verdicts[i] = .placement
                d.purgeCount += Int(tallies[i].entryCount) - 1
                targets.append((treeSeq(i), Int32(i), Int32(i), treeAfter(i)))
                // Its key entry is its place already when it has one (the tree entry is the place).
                if !placed(i) {
                    d.rewriteCount += 1
                    losesAnchor(i, Int(treeAfter(i)))
                }
                if tallies[i].entryCount > 1 || !placed(i) { changed.append(tallies[i].minSeq...tallies[i].maxSeq) }
            }
        }
        for (list, winner) in [(renames, rename?.seq), (recolours, recolour?.seq)] {
            for r in list where r.seq <= mark && r.seq != pinned && r.time < cutoff && r.seq != winner {
                d.purgeCount += 1
                changed.append(r.seq...r.seq)
            }
        }
        targets.sort { $0.seq < $1.seq }
        d.targetSeqs = targets.map(\.seq)
        d.targets = targets.map { ($0.owner, $0.item, $0.after) }
        changed.sort { $0.lowerBound < $1.lowerBound }
        for r in changed {
            if let last = d.ranges.last, r.lowerBound <= last.upperBound &+ 1 {
                d.ranges[d.ranges.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                d.ranges.append(r)
            }
        }
        return d
    }
}

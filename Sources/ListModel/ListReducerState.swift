import JournalCodec

/// Materialising: the list state a reducer holds, in list order (MERGE.md §3), and its digest.
extension ListReducer {
    /// The list as it stands: a pure function of the set of entries applied.
    package func state() -> ListState { state(helpers: helpers) }

    /// `state()`, its items built on two threads when `helpers` has them and enough are visible.
    func state(helpers: (any ReducerHelpers)?) -> ListState {
        let minimum = helpers?.minimumParallelWork ?? Int.max
        let (order, visible, shown) = countedLinearOrder()
        // Each visible record's place in the list, then the items built in record order and
        // stored at their places: list order is not memory order, and reading the records and
        // texts in list order would miss the cache for each item, where storing out of order
        // does not hold up the loop.
        var place = [Int32](repeating: 0, count: records.count)
        var next: Int32 = 0
        for i in order where shown[Int(i)] {
            place[Int(i)] = next
            next += 1
        }
        precondition(Int(next) == visible, "every visible record has one place in the list")
        let items = [ListItem](unsafeUninitializedCapacity: visible) { out, count in
            records.withUnsafeBufferPointer { rec in
                texts.withUnsafeBufferPointer { texts in
                    place.withUnsafeBufferPointer { place in
                        shown.withUnsafeBufferPointer { shown in
                            // Each record's item goes to its own place: the two halves of a large
                            // list write disjoint items, so they can be built on two cores.
                            func build(_ range: Range<Int>) {
                                for i in range where shown[i] {
                                    let r = rec[i]
                                    let marked = r.flags & ItemFlag.markedOff != 0
                                    (out.baseAddress! + Int(place[i])).initialize(to: ListItem(
                                        id: textIDs.compact(r.id), state: marked ? .markedOff : .active, text: texts[i],
                                        addedBy: authors[Int(r.addAuthor)], addedAt: r.addedAt,
                                        markedOffBy: marked ? authors[Int(r.markAuthor)] : nil, markedOffAt: marked ? r.markedAt : nil,
                                        sealedText: sealedTexts.isEmpty ? nil : sealedText(Int32(i), r)))
                                }
                            }
                            if visible >= minimum {
                                let half = rec.count / 2
                                helpers!.run({ build(half..<rec.count) }, { build(0..<half) })
                            } else {
                                build(rec.indices)
                            }
                        }
                    }
                }
            }
            count = visible
        }
        var state = ListState(name: name?.value.plain ?? "", colour: colour?.value.plain ?? "", items: items,
                              participants: currentParticipants(), sealedName: name?.value.sealedText, sealedColour: colour?.value.sealedText)
        if !keyRecords.isEmpty {
            // Read when uploaded (SYNC.md §3.2): one that does not read here came from elsewhere.
            state.keyRecords = keyRecords.compactMap { try? EpochKeyRecord(decoding: $0) }.sorted { $0.epoch < $1.epoch }
        }
        return state
    }

    /// Calls `body` with `result` and each record in `order` and its text, copying them a chunk at a time
    /// first: list order is not memory order, and a short loop of independent loads lets the
    /// processor overlap the cache misses that one record at a time would wait for.
    @inline(__always)
    func forEachRecord<Result>(in order: [Int32], into result: inout Result, _ body: (inout Result, ItemRecord, String, Int32) -> Void) {
        let chunk = 32
        records.withUnsafeBufferPointer { rec in
            texts.withUnsafeBufferPointer { texts in
                order.withUnsafeBufferPointer { order in
                    withUnsafeTemporaryAllocation(of: ItemRecord.self, capacity: chunk) { buf in
                        withUnsafeTemporaryAllocation(of: String.self, capacity: chunk) { text in
                            let base = buf.baseAddress!, textBase = text.baseAddress!
                            var k = 0
                            while k < order.count {
                                let m = min(chunk, order.count - k)
                                for j in 0..<m { (base + j).initialize(to: rec[Int(order[k + j])]) }
                                // Only a visible record's text is ever used: no need to fetch the others.
                                for j in 0..<m {
                                    (textBase + j).initialize(to: base[j].flags & (ItemFlag.added | ItemFlag.deleted) == ItemFlag.added
                                                                  ? texts[Int(order[k + j])] : "")
                                }
                                for j in 0..<m { body(&result, base[j], (textBase + j).move(), order[k + j]) }
                                k += m
                            }
                        }
                    }
                }
            }
        }
    }

    /// Record `i`'s sealed text, bound to its winning add (its key and added time), if it has one.
    func sealedText(_ i: Int32, _ r: ItemRecord) -> SealedText? {
        guard let v = sealedTexts[i] else { return nil }
        return SealedText(v, zone: zone, entry: textIDs.compact(r.addEntry), kind: SealedChange.addKind, item: textIDs.compact(r.id),
                          author: authors[Int(r.addAuthor)], clock: HybridTime(rawValue: r.addClock), wallTime: r.addedAt)
    }

    /// Participants whose latest entry is a join, sorted by UTF-8 bytes.
    func currentParticipants() -> [String] {
        var people: [String] = []
        for (p, r) in participants where r.value { people.append(p.value) }
        people.sort(by: utf8Less)
        return people
    }

    /// `state().digest` (MERGE.md §8) straight from the records, without building the state:
    /// snapshot encoding and decoding need only the digest.
    package func stateDigest() -> UInt64 {
        let (order, visible, _) = countedLinearOrder()
        return stateDigest(order: order, visible: visible)
    }

    /// `stateDigest()` given the list order and its visible count (`countedLinearOrder()`): a
    /// snapshot's body and digest share one computation of the order.
    func stateDigest(order: [Int32], visible: Int) -> UInt64 {
        let sealed = !sealedTexts.isEmpty || name?.value.sealedText != nil || colour?.value.sealedText != nil
        return ReducerDigest.hash { w in
            w.u8(sealed ? 2 : 1)
            if sealed {
                ListState.text(name?.value ?? .plain(""), into: &w)
                ListState.text(colour?.value ?? .plain(""), into: &w)
            } else {
                w.string(name?.value.plain ?? "")
                w.string(colour?.value.plain ?? "")
            }
            w.varint(UInt64(visible))
            forEachRecord(in: order, into: &w) { w, r, text, i in
                guard r.flags & (ItemFlag.added | ItemFlag.deleted) == ItemFlag.added else { return }
                if r.id.text { w.id(textIDs.compact(r.id)) } else { w.uuid(r.id.high, r.id.low) }
                if !sealed {
                    w.string(text)
                } else if let v = sealedTexts[i] {
                    ListState.sealed(v, into: &w)
                } else {
                    ListState.text(.plain(text), into: &w)
                }
                let marked = r.flags & ItemFlag.markedOff != 0
                w.u8(marked ? ListItem.State.markedOff.rawValue : ListItem.State.active.rawValue)
                w.string(authors[Int(r.addAuthor)])
                w.zigzag(r.addedAt)
                if marked {
                    w.string(authors[Int(r.markAuthor)])
                    w.zigzag(r.markedAt)
                }
            }
            let people = currentParticipants()
            w.varint(UInt64(people.count))
            for p in people { w.string(p) }
        }
    }

    /// Two replicas' consecutive same-author siblings at most this far apart (physical ms) form
    /// one run, kept together (MERGE.md §3.2; the rule is `SiblingRun`'s).
    package static var runWindowMillis: UInt64 { SiblingRun.windowMillis }

    /// Record numbers of every record in the tree (added or placed, tombstones included) in list
    /// order (MERGE.md §3).
    func linearOrder() -> [Int32] { countedLinearOrder().order }

    /// `linearOrder()`, how many of its records are visible (not tombstones) and which they are
    /// (by record number), found in the same pass over the records rather than by a second one
    /// in list order.
    func countedLinearOrder(smallGroup: Int = ReducerOrder.smallGroup) -> (order: [Int32], visible: Int, shown: [Bool]) {
        // Integer sort keys: hlc and the author's rank in UTF-8 order; the entry id breaks ties.
        let rank = byteOrderRanks(authors.strings)
        if !moves.isEmpty { return orderWithMoves(rank: rank, smallGroup: smallGroup) }
        return records.withUnsafeBufferPointer { rec in
            rank.withUnsafeBufferPointer { rank in
                ReducerOrder(records: rec, rank: rank, textIDs: textIDs, placements: placements, smallGroup: smallGroup).run()
            }
        }
    }
}

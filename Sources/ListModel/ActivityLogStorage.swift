import JournalCodec

/// One recorded event as `ActivityLog` keeps it: author and item as indices into the log's
/// tables, so recording and encoding copy no strings and hash nothing but the entry id.
struct StoredEvent: Sendable {
    var entryID: CompactID
    var clock: UInt64
    var wallTime: Int64
    /// Index in the log's `AuthorTable`.
    var author: Int32
    /// Index in the log's `itemTable`, or -1 for events not about an item.
    var item: Int32
    var kind: ActivityKind
    /// For events not about an item: the new name or colour (plain or sealed), or the participant.
    var text: ListText?
}

/// An item some event names, with its text from its winning add, if an add is known.
struct HistoryItem: Sendable {
    var id: CompactID
    var text: Register<ListText>?
    /// The author index of `text`'s key, or -1 without a text.
    var textAuthor: Int32
}

extension ActivityLog {
    /// The index of `item` in `itemTable`, adding it (without text) if new.
    @inline(__always)
    mutating func internItem(_ item: CompactID) -> Int32 {
        let n = Int32(itemTable.count)
        let slot = itemIndex.findOrInsert(item, n)
        if slot == n { itemTable.append(HistoryItem(id: item, text: nil, textAuthor: -1)) }
        return slot
    }

    /// Offers an add's text to item `slot`: the lowest key wins.
    @inline(__always)
    mutating func offerText(_ slot: Int32, _ key: ChangeKey, _ author: Int32, _ text: ListText) {
        let s = Int(slot)
        if itemTable[s].text == nil {
            textCount += 1
        } else if !(key < itemTable[s].text!.key) {
            return
        }
        itemTable[s].text = Register(key: key, value: text)
        itemTable[s].textAuthor = author
    }

    /// Event `i` as recorded (item events without text).
    func event(_ i: Int) -> ActivityEvent {
        let e = stored[i]
        return ActivityEvent(entryID: e.entryID, kind: e.kind, author: authors.strings[Int(e.author)], wallTime: e.wallTime,
                             clock: HybridTime(rawValue: e.clock), item: e.item >= 0 ? itemTable[Int(e.item)].id : nil,
                             text: e.text?.plain, sealedText: e.text?.sealedText)
    }

    /// Event `i` with its item's text for item events.
    func resolved(_ i: Int) -> ActivityEvent {
        var e = event(i)
        let slot = stored[i].item
        if slot >= 0, let t = itemTable[Int(slot)].text?.value {
            e.text = t.plain
            e.sealedText = t.sealedText
        }
        return e
    }

    /// Author ranks consistent with UTF-8 byte order.
    func authorRanks() -> [Int32] {
        byteOrderRanks(authors.strings)
    }

    /// `indices` (into `stored`) in (hlc, author bytes, entry id) order. `rank` gives each
    /// author index a rank that follows byte order (every author an event names must have one).
    func sortedIndices(_ indices: [Int32], rank: [Int32]? = nil) -> [Int32] {
        let rank = rank ?? authorRanks()
        struct Key {
            var clock: UInt64
            var rank: Int32
            var index: Int32
        }
        var keys: [Key] = []
        keys.reserveCapacity(indices.count)
        stored.withUnsafeBufferPointer { p in
            for i in indices { keys.append(Key(clock: p[Int(i)].clock, rank: rank[Int(p[Int(i)].author)], index: i)) }
            keys.sort { a, b in
                if a.clock != b.clock { return a.clock < b.clock }
                if a.rank != b.rank { return a.rank < b.rank }
                return p[Int(a.index)].entryID < p[Int(b.index)].entryID
            }
        }
        return keys.map(\.index)
    }

    /// Every index into `itemTable`, in item id order.
    func sortedItems() -> [Int32] {
        struct Key {
            var high: UInt64
            var low: UInt64
            var index: Int32
            var uuid: Bool
        }
        var keys: [Key] = []
        keys.reserveCapacity(itemTable.count)
        itemTable.withUnsafeBufferPointer { p in
            for i in p.indices {
                if let (h, l) = p[i].id.uuidHalves {
                    keys.append(Key(high: h, low: l, index: Int32(i), uuid: true))
                } else {
                    keys.append(Key(high: 0, low: 0, index: Int32(i), uuid: false))
                }
            }
            keys.sort { a, b in
                if a.uuid && b.uuid { return (a.high, a.low) < (b.high, b.low) }
                return p[Int(a.index)].id < p[Int(b.index)].id
            }
        }
        return keys.map(\.index)
    }
}

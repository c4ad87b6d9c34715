import JournalLog
import JournalSync
import ListModel

/// What the service takes in an upload, entry by entry (Spec/SYNC.md §3.2), and what upload and
/// page limits count: pure rules, no state.
enum UploadPolicy {
    /// How far ahead of the service's clock an uploaded entry may be dated.
    static let maxClockSkewMillis: Int64 = 86_400_000

    /// Why the service refuses an entry from `caller` for `zone`, or nil. `latest` is the latest
    /// wall time it takes (the service's clock plus the skew allowed).
    static func refusal(_ e: JournalEntry, caller: String, zone: ZoneID, latest: Int64) -> String? {
        if let why = refusal(e, caller: caller, zone: zone) { return why }
        if e.wallTime > latest || e.clock.physicalMillis > UInt64(max(0, latest)) {
            // A clock far ahead would drag every replica's clock with it (each observes the hlc),
            // and its entry would never be old enough to compact.
            return "the entry's wall time or hybrid clock is more than a day ahead of the service's clock"
        }
        return nil
    }

    /// Why the service refuses an entry from `caller` for `zone` whatever its time, or nil.
    static func refusal(_ e: JournalEntry, caller: String, zone: ZoneID) -> String? {
        guard e.zone == zone.storeName else { return "the entry names zone \(e.zone), not \(zone.storeName)" }
        guard SyncNames.account(ofAuthor: e.author) == caller else {
            return "the entry's author \(e.author) is not this account (\(caller)) or one of its devices (\(caller):device)"
        }
        switch e.operation {
        case .join, .leave: return "participants join and leave through shares (accept, remove), not by upload"
        case .place: return "place entries are the service's compactor's"
        case .opaque(ListBase.kind, _): return "a base is a device's copy of its service's snapshot, never uploaded"
        case .opaque(SealedChange.addKind...SealedChange.recolourKind, _): if let why = sealedRefusal(e) { return why }
        case .opaque(EpochKeyRecord.kind, let body):
            do throws(CodecError) { _ = try EpochKeyRecord(decoding: body) } catch { return "the key record does not read: \(error)" }
        default: break
        }
        return JournalStore.refusal(e)
    }

    /// Why a sealed change (SEALING.md §5) is refused, or nil: its body must read, and its entry
    /// id and an add's item id must be random (version 4) UUIDs, since a text id, or one derived
    /// from the entry (FORMAT.md §7.5, version 8), can give its text away.
    static func sealedRefusal(_ e: JournalEntry) -> String? {
        guard isRandomUUID(e.id) else { return "a sealed change's entry id is a random (version 4) UUID, not \(QuotedInput.quote(e.id.description))" }
        let change: SealedChange?
        do throws(CodecError) { change = try SealedChange(e.operation) } catch { return "the sealed change does not read: \(error)" }
        if let item = change?.item, !isRandomUUID(item) {
            return "a sealed add's item id is a random (version 4) UUID, not \(QuotedInput.quote(item.description))"
        }
        return nil
    }

    /// Whether `id` is a version-4 UUID of RFC 9562's variant.
    static func isRandomUUID(_ id: CompactID) -> Bool {
        guard let (high, low) = id.uuidHalves else { return false }
        return (high >> 12) & 0xF == 4 && low >> 62 == 0b10
    }

    /// An entry's encoded bytes (FORMAT.md §6): what upload and page limits count.
    static func encodedBytes(_ e: JournalEntry) -> Int {
        var c = ByteCounter()
        withUnsafePointer(to: e) { EntryCodec.encode($0, into: &c) }
        return c.count
    }

    /// How many of `entries`, from the first, fit in `bytes` (at least one); nil when all do.
    static func entriesWithin(_ bytes: Int, _ entries: some Sequence<JournalEntry>) -> Int? {
        var total = 0, n = 0
        for e in entries {
            total += encodedBytes(e)
            if total > bytes { return max(1, n) }
            n += 1
        }
        return nil
    }
}

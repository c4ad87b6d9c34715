import JournalLog
import JournalSync

/// Each account's recovery kit (Spec/SYNC.md §5.7): its account keys sealed under a recovery
/// code only the person holds, which the service stores and hands back to the account alone,
/// a few times an hour. Kept as records of the service's own zone `_service/recovery`, the
/// newest record of an account standing, read at startup and by every node as membership is.
struct RecoveryKits: Sendable {
    static let zone = "_service/recovery"
    /// The opaque kind of a kit record.
    static let kind: UInt8 = 0x8A

    /// By account: the newest kit and its record's position. Under the service's lock.
    private(set) var kits: [String: (kit: [UInt8], at: SequenceNumber)] = [:]
    /// By account: when this node handed its kit out in the last hour. Under the service's lock.
    private var fetches: [String: [Int64]] = [:]

    /// A kit record's body: `version u8 (1) | account string | kit (length varint | bytes)`.
    static func encode(account: String, kit: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u8(1)
        w.string(account)
        w.varint(UInt64(kit.count))
        w.append(contentsOf: kit)
        return w.bytes
    }

    static func decode(_ body: [UInt8]) -> (account: String, kit: [UInt8])? {
        body.withUnsafeBytes { raw -> (String, [UInt8])? in
            var r = ByteReader(raw)
            guard (try? r.u8()) == 1, let account = try? r.string("account", limit: 64), let n = try? r.varint(),
                  n <= UInt64(RecoveryKitLimits.maxBytes), let kit = try? r.bytes(Int(n)), r.isAtEnd else { return nil }
            return (account, Array(kit))
        }
    }

    /// Applies a record of `_service/recovery` at `sequence`: the newest stands.
    mutating func observe(_ entry: JournalEntry, at sequence: SequenceNumber) {
        guard case .opaque(Self.kind, let body) = entry.operation, let (account, kit) = Self.decode(body) else { return }
        note(kit, of: account, at: sequence)
    }

    /// Notes a kit stored at `sequence`, unless a newer one is known.
    mutating func note(_ kit: [UInt8], of account: String, at sequence: SequenceNumber) {
        if let known = kits[account], known.at > sequence { return }
        kits[account] = (kit, sequence)
    }

    /// The account's kit, counted as a fetch at `now`; `rateLimited` past `limit` an hour.
    mutating func fetch(_ account: String, now: Int64, limit: Int) throws(SyncError) -> [UInt8]? {
        let recent = (fetches[account] ?? []).filter { now - $0 < 3_600_000 }
        guard recent.count < limit else {
            fetches[account] = recent
            throw .rateLimited(retryAfter: .milliseconds(3_600_000 - (now - recent[0])))
        }
        fetches[account] = recent + [now]
        return kits[account]?.kit
    }
}

/// The service's recovery kits (`SyncService.storeRecoveryKit`, `.fetchRecoveryKit`).
struct ServiceRecoveryKits: Sendable {
    let context: ServiceContext

    /// Stores the caller's kit, replacing the one before.
    func store(caller: String, _ kit: [UInt8]) throws(SyncError) {
        guard !kit.isEmpty, kit.count <= RecoveryKitLimits.maxBytes else {
            throw .invalidRequest("a recovery kit is 1–\(RecoveryKitLimits.maxBytes) bytes, not \(kit.count)")
        }
        do {
            try context.appendOwnRecord(RecoveryKits.zone, kind: RecoveryKits.kind, body: RecoveryKits.encode(account: caller, kit: kit)) { at in
                context.recovery.note(kit, of: caller, at: at)
            }
        } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
    }

    /// The caller's kit, rate-limited.
    func fetch(caller: String) throws(SyncError) -> [UInt8]? {
        try context.locked { () throws(SyncError) -> [UInt8]? in
            try context.recovery.fetch(caller, now: context.now(), limit: context.limits.maxRecoveryFetchesPerHour)
        }
    }
}

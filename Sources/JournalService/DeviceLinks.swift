import JournalLog
import JournalSync

/// Account keys on their way to a person's new device (Spec/SYNC.md §5.8): what one device of an
/// account left under a link id for another device of the same account to fetch, sealed so that
/// only that device opens it (SEALING.md §4.6). Kept as records of the service's own zone
/// `_service/links`, read by every node as membership is; what a link carries is forgotten
/// `DeviceLinkLimits.lifetimeMillis` after it was left.
struct DeviceLinks: Sendable {
    static let zone = "_service/links"
    /// The opaque kind of a link record.
    static let kind: UInt8 = 0x8B

    /// By account, then link id: what was left, and when (the record's wall time). Under the
    /// service's lock.
    private var links: [String: [[UInt8]: (sealed: [UInt8], at: Int64)]] = [:]
    /// By account: when this node took a link in the last hour. Under the service's lock.
    private var deposits: [String: [Int64]] = [:]

    /// A link record's body: `version u8 (1) | account string | link [16] | sealed (length varint | bytes)`.
    static func encode(account: String, link: [UInt8], sealed: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.u8(1)
        w.string(account)
        w.append(contentsOf: link)
        w.varint(UInt64(sealed.count))
        w.append(contentsOf: sealed)
        return w.bytes
    }

    static func decode(_ body: [UInt8]) -> (account: String, link: [UInt8], sealed: [UInt8])? {
        body.withUnsafeBytes { raw -> (String, [UInt8], [UInt8])? in
            var r = ByteReader(raw)
            guard (try? r.u8()) == 1, let account = try? r.string("account", limit: 64),
                  let link = try? r.bytes(DeviceLinkLimits.linkBytes), let n = try? r.varint(),
                  n <= UInt64(DeviceLinkLimits.maxBytes), let sealed = try? r.bytes(Int(n)), r.isAtEnd else { return nil }
            return (account, Array(link), Array(sealed))
        }
    }

    /// Why `link` and `sealed` cannot be left, or nil.
    static func refusal(link: [UInt8], sealed: [UInt8]) -> String? {
        guard link.count == DeviceLinkLimits.linkBytes else { return "a link id is \(DeviceLinkLimits.linkBytes) bytes, not \(link.count)" }
        guard !sealed.isEmpty, sealed.count <= DeviceLinkLimits.maxBytes else {
            return "what a link carries is 1–\(DeviceLinkLimits.maxBytes) bytes, not \(sealed.count)"
        }
        return nil
    }

    /// Applies a record of `_service/links`.
    mutating func observe(_ entry: JournalEntry, now: Int64) {
        guard case .opaque(Self.kind, let body) = entry.operation, let (account, link, sealed) = Self.decode(body) else { return }
        note(sealed, of: account, link: link, at: entry.wallTime, now: now)
    }

    /// Notes what was left under `link` at `at` (the newest stands), and forgets what expired.
    mutating func note(_ sealed: [UInt8], of account: String, link: [UInt8], at: Int64, now: Int64) {
        var mine = (links[account] ?? [:]).filter { now - $0.value.at < DeviceLinkLimits.lifetimeMillis }
        if now - at < DeviceLinkLimits.lifetimeMillis, (mine[link]?.at ?? .min) <= at { mine[link] = (sealed, at) }
        links[account] = mine.isEmpty ? nil : mine
    }

    /// Counts a link left at `now`: `rateLimited` past `limit` an hour.
    mutating func admit(_ account: String, now: Int64, limit: Int) throws(SyncError) {
        let recent = (deposits[account] ?? []).filter { now - $0 < 3_600_000 }
        guard recent.count < limit else {
            deposits[account] = recent
            throw .rateLimited(retryAfter: .milliseconds(3_600_000 - (now - recent[0])))
        }
        deposits[account] = recent + [now]
    }

    /// What is left under `link` for `account` and has not expired.
    func fetch(_ account: String, link: [UInt8], now: Int64) -> [UInt8]? {
        guard let left = links[account]?[link], now - left.at < DeviceLinkLimits.lifetimeMillis else { return nil }
        return left.sealed
    }
}

/// The service's device links (`SyncService.depositDeviceLink`, `.fetchDeviceLink`).
struct ServiceDeviceLinks: Sendable {
    let context: ServiceContext

    /// Leaves `sealed` under `link` for the caller's devices.
    func deposit(caller: String, link: [UInt8], sealed: [UInt8]) throws(SyncError) {
        if let why = DeviceLinks.refusal(link: link, sealed: sealed) { throw .invalidRequest(why) }
        try context.locked { () throws(SyncError) in
            try context.links.admit(caller, now: context.now(), limit: context.limits.maxDeviceLinksPerHour)
        }
        do {
            let body = DeviceLinks.encode(account: caller, link: link, sealed: sealed)
            try context.appendOwnRecord(DeviceLinks.zone, kind: DeviceLinks.kind, body: body) { _ in
                let now = context.now()
                context.links.note(sealed, of: caller, link: link, at: now, now: now)
            }
        } catch { throw .serviceBusy(retryAfter: .seconds(1)) }
    }

    /// What a device of the caller's account left under `link`, or nil.
    func fetch(caller: String, link: [UInt8]) throws(SyncError) -> [UInt8]? {
        guard link.count == DeviceLinkLimits.linkBytes else { throw .invalidRequest("a link id is \(DeviceLinkLimits.linkBytes) bytes, not \(link.count)") }
        return context.locked { context.links.fetch(caller, link: link, now: context.now()) }
    }
}

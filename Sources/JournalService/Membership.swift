import JournalLog
import JournalSync

/// Who belongs to which shared zone, and since when (Spec/SYNC.md §5). The service records each
/// change as an entry of its own zone, `_service/members` (an opaque kind, so no list reducer
/// interprets it), appended in the same atomic batch as the `join` or `leave` entry that shows
/// it in the shared zone's history. Membership is rebuilt from that zone at startup; the
/// sequences of its entries are the positions at which an account's shared database changed,
/// including for zones deleted since (whose own entries no feed serves any more).
struct Membership: Sendable {
    static let zone = "_service/members"
    static let author = "_service"
    /// The opaque operation kind of a membership record.
    static let kind: UInt8 = 0x80
    /// The opaque operation kind of a withdrawal: the invitations to a zone issued before it,
    /// to one account or to all, are void (SYNC.md §5.3).
    static let withdrawalKind: UInt8 = 0x81
    /// The opaque operation kind of an invitation issued (its zone and account, the body of a
    /// withdrawal): what lists a zone's pending invitations (SYNC.md §5.3).
    static let invitationKind: UInt8 = 0x85
    /// The opaque operation kind of a left mark: the leave record right after it was the
    /// participant's own (reason `left`). The record itself says `removed`, which a node that
    /// does not know this kind reads the same way for access (SYNC.md §5.3, §11.4).
    static let leftKind: UInt8 = 0x86
    /// By zone, by account: the position of the latest left mark.
    private(set) var leftMarks: [String: [String: SequenceNumber]] = [:]

    struct Event: Sendable, Equatable {
        var account: String
        var zone: String
        var member: Bool
        /// Why the account left (nil while it is a member).
        var reason: ZoneGoneReason?
        var sequence: SequenceNumber
    }

    /// By zone (store name), by account: the latest event.
    private(set) var current: [String: [String: Event]] = [:]
    /// By account: its events in sequence order (what its shared database's changes are made of).
    private(set) var history: [String: [Event]] = [:]
    /// By zone, by account ("" for every account): the position of the latest withdrawal.
    private(set) var withdrawn: [String: [String: SequenceNumber]] = [:]
    /// By zone, by account: the position of the latest invitation issued.
    private(set) var invited: [String: [String: SequenceNumber]] = [:]

    mutating func invite(_ account: String, to zone: String, at sequence: SequenceNumber) {
        invited[zone, default: [:]][account] = max(invited[zone]?[account] ?? 0, sequence)
    }

    /// The accounts invited to `zone` whose latest invitation still stands: not a member, not
    /// withdrawn since, and not issued before the owner removed it.
    func pendingInvitations(of zone: String) -> [String] {
        (invited[zone] ?? [:]).compactMap { account, at -> String? in
            if isMember(account, of: zone) || isWithdrawn(account, from: zone, issuedAt: at) { return nil }
            if let last = latest(account, in: zone), last.sequence > at, last.reason != .left { return nil }
            return account
        }.sorted()
    }

    /// Whether an invitation of `account` to `zone` issued at `issuedAt` was withdrawn since:
    /// for that account, or for all of them (the owner stopped sharing).
    func isWithdrawn(_ account: String, from zone: String, issuedAt: SequenceNumber) -> Bool {
        guard let byAccount = withdrawn[zone] else { return false }
        return [account, ""].contains { byAccount[$0].map { issuedAt < $0 } ?? false }
    }

    mutating func withdraw(_ account: String?, from zone: String, at sequence: SequenceNumber) {
        // Read back out of order (another node's record after this node's own), the latest stays.
        withdrawn[zone, default: [:]][account ?? "", default: 0] = max(withdrawn[zone]?[account ?? ""] ?? 0, sequence)
    }

    func isMember(_ account: String, of zone: String) -> Bool { current[zone]?[account]?.member == true }

    /// The latest event of `account` in `zone`, if it ever belonged to it.
    func latest(_ account: String, in zone: String) -> Event? { current[zone]?[account] }

    /// The accounts that belong to `zone` now.
    func members(of zone: String) -> [String] { (current[zone] ?? [:]).values.filter(\.member).map(\.account).sorted() }

    /// The account's events after `position` and at or below `horizon`.
    func events(of account: String, after position: SequenceNumber, through horizon: SequenceNumber) -> [Event] {
        guard let all = history[account] else { return [] }
        let from = all.partitionPoint { $0.sequence <= position }
        return all[from...].filter { $0.sequence <= horizon }
    }

    /// Zones the account belongs to now.
    func zones(of account: String) -> [String] {
        current.compactMap { zone, byAccount in byAccount[account]?.member == true ? zone : nil }.sorted()
    }

    /// Records of different zones may be applied out of their log order (each is applied once
    /// durable): an account's history stays sorted by position. Whether it was new (a node reads
    /// back the records it wrote when it catches up with others': those change nothing).
    @discardableResult
    mutating func record(_ e: Event) -> Bool {
        if history[e.account]?.contains(where: { $0.sequence == e.sequence }) == true { return false }
        if let now = current[e.zone]?[e.account], now.sequence > e.sequence {
            // An older event arriving late leaves the latest in place.
        } else {
            current[e.zone, default: [:]][e.account] = e
        }
        var events = history.removeValue(forKey: e.account) ?? []
        events.insert(e, at: events.partitionPoint { $0.sequence <= e.sequence })
        history[e.account] = events
        return true
    }

    /// Applies a membership entry read from `_service/members`; the membership change it made,
    /// when it was not applied already (nil for a withdrawal, or a record read back).
    mutating func observe(_ entry: JournalEntry, at sequence: SequenceNumber) -> Event? {
        guard case .opaque(let kind, let body) = entry.operation else { return nil }
        if kind == Self.kind, var e = Self.decode(body, sequence: sequence) {
            if !e.member, e.reason == .removed, leftMarks[e.zone]?[e.account] == sequence - 1 { e.reason = .left }
            return record(e) ? e : nil
        }
        if kind == Self.leftKind, let w = Self.decodeWithdrawal(body), let account = w.account {
            leftMarks[w.zone, default: [:]][account] = sequence
        }
        if kind == Self.withdrawalKind, let w = Self.decodeWithdrawal(body) { withdraw(w.account, from: w.zone, at: sequence) }
        if kind == Self.invitationKind, let w = Self.decodeWithdrawal(body), let account = w.account { invite(account, to: w.zone, at: sequence) }
        return nil
    }

    /// `version u8 (1) | zone string | account string (empty: every account)`.
    static func encodeWithdrawal(zone: String, account: String?) -> [UInt8] {
        var w = ByteWriter()
        w.u8(1)
        w.string(zone)
        w.string(account ?? "")
        return w.bytes
    }

    static func decodeWithdrawal(_ body: [UInt8]) -> (zone: String, account: String?)? {
        body.withUnsafeBytes { b -> (zone: String, account: String?)? in
            var r = ByteReader(b)
            guard (try? r.u8()) == 1, let zone = try? r.string("zone", limit: Limits.maxZoneBytes), !zone.isEmpty,
                  // Empty: every account (stopping sharing). Read back by a restarted service or
                  // another node; refusing it as an empty string forgot the withdrawal there.
                  let account = try? r.string("account", limit: 64, allowEmpty: true), r.isAtEnd else { return nil }
            return (zone, account.isEmpty ? nil : account)
        }
    }

    static func encode(account: String, zone: String, member: Bool, reason: ZoneGoneReason?) -> [UInt8] {
        var w = ByteWriter()
        w.u8(1)
        w.u8(member ? 1 : 0)
        // `left` is written as `removed` with a left mark before it (`leftKind`).
        w.u8(UInt8(ZoneGoneReason.allCases.firstIndex(of: reason == .left ? .removed : reason ?? .removed)!))
        w.string(account)
        w.string(zone)
        return w.bytes
    }

    static func decode(_ body: [UInt8], sequence: SequenceNumber) -> Event? {
        body.withUnsafeBytes { b -> Event? in
            var r = ByteReader(b)
            guard (try? r.u8()) == 1, let member = try? r.u8(), member <= 1, let reason = try? r.u8(),
                  Int(reason) < ZoneGoneReason.allCases.count,
                  let account = try? r.string("account", limit: 64), let zone = try? r.string("zone", limit: Limits.maxZoneBytes),
                  r.isAtEnd else { return nil }
            return Event(account: account, zone: zone, member: member == 1,
                         reason: member == 1 ? nil : ZoneGoneReason.allCases[Int(reason)], sequence: sequence)
        }
    }
}

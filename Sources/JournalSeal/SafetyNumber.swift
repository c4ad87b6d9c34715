import Foundation
import JournalCodec
import JournalSync

extension AccountPublicKeys {
    /// The keys' fingerprint (Spec/SEALING.md §4.4): SHA-256 of `"jlog-keys v1" | account string |
    /// identity [32] | wrap [32]`. An invitation carries the owner's (`InvitationPreview`), so the
    /// invitee's device can check that the keys the service gives for the owner are the owner's.
    public var fingerprint: [UInt8] {
        var w = ByteWriter()
        w.append(contentsOf: Array("jlog-keys v1".utf8))
        w.string(account)
        w.append(contentsOf: identity)
        w.append(contentsOf: wrap)
        return Array(SHA256.hash(data: w.bytes))
    }
}

/// The number two people compare in person to know that each device holds the other's real keys
/// (Spec/SEALING.md §4.4): 60 digits, 30 from each account's fingerprint, the two halves in the
/// accounts' byte order, so both devices show the same number. Equal numbers mean neither device
/// was given keys the other account does not hold; a changed number means a key changed.
public struct SafetyNumber: Sendable, Hashable, CustomStringConvertible {
    /// The 60 digits.
    public let digits: String

    /// The safety number of two accounts' keys (in either order).
    public init(_ a: AccountPublicKeys, _ b: AccountPublicKeys) {
        let (first, second) = a.account.utf8.lexicographicallyPrecedes(b.account.utf8) ? (a, b) : (b, a)
        digits = Self.half(first.fingerprint) + Self.half(second.fingerprint)
    }

    /// 30 digits of a fingerprint: each of its first six 5-byte chunks, big-endian, modulo 100,000.
    static func half(_ fingerprint: [UInt8]) -> String {
        (0..<6).map { i in
            let chunk = fingerprint[(i * 5)..<(i * 5 + 5)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let n = String(chunk % 100_000)
            return String(repeating: "0", count: 5 - n.count) + n
        }.joined()
    }

    /// The digits in twelve groups of five, as people read them out.
    public var description: String {
        stride(from: 0, to: 60, by: 5).map { i in String(digits.dropFirst(i).prefix(5)) }.joined(separator: " ")
    }
}

/// The keys a device has pinned for each account it met (Spec/SEALING.md §4.3–§4.4): the first
/// keys it fetched for the account (trust on first use), unless a safety number compared in
/// person, or an invitation's fingerprint, says otherwise. A key that is not the pinned one is
/// never wrapped to (`SealedListKeys`) until someone decides to pin it again. Kept by the app
/// (`encoded`), next to the account's own keys.
public struct KeyPins: Sendable, Equatable {
    /// By account.
    public private(set) var keys: [String: AccountPublicKeys] = [:]
    /// By account, the keys pinned before the current ones, oldest first: the key records
    /// an account signed with them still verify (`keys(of:keyID:)`).
    public private(set) var former: [String: [AccountPublicKeys]] = [:]

    /// No account pinned yet.
    public init() {}

    /// What pinning keys found.
    public enum Outcome: Sendable, Equatable {
        /// First keys for the account: pinned now.
        case pinned
        /// The keys pinned already.
        case same
        /// Other keys than those pinned, which stay pinned: compare safety numbers before
        /// `repin(_:)`.
        case changed(pinned: AccountPublicKeys)
        /// New keys the pinned ones vouched for (SEALING.md §4.7): pinned now in their place.
        case followed(from: AccountPublicKeys)
    }

    /// Pins `k` when its account has no keys pinned yet.
    public mutating func pin(_ k: AccountPublicKeys) -> Outcome {
        guard let pinned = keys[k.account] else {
            keys[k.account] = k
            return .pinned
        }
        return pinned == k ? .same : .changed(pinned: pinned)
    }

    /// Pins `k` in place of what its account had (after a safety number was compared); the
    /// keys it replaces are kept as former keys.
    public mutating func repin(_ k: AccountPublicKeys) {
        if let before = keys[k.account], before != k, !(former[k.account] ?? []).contains(before) { former[k.account, default: []].append(before) }
        keys[k.account] = k
    }

    /// Pins the keys the directory gave (`SyncService.fetchAccountKeys`): its account's first
    /// keys; or, in place of those pinned, keys they vouched for (`followed`, no person asked);
    /// any other keys are `changed` and stay unpinned.
    public mutating func follow(_ published: PublishedAccountKeys) -> Outcome? {
        guard let k = AccountPublicKeys(published) else { return nil }
        guard let pinned = keys[k.account], pinned != k, pinned.vouches(for: published) else { return pin(k) }
        repin(k)
        return .followed(from: pinned)
    }

    /// `pinned(_:)`'s shape for `SealedListKeys` and `ListKeyring`.
    public func pinned(_ account: String) -> AccountPublicKeys? { keys[account] }

    /// The keys of `account` with the key id `keyID`, pinned now or before.
    public func keys(of account: String, keyID: [UInt8]) -> AccountPublicKeys? {
        ([keys[account]].compactMap { $0 } + (former[account] ?? [])).first { $0.keyID == keyID }
    }

    /// `count varint | (account string | identity [32] | wrap [32]) × count` for the pins, by
    /// account, then the same for the former keys, by account and, within one, oldest first.
    public var encoded: [UInt8] {
        var w = ByteWriter()
        func list(_ all: [AccountPublicKeys]) {
            w.varint(UInt64(all.count))
            for k in all {
                w.string(k.account)
                w.append(contentsOf: k.identity)
                w.append(contentsOf: k.wrap)
            }
        }
        let accounts = { (d: [String: Any]) in d.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
        list(accounts(keys).map { keys[$0]! })
        list(accounts(former).flatMap { former[$0]! })
        return w.bytes
    }

    /// Pins read back from `encoded`; nil for bytes that are not pins in that one form.
    public init?(decoding bytes: [UInt8]) {
        let read: ([AccountPublicKeys], [AccountPublicKeys])? = bytes.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            func list() -> [AccountPublicKeys]? {
                guard let count = try? r.varint(), count <= 100_000 else { return nil }
                var out: [AccountPublicKeys] = []
                for _ in 0..<count {
                    guard let account = try? r.string("account", limit: 64), let identity = try? r.bytes(32), let wrap = try? r.bytes(32),
                          let k = AccountPublicKeys(account: account, identity: Array(identity), wrap: Array(wrap)) else { return nil }
                    out.append(k)
                }
                return out
            }
            guard let pins = list(), let formers = list(), r.isAtEnd else { return nil }
            return (pins, formers)
        }
        guard let (pins, formers) = read else { return nil }
        for k in pins {
            guard keys[k.account] == nil else { return nil }
            keys[k.account] = k
        }
        for k in formers { former[k.account, default: []].append(k) }
        // One form only: sorted by account, every varint in its shortest form.
        guard encoded == bytes else { return nil }
    }
}

extension KeyPins {
    /// Pins the keys the service gave for an invitation's owner, checked against the
    /// fingerprint the owner's device put in the invitation (`InvitationPreview.ownerKeys`):
    /// nil, and nothing pinned, when they differ (the service gave keys that are not the
    /// owner's). Keys the fingerprint vouches for replace any pinned before.
    public mutating func pin(_ k: AccountPublicKeys, vouchedBy preview: InvitationPreview) -> Outcome? {
        guard let vouched = preview.ownerKeys, preview.owner == k.account else { return pin(k) }
        guard vouched == k.fingerprint else { return nil }
        let before = keys[k.account]
        repin(k)
        return before == nil ? .pinned : before == k ? .same : .changed(pinned: before!)
    }
}

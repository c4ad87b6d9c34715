import JournalCodec

// A list's name as every layer above the log takes it. The log itself names zones by strings
// (`JournalStore`); a list that syncs, or may later, is `owner/name` in every store that holds it.

/// A list on the service: a zone owned by one account (CKRecordZone.ID: zone name and owner).
/// Its `storeName`, `owner/name`, is the zone's name in every store that holds it, the service's
/// and every device's, so an entry's bytes are the same everywhere (Spec/SYNC.md §1).
public struct ZoneID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The account that owns the zone (CKRecordZone.ID.ownerName).
    public let owner: String
    /// The zone's name within its owner's zones (CKRecordZone.ID.zoneName).
    public let name: String

    /// Nil unless `owner` is an account name (`SyncNames.accountRefusal`) and `name` a zone name
    /// that, as `owner/name`, fits a store's zone (1–255 bytes, no control characters).
    public init?(owner: String, name: String) {
        guard Self.refusal(owner: owner, name: name) == nil else { return nil }
        self.owner = owner
        self.name = name
    }

    /// Why `owner` and `name` name no zone, or nil when they do.
    public static func refusal(owner: String, name: String) -> String? {
        if let why = SyncNames.accountRefusal(owner) { return why }
        guard !name.isEmpty else { return "a list's name is not empty" }
        if name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            return "a list's name has no control characters (U+0000–U+001F, U+007F)"
        }
        let room = Limits.maxZoneBytes - owner.utf8.count - 1
        if name.utf8.count > room { return "a list's name of account \(owner) is at most \(room) bytes of UTF-8, not \(name.utf8.count)" }
        if let why = SealedZone.nameRefusal(name) { return why }
        return JournalStore.zoneNameRefusal(owner + "/" + name)
    }

    /// `owner/name` as a store names the zone; nil for a name no service zone has.
    public init?(storeName: String) {
        guard let slash = storeName.firstIndex(of: "/") else { return nil }
        self.init(owner: String(storeName[..<slash]), name: String(storeName[storeName.index(after: slash)...]))
    }

    /// `owner/name`: the zone's name in every store that holds it.
    public var storeName: String { owner + "/" + name }
    public var description: String { storeName }
    public static func < (a: ZoneID, b: ZoneID) -> Bool { a.storeName < b.storeName }
}

/// The names a service accepts.
public enum SyncNames {
    /// Why `name` is not an account name (1–64 bytes of letters, digits, `.`, `_`, `-`), or nil.
    public static func accountRefusal(_ name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 64 else { return "an account name is 1–64 bytes" }
        guard name.utf8.allSatisfy({ c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F || c == 0x2D
        }) else { return "an account name holds only letters, digits, '.', '_' and '-'" }
        // The service's own zones are `_service/…`: no account may own them.
        guard !name.hasPrefix("_") else { return "an account name does not start with '_'" }
        // `.` and `..` in a URL path are dot-segments a client or proxy may rewrite.
        guard !name.utf8.allSatisfy({ $0 == 0x2E }) else { return "an account name is not only dots" }
        return nil
    }

    /// The account an entry's author belongs to: `account` or `account:device` (Spec/SYNC.md §1).
    public static func account(ofAuthor author: String) -> String {
        author.firstIndex(of: ":").map { String(author[..<$0]) } ?? author
    }
}

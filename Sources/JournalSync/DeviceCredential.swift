import JournalLog

/// A device's credential for a sync server (Spec/SYNC.md §9.2): `jlc1.ACCOUNT.ID.SECRET`, where ID
/// names the credential (8 random bytes) and SECRET proves it (32 random bytes), both unpadded
/// base64url. The server keeps only SHA-256(SECRET); the device keeps the whole text, in a file
/// only its user reads. The account is in the clear so a client knows who it is without asking.
public struct DeviceCredential: Sendable, Hashable, CustomStringConvertible {
    public static let prefix = "jlc1"
    public let account: String
    public let id: String
    public let secret: String

    public init(account: String, id: String, secret: String) {
        self.account = account
        self.id = id
        self.secret = secret
    }

    /// Nil unless `text` has the form above exactly (an account name, 11 and 43 base64url characters).
    public init?(_ text: String) {
        guard text.utf8.count <= 200 else { return nil }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == Self.prefix, SyncNames.accountRefusal(String(parts[1])) == nil,
              Base64URL.isEncoding(parts[2].utf8, ofBytes: 8), Base64URL.isEncoding(parts[3].utf8, ofBytes: 32) else { return nil }
        self.init(account: String(parts[1]), id: String(parts[2]), secret: String(parts[3]))
    }

    /// A new credential for `account`, from the system's random source.
    public static func issue(for account: String) -> DeviceCredential {
        var g = SystemRandomNumberGenerator()
        let id = (0..<8).map { _ in UInt8.random(in: 0 ... 255, using: &g) }
        let secret = (0..<32).map { _ in UInt8.random(in: 0 ... 255, using: &g) }
        return DeviceCredential(account: account, id: Base64URL.encode(id), secret: Base64URL.encode(secret))
    }

    public var text: String { [Self.prefix, account, id, secret].joined(separator: ".") }
    /// Never the secret: what logs and listings show.
    public var description: String { "\(Self.prefix).\(account).\(id).…" }
}

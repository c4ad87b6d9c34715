import JournalLog
import JournalSync

/// A device's credential for a sync server (Spec/SYNC.md §9.2): `jlc1.ACCOUNT.ID.SECRET`, where ID
/// names the credential (8 random bytes) and SECRET proves it (32 random bytes), both unpadded
/// base64url. The server keeps only SHA-256(SECRET); the device keeps the whole text, in a file
/// only its user reads. The account is in the clear so a client knows who it is without asking.
public struct DeviceCredential: Sendable, Hashable, CustomStringConvertible {
    /// The text form's leading tag, naming this credential format's version.
    public static let prefix = "jlc1"
    /// The account the credential signs in as.
    public let account: String
    public let id: String
    /// The base64url secret that proves the credential; never log or display it.
    public let secret: String

    /// A credential from its parts, which are taken as given and not checked.
    public init(account: String, id: String, secret: String) {
        self.account = account
        self.id = id
        self.secret = secret
    }

    /// Nil unless `text` has the form above exactly (an account name, 11 and 43 base64url characters).
    public init?(_ text: String) {
        // An account name may hold `.`, base64url never does: the id and the secret are what
        // follows the last two dots. Every request presents one, so no array of parts is built.
        let u = text.utf8
        guard u.count <= 200, let d1 = u.firstIndex(of: 0x2E), let d3 = u.lastIndex(of: 0x2E), d1 < d3,
              let d2 = u[..<d3].lastIndex(of: 0x2E), d1 < d2 else { return nil }
        let account = text[u.index(after: d1)..<d2], id = text[u.index(after: d2)..<d3], secret = text[u.index(after: d3)...]
        guard text[..<d1] == Self.prefix, SyncNames.accountRefusal(String(account)) == nil,
              Base64URL.isEncoding(id.utf8, ofBytes: 8), Base64URL.isEncoding(secret.utf8, ofBytes: 32) else { return nil }
        self.init(account: String(account), id: String(id), secret: String(secret))
    }

    /// A new credential for `account`, from the system's random source.
    public static func issue(for account: String) -> DeviceCredential {
        var g = SystemRandomNumberGenerator()
        let id = (0..<8).map { _ in UInt8.random(in: 0 ... 255, using: &g) }
        let secret = (0..<32).map { _ in UInt8.random(in: 0 ... 255, using: &g) }
        return DeviceCredential(account: account, id: Base64URL.encode(id), secret: Base64URL.encode(secret))
    }

    /// The full `jlc1.ACCOUNT.ID.SECRET` text, to store on the device and present to the server.
    public var text: String { [Self.prefix, account, id, secret].joined(separator: ".") }
    /// Never the secret: what logs and listings show.
    public var description: String { "\(Self.prefix).\(account).\(id).…" }
}

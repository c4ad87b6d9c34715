/// An account's public keys as its devices publish them to the service's key directory
/// (Spec/SEALING.md §4.1, Spec/SYNC.md §5.6): the Ed25519 identity key that signs the key records
/// its devices write, and the X25519 wrap key to which sealed lists' keys are wrapped for it.
/// Public by nature: the service hands them to any account that asks (an owner wraps a list's
/// key to an invitee before it joins), and checks key records against them; it never holds the
/// private halves. A device pins what it first fetched and compares safety numbers in person.
public struct PublishedAccountKeys: Sendable, Hashable {
    /// The account the keys are of.
    public var account: String
    /// The Ed25519 public key, 32 bytes.
    public var identity: [UInt8]
    /// The X25519 public key, 32 bytes.
    public var wrap: [UInt8]

    /// Keys as published or fetched; the service checks them (`publishAccountKeys`).
    public init(account: String, identity: [UInt8], wrap: [UInt8]) {
        self.account = account
        self.identity = identity
        self.wrap = wrap
    }
}

import JournalLog

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

    /// For keys that replace the account's earlier ones: the earlier identity key's Ed25519
    /// signature (64 bytes) over `vouchedBytes`, which lets every device that pinned the earlier
    /// keys follow the change without asking anyone; nil for an account's first keys, and for
    /// keys that replace lost ones (a reset, which a person re-verifies; Spec/SEALING.md §4.7).
    public var vouch: [UInt8]?

    /// Keys as published or fetched; the service checks them (`publishAccountKeys`).
    public init(account: String, identity: [UInt8], wrap: [UInt8], vouch: [UInt8]? = nil) {
        self.account = account
        self.identity = identity
        self.wrap = wrap
        self.vouch = vouch
    }

    /// What the earlier identity key signs to vouch for these keys:
    /// `"jlog-keys-next v1" | account string | identity [32] | wrap [32]`.
    public var vouchedBytes: [UInt8] {
        var w = ByteWriter()
        w.append(contentsOf: Array("jlog-keys-next v1".utf8))
        w.string(account)
        w.append(contentsOf: identity)
        w.append(contentsOf: wrap)
        return w.bytes
    }

    /// Whether these are the same two keys as `other`'s (whatever vouches for either).
    public func sameKeys(as other: PublishedAccountKeys) -> Bool {
        account == other.account && identity == other.identity && wrap == other.wrap
    }
}

import JournalCodec
import JournalSync

/// The secret of a sealed list's link invitation (Spec/SEALING.md §4.8): 32 random bytes the
/// owner's device draws and puts in the invitation's fragment (`InvitationPreview.linkSecret`),
/// which travels from owner to invitee and never to the service. Under it the owner's device
/// leaves the current epoch's key in the list (`keyEntry`), so that the invitee reads the list as
/// soon as it joins; the invitee answers with its account keys under a MAC of the same secret
/// (`proof`), so that the owner's device pins them (`verifiedKeys`) without trusting the service's
/// directory. The join owes the list a rotation: a link that leaks later opens nothing written
/// after it was used.
public struct LinkSecret: Sendable, Hashable {
    /// The secret's 32 bytes.
    public let bytes: [UInt8]

    /// A new random secret.
    public static func random() -> LinkSecret { LinkSecret(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) })! }

    /// A secret of 32 bytes; nil otherwise.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// The link's id, which names its entries: the first 16 bytes of
    /// `SHA-256("jlog-link-id v1" | secret)`. Says nothing of the secret.
    public var linkID: [UInt8] { Array(SHA256.hash(data: Array("jlog-link-id v1".utf8) + bytes).prefix(LinkEntries.linkIDBytes)) }

    /// The key that seals a link key for `zone`:
    /// `HKDF-SHA256(ikm: secret, salt: "jlog-link-secret v1", info: zone string, 32)`.
    func sealingKey(zone: String) -> SymmetricKey {
        var w = ByteWriter()
        w.string(zone)
        return HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: bytes), salt: Array("jlog-link-secret v1".utf8),
                                      info: w.bytes, outputByteCount: 32)
    }

    /// `"JLS1-link" | zone string | epoch varint | linkID [16]`: what a link key is bound to.
    func keyData(zone: String, epoch: UInt64) -> [UInt8] {
        var w = ByteWriter()
        w.append(contentsOf: Array("JLS1-link".utf8))
        w.string(zone)
        w.varint(epoch)
        w.append(contentsOf: linkID)
        return w.bytes
    }

    /// The link key entry (kind 0x8C) that leaves `key` in `zone` under this secret. `nonce` is
    /// random unless given (vectors only).
    public func keyEntry(_ key: ListKey, zone: String, nonce: [UInt8]? = nil) throws(SealError) -> EntryOperation {
        do {
            let n = try nonce.map { try AES.GCM.Nonce(data: $0) } ?? AES.GCM.Nonce()
            let box = try AES.GCM.seal(key.material, using: sealingKey(zone: zone), nonce: n, authenticating: keyData(zone: zone, epoch: key.epoch))
            let entry = LinkEntries.Key(epoch: key.epoch, linkID: linkID, sealed: Array(box.nonce) + Array(box.ciphertext) + Array(box.tag))
            return .opaque(kind: LinkEntries.keyKind, body: entry.body)
        } catch { throw .badKey("the link key could not be sealed: \(error)") }
    }

    /// The epoch key a link key entry of `zone` holds; `cannotOpen` for one of another link,
    /// list or epoch, or changed bytes.
    public func openKey(_ body: [UInt8], zone: String) throws(SealError) -> ListKey {
        guard let entry = LinkEntries.Key(body: body), entry.linkID == linkID else { throw .cannotOpen }
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: entry.sealed[..<12]), ciphertext: entry.sealed[12..<44], tag: entry.sealed[44...])
            let material = try AES.GCM.open(box, using: sealingKey(zone: zone), authenticating: keyData(zone: zone, epoch: entry.epoch))
            guard let key = ListKey(epoch: entry.epoch, material: Array(material)) else { throw SealError.cannotOpen }
            return key
        } catch { throw .cannotOpen }
    }

    /// The newest epoch key any of `entries` (a list's, in its order) leaves under this secret;
    /// nil when none does.
    public func newestKey(in entries: [JournalEntry], zone: String) -> ListKey? {
        entries.compactMap { e -> ListKey? in
            guard case .opaque(LinkEntries.keyKind, let body) = e.operation else { return nil }
            return try? openKey(body, zone: zone)
        }.max { $0.epoch < $1.epoch }
    }

    /// The MAC of a proof: `HMAC-SHA256(secret, "jlog-link-proof v1" | zone string | account
    /// string | identity [32] | wrap [32])`.
    func mac(_ keys: AccountPublicKeys, zone: String) -> [UInt8] {
        var w = ByteWriter()
        w.append(contentsOf: Array("jlog-link-proof v1".utf8))
        w.string(zone)
        w.string(keys.account)
        w.append(contentsOf: keys.identity)
        w.append(contentsOf: keys.wrap)
        return Array(HMAC<SHA256>.authenticationCode(for: w.bytes, using: SymmetricKey(data: bytes)))
    }

    /// The link proof entry (kind 0x8D) by which the invitee's device vouches for `keys` (its
    /// account's) with this secret.
    public func proof(_ keys: AccountPublicKeys, zone: String) -> EntryOperation {
        .opaque(kind: LinkEntries.proofKind, body: LinkEntries.Proof(linkID: linkID, account: keys.account, identity: keys.identity,
                                                                     wrap: keys.wrap, mac: mac(keys, zone: zone)).body)
    }

    /// The keys a link proof of `zone` vouches for under this secret; nil for a proof of another
    /// link or list, or whose MAC is not this secret's.
    public func verifiedKeys(_ body: [UInt8], zone: String) -> AccountPublicKeys? {
        guard let p = LinkEntries.Proof(body: body), p.linkID == linkID,
              let keys = AccountPublicKeys(account: p.account, identity: p.identity, wrap: p.wrap) else { return nil }
        let expected = mac(keys, zone: zone)
        // Compared in constant time: the MAC is a secret's.
        guard expected.count == p.mac.count, zip(expected, p.mac).reduce(0, { $0 | ($1.0 ^ $1.1) }) == 0 else { return nil }
        return keys
    }
}

/// The two entry kinds of a sealed list's link invitation (Spec/SEALING.md §4.8), as far as the
/// service reads them: from their clear fields alone, with no key.
///
/// - A **link key** (opaque kind 0x8C), by the owner's device: an epoch's key sealed under a secret
///   that travels in the invitation's fragment only. `version u8 (1) | epoch varint | linkID [16]
///   | nonce [12] | ciphertext [32] | tag [16]`.
/// - A **link proof** (opaque kind 0x8D), by the invitee's device: its account's public keys and a
///   MAC under the same secret, which lets the owner's device pin them without trusting the
///   service. `version u8 (1) | linkID [16] | account string | identity [32] | wrap [32] | mac [32]`.
public enum LinkEntries {
    /// The opaque kind of a link key.
    public static let keyKind: UInt8 = 0x8C
    /// The opaque kind of a link proof.
    public static let proofKind: UInt8 = 0x8D
    /// A link's id: 16 bytes.
    public static let linkIDBytes = 16
    /// A link key's sealed epoch key: nonce, ciphertext and tag.
    public static let sealedKeyBytes = 12 + 32 + 16

    /// A link key's clear fields.
    public struct Key: Sendable, Equatable {
        /// The epoch whose key it holds.
        public var epoch: UInt64
        /// The link's id (`LinkSecret.linkID` in JournalSeal).
        public var linkID: [UInt8]
        /// Nonce, ciphertext and tag.
        public var sealed: [UInt8]

        /// A link key of its fields.
        public init(epoch: UInt64, linkID: [UInt8], sealed: [UInt8]) {
            self.epoch = epoch
            self.linkID = linkID
            self.sealed = sealed
        }

        /// The entry's body.
        public var body: [UInt8] {
            var w = ByteWriter()
            w.u8(1)
            w.varint(epoch)
            w.append(contentsOf: linkID)
            w.append(contentsOf: sealed)
            return w.bytes
        }

        /// A link key's body read; nil unless it is one in its one form.
        public init?(body: [UInt8]) {
            let read: Key? = body.withUnsafeBytes { raw in
                var r = ByteReader(raw)
                guard (try? r.u8()) == 1, let epoch = try? r.varint(), epoch >= 1, let id = try? r.bytes(LinkEntries.linkIDBytes),
                      let sealed = try? r.bytes(LinkEntries.sealedKeyBytes), r.isAtEnd else { return nil }
                return Key(epoch: epoch, linkID: Array(id), sealed: Array(sealed))
            }
            guard let read, read.body == body else { return nil }
            self = read
        }
    }

    /// A link proof's clear fields.
    public struct Proof: Sendable, Equatable {
        /// The link's id.
        public var linkID: [UInt8]
        /// The account whose keys it proves: its writer's.
        public var account: String
        /// The account's Ed25519 public key, 32 bytes.
        public var identity: [UInt8]
        /// The account's X25519 public key, 32 bytes.
        public var wrap: [UInt8]
        /// HMAC-SHA256 under the link's secret, 32 bytes.
        public var mac: [UInt8]

        /// A link proof of its fields.
        public init(linkID: [UInt8], account: String, identity: [UInt8], wrap: [UInt8], mac: [UInt8]) {
            self.linkID = linkID
            self.account = account
            self.identity = identity
            self.wrap = wrap
            self.mac = mac
        }

        /// The entry's body.
        public var body: [UInt8] {
            var w = ByteWriter()
            w.u8(1)
            w.append(contentsOf: linkID)
            w.string(account)
            w.append(contentsOf: identity)
            w.append(contentsOf: wrap)
            w.append(contentsOf: mac)
            return w.bytes
        }

        /// A link proof's body read; nil unless it is one in its one form.
        public init?(body: [UInt8]) {
            let read: Proof? = body.withUnsafeBytes { raw in
                var r = ByteReader(raw)
                guard (try? r.u8()) == 1, let id = try? r.bytes(LinkEntries.linkIDBytes), let account = try? r.string("account", limit: 64),
                      let identity = try? r.bytes(32), let wrap = try? r.bytes(32), let mac = try? r.bytes(32), r.isAtEnd else { return nil }
                return Proof(linkID: Array(id), account: account, identity: Array(identity), wrap: Array(wrap), mac: Array(mac))
            }
            guard let read, read.body == body else { return nil }
            self = read
        }
    }
}

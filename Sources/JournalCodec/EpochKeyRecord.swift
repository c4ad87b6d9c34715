/// A sealed list's record of one epoch's key (Spec/SEALING.md §4): who began the epoch and why,
/// the key wrapped to each member account's public key, the back link to the key before, and
/// the creator's signature. The format only, with no cryptography: a service reads who it wraps
/// to (every current member, no one else) and the epoch (one more than the last) without any key;
/// `JournalSeal` makes, verifies and opens them. It travels in the zone as opaque kind 0x87 and
/// is never purged.
public struct EpochKeyRecord: Sendable, Hashable {
    /// The opaque kind that carries a record in its zone.
    public static let kind: UInt8 = 0x87
    /// The record's format version (its first byte).
    public static let version: UInt8 = 1
    /// Wraps in one record: a list has at most 100 participants and an owner.
    public static let maxWraps = 101
    /// HPKE's encapsulated key (X25519) and the wrapped 32-byte key with its 16-byte tag.
    public static let encapsulatedBytes = 32, wrappedBytes = 48, keyIDBytes = 16, backLinkBytes = 60, signatureBytes = 64

    /// Why the epoch began.
    public enum Reason: UInt8, Sendable, CaseIterable {
        /// The list was created sealed (epoch 1).
        case creation = 0
        /// The owner removed a participant.
        case removal = 1
        /// A participant left.
        case leave = 2
        /// Sharing stopped.
        case sharingStopped = 3
        /// A member account's keys changed (a device lost).
        case accountKeysChanged = 4
        /// An invitation that carried the key was withdrawn, or a link's secret used.
        case withdrawal = 5
        /// Members joined who hold no key yet: the new epoch wraps to them too.
        case joined = 6
    }

    /// The epoch key wrapped to one member account's wrap key.
    public struct Wrap: Sendable, Hashable {
        /// The member account wrapped to.
        public var account: String
        /// The first 16 bytes of SHA-256 of the account's X25519 wrap public key.
        public var keyID: [UInt8]
        /// HPKE's encapsulated key (`enc`), 32 bytes.
        public var encapsulated: [UInt8]
        /// The epoch key sealed by HPKE, 48 bytes.
        public var wrapped: [UInt8]

        /// A wrap from its parts (`EpochKeys` makes them).
        public init(account: String, keyID: [UInt8], encapsulated: [UInt8], wrapped: [UInt8]) {
            self.account = account
            self.keyID = keyID
            self.encapsulated = encapsulated
            self.wrapped = wrapped
        }
    }

    /// The epoch the record begins (1, 2, …).
    public var epoch: UInt64
    /// Why it began.
    public var reason: Reason
    /// The member account whose device began the epoch, and its key id.
    public var creator: String
    /// The key id of the creator's wrap key, naming which of its keys signed.
    public var creatorKeyID: [UInt8]
    /// One per member account, in the order written (sorted by account).
    public var wraps: [Wrap]
    /// The key before, sealed under this one (SEALING.md §3); none for epoch 1.
    public var backLink: [UInt8]?
    /// Ed25519, by the creator's identity key, over `signedBytes(zone:)`.
    public var signature: [UInt8]

    /// A record from its parts (`EpochKeys.record` makes and signs them).
    public init(epoch: UInt64, reason: Reason, creator: String, creatorKeyID: [UInt8], wraps: [Wrap],
                backLink: [UInt8]?, signature: [UInt8]) {
        self.epoch = epoch
        self.reason = reason
        self.creator = creator
        self.creatorKeyID = creatorKeyID
        self.wraps = wraps
        self.backLink = backLink
        self.signature = signature
    }

    /// What the creator signs: `"JLS1-epoch" | zone string |` the record's bytes before the signature.
    public func signedBytes(zone: String) -> [UInt8] {
        var w = ByteWriter()
        w.append(contentsOf: Array("JLS1-epoch".utf8))
        w.string(zone)
        return w.bytes + unsigned
    }

    /// `version u8 | epoch varint | reason u8 | creator string | creatorKeyID [16] | wrapCount varint
    /// | wraps: account string | keyID [16] | encapsulated [32] | wrapped [48] | hasBackLink u8 |
    /// [backLink [60]]`.
    var unsigned: [UInt8] {
        var w = ByteWriter()
        w.u8(Self.version)
        w.varint(epoch)
        w.u8(reason.rawValue)
        w.string(creator)
        w.append(contentsOf: creatorKeyID)
        w.varint(UInt64(wraps.count))
        for wrap in wraps {
            w.string(wrap.account)
            w.append(contentsOf: wrap.keyID)
            w.append(contentsOf: wrap.encapsulated)
            w.append(contentsOf: wrap.wrapped)
        }
        w.u8(backLink == nil ? 0 : 1)
        if let backLink { w.append(contentsOf: backLink) }
        return w.bytes
    }

    /// The record's body: the unsigned fields, then `signature [64]`.
    public var encoded: [UInt8] { unsigned + signature }

    /// A record from its body, or why it is not one: an unknown version or reason, epoch 0, a
    /// back link on epoch 1 or none after it, more than `maxWraps` wraps, wraps not sorted by
    /// account or naming one twice, fields of the wrong size, a varint not in its shortest form,
    /// bytes after the signature.
    public init(decoding bytes: [UInt8]) throws(CodecError) {
        var record: EpochKeyRecord?
        var failure: CodecError?
        bytes.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            do throws(CodecError) { record = try Self.read(&r) } catch { failure = error }
        }
        if let failure { throw failure }
        // One form only: varints (epoch, counts, lengths) in their shortest form.
        guard record!.encoded == bytes else { throw CodecError(.invalidValue(field: "key record (a varint not in its shortest form)"), at: 0) }
        self = record!
    }

    static func read(_ r: inout ByteReader) throws(CodecError) -> EpochKeyRecord {
        let version = try r.u8()
        guard version == Self.version else { throw CodecError(.unsupportedEncodingVersion(version), at: 0) }
        var at = r.offset
        let epoch = try r.varint()
        guard epoch >= 1 else { throw CodecError(.invalidValue(field: "epoch"), at: at) }
        at = r.offset
        guard let reason = Reason(rawValue: try r.u8()) else { throw CodecError(.invalidValue(field: "reason"), at: at) }
        let creator = try r.string("creator", limit: 64)
        let creatorKeyID = Array(try r.bytes(Self.keyIDBytes))
        at = r.offset
        let count = try r.varint()
        guard count >= 1, count <= UInt64(Self.maxWraps) else { throw CodecError(.invalidValue(field: "wrap count"), at: at) }
        var wraps: [Wrap] = []
        for _ in 0..<count {
            at = r.offset
            let account = try r.string("account", limit: 64)
            if let last = wraps.last, !(last.account.utf8.lexicographicallyPrecedes(account.utf8)) {
                throw CodecError(.invalidValue(field: "wraps order"), at: at)
            }
            wraps.append(Wrap(account: account, keyID: Array(try r.bytes(Self.keyIDBytes)),
                              encapsulated: Array(try r.bytes(Self.encapsulatedBytes)), wrapped: Array(try r.bytes(Self.wrappedBytes))))
        }
        at = r.offset
        let hasBackLink = try r.u8()
        guard hasBackLink <= 1, (hasBackLink == 1) == (epoch > 1) else { throw CodecError(.invalidValue(field: "back link"), at: at) }
        let backLink = hasBackLink == 1 ? Array(try r.bytes(Self.backLinkBytes)) : nil
        let signature = Array(try r.bytes(Self.signatureBytes))
        guard r.isAtEnd else { throw CodecError(.trailingBytes(r.remaining), at: r.offset) }
        return EpochKeyRecord(epoch: epoch, reason: reason, creator: creator, creatorKeyID: creatorKeyID, wraps: wraps,
                              backLink: backLink, signature: signature)
    }
}

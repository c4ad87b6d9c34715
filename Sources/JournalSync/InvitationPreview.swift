import JournalLog

/// What an invitation tells its invitee before accepting (Part 5: "Alice invites you to
/// Weekly"): the owner and the list's name, as the owner's device saw them. The owner's device
/// attaches it to the service's invitation as a fragment, `#jlp1.` and base64url of
/// `version u8 (1) | owner string | name string`, or, for a sealed list, `version u8 (2) | owner
/// string | name string | owner's key fingerprint [32]` (Spec/SYNC.md §5.2, SEALING.md §4.4): the
/// invitee's device checks the owner's keys the service gives against it; a sealed list's link
/// invitation, `version u8 (3) | owner string | name string | fingerprint [32] | link secret [32]`
/// (SEALING.md §4.8): the invitee's device opens the list's key with the secret. The invitee's device reads
/// it locally and strips it before accepting. The service never receives it: the name travels
/// from owner to invitee only (compatible with end-to-end encrypted names).
public struct InvitationPreview: Sendable, Equatable {
    /// The account that owns the list and invites.
    public var owner: String
    /// The list's name when the invitation was made (at most `maxNameBytes` of it).
    public var listName: String
    /// The fingerprint of the owner's account keys (`AccountPublicKeys.fingerprint` in
    /// JournalSeal, 32 bytes), for a sealed list; nil for a plain one.
    public var ownerKeys: [UInt8]?
    /// A link invitation's secret (`LinkSecret` in JournalSeal, 32 bytes), with `ownerKeys`; nil
    /// for any other invitation.
    public var linkSecret: [UInt8]?

    /// The most bytes of the name a preview carries (cut at a character boundary).
    public static let maxNameBytes = 256
    static let marker = "#jlp1."

    /// A preview of `owner`'s list `listName`; `ownerKeys`: the owner's key fingerprint (32
    /// bytes), for a sealed list.
    public init(owner: String, listName: String, ownerKeys: [UInt8]? = nil, linkSecret: [UInt8]? = nil) {
        precondition(ownerKeys == nil || ownerKeys!.count == 32, "a key fingerprint is 32 bytes")
        precondition(linkSecret == nil || (linkSecret!.count == 32 && ownerKeys != nil), "a link secret is 32 bytes, of a sealed list's invitation")
        self.owner = owner
        self.ownerKeys = ownerKeys
        self.linkSecret = linkSecret
        var name = Substring(listName)
        while name.utf8.count > Self.maxNameBytes { name = name.dropLast() }
        self.listName = String(name)
    }

    /// The preview `invitation` carries, or nil when it carries none (or one that does not read).
    public init?(of invitation: ShareInvitation) {
        guard let at = invitation.text.range(of: Self.marker),
              let bytes = Base64URL.decode(String(invitation.text[at.upperBound...])), bytes.count <= 1_024 else { return nil }
        let read: (String, String, [UInt8]?, [UInt8]?)? = bytes.withUnsafeBytes { b in
            var r = ByteReader(b)
            guard let version = try? r.u8(), (1...3).contains(version), let owner = try? r.string("owner", limit: 64),
                  let name = try? r.string("name", limit: Self.maxNameBytes, allowEmpty: true) else { return nil }
            let keys = version >= 2 ? (try? r.bytes(32)).map(Array.init) : nil
            let secret = version == 3 ? (try? r.bytes(32)).map(Array.init) : nil
            guard r.isAtEnd, (version >= 2) == (keys != nil), (version == 3) == (secret != nil) else { return nil }
            return (owner, name, keys, secret)
        }
        guard let (owner, name, keys, secret) = read else { return nil }
        self.init(owner: owner, listName: name, ownerKeys: keys, linkSecret: secret)
    }

    /// `invitation` with this preview attached.
    func attached(to invitation: ShareInvitation) -> ShareInvitation {
        var w = ByteWriter()
        w.u8(linkSecret != nil ? 3 : ownerKeys == nil ? 1 : 2)
        w.string(owner)
        w.string(listName)
        if let ownerKeys { w.append(contentsOf: ownerKeys) }
        if let linkSecret { w.append(contentsOf: linkSecret) }
        return ShareInvitation(Self.detached(invitation).text + Self.marker + Base64URL.encode(w.bytes))
    }

    /// `invitation` as the service issued it: any preview removed.
    static func detached(_ invitation: ShareInvitation) -> ShareInvitation {
        guard let at = invitation.text.range(of: marker) else { return invitation }
        return ShareInvitation(String(invitation.text[..<at.lowerBound]))
    }
}

import JournalLog

/// What an invitation tells its invitee before accepting (Part 5: "Alice invites you to
/// Weekly"): the owner and the list's name, as the owner's device saw them. The owner's device
/// attaches it to the service's invitation as a fragment, `#jlp1.` and base64url of
/// `version u8 (1) | owner string | name string` (Spec/SYNC.md §5.2); the invitee's device reads
/// it locally and strips it before accepting. The service never receives it: the name travels
/// from owner to invitee only (compatible with end-to-end encrypted names).
public struct InvitationPreview: Sendable, Equatable {
    /// The account that owns the list and invites.
    public var owner: String
    /// The list's name when the invitation was made (at most `maxNameBytes` of it).
    public var listName: String

    /// The most bytes of the name a preview carries (cut at a character boundary).
    public static let maxNameBytes = 256
    static let marker = "#jlp1."

    /// A preview of `owner`'s list `listName`.
    public init(owner: String, listName: String) {
        self.owner = owner
        var name = Substring(listName)
        while name.utf8.count > Self.maxNameBytes { name = name.dropLast() }
        self.listName = String(name)
    }

    /// The preview `invitation` carries, or nil when it carries none (or one that does not read).
    public init?(of invitation: ShareInvitation) {
        guard let at = invitation.text.range(of: Self.marker),
              let bytes = Base64URL.decode(String(invitation.text[at.upperBound...])), bytes.count <= 1_024 else { return nil }
        let read: (String, String)? = bytes.withUnsafeBytes { b in
            var r = ByteReader(b)
            guard (try? r.u8()) == 1, let owner = try? r.string("owner", limit: 64),
                  let name = try? r.string("name", limit: Self.maxNameBytes, allowEmpty: true), r.isAtEnd else { return nil }
            return (owner, name)
        }
        guard let (owner, name) = read else { return nil }
        self.init(owner: owner, listName: name)
    }

    /// `invitation` with this preview attached.
    func attached(to invitation: ShareInvitation) -> ShareInvitation {
        var w = ByteWriter()
        w.u8(1)
        w.string(owner)
        w.string(listName)
        return ShareInvitation(Self.detached(invitation).text + Self.marker + Base64URL.encode(w.bytes))
    }

    /// `invitation` as the service issued it: any preview removed.
    static func detached(_ invitation: ShareInvitation) -> ShareInvitation {
        guard let at = invitation.text.range(of: marker) else { return invitation }
        return ShareInvitation(String(invitation.text[..<at.lowerBound]))
    }
}

import JournalLog
import JournalSync

/// A share invitation is self-contained and signed (Spec/SYNC.md §5): the zone and incarnation,
/// the one account it is for, and the position it was issued at, MAC'd with the service's key.
/// The service keeps no table of invitations; an invitation issued before the participant's
/// latest removal is refused, so a removed participant needs a new one.
struct InvitationSigner: Sendable {
    static let prefix = "jsi1."
    let key: (UInt64, UInt64)

    struct Invitation: Equatable {
        var zone: String
        var incarnation: SequenceNumber
        var participant: String
        var issuedAt: SequenceNumber
    }

    func issue(_ i: Invitation) -> ShareInvitation {
        var w = ByteWriter()
        w.u8(1)
        w.u64(i.incarnation)
        w.u64(i.issuedAt)
        w.string(i.participant)
        w.string(i.zone)
        w.u64(SipHash24.hash(key: key, w.bytes))
        return ShareInvitation(Self.prefix + Base64URL.encode(w.bytes))
    }

    /// The invitation, or nil when it is not one this service issued (garbled, tampered, foreign).
    func parse(_ s: ShareInvitation) -> Invitation? {
        guard s.text.utf8.count <= 512, s.text.hasPrefix(Self.prefix),
              let bytes = Base64URL.decode(String(s.text.dropFirst(Self.prefix.count))), bytes.count > 8 + 17 else { return nil }
        let body = Array(bytes[..<(bytes.count - 8)])
        let mac = bytes[(bytes.count - 8)...].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        guard SipHash24.hash(key: key, body) == mac else { return nil }
        return body.withUnsafeBytes { b -> Invitation? in
            var r = ByteReader(b)
            guard (try? r.u8()) == 1, let inc = try? r.u64(), let at = try? r.u64(),
                  let participant = try? r.string("participant", limit: 64), let zone = try? r.string("zone", limit: Limits.maxZoneBytes),
                  r.isAtEnd else { return nil }
            return Invitation(zone: zone, incarnation: inc, participant: participant, issuedAt: at)
        }
    }
}

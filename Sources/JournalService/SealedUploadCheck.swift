import JournalLog
import JournalSync

/// What the service takes in an upload to a sealed zone (Spec/SEALING.md §5.1), beyond what
/// `UploadPolicy` takes in any zone: no plaintext kind; each sealed text under the zone's current
/// epoch, and none while that epoch owes a rotation; and a key record only as the next epoch,
/// alone in its upload, made by a member, wrapping to exactly the members under the keys they
/// published, and signed by its creator. Everything is checked from clear numbers, accounts and
/// signatures: the service never holds a key that opens a text.
struct SealedUploadCheck {
    let zone: ZoneID
    let caller: String
    /// The zone's epochs as this node knows them.
    let epochs: ZoneEpochs
    /// The accounts that belong to the zone now: its owner and its participants.
    let members: Set<String>
    let directory: AccountKeyDirectory

    /// What to do with one entry.
    enum Verdict: Equatable {
        /// Append it (a mark, a delete, a move: no text).
        case take
        /// Append it only while the zone's epoch is still `epochs.epoch` (a sealed text).
        case takeUnderCurrentEpoch
        /// Append it, beginning its epoch (a key record); the owner's record that leaves members
        /// out removes them in the same atomic batch.
        case beginEpoch(EpochKeyRecord, removing: [String])
        /// Refuse it.
        case refuse(EntryFailure)
    }

    /// The verdict on `e`, an entry `UploadPolicy` took; `alone`: the only entry of its upload.
    func verdict(_ e: JournalEntry, alone: Bool) -> Verdict {
        switch e.operation {
        case .markOff, .unmark, .delete, .move: return .take
        case .opaque(SealedChange.addKind...SealedChange.recolourKind, _): return sealedText(e)
        case .opaque(EpochKeyRecord.kind, let body):
            guard let record = try? EpochKeyRecord(decoding: body) else { return .refuse(.invalid("the key record does not read")) }
            return keyRecord(record, id: e.id, alone: alone)
        case .opaque(LinkEntries.keyKind, let body):
            guard let link = LinkEntries.Key(body: body) else { return .refuse(.invalid("the link key does not read")) }
            return linkKey(link)
        case .opaque(LinkEntries.proofKind, let body):
            guard let proof = LinkEntries.Proof(body: body) else { return .refuse(.invalid("the link proof does not read")) }
            guard proof.account == caller else { return .refuse(.invalid("a link proof is of its writer's own keys: \(proof.account) is not this account (\(caller))")) }
            return .take
        default:
            return .refuse(.invalid("a sealed list takes no \(Self.name(of: e.operation)): its texts are sealed (sealedAdd, sealedRename, sealedRecolour), Spec/SEALING.md §5.1"))
        }
    }

    private func sealedText(_ e: JournalEntry) -> Verdict {
        guard let change = try? SealedChange(e.operation) else { return .refuse(.invalid("the sealed change does not read")) }
        let epoch = change.text.epoch
        if epochs.epoch == 0 { return .refuse(.retryable("the list's first key record is not stored yet: upload it first")) }
        if epoch != epochs.epoch { return .refuse(.staleEpoch(current: epochs.epoch)) }
        if epochs.owesRotation(members: members, directory: directory) { return .refuse(.rotationDue(epoch: epochs.epoch)) }
        return .takeUnderCurrentEpoch
    }

    /// A link key: the owner's, under the current epoch, as a text is (it opens that epoch).
    private func linkKey(_ link: LinkEntries.Key) -> Verdict {
        guard caller == zone.owner else { return .refuse(.invalid("the owner (\(zone.owner)) leaves a link key in its list")) }
        if epochs.epoch == 0 { return .refuse(.retryable("the list's first key record is not stored yet: upload it first")) }
        if link.epoch != epochs.epoch { return .refuse(.staleEpoch(current: epochs.epoch)) }
        if epochs.owesRotation(members: members, directory: directory) { return .refuse(.rotationDue(epoch: epochs.epoch)) }
        return .takeUnderCurrentEpoch
    }

    private func keyRecord(_ r: EpochKeyRecord, id: CompactID, alone: Bool) -> Verdict {
        guard alone else { return .refuse(.invalid("a key record travels alone: upload it, then the changes sealed under its epoch")) }
        let fixed = SealedZone.keyRecordID(zone: zone.storeName, epoch: r.epoch)
        guard id == fixed else { return .refuse(.invalid("the key record of epoch \(r.epoch) has the entry id \(fixed) (Spec/SEALING.md §5.1), not \(id)")) }
        // An epoch begun already: the same record again is a retry (saved), another is the
        // loser of a race for the epoch (a conflict); the append tells which.
        if r.epoch <= epochs.epoch { return .take }
        guard r.epoch == epochs.epoch + 1 else { return .refuse(.invalid("the key record skips from epoch \(epochs.epoch) to \(r.epoch)")) }
        guard r.creator == caller else { return .refuse(.invalid("a key record is its creator's own: \(r.creator) is not this account (\(caller))")) }
        guard r.epoch > 1 || r.creator == zone.owner else { return .refuse(.invalid("the owner (\(zone.owner)) begins a sealed list's first epoch")) }
        let wrapped = Set(r.wraps.map(\.account))
        if let stranger = r.wraps.map(\.account).first(where: { !members.contains($0) }) {
            return .refuse(.invalid("the key record wraps the key for \(stranger), who does not belong to the list"))
        }
        // A member whose keys were reset may be left out (no key of it pinned yet: SEALING.md
        // §4.7); it stays a member. Any other member left out is removed, by the owner only.
        let omitted = members.subtracting(wrapped).sorted().filter { directory.keys[$0]?.isReset != true }
        if !omitted.isEmpty {
            let removes = r.creator == zone.owner && !omitted.contains(zone.owner) && [.removal, .sharingStopped].contains(r.reason)
            guard removes else { return .refuse(.invalid("the key record omits members of the list: \(omitted.joined(separator: ", "))")) }
        }
        for w in r.wraps {
            guard let keys = directory.keys[w.account] else { return .refuse(.invalid("\(w.account) has published no keys")) }
            guard keys.keyID == w.keyID else { return .refuse(.invalid("the key record wraps to a key \(w.account) has not published")) }
        }
        guard directory.isSigned(r, zone: zone.storeName) else {
            return .refuse(.invalid("the key record's signature is not its creator's (\(r.creator)) under the identity key it published"))
        }
        return .beginEpoch(r, removing: omitted)
    }

    /// An operation's name as FORMAT.md §7 spells it.
    static func name(of op: EntryOperation) -> String {
        switch op {
        case .add: "add"
        case .rename: "rename"
        case .recolour: "recolour"
        case .opaque(let kind, _): "kind 0x" + String(kind, radix: 16)
        default: "\(op.kindByte)"
        }
    }
}

import Foundation
import JournalCodec

/// Making and reading a sealed list's key records (Spec/SEALING.md §4): a member's device begins
/// an epoch by drawing its key, wrapping it to every member account's wrap key with HPKE, linking
/// it to the key before and signing the whole; a member's device checks the signature against
/// the creator's identity key and opens its own wrap.
public enum EpochKeys {
    /// HPKE (RFC 9180), base mode: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305.
    static var ciphersuite: HPKE.Ciphersuite { .Curve25519_SHA256_ChachaPoly }

    /// HPKE's info for one wrap: `"jlog-seal v1 wrap" | zone string | epoch varint | account
    /// string | keyID [16]`: a wrap opens only for the list, epoch and member it was made for.
    static func info(zone: String, epoch: UInt64, account: String, keyID: [UInt8]) -> Data {
        var w = ByteWriter()
        w.append(contentsOf: Array("jlog-seal v1 wrap".utf8))
        w.string(zone)
        w.varint(epoch)
        w.string(account)
        w.append(contentsOf: keyID)
        return Data(w.bytes)
    }

    /// The record that begins `key`'s epoch for `members` (the owner and every participant, each
    /// once), made by `creator`'s device; `previous` is the key before (none for epoch 1).
    public static func record(for key: ListKey, previous: ListKey?, reason: EpochKeyRecord.Reason, zone: String,
                              members: [AccountPublicKeys], creator: AccountKeys) throws(SealError) -> EpochKeyRecord {
        guard (previous == nil) == (key.epoch == 1) else { throw .badKey("epoch \(key.epoch) needs the key before it, and only it") }
        let sorted = members.sorted { $0.account.utf8.lexicographicallyPrecedes($1.account.utf8) }
        guard !sorted.isEmpty, sorted.count <= EpochKeyRecord.maxWraps,
              Set(sorted.map(\.account)).count == sorted.count else { throw .badKey("a record wraps to 1–\(EpochKeyRecord.maxWraps) members, each once") }
        var wraps: [EpochKeyRecord.Wrap] = []
        for member in sorted {
            do {
                let recipient = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: member.wrap)
                var sender = try HPKE.Sender(recipientKey: recipient, ciphersuite: ciphersuite,
                                             info: info(zone: zone, epoch: key.epoch, account: member.account, keyID: member.keyID))
                let wrapped = try sender.seal(key.material)
                wraps.append(EpochKeyRecord.Wrap(account: member.account, keyID: member.keyID,
                                                 encapsulated: Array(sender.encapsulatedKey), wrapped: Array(wrapped)))
            } catch {
                throw .badKey("the key could not be wrapped to \(member.account): \(error)")
            }
        }
        let creatorKeys = creator.publicKeys
        var record = EpochKeyRecord(epoch: key.epoch, reason: reason, creator: creator.account, creatorKeyID: creatorKeys.keyID,
                                    wraps: wraps, backLink: try previous.map { p throws(SealError) in try key.backLink(to: p, zone: zone) },
                                    signature: [])
        do { record.signature = Array(try creator.identityKey.signature(for: record.signedBytes(zone: zone))) } catch {
            throw .badKey("the record could not be signed: \(error)")
        }
        return record
    }

    /// Whether `record` is signed by `creator`'s identity key, and `creator` is who it names.
    public static func isSigned(_ record: EpochKeyRecord, zone: String, by creator: AccountPublicKeys) -> Bool {
        creator.account == record.creator && creator.keyID == record.creatorKeyID
            && creator.signed(record.signature, record.signedBytes(zone: zone))
    }

    /// The epoch's key, opened from the wrap to `keys`' account: `notAMember` when the record
    /// has none for it (or for another wrap key of it), `cannotOpen` when it does not open.
    public static func open(_ record: EpochKeyRecord, zone: String, with keys: AccountKeys) throws(SealError) -> ListKey {
        let mine = keys.publicKeys
        guard let wrap = record.wraps.first(where: { $0.account == keys.account && $0.keyID == mine.keyID }) else {
            throw .notAMember(epoch: record.epoch)
        }
        do {
            var recipient = try HPKE.Recipient(privateKey: keys.wrapKey, ciphersuite: ciphersuite,
                                               info: info(zone: zone, epoch: record.epoch, account: wrap.account, keyID: wrap.keyID),
                                               encapsulatedKey: Data(wrap.encapsulated))
            let material = try recipient.open(wrap.wrapped)
            guard let key = ListKey(epoch: record.epoch, material: Array(material)) else { throw SealError.cannotOpen }
            return key
        } catch {
            throw .cannotOpen
        }
    }
}

import Foundation
import JournalCodec

/// One epoch's key of one list (Spec/SEALING.md §3): 32 random bytes, drawn by the member device
/// that creates the epoch (the list's creation, each rotation). The texts of the list are sealed
/// under a key derived from it for the zone (`textKey`). Each key after the first carries the one
/// before it, sealed under it (`backLink`), so that the newest key opens every older one: a
/// member reads the whole history, and every surviving text of a snapshot, from one key.
public struct ListKey: Sendable, Hashable {
    /// A key's size in bytes.
    public static let bytes = 32
    /// 1 for the list's first key, one more at each rotation.
    public let epoch: UInt64
    /// The key's 32 bytes. Never logged, never sent unwrapped.
    public let material: [UInt8]

    /// A key from its bytes (a key record opened, a vector); nil unless 32 bytes and epoch ≥ 1.
    public init?(epoch: UInt64, material: [UInt8]) {
        guard epoch >= 1, material.count == Self.bytes else { return nil }
        self.epoch = epoch
        self.material = material
    }

    /// A new random key for `epoch`.
    public static func random(epoch: UInt64) -> ListKey {
        ListKey(epoch: epoch, material: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })!
    }

    /// The AES-256-GCM key the list's texts are sealed under: HKDF-SHA256 of the key, with the
    /// zone's name (UTF-8) as salt and `"jlog-seal v1 text"` as info (RFC 5869).
    public func textKey(zone: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: material), salt: Array(zone.utf8),
                               info: Array("jlog-seal v1 text".utf8), outputByteCount: 32)
    }

    /// The key before this one, sealed under this one: `nonce [12] | ciphertext [32] | tag [16]`,
    /// AES-256-GCM under `textKey(zone)` with associated data `"JLS1-back" | zone string | epoch
    /// varint` (this key's epoch). `nonce` is random unless given (vectors only).
    public func backLink(to previous: ListKey, zone: String, nonce: [UInt8]? = nil) throws(SealError) -> [UInt8] {
        guard previous.epoch + 1 == epoch else { throw .badKey("epoch \(previous.epoch) is not the one before \(epoch)") }
        do {
            let n = try nonce.map { try AES.GCM.Nonce(data: $0) } ?? AES.GCM.Nonce()
            let box = try AES.GCM.seal(previous.material, using: textKey(zone: zone), nonce: n,
                                       authenticating: Self.backLinkData(zone: zone, epoch: epoch))
            return Array(box.nonce) + Array(box.ciphertext) + Array(box.tag)
        } catch {
            throw .badKey("the back link could not be sealed: \(error)")
        }
    }

    /// The key before this one, from this one's back link.
    public func openBackLink(_ link: [UInt8], zone: String) throws(SealError) -> ListKey {
        guard epoch > 1 else { throw .badKey("the first epoch has no key before it") }
        guard link.count == 12 + Self.bytes + 16 else { throw .badKey("a back link is 60 bytes, not \(link.count)") }
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: link[0..<12]), ciphertext: link[12..<44], tag: link[44...])
            let material = try AES.GCM.open(box, using: textKey(zone: zone), authenticating: Self.backLinkData(zone: zone, epoch: epoch))
            return ListKey(epoch: epoch - 1, material: Array(material))!
        } catch {
            throw .cannotOpen
        }
    }

    static func backLinkData(zone: String, epoch: UInt64) -> [UInt8] {
        var w = ByteWriter()
        w.append(contentsOf: Array("JLS1-back".utf8))
        w.string(zone)
        w.varint(epoch)
        return w.bytes
    }
}

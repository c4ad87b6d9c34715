import Foundation
import JournalCodec

/// Seals and opens one list's texts under one epoch's key (Spec/SEALING.md §2): AES-256-GCM over
/// the padded text (`SealPadding`), with the value's binding (`SealBinding`) as associated data
/// and a random 96-bit nonce. The derived key is made once per sealer (HKDF costs more than a
/// seal): keep one per list and epoch.
public struct TextSealer: Sendable {
    /// The epoch of the key it seals and opens with.
    public let epoch: UInt64
    /// The list (zone) whose texts it seals: part of every binding and of the key derivation.
    public let zone: String
    let box: DerivedKey
    var key: SymmetricKey { box.key }

    /// A sealer of `zone`'s texts under `key` (derives the text key once).
    public init(key: ListKey, zone: String) {
        epoch = key.epoch
        self.zone = zone
        box = DerivedKey(key.textKey(zone: zone))
    }

    /// `text` sealed for `binding` (whose epoch must be this sealer's). `nonce` is random unless
    /// given: only the spec's vectors give one.
    public func seal(_ text: String, for binding: SealBinding, nonce: [UInt8]? = nil) throws(SealError) -> SealedValue {
        guard binding.epoch == epoch else { throw .wrongEpoch(key: epoch, value: binding.epoch) }
        guard let plaintext = SealPadding.pad(text) else { throw .textTooLong(bytes: text.utf8.count) }
        do {
            let n = try nonce.map { try AES.GCM.Nonce(data: $0) } ?? AES.GCM.Nonce()
            let box = try AES.GCM.seal(plaintext, using: key, nonce: n, authenticating: binding.associatedData)
            // The combined form is nonce, ciphertext, tag in one buffer (the nonce is 12 bytes).
            let combined = box.combined!
            return SealedValue(epoch: epoch, nonce: Array(combined.prefix(SealedValue.nonceBytes)),
                               sealed: Array(combined.dropFirst(SealedValue.nonceBytes)))
        } catch {
            throw .badKey("the text could not be sealed: \(error)")
        }
    }

    /// The text `value` holds, if it was sealed for `binding` under this sealer's key.
    public func open(_ value: SealedValue, for binding: SealBinding) throws(SealError) -> String {
        guard value.epoch == epoch, binding.epoch == epoch else { throw .wrongEpoch(key: epoch, value: value.epoch) }
        let plaintext: Data
        do {
            // The combined form (nonce, ciphertext, tag) is one copy; the three-part one costs four.
            let box = try AES.GCM.SealedBox(combined: value.nonce + value.sealed)
            plaintext = try AES.GCM.open(box, using: key, authenticating: binding.associatedData)
        } catch {
            throw .cannotOpen
        }
        guard let text = SealPadding.unpad(Array(plaintext)) else { throw .notAText }
        return text
    }
}

/// A derived key, made once per sealer. swift-crypto's `SymmetricKey` is not `Sendable`, but it
/// is immutable once made: sealers on several threads only read it.
final class DerivedKey: @unchecked Sendable {
    let key: SymmetricKey
    init(_ key: SymmetricKey) { self.key = key }
}

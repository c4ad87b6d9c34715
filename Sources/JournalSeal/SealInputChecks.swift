import JournalCodec

/// What `Fuzz/FuzzSealed` checks on any bytes, and the corpus test replays: the readers of a
/// sealed value, a key record, a sealed change's body, a rotation-due marker's body, key pins, a
/// recovery code, a recovery kit, a device link's offer and sealed keys never crash, and what they
/// read writes back to the same bytes; opening what no key sealed fails cleanly; padding round-trips every
/// text and refuses what is not one.
package enum SealInputChecks {
    static let sealer = TextSealer(key: ListKey(epoch: 1, material: Array(repeating: 7, count: 32))!, zone: "alice/fuzz")
    static let code = RecoveryCode(bytes: Array(repeating: 9, count: 32))!
    static let secret = LinkSecret(bytes: Array(repeating: 4, count: 32))!
    static let link = DeviceLinkRequest(privateKey: Array(repeating: 5, count: 32), secret: Array(repeating: 6, count: 32))!
    static let binding = SealBinding(zone: "alice/fuzz", entry: CompactID("e1")!, kind: 0x41, item: CompactID("i1")!,
                                     author: "alice:phone", clock: HybridTime(rawValue: 1 << 20), wallTime: 16, epoch: 1)

    package static func check(_ bytes: [UInt8]) {
        if let value = try? SealedValue(decoding: bytes) {
            precondition(value.encoded == bytes, "a sealed value did not write back to its bytes")
            if (try? sealer.open(value, for: binding)) != nil { fatalError("bytes no key sealed opened") }
        }
        // A key record: what reads writes back to the same bytes.
        if let record = try? EpochKeyRecord(decoding: bytes) {
            precondition(record.encoded == bytes, "a key record did not write back to its bytes")
        }
        // A sealed change's body, under each of the three kinds: what reads writes back.
        for kind in SealedChange.addKind...SealedChange.recolourKind {
            if let change = try? SealedChange(.opaque(kind: kind, body: bytes)) {
                precondition(change.body == bytes && change.kind == kind, "a sealed change did not write back to its body")
            }
        }
        // A rotation-due marker's body (SEALING.md §5.1): what reads writes back.
        if let epoch = SealedZone.rotationDueEpoch(bytes) {
            precondition(SealedZone.rotationDueBody(epoch: epoch) == bytes, "a rotation-due body did not write back to its bytes")
        }
        // Key pins (SEALING.md §4.4): what reads writes back. A recovery code read from text
        // writes back to a text that reads to it; a kit no code sealed does not open.
        if let pins = KeyPins(decoding: bytes) { precondition(pins.encoded == bytes, "key pins did not write back to their bytes") }
        if let text = String(validating: bytes.prefix(128), as: UTF8.self), let code = RecoveryCode(text) {
            precondition(RecoveryCode(code.description) == code, "a recovery code did not read back")
        }
        if (try? RecoveryKit.open(bytes, account: "alice", code: Self.code)) != nil { fatalError("a kit no code sealed opened") }
        // A device link (SEALING.md §4.6): an offer read from text writes back to that text;
        // keys no device sealed for the offer do not open.
        if let text = String(validating: bytes.prefix(128), as: UTF8.self), let offer = DeviceLinkOffer(text) {
            precondition(offer.description == text, "a device link offer did not write back to its text")
        }
        if (try? Self.link.open(bytes, account: "alice")) != nil { fatalError("keys no device sealed for the link opened") }
        // A link invitation's entries (SEALING.md §4.8): what reads writes back; a link key no
        // secret sealed does not open; a proof no secret made vouches for nothing.
        if let key = LinkEntries.Key(body: bytes) { precondition(key.body == bytes, "a link key did not write back to its body") }
        if let proof = LinkEntries.Proof(body: bytes) { precondition(proof.body == bytes, "a link proof did not write back to its body") }
        if (try? Self.secret.openKey(bytes, zone: "alice/fuzz")) != nil { fatalError("a link key no secret sealed opened") }
        if Self.secret.verifiedKeys(bytes, zone: "alice/fuzz") != nil { fatalError("a link proof no secret made verified") }
        // Padding: what unpads pads back to the same bytes; any text pads and unpads to itself.
        if let text = SealPadding.unpad(bytes) {
            precondition(SealPadding.pad(text) == bytes, "an unpadded text pads to other bytes")
        }
        if let text = String(validating: bytes.prefix(Limits.maxTextBytes), as: UTF8.self) {
            precondition(SealPadding.unpad(SealPadding.pad(text)!) == text, "a text did not survive padding")
        }
    }
}

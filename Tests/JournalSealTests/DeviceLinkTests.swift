import Foundation
import Testing
import JournalCodec
@testable import JournalSeal

/// Linking a new device (Spec/SEALING.md §4.6): the account keys reach the device that showed
/// the offer, and no other; keys sealed by anyone who did not see the offer's secret (a service
/// substituting its own) do not open. `Spec/vectors/sealing-link.txt`.
@Suite struct DeviceLinkTests {
    static let alice = AccountKeys(account: "alice", raw: Array(64..<128))!
    static let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Spec/vectors/sealing-link.txt").standardized
    static let request = DeviceLinkRequest(privateKey: Array(0xA0...0xBF), secret: Array(0x20...0x3F))!

    static func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }

    /// The vector file: the offer of a fixed key and secret, its link id, and account keys sealed
    /// for it once (HPKE draws its own ephemeral key, so a sealing is checked by opening it).
    static func vectors(sealed: [UInt8]) -> String {
        """
        # A device link (SEALING.md §4.6). The new device's X25519 private key is bytes a0..bf, its
        # secret bytes 20..3f; the account is alice, her keys aliceSecret of sealing-keys.txt.
        # sealed opens, with that private key and secret, to aliceSecret; any other secret,
        # private key or account does not open it.

        newDevicePrivateKey: \(hex(Array(0xA0...0xBF)))
        secret: \(hex(Array(0x20...0x3F)))
        offer: \(request.offer)
        linkID: \(hex(request.offer.linkID))
        account: alice
        sealed: \(hex(sealed))

        """
    }

    @Test func theSpecsLinkVectorOpens() throws {
        if ProcessInfo.processInfo.environment["JOURNALLOG_WRITE_VECTORS"] == "1" {
            try Self.vectors(sealed: try DeviceLink.seal(Self.alice, for: Self.request.offer)).write(to: Self.url, atomically: true, encoding: .utf8)
        }
        let text = try String(contentsOf: Self.url, encoding: .utf8)
        let sealedHex = try #require(text.split(separator: "\n").first { $0.hasPrefix("sealed: ") }?.dropFirst(8))
        let sealed = stride(from: 0, to: sealedHex.count, by: 2).map { UInt8(sealedHex.dropFirst($0).prefix(2), radix: 16)! }
        #expect(text == Self.vectors(sealed: sealed))
        #expect(try Self.request.open(sealed, account: "alice").raw == Self.alice.raw)
    }

    @Test func theNewDeviceOpensTheKeysAnotherDeviceSealedForItsOffer() throws {
        let newDevice = DeviceLinkRequest()
        let scanned = try #require(DeviceLinkOffer(newDevice.offer.description))
        #expect(scanned == newDevice.offer && newDevice.offer.description.count == 91)
        let sealed = try DeviceLink.seal(Self.alice, for: scanned)
        #expect(sealed.count == DeviceLink.sealedBytes)
        #expect(try newDevice.open(sealed, account: "alice").raw == Self.alice.raw)
    }

    @Test func keysSealedWithoutTheOffersSecretDoNotOpen() throws {
        let newDevice = DeviceLinkRequest()
        let guessed = try #require(DeviceLinkOffer(publicKey: newDevice.offer.publicKey, secret: Array(repeating: 7, count: 32)))
        let substituted = try DeviceLink.seal(AccountKeys(account: "alice"), for: guessed)
        #expect(throws: SealError.cannotOpen) { try newDevice.open(substituted, account: "alice") }
    }

    @Test func keysOpenForTheirAccountAndTheirDeviceOnly() throws {
        let newDevice = DeviceLinkRequest(), other = DeviceLinkRequest()
        let sealed = try DeviceLink.seal(Self.alice, for: newDevice.offer)
        #expect(throws: SealError.cannotOpen) { try newDevice.open(sealed, account: "bob") }
        #expect(throws: SealError.cannotOpen) { try other.open(sealed, account: "alice") }
        var flipped = sealed
        flipped[40] ^= 1
        #expect(throws: SealError.cannotOpen) { try newDevice.open(flipped, account: "alice") }
        #expect(throws: SealError.cannotOpen) { try newDevice.open(Array(sealed.dropLast()), account: "alice") }
    }

    @Test func anOfferReadsInItsOneFormOnly() {
        let text = Self.request.offer.description
        #expect(DeviceLinkOffer(text) == Self.request.offer)
        for bad in ["", "jdl1.", "jdl2." + text.dropFirst(5), text + "A", String(text.dropLast()), text.replacingOccurrences(of: "jdl1.", with: "JDL1."),
                    "jdl1." + String(repeating: "=", count: 86)] {
            #expect(DeviceLinkOffer(bad) == nil, "\(bad)")
        }
    }
}

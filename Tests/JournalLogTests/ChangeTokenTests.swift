import Testing
@testable import JournalLog

/// The change-token codec (groundwork for the change feed): opaque, versioned, MAC'd, bound to a store.
@Suite struct ChangeTokenTests {
    static let key: (UInt64, UInt64) = (0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908)
    static let token = ChangeToken(kind: .zone, storeID: (1, 2), incarnation: 7, zoneHash: ChangeToken.zoneHash("List-1", key: key), position: 42)

    @Test func sipHashMatchesTheReferenceVector() {
        // SipHash-2-4 paper, Appendix A: key 00..0f, message 00..0e.
        #expect(SipHash24.hash(key: Self.key, Array(0..<15)) == 0xA129_CA61_49BE_45E5)
    }

    @Test func tokenRoundTripsThroughItsTextForm() throws {
        let text = Self.token.text(key: Self.key)
        #expect(text.hasPrefix(ChangeToken.prefix))
        #expect(try ChangeToken.parse(text, key: Self.key) == Self.token)
    }

    @Test func tamperedTokenIsRejected() {
        var bytes = Self.token.encoded(key: Self.key)
        bytes[34] ^= 1  // position
        let text = ChangeToken.prefix + Base64URL.encode(bytes)
        #expect(throws: ChangeToken.DecodeError.badMAC) { try ChangeToken.parse(text, key: Self.key) }
    }

    @Test func tokenFromAnotherStoreIsRejected() {
        let text = Self.token.text(key: (9, 9))
        #expect(throws: ChangeToken.DecodeError.badMAC) { try ChangeToken.parse(text, key: Self.key) }
    }

    @Test func garbageIsMalformedNotACrash() {
        for text in ["", "jlt2.", "jlt2.!!!!", "hello", "jlt2." + String(repeating: "A", count: 200), "jlt2.AAAA"] {
            #expect(throws: ChangeToken.DecodeError.self) { try ChangeToken.parse(text, key: Self.key) }
        }
    }

    @Test func aVersionOneTokenIsRefusedAsUnsupported() {
        var bytes = Self.token.encoded(key: Self.key)
        bytes[0] = 1
        bytes.removeLast(16)
        bytes += Array(repeating: 0, count: 16)
        #expect(throws: ChangeToken.DecodeError.unsupportedVersion(1)) {
            try ChangeToken.decode(bytes.withUnsafeBytes { UnsafeRawBufferPointer($0) }, key: Self.key)
        }
    }

    @Test func base64URLRoundTripsEveryLength() {
        var rng = SplitMix64(seed: 3)
        for n in 0..<40 {
            let bytes = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }

    /// `isEncoding` answers exactly what decoding would, for encodings and for near misses
    /// (a changed character, a dropped or added one).
    @Test func base64URLIsEncodingAgreesWithDecode() {
        var rng = SplitMix64(seed: 4)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=.".utf8)
        for n in 0..<40 {
            let text = Base64URL.encode((0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
            var variants = [text, text + "A", String(text.dropLast())]
            for _ in 0..<8 where !text.isEmpty {
                var u = Array(text.utf8)
                u[Int(rng.next() % UInt64(u.count))] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                variants.append(String(decoding: u, as: UTF8.self))
            }
            for v in variants {
                #expect(Base64URL.isEncoding(Substring(v).utf8, ofBytes: n) == (Base64URL.decode(v)?.count == n), "\(v) as \(n) bytes")
            }
        }
    }
}

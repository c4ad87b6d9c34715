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

    static func parse(_ text: String, key: (UInt64, UInt64) = key, zone: String = "List-1") throws(ChangeToken.DecodeError) -> ChangeToken {
        try ChangeToken.parse(text, key: key, storeID: (1, 2), zoneHash: ChangeToken.zoneHash(zone, key: Self.key))
    }

    @Test func tokenRoundTripsThroughItsTextForm() throws {
        let text = Self.token.text(key: Self.key)
        #expect(text.hasPrefix(ChangeToken.prefix))
        #expect(try Self.parse(text) == Self.token)
    }

    /// Version 4 leaves out what its MAC binds (the store, the zone) and writes positions as
    /// varints: a token of a young store is 33 characters, against version 3's 93.
    @Test func aVersionFourTokenIsShort() {
        #expect(Self.token.text(key: Self.key).utf8.count == 5 + 28)
        let big = ChangeToken(kind: .zone, storeID: (1, 2), incarnation: .max, zoneHash: 9, position: .max, floor: .max, epoch: .max)
        #expect(big.encoded(key: Self.key).count == ChangeToken.v4MaxSize)
        #expect(big.text(key: Self.key).utf8.count <= 128)
    }

    /// Tokens devices held before version 4 stay good.
    @Test func aVersionThreeTokenIsStillRead() throws {
        let text = "jlt3." + Base64URL.encode(Self.token.encodedV3(key: Self.key))
        #expect(try Self.parse(text) == Self.token)
        #expect(ChangeToken.unverifiedPosition(text) == 42)
    }

    @Test func tamperedTokenIsRejected() {
        var bytes = Self.token.encoded(key: Self.key)
        bytes[3] ^= 1  // position
        let text = ChangeToken.prefix + Base64URL.encode(bytes)
        #expect(throws: ChangeToken.DecodeError.badMAC) { try Self.parse(text) }
    }

    @Test func tokenFromAnotherStoreIsRejected() {
        let text = Self.token.text(key: (9, 9))
        #expect(throws: ChangeToken.DecodeError.badMAC) { try Self.parse(text) }
        // The same key, another store's id: the MAC binds it.
        #expect(throws: ChangeToken.DecodeError.badMAC) {
            try ChangeToken.parse(Self.token.text(key: Self.key), key: Self.key, storeID: (1, 3), zoneHash: Self.token.zoneHash)
        }
    }

    @Test func aZoneTokenForAnotherZoneIsRejected() {
        #expect(throws: ChangeToken.DecodeError.badMAC) { try Self.parse(Self.token.text(key: Self.key), zone: "List-2") }
    }

    @Test func garbageIsMalformedNotACrash() {
        let v3Prefix = Self.token.encodedV3(key: Self.key)
        for text in ["", "jlt4.", "jlt4.!!!!", "hello", "jlt4." + String(repeating: "A", count: 200), "jlt4.AAAA", "jlt3.AAAA",
                     "jlt4." + Base64URL.encode(v3Prefix), "jlt3." + Base64URL.encode(Self.token.encoded(key: Self.key)),
                     "jlt4." + Base64URL.encode([4, 0x5A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F] + Array(repeating: 0, count: 18))] {
            #expect(throws: ChangeToken.DecodeError.self) { try Self.parse(text) }
        }
    }

    @Test func aVersionOneTokenIsRefusedAsUnsupported() {
        var bytes = Self.token.encodedV3(key: Self.key)
        bytes[0] = 1
        bytes.removeLast(16)
        bytes += Array(repeating: 0, count: 16)
        #expect(throws: ChangeToken.DecodeError.unsupportedVersion(1)) {
            try ChangeToken.decode(bytes.withUnsafeBytes { UnsafeRawBufferPointer($0) }, key: Self.key, storeID: (1, 2), zoneHash: 0)
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

import JournalCodec
import JournalSync

/// One device credential as a server keeps it: its id, account, SHA-256 of its secret (never the
/// secret), when it was issued, when it expires and whether it was revoked (Spec/SYNC.md §9.2).
package struct AccountCredential: Sendable, Equatable {
    package var id: String
    package var account: String
    /// Lowercase hex of SHA-256(secret).
    package var secretHash: String
    package var issuedAt: Int64
    package var expiresAt: Int64?
    package var revokedAt: Int64?

    package init(id: String, account: String, secretHash: String, issuedAt: Int64, expiresAt: Int64?, revokedAt: Int64?) {
        self.id = id
        self.account = account
        self.secretHash = secretHash
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }

    package func isValid(now: Int64) -> Bool { revokedAt == nil && (expiresAt.map { now < $0 } ?? true) }
}

/// The accounts file's text (Spec/SYNC.md §9.2): a header line, one line per credential
/// `id account sha256hex issuedAt expiresAt|- revokedAt|-` (times in milliseconds), and a last
/// line `crc32c HEX` over every byte before it. Anything else is damage: the whole file is refused.
package enum AccountsFileCodec {
    static let header = "jlog-accounts 1"
    /// The largest accounts file read.
    package static let maxFileBytes = 8 << 20

    package static func encode(_ list: [AccountCredential]) -> [UInt8] {
        var text = header + "\n"
        for c in list {
            text += "\(c.id) \(c.account) \(c.secretHash) \(c.issuedAt) \(c.expiresAt.map(String.init) ?? "-") \(c.revokedAt.map(String.init) ?? "-")\n"
        }
        let body = Array(text.utf8)
        return body + Array("crc32c \(String(CRC32C.checksum(body), radix: 16))\n".utf8)
    }

    package static func decode(_ bytes: [UInt8]) -> [AccountCredential]? {
        guard bytes.count <= maxFileBytes, let text = String(validating: bytes, as: UTF8.self) else { return nil }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 3, lines.removeLast().isEmpty, let crcLine = lines.popLast(), lines.first == Substring(header) else { return nil }
        let bodyLength = bytes.count - crcLine.utf8.count - 1
        guard crcLine.hasPrefix("crc32c "), let crc = UInt32(crcLine.dropFirst(7), radix: 16),
              String(crc, radix: 16) == crcLine.dropFirst(7), CRC32C.checksum(Array(bytes[..<bodyLength])) == crc else { return nil }
        var out: [AccountCredential] = []
        for line in lines.dropFirst() {
            let f = line.split(separator: " ", omittingEmptySubsequences: false)
            guard f.count == 6, f[0].utf8.count == 11, let id = Base64URL.decode(String(f[0])), id.count == 8, Base64URL.encode(id) == f[0],
                  SyncNames.accountRefusal(String(f[1])) == nil,
                  f[2].utf8.count == 64, f[2].utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }),
                  let issued = canonicalTime(f[3]) else { return nil }
            func time(_ s: Substring) -> Int64?? { s == "-" ? .some(nil) : canonicalTime(s).map { .some($0) } }
            guard let expires = time(f[4]), let revoked = time(f[5]) else { return nil }
            out.append(.init(id: String(f[0]), account: String(f[1]), secretHash: String(f[2]), issuedAt: issued,
                             expiresAt: expires, revokedAt: revoked))
        }
        return out
    }

    /// Milliseconds as the encoder writes them: digits only, no sign, no leading zero (so that a
    /// file reads back to the same bytes, and one value has one spelling).
    static func canonicalTime(_ s: Substring) -> Int64? {
        guard let first = s.utf8.first, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), first != 0x30 || s.utf8.count == 1 else { return nil }
        return Int64(s)
    }
}

import JournalCodec

/// The property the sync layer's fuzz targets check (`Fuzz/FuzzAccounts`), shared with the test
/// that replays their corpora: returns normally on any input unless a round trip breaks.
public enum SyncFuzzChecks {
    /// The accounts file never crashes its reader; what decodes encodes to the same bytes. The
    /// input is tried as it is and with its CRC line made right, so that the fuzzer reaches the
    /// credential lines.
    public static func accounts(_ bytes: UnsafeRawBufferPointer) {
        func roundTrip(_ b: [UInt8]) {
            guard let list = AccountsFileCodec.decode(b) else { return }
            guard AccountsFileCodec.encode(list) == b else { fatalError("accounts file round trip failed") }
        }
        let input = Array(bytes)
        roundTrip(input)
        // Everything before the last "crc32c " (or all of it), with a right CRC line after it.
        let marker = Array("crc32c ".utf8)
        var body = input
        var at = input.count - marker.count
        while at >= 0 {
            if input[at..<at + marker.count].elementsEqual(marker) {
                body = Array(input[..<at])
                break
            }
            at -= 1
        }
        guard body.count <= 1 << 16 else { return }
        roundTrip(body + Array("crc32c \(String(CRC32C.checksum(body), radix: 16))\n".utf8))
    }

    public static let targets: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = ["FuzzAccounts": accounts]
}

import Foundation
import JournalCodec
import JournalSync
import JournalSyncWire

/// The properties the wire's fuzz targets check (`Fuzz/FuzzAccounts`, `Fuzz/FuzzHTTPText`),
/// shared with the test that replays their corpora: returns normally on any input unless a
/// round trip breaks.
package enum WireFuzzChecks {
    /// The accounts file never crashes its reader; what decodes encodes to the same bytes. The
    /// input is tried as it is and with its CRC line made right, so that the fuzzer reaches the
    /// credential lines.
    package static func accounts(_ bytes: UnsafeRawBufferPointer) {
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

    /// The HTTP binding's text parsers, which a server runs on every request and a client on
    /// every answer (`Fuzz/FuzzHTTPText`), never crash and agree with their other halves: a
    /// credential that parses prints back as its text; percent decoding is undone by encoding;
    /// the common upload answer reads as the general JSON decoder reads it; base64url validity
    /// is what decoding says; a compressed body round-trips; database and upload answers map to
    /// values or nil; hint events give hints, never more than their bound.
    package static func httpText(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= 1 << 16 else { return }
        let input = Array(bytes)
        let text = String(decoding: input, as: UTF8.self)
        if let c = DeviceCredential(text), c.text != text { fatalError("credential text round trip failed") }
        if let d = HTTPBinding.percentDecode(Substring(text)), HTTPBinding.percentDecode(Substring(HTTPBinding.percentEncode(d))) != d {
            fatalError("percent decoding is not undone by encoding")
        }
        if let common = HTTPBinding.UploadJSON(commonAnswer: input) {
            guard let full = try? JSONDecoder().decode(HTTPBinding.UploadJSON.self, from: Data(input)), full == common else {
                fatalError("the common upload answer reads unlike the JSON decoder")
            }
        }
        for n in [8, 32] where Base64URL.isEncoding(Substring(text).utf8, ofBytes: n) != (Base64URL.decode(text)?.count == n) {
            fatalError("base64url validity disagrees with decoding")
        }
        // A history cursor (SYNC.md §3.12): what parses prints back as its text.
        if let p = HistoryPosition(HistoryCursor(text)), p.cursor.text != text { fatalError("history cursor round trip failed") }
        // A compressed body (SYNC.md §9.5): what decodes re-encodes to what decodes the same.
        if let raw = try? CompressedBody.decode(input, limit: 1 << 20), let again = CompressedBody.encode(raw),
           (try? CompressedBody.decode(again, limit: 1 << 20)) != raw {
            fatalError("a compressed body does not round-trip")
        }
        // A hint channel's events (SYNC.md §7.7): any lines give hints, at most 64 named zones.
        let hints = SyncHints()
        var event = HintEvent()
        for line in input.split(separator: 0x0A, omittingEmptySubsequences: false) { event.take(Array(line))?.deliver(to: hints) }
        if let named = hints.waitingZones, named.count > SyncHints.maxNamedZones { fatalError("hints hold more zones than their bound") }
        // The answers a client reads: any JSON maps to a value or to nil, never a crash.
        if let both = try? JSONDecoder().decode(HTTPBinding.BothDatabasesJSON.self, from: Data(input)) { _ = both.page }
        if let upload = try? JSONDecoder().decode(HTTPBinding.UploadJSON.self, from: Data(input)) { _ = upload.result }
    }

    package static let targets: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
        "FuzzAccounts": accounts, "FuzzHTTPText": httpText,
    ]
}

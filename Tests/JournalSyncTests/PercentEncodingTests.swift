import Foundation
import JournalLog
import JournalSync
import JournalSyncWire
import Testing

/// The binding's own percent coding agrees with Foundation's, which it replaced on the hot path.
struct PercentEncodingTests {
    static let samples = ["list", "Weekly shop", "a/b", "100%", "é🍎", "a+b=c&d", "-._~", "", "%", "%4", "%41", "%zz", "%C3%A9", "%C3", "%FF%FE"]

    @Test func encodingMatchesFoundation() {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        for s in Self.samples {
            #expect(HTTPBinding.percentEncode(s) == s.addingPercentEncoding(withAllowedCharacters: unreserved), "\(s)")
        }
    }

    @Test func decodingMatchesFoundation() {
        for s in Self.samples {
            #expect(HTTPBinding.percentDecode(Substring(s)) == s.removingPercentEncoding, "\(s)")
        }
    }

    @Test func encodingRoundTrips() {
        for s in Self.samples { #expect(HTTPBinding.percentDecode(Substring(HTTPBinding.percentEncode(s))) == s) }
    }
}

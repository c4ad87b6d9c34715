import Foundation
import JournalLog
import JournalSync
import Testing

/// The upload answer's hand-written JSON (`UploadJSON.encoded`) is the document a general
/// encoder writes: the same keys, sorted, and every string escaped so it decodes back whole.
struct UploadJSONTests {
    @Test func encodedMatchesTheSortedKeyEncoder() throws {
        var r = UploadResult()
        r.saved = [CompactID.random(), CompactID("item-1")!, CompactID.random()]
        r.failed[CompactID("a/b")!] = .conflict("the zone holds entry a/b with \"other\" content")
        r.failed[CompactID.random()] = .invalid("tab\there, newline\n, control \u{01}, é, 🍎, back\\slash")
        r.failed[CompactID("z")!] = .retryable("later")
        let value = HTTPBinding.UploadJSON(r)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(try JSONDecoder().decode(HTTPBinding.UploadJSON.self, from: Data(value.encoded)) == value)
        #expect(try JSONSerialization.jsonObject(with: Data(value.encoded)) as? NSDictionary
            == JSONSerialization.jsonObject(with: encoder.encode(value)) as? NSDictionary)
        #expect(String(decoding: value.encoded.prefix(11), as: UTF8.self) == "{\"failed\":[")
    }

    @Test func anEmptyAnswerIsTwoEmptyLists() {
        #expect(String(decoding: HTTPBinding.UploadJSON(UploadResult()).encoded, as: UTF8.self) == "{\"failed\":[],\"saved\":[]}")
    }
}

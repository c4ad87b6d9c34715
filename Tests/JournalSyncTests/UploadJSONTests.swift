import Foundation
import JournalLog
import JournalSync
import JournalSyncWire
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
        r.failed[CompactID.random()] = .staleEpoch(current: 3)
        r.failed[CompactID.random()] = .rotationDue(epoch: 300)
        let value = HTTPBinding.UploadJSON(r)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(try JSONDecoder().decode(HTTPBinding.UploadJSON.self, from: Data(value.encoded)) == value)
        #expect(try JSONSerialization.jsonObject(with: Data(value.encoded)) as? NSDictionary
            == JSONSerialization.jsonObject(with: encoder.encode(value)) as? NSDictionary)
        #expect(String(decoding: value.encoded.prefix(11), as: UTF8.self) == "{\"failed\":[")
    }

    /// The reader of the common answer gets what the general decoder gets, or declines.
    @Test func theCommonAnswerReadsAsTheDecoderReadsIt() throws {
        var r = UploadResult()
        for k in 0..<3 {
            let value = HTTPBinding.UploadJSON(r)
            #expect(HTTPBinding.UploadJSON(commonAnswer: value.encoded) == value, "\(k) ids")
            r.saved.append(k == 1 ? CompactID("list-item.é")! : CompactID.random())
        }
        r.failed[CompactID("x")!] = .invalid("no")
        #expect(HTTPBinding.UploadJSON(commonAnswer: HTTPBinding.UploadJSON(r).encoded) == nil)
        for text in ["{\"failed\":[],\"saved\":[\"a\\\"b\"]}", "{\"saved\":[],\"failed\":[]}", "{\"failed\":[],\"saved\":[\"a\",]}",
                     "{\"failed\":[],\"saved\":[\"a\"\"b\"]}", "{\"failed\":[],\"saved\":[\"a]}", "{\"failed\":[],\"saved\":[,\"a\"]}"] {
            #expect(HTTPBinding.UploadJSON(commonAnswer: Array(text.utf8)) == nil, "\(text)")
        }
    }

    /// Carried entries travel as one wire batch in base64url, first among the sorted keys, and
    /// read back whole; without a token they are malformed.
    @Test func carriedEntriesReadBackWithTheirToken() throws {
        let tea = JournalEntry(id: CompactID.random(), zone: "alice/weekly", author: "alice:ipad", wallTime: 1_700_000_000_000,
                               clock: HybridTime(derivedFromWallTime: 1_700_000_000_000), operation: .add(item: CompactID.random(), text: "Tea", after: nil))
        let r = UploadResult(saved: [CompactID.random()], token: ServiceToken("t1"), head: ZoneHead("h0123456789abcdef"), entries: [tea])
        let value = HTTPBinding.UploadJSON(r)
        #expect(String(decoding: value.encoded.prefix(11), as: UTF8.self) == "{\"entries\":")
        #expect(try JSONDecoder().decode(HTTPBinding.UploadJSON.self, from: Data(value.encoded)).result == r)
        var noToken = value
        noToken.token = nil
        noToken.head = nil
        #expect(noToken.result == nil)
    }

    /// A sealed list's refusals carry their epoch (SEALING.md §5.1), and read back as they were;
    /// one without its epoch is malformed.
    @Test func epochRefusalsReadBackWithTheirEpoch() throws {
        var r = UploadResult()
        r.failed[CompactID.random()] = .staleEpoch(current: 2)
        r.failed[CompactID.random()] = .rotationDue(epoch: 1)
        let value = HTTPBinding.UploadJSON(r)
        #expect(try JSONDecoder().decode(HTTPBinding.UploadJSON.self, from: Data(value.encoded)).result == r)
        var noEpoch = value
        noEpoch.failed[0].epoch = nil
        #expect(noEpoch.result == nil)
    }

    @Test func anEmptyAnswerIsTwoEmptyLists() {
        #expect(String(decoding: HTTPBinding.UploadJSON(UploadResult()).encoded, as: UTF8.self) == "{\"failed\":[],\"saved\":[]}")
    }
}

import Foundation
import Testing
import JournalLog
import JournalService
import JournalSync
import JournalSyncWire
import NIOHTTP1

/// Hostile and broken requests (Spec/SYNC.md §3.2, §9, Spec/openapi.yaml): bodies over the
/// limits are refused before they are read whole, malformed bodies and parameters get 400 (or a
/// per-entry failure where the spec says so), unknown paths 404, and nothing ever gets a 5xx.
@Suite struct RequestValidationTests {
    /// A server whose upload bodies stop at 16 KiB + 64 KiB, alice's credential and her zone.
    static func setUp(_ configure: (inout ServiceLimits) -> Void = { _ in }) async throws -> (TestServer, DeviceCredential, ZoneID) {
        var limits = ServiceLimits()
        limits.maxUploadBytes = 16 << 10
        configure(&limits)
        let server = try await TestServer(limits: limits)
        let alice = try server.credential("alice")
        let zone = ZoneID(owner: "alice", name: "groceries")!
        try await server.client(alice).createZone(zone)
        return (server, alice, zone)
    }

    /// The most an upload's body may hold on a server set up by `setUp`.
    static let uploadBodyLimit = (16 << 10) + (64 << 10)

    static func head(_ method: String, _ path: String, _ credential: DeviceCredential, _ headers: [String]) -> String {
        ([method + " " + path + " HTTP/1.1", "Host: 127.0.0.1", "Authorization: " + credential.bearer] + headers).joined(separator: "\r\n") + "\r\n\r\n"
    }

    // MARK: Oversized bodies

    /// A declared Content-Length over the limit gets 413 at once: the server answers after 1 KiB
    /// of a 1 GiB body (waiting for the rest would time the read out).
    @Test func aDeclaredLengthOverTheLimitIsRefusedBeforeTheBodyIsRead() async throws {
        let (server, alice, zone) = try await Self.setUp()
        let port = server.port
        let head = Self.head("POST", HTTPBinding.zonePath(zone) + "/entries", alice,
                             ["Content-Type: " + WireBatch.mediaType, "Content-Length: \(1 << 30)"])
        let r = try await onThread { () -> RawResponse? in
            let c = try RawConnection(port: port, receiveTimeoutSeconds: 10)
            c.send(head)
            c.send([UInt8](repeating: 0x4A, count: 1 << 10))
            return c.readResponse()
        }
        #expect(r?.status == 413, "\(r.map(String.init(describing:)) ?? "no answer before the body was complete")")
        #expect(r?.error?.error == "limitExceeded")
        #expect(try await server.send(.GET, "/v1/health", authorization: nil).status == 200)
        await server.stop()
    }

    /// Once it has refused a body, the server does not go on reading it: the client cannot make
    /// it swallow the declared gigabyte (the connection is closed, or at least no longer read).
    @Test func theRestOfARefusedBodyIsNotRead() async throws {
        let (server, alice, zone) = try await Self.setUp()
        let port = server.port
        let head = Self.head("POST", HTTPBinding.zonePath(zone) + "/entries", alice,
                             ["Content-Type: " + WireBatch.mediaType, "Content-Length: \(1 << 30)"])
        let (answer, accepted) = try await onThread { () -> (RawResponse?, Int) in
            let c = try RawConnection(port: port, receiveTimeoutSeconds: 10)
            c.send(head)
            c.send([UInt8](repeating: 0x4A, count: 1 << 10))
            let answer = c.readResponse()
            // Then the rest of the body, as fast as the server takes it, up to 256 MiB.
            let piece = [UInt8](repeating: 0x4A, count: 256 << 10)
            var accepted = 0
            while accepted < 256 << 20, c.send(piece) { accepted += piece.count }
            return (answer, accepted)
        }
        #expect(answer?.status == 413)
        #expect(accepted < 256 << 20, "the server read \(accepted >> 20) MiB more of a body it had refused")
        await server.stop()
    }

    /// A chunked body that grows past the limit gets 413 once the limit is passed, although the
    /// body never ends.
    @Test func aChunkedBodyOverTheLimitIsRefusedBeforeItEnds() async throws {
        let (server, alice, zone) = try await Self.setUp()
        let port = server.port
        let head = Self.head("POST", HTTPBinding.zonePath(zone) + "/entries", alice,
                             ["Content-Type: " + WireBatch.mediaType, "Transfer-Encoding: chunked"])
        let r = try await onThread { () -> RawResponse? in
            let c = try RawConnection(port: port, receiveTimeoutSeconds: 10)
            c.send(head)
            let chunk = [UInt8](repeating: 0x4A, count: 16 << 10)
            var sent = 0
            while sent <= Self.uploadBodyLimit {
                guard c.send(String(chunk.count, radix: 16) + "\r\n"), c.send(chunk), c.send("\r\n") else { break }
                sent += chunk.count
            }
            return c.readResponse()   // no last chunk: the body never ends
        }
        #expect(r?.status == 413, "\(r.map(String.init(describing:)) ?? "no answer before the body ended")")
        #expect(r?.error?.error == "limitExceeded")
        await server.stop()
    }

    /// A JSON body over 8 KiB (an invitation request) gets 413, declared or not.
    @Test func aJSONBodyOverItsLimitIsRefused() async throws {
        let (server, alice, zone) = try await Self.setUp()
        let big = jsonBytes(HTTPBinding.ParticipantJSON(participant: String(repeating: "b", count: 20 << 10)))
        let r = try await server.send(.POST, HTTPBinding.zonePath(zone) + "/invitations", as: alice, body: big, contentType: "application/json")
        #expect(r.status == 413 && r.error?.error == "limitExceeded", "\(r)")
        let accept = try await server.send(.POST, "/v1/invitations/accept", as: alice,
                                           body: jsonBytes(HTTPBinding.InvitationJSON(invitation: String(repeating: "x", count: 20 << 10))),
                                           contentType: "application/json")
        #expect(accept.status == 413 && accept.error?.error == "limitExceeded", "\(accept)")
        await server.stop()
    }

    /// An upload over the service's entry limit is refused whole (413) and stores nothing.
    @Test func anUploadOverTheEntryLimitIsRefusedWhole() async throws {
        let (server, alice, zone) = try await Self.setUp { $0.maxUploadEntries = 3 }
        let entries = (0..<4).map { addEntry(zone, author: "alice", text: "Item \($0)") }
        let r = try await server.upload(entries, to: zone, as: alice)
        #expect(r.status == 413 && r.error?.error == "limitExceeded", "\(r)")
        #expect(try server.serverList(zone).items.isEmpty)
        await server.stop()
    }

    // MARK: Malformed wire batches

    enum BrokenBatch: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case garbage, badCRC, truncated, trailingBytes, wrongMagic, hugeDeclaredLength, notABatchUnderAValidCRC, empty
        var testDescription: String { rawValue }

        func bytes(_ valid: [UInt8]) -> [UInt8] {
            switch self {
            case .garbage: return Array("this is not a jlog wire batch, just text".utf8)
            case .badCRC:
                var b = valid
                b[b.count - 1] ^= 0xFF
                return b
            case .truncated: return Array(valid.dropLast(5))
            case .trailingBytes: return valid + [0, 1, 2]
            case .wrongMagic:
                var b = valid
                b[3] = 0x32   // "JLB2"
                return b
            case .hugeDeclaredLength:
                var b = valid
                b[4] = 0xFF; b[5] = 0xFF; b[6] = 0xFF; b[7] = 0x7F
                return b
            case .notABatchUnderAValidCRC:
                var b = valid
                for i in 8..<(b.count - 4) { b[i] = 0xFF }
                var crc = CRC32C.extend(0, Array(b[4..<8]))
                crc = CRC32C.extend(crc, Array(b[8..<(b.count - 4)]))
                for k in 0..<4 { b[b.count - 4 + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
                return b
            case .empty: return []
            }
        }
    }

    /// A body that is not a wire batch (or holds no entry) gets 400 invalidRequest and stores nothing.
    @Test(arguments: BrokenBatch.allCases)
    func aMalformedWireBatchIsRefused(_ kind: BrokenBatch) async throws {
        let (server, alice, zone) = try await Self.setUp()
        let valid = WireBatch.encode([addEntry(zone, author: "alice")], compress: false)
        let r = try await server.send(.POST, HTTPBinding.zonePath(zone) + "/entries", as: alice, body: kind.bytes(valid),
                                      contentType: WireBatch.mediaType)
        #expect(r.status == 400 && r.error?.error == "invalidRequest", "\(r)")
        #expect(try server.serverList(zone).items.isEmpty)
        await server.stop()
    }

    enum BadEntry: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case anotherZone, anotherAccountsZone, authoredByAnotherAccount, authoredByAnotherAccountsDevice, join, leave, place
        var testDescription: String { rawValue }

        func entry(_ zone: ZoneID) -> JournalEntry {
            var e = addEntry(zone, author: "alice:phone", text: "Bad")
            switch self {
            case .anotherZone: e.zone = "alice/other"
            case .anotherAccountsZone: e.zone = "bob/groceries"
            case .authoredByAnotherAccount: e.author = "bob"
            case .authoredByAnotherAccountsDevice: e.author = "bob:alice"
            case .join: e.operation = .join(participant: "mallory")
            case .leave: e.operation = .leave(participant: "bob")
            case .place: e.operation = .place(item: CompactID.random(), after: nil)
            }
            return e
        }
    }

    /// An entry the caller may not upload to this zone is a per-entry `invalid` failure (200,
    /// `failed`), the others of the batch are saved, and it is stored nowhere.
    @Test(arguments: BadEntry.allCases)
    func anEntryTheCallerMayNotUploadFailsAlone(_ kind: BadEntry) async throws {
        let (server, alice, zone) = try await Self.setUp()
        let bob = try server.credential("bob")
        let bobs = ZoneID(owner: "bob", name: "groceries")!
        try await server.client(bob).createZone(bobs)
        let good = addEntry(zone, author: "alice:phone", text: "Good"), bad = kind.entry(zone)
        let r = try await server.upload([good, bad], to: zone, as: alice)
        #expect(r.status == 200, "\(r)")
        let result = try JSONDecoder().decode(HTTPBinding.UploadJSON.self, from: Data(r.body))
        #expect(result.saved == [good.id.description], "\(r)")
        #expect(result.failed.map(\.id) == [bad.id.description] && result.failed.first?.kind == "invalid", "\(r)")
        #expect(try server.serverList(zone).items.map(\.text) == ["Good"])
        #expect(try server.serverList(bobs).items.isEmpty)
        #expect(server.store.zone("alice/other") == nil)
        await server.stop()
    }

    // MARK: Malformed JSON and parameters

    /// Invitation requests whose JSON is not `{"participant": account}` get 400.
    @Test(arguments: ["", "not json", "{}", "[]", #"{"participant": 5}"#, #"{"participant": null}"#,
                      #"{"participant": "no such account"}"#, #"{"participant": "nobody"}"#, #"{"participant": "alice"}"#])
    func aMalformedShareRequestIsRefused(_ body: String) async throws {
        let (server, alice, zone) = try await Self.setUp()
        let r = try await server.send(.POST, HTTPBinding.zonePath(zone) + "/invitations", as: alice, body: Array(body.utf8),
                                      contentType: "application/json")
        #expect(r.status == 400 && r.error?.error == "invalidRequest", "\(r)")
        await server.stop()
    }

    /// Accept requests whose JSON is not a genuine invitation (garbage, a tampered one) get 400.
    @Test(arguments: ["", "garbage", "{}", #"{"invitation": 1}"#, #"{"invitation": ""}"#, #"{"invitation": "jsi1.AAAA"}"#, "tampered"])
    func aMalformedAcceptIsRefused(_ body: String) async throws {
        let (server, alice, zone) = try await Self.setUp()
        let bob = try server.credential("bob")
        var bytes = Array(body.utf8)
        if body == "tampered" {
            let genuine = try await server.client(alice).shareZone(zone, with: "bob").text
            var chars = Array(genuine)
            chars[chars.count - 3] = chars[chars.count - 3] == "A" ? "B" : "A"
            bytes = jsonBytes(HTTPBinding.InvitationJSON(invitation: String(chars)))
        }
        let r = try await server.send(.POST, "/v1/invitations/accept", as: bob, body: bytes, contentType: "application/json")
        #expect(r.status == 400 && r.error?.error == "invalidRequest", "\(r)")
        #expect(server.core.members(of: zone).isEmpty)
        await server.stop()
    }

    /// Paging parameters out of their ranges (limit 1…10000, a token of 1…1,024 bytes) and an
    /// unknown database scope get 400, on database and zone changes alike.
    @Test(arguments: ["limit=0", "limit=abc", "limit=-1", "limit=10001", "limit=", "limit=1.5",
                      "token=" + String(repeating: "a", count: 1_100), "token="])
    func aBadPagingParameterIsRefused(_ query: String) async throws {
        let (server, alice, zone) = try await Self.setUp()
        for path in ["/v1/databases/private/changes", "/v1/databases/shared/changes", HTTPBinding.zonePath(zone) + "/changes"] {
            let r = try await server.send(.GET, path + "?" + query, as: alice)
            #expect(r.status == 400 && r.error?.error == "invalidRequest", "\(path)?\(query.prefix(40)): \(r)")
        }
        await server.stop()
    }

    /// A database scope other than private and shared gets 400.
    @Test func anUnknownDatabaseScopeIsRefused() async throws {
        let (server, alice, _) = try await Self.setUp()
        let r = try await server.send(.GET, "/v1/databases/public/changes", as: alice)
        #expect(r.status == 400 && r.error?.error == "invalidRequest", "\(r)")
        await server.stop()
    }

    /// A garbled token on a zone is `tokenExpired` (410: fetch again from no token), never 5xx.
    @Test func aGarbledZoneTokenExpires() async throws {
        let (server, alice, zone) = try await Self.setUp()
        let r = try await server.send(.GET, HTTPBinding.zonePath(zone) + "/changes?token=garbled", as: alice)
        #expect(r.status == 410 && r.error?.error == "tokenExpired", "\(r)")
        let db = try await server.send(.GET, "/v1/databases/private/changes?token=garbled", as: alice)
        #expect(db.status == 410 && db.error?.error == "tokenExpired", "\(db)")
        await server.stop()
    }

    /// Zone names no zone can have (bad percent-encoding, a NUL, over 255 bytes, an owner that
    /// is no account) are the client's mistake: 400 invalidRequest with the reason on every zone
    /// route, never zoneNotFound, which tells a client to remove its list (SYNC.md §4.1).
    @Test(arguments: ["alice/%00", "alice/" + String(repeating: "n", count: 300), "_service/members", "%61lice/groceries"])
    func aZoneNameNoZoneCanHaveIsAnInvalidRequest(_ zonePath: String) async throws {
        let (server, alice, _) = try await Self.setUp()
        for (method, suffix) in [(HTTPMethod.GET, "/changes"), (.GET, "/history"), (.GET, "/snapshot"), (.PUT, ""), (.DELETE, ""), (.DELETE, "/participants")] {
            let r = try await server.send(method, "/v1/zones/" + zonePath + suffix, as: alice)
            #expect(r.status == 400 && r.error?.error == "invalidRequest", "\(method) \(zonePath.prefix(40))\(suffix): \(r)")
            #expect(r.error?.message.isEmpty == false)
        }
        await server.stop()
    }

    /// A bad percent-escape (which an HTTP client library would escape again) sent as it is.
    @Test func aBadPercentEscapeIsAnInvalidRequest() async throws {
        let (server, alice, _) = try await Self.setUp()
        let port = server.port
        let r = try await onThread { () -> RawResponse? in
            let c = try RawConnection(port: port, receiveTimeoutSeconds: 10)
            c.send(Self.head("GET", "/v1/zones/alice/%ZZ/changes", alice, []))
            return c.readResponse()
        }
        #expect(r?.status == 400 && r?.error?.error == "invalidRequest", "\(String(describing: r))")
        await server.stop()
    }

    /// A change token sent in a `JLog-Token` request header is refused with where it goes,
    /// never served as "from the start" (the client would download the whole list every time).
    @Test func aTokenInTheResponseHeaderIsRefused() async throws {
        let (server, alice, zone) = try await Self.setUp()
        for path in [HTTPBinding.zonePath(zone) + "/changes", "/v1/databases/private/changes"] {
            let r = try await server.send(.GET, path, authorization: alice.bearer, headers: [(HTTPBinding.tokenHeader, "anything")])
            #expect(r.status == 400 && r.error?.error == "invalidRequest", "\(path): \(r)")
            #expect(r.error?.message.contains("token query parameter") == true, "\(r)")
        }
        await server.stop()
    }

    /// An answer to CONNECT (which HTTP frames with no body) ends with its connection, so the
    /// client finds the end of the refusal without waiting for a timeout (RFC 9112 §6.3).
    @Test(arguments: ["/v1/account", "/v1/nothing"])
    func aConnectIsAnsweredAndTheConnectionClosed(_ path: String) async throws {
        let (server, alice, _) = try await Self.setUp()
        let port = server.port
        let (text, closed) = try await onThread { () -> (String, Bool) in
            let c = try RawConnection(port: port, receiveTimeoutSeconds: 10)
            c.send(Self.head("CONNECT", path, alice, []))
            var got: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(c.fd, $0.baseAddress, $0.count, 0) }
                if n == 0 { return (String(decoding: got, as: UTF8.self), true) }
                if n < 0 { return (String(decoding: got, as: UTF8.self), false) }
                got += chunk[0..<n]
            }
        }
        #expect(text.hasPrefix("HTTP/1.1 40"), "\(text.prefix(200))")
        #expect(text.lowercased().contains("connection: close"), "\(text.prefix(300))")
        // Its body is the binding's error, like every other refusal's.
        #expect(text.contains("\r\n\r\n{\"error\":\"invalidRequest\""), "\(text.prefix(400))")
        #expect(!text.dropFirst(12).contains("HTTP/1.1"), "a second answer followed the refusal: \(text.prefix(400))")
        #expect(closed, "the server kept the connection open: \(text.prefix(200))")
        await server.stop()
    }

    /// Paths the binding does not define get 404, with or without a credential.
    @Test(arguments: ["/", "/v1", "/v1/nothing", "/v2/account", "/v1/zones/alice", "/v1/zones/alice/groceries/unknown",
                      "/v1/databases/private", "/v1/invitations", "/v1/account/extra"])
    func anUnknownPathIsNotFound(_ path: String) async throws {
        let (server, alice, _) = try await Self.setUp()
        let signedIn = try await server.send(.GET, path, as: alice)
        #expect(signedIn.status == 404, "\(path): \(signedIn)")
        let anonymous = try await server.send(.GET, path, authorization: nil)
        #expect(anonymous.status == 404, "\(path) without a credential: \(anonymous)")
        await server.stop()
    }

    /// A method a path does not take gets a 4xx, never a 5xx, and does nothing.
    @Test func anUnknownMethodIsRefused() async throws {
        let (server, alice, zone) = try await Self.setUp()
        for (method, path) in [(HTTPMethod.POST, "/v1/account"), (.PATCH, HTTPBinding.zonePath(zone)), (.GET, HTTPBinding.zonePath(zone)),
                               (.PUT, HTTPBinding.zonePath(zone) + "/entries"), (.DELETE, "/v1/hints")] {
            let r = try await server.send(method, path, as: alice)
            #expect((400..<500).contains(r.status), "\(method) \(path): \(r)")
        }
        #expect(server.store.zone(zone.storeName)?.isDeleted == false)
        await server.stop()
    }
}

import Foundation
import JournalLog
import JournalSync

/// The HTTP binding of the protocol (Spec/SYNC.md §9 and Spec/openapi.yaml): the JSON bodies,
/// the headers and how every `SyncError` travels as a status code. Shared by `jlog serve` and
/// the HTTP client, so the two cannot disagree.
package enum HTTPBinding {
    package static let tokenHeader = "JLog-Token"
    /// The longest change token a request may carry: what a client keeps (SYNC.md §3.8 I2).
    package static let maxTokenBytes = 1_024
    /// The header naming the protocol version of a request's client and of an answer's server
    /// (SYNC.md §3.13).
    package static let protocolHeader = "JLog-Protocol"
    /// The protocol version this build speaks: 2 (uploads that carry others' entries, list
    /// changes of kinds 0x40–0x7F); 1 is every client before the header.
    package static let protocolVersion = 2
    /// The oldest protocol version this build still speaks, as a server and as a client.
    package static let oldestProtocol = 1

    /// Why a peer naming `header` as its protocol version cannot be spoken to (nil: it can; no
    /// header is version 1).
    package static func protocolRefusal(_ header: String?) -> String? {
        guard let header else { return nil }
        guard let v = Int(header), v >= 1, header.utf8.count <= 5 else {
            return "\(protocolHeader) is a protocol version number; \(String(header.prefix(16)).debugDescription) is not one"
        }
        guard v >= oldestProtocol else {
            return "this side speaks protocol versions \(oldestProtocol)–\(protocolVersion); the other speaks \(v), which is too old"
        }
        return nil
    }

    /// The most others' entries an upload's answer carries (`carry`, SYNC.md §3.11).
    package static let maxCarriedEntries = 256
    package static let moreComingHeader = "JLog-More-Coming"
    /// The response header of a history page that names the next page's cursor (SYNC.md §3.12);
    /// absent on the last page.
    package static let historyNextHeader = "JLog-History-Next"
    /// Largest JSON request body a server reads (invitations, accept).
    package static let maxJSONBody = 8 << 10

    package struct ZoneJSON: Codable, Sendable, Equatable {
        package var owner: String
        package var name: String
        package init(_ z: ZoneID) { owner = z.owner; name = z.name }
        package var zone: ZoneID? { ZoneID(owner: owner, name: name) }
    }

    package struct GoneJSON: Codable, Sendable, Equatable {
        package var zone: ZoneJSON
        package var reason: String
    }

    package struct DatabaseChangesJSON: Codable, Sendable, Equatable {
        package var changed: [ZoneJSON]
        package var deleted: [GoneJSON]
        package var token: String
        package var moreComing: Bool
        /// Each changed zone's head, by its store name (`owner/name`); absent from a server
        /// that gives none.
        package var heads: [String: String]?

        package init(_ p: DatabaseChangesPage) {
            changed = p.changed.map(ZoneJSON.init)
            deleted = p.deleted.map { GoneJSON(zone: ZoneJSON($0.zone), reason: $0.reason.rawValue) }
            token = p.token.text
            moreComing = p.moreComing
            heads = p.heads.isEmpty ? nil : Dictionary(uniqueKeysWithValues: p.heads.map { ($0.key.storeName, $0.value.text) })
        }

        package var page: DatabaseChangesPage? {
            var c: [ZoneID] = [], d: [ZoneGone] = []
            for z in changed { guard let id = z.zone else { return nil }; c.append(id) }
            for g in deleted {
                guard let id = g.zone.zone, let r = ZoneGoneReason(rawValue: g.reason) else { return nil }
                d.append(ZoneGone(zone: id, reason: r))
            }
            var h: [ZoneID: ZoneHead] = [:]
            for (name, head) in heads ?? [:] {
                // A head of a zone not listed, or one no state file could keep, is not this binding's.
                guard let id = ZoneID(storeName: name), c.contains(id), HTTPBinding.isHead(head) else { return nil }
                h[id] = ZoneHead(head)
            }
            return DatabaseChangesPage(changed: c, deleted: d, token: ServiceToken(token), moreComing: moreComing, heads: h)
        }
    }

    /// `GET /v1/databases/changes`: the first page of each database.
    package struct BothDatabasesJSON: Codable, Sendable, Equatable {
        package var `private`: DatabaseChangesJSON
        package var shared: DatabaseChangesJSON

        package init(_ p: BothDatabasesPage) {
            self.private = DatabaseChangesJSON(p.private)
            shared = DatabaseChangesJSON(p.shared)
        }

        package var page: BothDatabasesPage? {
            guard let a = self.private.page, let b = shared.page else { return nil }
            return BothDatabasesPage(private: a, shared: b)
        }
    }

    /// The zone head response header of a zone page's last page.
    package static let headHeader = "JLog-Zone-Head"

    /// Whether `text` is a head a client keeps: 1–64 bytes of printable ASCII.
    package static func isHead(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    package struct FailureJSON: Codable, Sendable, Equatable {
        /// The list's current epoch (`staleEpoch`) or the epoch that owes a rotation
        /// (`rotationDue`); absent for the other kinds.
        package var epoch: UInt64? = nil
        package var id: String
        /// `conflict`, `invalid`, `retry`, `staleEpoch` or `rotationDue`.
        package var kind: String
        package var reason: String
    }

    /// An upload's answer: 200 with every id in `saved` or `failed` (a non-empty `failed` is a
    /// partial failure).
    package struct UploadJSON: Codable, Sendable, Equatable {
        package var saved: [String]
        package var failed: [FailureJSON]
        /// The zone token after the upload (`UploadResult.token`), when the server gives one.
        package var token: String?
        /// The zone's head with it.
        package var head: String?
        /// Others' entries after the token sent, as a wire batch in base64url without padding (as tokens are), when the
        /// upload asked for them (`carry`) and the answer carries any (`UploadResult.entries`).
        package var entries: String?

        package init(_ r: UploadResult) {
            token = r.token?.text
            head = r.head?.text
            entries = r.entries.isEmpty ? nil : Base64URL.encode(WireBatch.encode(r.entries))
            saved = r.saved.map(\.description)
            failed = r.failed.sorted { $0.key < $1.key }.map { id, f in
                switch f {
                case .conflict(let why): FailureJSON(id: id.description, kind: "conflict", reason: why)
                case .invalid(let why): FailureJSON(id: id.description, kind: "invalid", reason: why)
                case .retryable(let why): FailureJSON(id: id.description, kind: "retry", reason: why)
                case .staleEpoch(let current): FailureJSON(epoch: current, id: id.description, kind: "staleEpoch", reason: f.description)
                case .rotationDue(let epoch): FailureJSON(epoch: epoch, id: id.description, kind: "rotationDue", reason: f.description)
                }
            }
        }

        /// The JSON body, keys sorted, written directly: every upload answers with it, and a
        /// general encoder costs a busy server more than the upload's own checks.
        package var encoded: [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(24 + saved.count * 40 + failed.count * 120 + (entries?.utf8.count ?? 0))
            if let entries {
                out += Array("{\"entries\":".utf8)
                EntryJSON.appendString(entries, to: &out)
                out += Array(",\"failed\":[".utf8)
            } else {
                out += Array("{\"failed\":[".utf8)
            }
            for (k, f) in failed.enumerated() {
                out += Array((k == 0 ? "{" : ",{").utf8)
                if let epoch = f.epoch { out += Array("\"epoch\":\(epoch),".utf8) }
                out += Array("\"id\":".utf8)
                EntryJSON.appendString(f.id, to: &out)
                out += Array(",\"kind\":".utf8)
                EntryJSON.appendString(f.kind, to: &out)
                out += Array(",\"reason\":".utf8)
                EntryJSON.appendString(f.reason, to: &out)
                out.append(0x7D)
            }
            out.append(0x5D)
            if let head {
                out += Array(",\"head\":".utf8)
                EntryJSON.appendString(head, to: &out)
            }
            out += Array(",\"saved\":[".utf8)
            for (k, id) in saved.enumerated() {
                if k > 0 { out.append(0x2C) }
                EntryJSON.appendString(id, to: &out)
            }
            out.append(0x5D)
            if let token {
                out += Array(",\"token\":".utf8)
                EntryJSON.appendString(token, to: &out)
            }
            out.append(0x7D)
            return out
        }

        /// The common answer read without a general decoder: `encoded` of an upload where nothing
        /// failed and no id needs escaping. Nil for anything else (the caller decodes it in full).
        package init?(commonAnswer b: [UInt8]) {
            let head = Array("{\"failed\":[],\"saved\":[".utf8)
            guard b.count >= head.count + 2, b.starts(with: head), b[b.count - 2] == 0x5D, b[b.count - 1] == 0x7D else { return nil }
            var saved: [String] = []
            var i = head.count
            let end = b.count - 2
            while i < end {
                if !saved.isEmpty {
                    guard b[i] == 0x2C else { return nil }
                    i += 1
                }
                guard i < end, b[i] == 0x22 else { return nil }
                let start = i + 1
                i = start
                while i < end, b[i] != 0x22 {
                    guard b[i] >= 0x20, b[i] != 0x5C else { return nil }
                    i += 1
                }
                guard i < end else { return nil }
                guard let id = String(validating: b[start..<i], as: UTF8.self) else { return nil }
                saved.append(id)
                i += 1
            }
            self.saved = saved
            failed = []
        }

        package var result: UploadResult? {
            var r = UploadResult()
            for s in saved { guard let id = CompactID(s) else { return nil }; r.saved.append(id) }
            if let token {
                guard !token.isEmpty, token.utf8.count <= HTTPBinding.maxTokenBytes, let head, HTTPBinding.isHead(head) else { return nil }
                r.token = ServiceToken(token)
                r.head = ZoneHead(head)
            }
            if let entries {
                // Entries come only with the token they are before.
                guard r.token != nil, let batch = Base64URL.decode(entries),
                      let carried = try? WireBatch.decode(batch, maxEntries: HTTPBinding.maxCarriedEntries), !carried.isEmpty else { return nil }
                r.entries = carried
            }
            for f in failed {
                guard let id = CompactID(f.id) else { return nil }
                switch f.kind {
                case "conflict": r.failed[id] = .conflict(f.reason)
                case "invalid": r.failed[id] = .invalid(f.reason)
                case "retry": r.failed[id] = .retryable(f.reason)
                case "staleEpoch":
                    guard let epoch = f.epoch, epoch >= 1 else { return nil }
                    r.failed[id] = .staleEpoch(current: epoch)
                case "rotationDue":
                    guard let epoch = f.epoch, epoch >= 1 else { return nil }
                    r.failed[id] = .rotationDue(epoch: epoch)
                default: return nil
                }
            }
            return r
        }
    }

    package struct ParticipantJSON: Codable, Sendable { package var participant: String; package init(participant: String) { self.participant = participant } }

    /// A zone's participants (`GET …/participants`): each account and `member` or `invited`.
    package struct ParticipantsJSON: Codable, Sendable, Equatable {
        package struct One: Codable, Sendable, Equatable {
            package var account: String
            package var status: String
        }
        package var participants: [One]

        package init(_ list: [ShareParticipant]) { participants = list.map { One(account: $0.account, status: $0.status.rawValue) } }

        /// The list, or nil when an entry is not an account with a known status.
        package var list: [ShareParticipant]? {
            var out: [ShareParticipant] = []
            for p in participants {
                guard SyncNames.accountRefusal(p.account) == nil, let status = ShareParticipant.Status(rawValue: p.status) else { return nil }
                out.append(ShareParticipant(account: p.account, status: status))
            }
            return out
        }
    }
    /// An account's published keys (`PUT /v1/account/keys`, `GET /v1/accounts/{account}/keys`):
    /// each key in base64url without padding; both absent in an answer for an account that has
    /// published none.
    package struct AccountKeysJSON: Codable, Sendable, Equatable {
        package var account: String
        package var identity: String?
        package var wrap: String?
        /// The earlier identity key's signature over the keys that replace its own (SEALING.md §4.7).
        package var vouch: String?

        package init(account: String, _ keys: PublishedAccountKeys?) {
            self.account = account
            identity = keys.map { Base64URL.encode($0.identity) }
            wrap = keys.map { Base64URL.encode($0.wrap) }
            vouch = keys?.vouch.map(Base64URL.encode)
        }

        /// The keys: nil for none; throws for keys that are not two of 32 bytes, or one alone.
        package func keys() throws(SyncError) -> PublishedAccountKeys? {
            guard SyncNames.accountRefusal(account) == nil else { throw .invalidRequest("not an account name") }
            switch (identity, wrap) {
            case (nil, nil): return nil
            case (let i?, let w?):
                guard let identity = Base64URL.decode(i), let wrap = Base64URL.decode(w), identity.count == 32, wrap.count == 32 else {
                    throw .invalidRequest("an identity key and a wrap key are 32 bytes each, in base64url")
                }
                var signature: [UInt8]? = nil
                if let vouch {
                    guard let v = Base64URL.decode(vouch), v.count == 64 else { throw .invalidRequest("a vouch is a 64-byte signature in base64url") }
                    signature = v
                }
                return PublishedAccountKeys(account: account, identity: identity, wrap: wrap, vouch: signature)
            default: throw .invalidRequest("an account's keys are an identity key and a wrap key, both or neither")
            }
        }
    }
    /// An account's recovery kit (`PUT`/`GET /v1/account/recovery`), base64url without padding;
    /// absent in an answer when none is stored.
    package struct RecoveryKitJSON: Codable, Sendable, Equatable {
        package var kit: String?

        package init(_ kit: [UInt8]?) { self.kit = kit.map(Base64URL.encode) }

        /// The kit's bytes: nil for none; throws for one that does not decode or is too long.
        package func bytes() throws(SyncError) -> [UInt8]? {
            guard let kit else { return nil }
            guard let bytes = Base64URL.decode(kit), !bytes.isEmpty, bytes.count <= RecoveryKitLimits.maxBytes else {
                throw .invalidRequest("a recovery kit is 1–\(RecoveryKitLimits.maxBytes) bytes in base64url")
            }
            return bytes
        }
    }
    /// What a device link carries (`PUT`/`GET /v1/account/links/{link}`), base64url without
    /// padding; absent in an answer when nothing is left under the link.
    package struct DeviceLinkJSON: Codable, Sendable, Equatable {
        package var sealed: String?

        package init(_ sealed: [UInt8]?) { self.sealed = sealed.map(Base64URL.encode) }

        /// The bytes: nil for none; throws for bytes that do not decode or are too many.
        package func bytes() throws(SyncError) -> [UInt8]? {
            guard let sealed else { return nil }
            guard let bytes = Base64URL.decode(sealed), !bytes.isEmpty, bytes.count <= DeviceLinkLimits.maxBytes else {
                throw .invalidRequest("what a link carries is 1–\(DeviceLinkLimits.maxBytes) bytes in base64url")
            }
            return bytes
        }

        /// A link id as its path names it: 32 lowercase hex digits.
        package static func path(_ link: [UInt8]) -> String { link.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined() }

        /// The link id a path names; nil unless 32 lowercase hex digits.
        package static func link(_ path: String) -> [UInt8]? {
            let digits = Array(path.utf8)
            guard digits.count == 2 * DeviceLinkLimits.linkBytes else { return nil }
            var out: [UInt8] = []
            for i in stride(from: 0, to: digits.count, by: 2) {
                guard let hi = hex(digits[i]), let lo = hex(digits[i + 1]) else { return nil }
                out.append(hi << 4 | lo)
            }
            return out
        }

        private static func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
    }
    package struct InvitationJSON: Codable, Sendable { package var invitation: String; package init(invitation: String) { self.invitation = invitation } }
    package struct AccountJSON: Codable, Sendable { package var account: String; package init(account: String) { self.account = account } }

    /// `POST /v1/enrol`'s answer (SYNC.md §9.2, enrolment): the account the identity token named, and the
    /// device's new credential (`jlc1.…`), which the device keeps and presents from then on.
    package struct EnrolmentJSON: Codable, Sendable, Equatable {
        package var account: String
        package var credential: String
        package init(account: String, credential: String) {
            self.account = account
            self.credential = credential
        }
    }

    /// Every error body: `error` names the SyncError case; `reason` is a zone's deletion reason
    /// (for `zoneDeleted`); `retryAfter` seconds also travel as the Retry-After header.
    package struct ErrorJSON: Codable, Sendable, Equatable {
        package var error: String
        package var message: String
        package var reason: String?
        package var retryAfter: Int?
        /// `tooManyParticipants`, `tooManyDevices`: the service's limit.
        package var limit: Int?

        package init(error: String, message: String, reason: String? = nil, retryAfter: Int? = nil, limit: Int? = nil) {
            self.error = error
            self.message = message
            self.reason = reason
            self.retryAfter = retryAfter
            self.limit = limit
        }
    }

    /// The status and body a server answers `error` with.
    package static func response(for error: SyncError) -> (status: Int, body: ErrorJSON) {
        func seconds(_ d: Duration?) -> Int? { d.map { max(1, Int(($0.components.seconds)) + ($0.components.attoseconds > 0 ? 1 : 0)) } }
        switch error {
        case .networkUnavailable: return (502, ErrorJSON(error: "networkUnavailable", message: error.description))
        case .limitExceeded: return (413, ErrorJSON(error: "limitExceeded", message: error.description))
        case .rateLimited(let a): return (429, ErrorJSON(error: "rateLimited", message: error.description, retryAfter: seconds(a) ?? 1))
        case .serviceBusy(let a): return (503, ErrorJSON(error: "serviceBusy", message: error.description, retryAfter: seconds(a) ?? 1))
        case .partialFailure: return (200, ErrorJSON(error: "partialFailure", message: error.description))
        case .tokenExpired: return (410, ErrorJSON(error: "tokenExpired", message: error.description))
        case .zoneNotFound: return (404, ErrorJSON(error: "zoneNotFound", message: error.description))
        case .zoneDeleted(let r): return (410, ErrorJSON(error: "zoneDeleted", message: error.description, reason: r.rawValue))
        case .notAuthenticated: return (401, ErrorJSON(error: "notAuthenticated", message: error.description))
        case .quotaExceeded: return (507, ErrorJSON(error: "quotaExceeded", message: error.description))
        case .invalidRequest(let why): return (400, ErrorJSON(error: "invalidRequest", message: why))
        case .incompatible(let why): return (426, ErrorJSON(error: "incompatible", message: why))
        case .tooManyParticipants(let limit): return (409, ErrorJSON(error: "tooManyParticipants", message: error.description, limit: limit))
        case .tooManyDevices(let limit): return (409, ErrorJSON(error: "tooManyDevices", message: error.description, limit: limit))
        }
    }

    /// The error a client reads from a status and body (Retry-After given separately). A status
    /// this binding does not use reads as the service being busy. So does a 404 or 410 without
    /// this binding's `error` in its body: a proxy's, or a wrong base URL's, answer. Reading those
    /// as `zoneNotFound` or `tokenExpired` would have the engine drop lists and their unsent
    /// changes, or re-fetch them, on the word of something that is not the service.
    package static func error(status: Int, body: ErrorJSON?, retryAfter: Int?) -> SyncError {
        let after = (retryAfter ?? body?.retryAfter).map { Duration.seconds($0) }
        switch (status, body?.error) {
        case (413, _): return .limitExceeded
        case (429, _): return .rateLimited(retryAfter: after)
        case (401, _): return .notAuthenticated
        case (507, _): return .quotaExceeded
        case (404, "zoneNotFound"): return .zoneNotFound
        case (410, "zoneDeleted"): return .zoneDeleted(reason: body?.reason.flatMap(ZoneGoneReason.init(rawValue:)) ?? .deleted)
        case (410, "tokenExpired"): return .tokenExpired
        case (400, _): return .invalidRequest(body?.message ?? "the service refused the request")
        case (409, "tooManyParticipants"): return .tooManyParticipants(limit: body?.limit ?? 100)
        case (409, "tooManyDevices"): return .tooManyDevices(limit: body?.limit ?? 64)
        case (426, "incompatible"): return .incompatible(body?.message ?? "the service speaks another protocol version")
        case (502, _), (504, _): return .networkUnavailable(cause: "a gateway answered \(status)" + (body.map { ": \($0.message)" } ?? ""))
        default: return .serviceBusy(retryAfter: after)
        }
    }

    /// A zone in a path: `/v1/zones/OWNER/NAME`, the name percent-encoded whole (its `/` too).
    package static func zonePath(_ z: ZoneID) -> String {
        "/v1/zones/" + z.owner + "/" + percentEncode(z.name)
    }

    /// `s` with every byte but RFC 3986's unreserved characters as `%XX` (uppercase hex). Written
    /// out, not Foundation's: every request's path and token pass through it.
    package static func percentEncode(_ s: String) -> String {
        func unreserved(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x2E || c == 0x5F || c == 0x7E
        }
        guard !s.utf8.allSatisfy(unreserved) else { return s }
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count * 3)
        for c in s.utf8 {
            if unreserved(c) { out.append(c); continue }
            out.append(0x25)
            for v in [c >> 4, c & 15] { out.append(v < 10 ? 0x30 + v : 0x37 + v) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `s` with every `%XX` decoded; nil for a `%` not followed by two hex digits or bytes that are
    /// not UTF-8 (what Foundation's `removingPercentEncoding` refuses too).
    package static func percentDecode(_ s: Substring) -> String? {
        guard s.utf8.contains(0x25) else { return String(s) }
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x41...0x46: c - 0x37
            case 0x61...0x66: c - 0x57
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count)
        var i = s.utf8.startIndex
        while i < s.utf8.endIndex {
            let c = s.utf8[i]
            i = s.utf8.index(after: i)
            guard c == 0x25 else { out.append(c); continue }
            guard i < s.utf8.endIndex, let hi = hex(s.utf8[i]) else { return nil }
            i = s.utf8.index(after: i)
            guard i < s.utf8.endIndex, let lo = hex(s.utf8[i]) else { return nil }
            i = s.utf8.index(after: i)
            out.append(hi << 4 | lo)
        }
        return String(validating: out, as: UTF8.self)
    }
}

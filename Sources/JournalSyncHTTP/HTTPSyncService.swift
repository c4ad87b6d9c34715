import Foundation
import JournalLog
import JournalSync
import JournalSyncWire

/// The protocol over HTTP (Spec/SYNC.md §9, Spec/openapi.yaml): a `SyncService` that talks to
/// `jlog serve` through an `HTTPTransport` (`URLSessionTransport` by default). Every request has
/// a deadline; anything that is not an answer from the server (refused, reset, timed out) is
/// `networkUnavailable`, so the engine keeps everything queued and tries again later.
public struct HTTPSyncService: SyncService {
    public let account: String
    /// The server's base URL, without a trailing slash.
    public let server: String
    let credential: DeviceCredential
    /// `Bearer` and the credential's text, made once: every request sends it.
    let authorization: String
    let transport: any HTTPTransport
    /// The longest a request may take, connection included.
    public var timeout: Duration = .seconds(30)
    /// The largest response body read (a zone page or a history); more is a broken server.
    public static let maxResponseBytes = 64 << 20

    /// `server` is the base URL (`http://host:port`).
    public init(server: String, credential: DeviceCredential, transport: any HTTPTransport = URLSessionTransport()) {
        self.server = server.hasSuffix("/") ? String(server.dropLast()) : server
        self.credential = credential
        authorization = "Bearer " + credential.text
        self.account = credential.account
        self.transport = transport
    }

    /// `HTTP` and the server's address (the credential never).
    public var diagnosticName: String { "HTTP \(server)" }

    typealias Answer = HTTPTransportResponse

    /// One request; any status outside 2xx becomes the binding's `SyncError`.
    func call(_ method: String, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil,
              contentType: String? = nil, accept: String? = nil) async throws(SyncError) -> Answer {
        try await Self.exchange(transport, server: server, authorization: authorization, timeout: timeout,
                                method, path, query: query, body: body, contentType: contentType, accept: accept)
    }

    /// One request to `server` with `authorization`, as `call` makes it.
    static func exchange(_ transport: any HTTPTransport, server: String, authorization: String, timeout: Duration,
                         _ method: String, _ path: String, query: [(String, String)] = [], body: [UInt8]? = nil,
                         contentType: String? = nil, accept: String? = nil, noRoute: SyncError? = nil) async throws(SyncError) -> Answer {
        var url = server + path
        if !query.isEmpty {
            url += "?" + query.map { "\($0.0)=\(HTTPBinding.percentEncode($0.1))" }.joined(separator: "&")
        }
        var request = HTTPTransportRequest(method: method, url: url,
                                           headers: [("Authorization", authorization), (HTTPBinding.protocolHeader, String(HTTPBinding.protocolVersion))],
                                           body: body, timeout: timeout)
        if body != nil, let contentType { request.headers.append(("Content-Type", contentType)) }
        if let accept { request.headers.append(("Accept", accept)) }
        let answer: Answer
        do { answer = try await transport.send(request, maxBody: Self.maxResponseBytes) } catch {
            throw .networkUnavailable(cause: "\(method) \(path): \(error)")
        }
        // A server too old for this client says so in every answer (SYNC.md §3.13).
        if let refusal = HTTPBinding.protocolRefusal(answer.header(HTTPBinding.protocolHeader)) { throw .incompatible(refusal) }
        guard (200..<300).contains(answer.status) else {
            let body = try? JSONDecoder().decode(HTTPBinding.ErrorJSON.self, from: Data(answer.body))
            // A route the server does not have: its 404 carries none of the binding's errors.
            if answer.status == 404, let noRoute, body == nil || body?.error == "notFound" { throw noRoute }
            throw HTTPBinding.error(status: answer.status, body: body, retryAfter: answer.header("Retry-After").flatMap { Int($0) })
        }
        return answer
    }

    func json<T: Decodable>(_ type: T.Type, _ a: Answer) throws(SyncError) -> T {
        do { return try JSONDecoder().decode(T.self, from: Data(a.body)) } catch {
            throw .serviceBusy(retryAfter: nil)   // not this binding's answer: a proxy, a broken server
        }
    }

    static func encode(_ value: some Encodable) -> [UInt8] { Array((try? JSONEncoder().encode(value)) ?? Data()) }

    public func upload(_ entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult {
        try await upload(entries, to: zone, since: nil)
    }

    public func upload(_ entries: [JournalEntry], to zone: ZoneID, since token: ServiceToken?) async throws(SyncError) -> UploadResult {
        try await upload(entries, to: zone, since: token, carrying: 0)
    }

    public func upload(_ entries: [JournalEntry], to zone: ZoneID, since token: ServiceToken?, carrying limit: Int) async throws(SyncError) -> UploadResult {
        var query = token.map { [("token", $0.text)] } ?? []
        if token != nil && limit > 0 { query.append(("carry", String(min(limit, HTTPBinding.maxCarriedEntries)))) }
        let a = try await call("POST", HTTPBinding.zonePath(zone) + "/entries", query: query, body: WireBatch.encode(entries),
                               contentType: WireBatch.mediaType)
        let answer: HTTPBinding.UploadJSON
        if let common = HTTPBinding.UploadJSON(commonAnswer: a.body) { answer = common } else { answer = try json(HTTPBinding.UploadJSON.self, a) }
        guard let result = answer.result else { throw .serviceBusy(retryAfter: nil) }
        if !result.failed.isEmpty { throw .partialFailure(result) }
        return result
    }

    public func fetchDatabaseChanges(_ scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage {
        let a = try await call("GET", "/v1/databases/\(scope.rawValue)/changes", query: Self.paging(token, limit))
        guard let page = try json(HTTPBinding.DatabaseChangesJSON.self, a).page else { throw .serviceBusy(retryAfter: nil) }
        return page
    }

    public func fetchDatabaseChanges(since tokens: DatabaseTokens, limit: Int) async throws(SyncError) -> BothDatabasesPage {
        var q = [("limit", String(max(1, min(limit, 10_000))))]
        for scope in DatabaseScope.allCases { if let t = tokens[scope] { q.append((scope.rawValue, t.text)) } }
        let a = try await call("GET", "/v1/databases/changes", query: q)
        guard let page = try json(HTTPBinding.BothDatabasesJSON.self, a).page else { throw .serviceBusy(retryAfter: nil) }
        return page
    }

    public func fetchZoneChanges(_ zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage {
        let a = try await call("GET", HTTPBinding.zonePath(zone) + "/changes", query: Self.paging(token, limit))
        guard let next = a.header(HTTPBinding.tokenHeader), let more = a.header(HTTPBinding.moreComingHeader) else {
            throw .serviceBusy(retryAfter: nil)
        }
        let entries: [JournalEntry]
        // The service's page (its headers say so) that does not decode is in a form this version
        // cannot read: no retry will change that (SYNC.md §3.13).
        do { entries = try WireBatch.decode(a.body) } catch { throw .incompatible("a page of \(zone) does not decode: \(error)") }
        // Entries of another zone would be stored in the wrong list: never accepted.
        guard entries.allSatisfy({ $0.zone == zone.storeName }) else { throw .serviceBusy(retryAfter: nil) }
        let head = a.header(HTTPBinding.headHeader).flatMap { HTTPBinding.isHead($0) ? ZoneHead($0) : nil }
        return ZoneChangesPage(zone: zone, entries: entries, token: ServiceToken(next), moreComing: more == "true", head: more == "true" ? nil : head)
    }

    public func fetchZoneHistory(_ zone: ZoneID) async throws(SyncError) -> [UInt8] {
        try Self.uncompressed(try await call("GET", HTTPBinding.zonePath(zone) + "/history", accept: CompressedBody.mediaType))
    }

    /// An answer's body, decompressed when it came framed (SYNC.md §9.5).
    static func uncompressed(_ a: Answer) throws(SyncError) -> [UInt8] {
        guard a.header("Content-Type")?.lowercased() == CompressedBody.mediaType else { return a.body }
        do { return try CompressedBody.decode(a.body, limit: maxResponseBytes) } catch {
            throw .serviceBusy(retryAfter: nil)  // not this binding's answer: a proxy, a broken server
        }
    }

    public func fetchZoneHistoryPage(_ zone: ZoneID, after cursor: HistoryCursor?) async throws(SyncError) -> HistoryPage {
        let a = try await call("GET", HTTPBinding.zonePath(zone) + "/history/pages", query: cursor.map { [("after", $0.text)] } ?? [],
                               accept: CompressedBody.mediaType)
        let next = a.header(HTTPBinding.historyNextHeader)
        guard next.map({ !$0.isEmpty && $0.utf8.count <= HistoryCursor.maxBytes }) != false else { throw .serviceBusy(retryAfter: nil) }
        return HistoryPage(bytes: try Self.uncompressed(a), next: next.map(HistoryCursor.init))
    }

    public func fetchZoneSnapshot(_ zone: ZoneID) async throws(SyncError) -> ZoneSnapshot? {
        let a = try await call("GET", HTTPBinding.zonePath(zone) + "/snapshot")
        guard a.status != 204 else { return nil }
        guard let token = a.header(HTTPBinding.tokenHeader), !a.body.isEmpty else { throw .serviceBusy(retryAfter: nil) }
        return ZoneSnapshot(bytes: a.body, token: ServiceToken(token))
    }

    public func createZone(_ zone: ZoneID) async throws(SyncError) { _ = try await call("PUT", HTTPBinding.zonePath(zone)) }

    public func deleteZone(_ zone: ZoneID) async throws(SyncError) { _ = try await call("DELETE", HTTPBinding.zonePath(zone)) }

    public func shareZone(_ zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation {
        let a = try await call("POST", HTTPBinding.zonePath(zone) + "/invitations",
                               body: Self.encode(HTTPBinding.ParticipantJSON(participant: participant)), contentType: "application/json")
        return ShareInvitation(try json(HTTPBinding.InvitationJSON.self, a).invitation)
    }

    public func acceptShare(_ invitation: ShareInvitation) async throws(SyncError) -> ZoneID {
        let a = try await call("POST", "/v1/invitations/accept", body: Self.encode(HTTPBinding.InvitationJSON(invitation: invitation.text)),
                               contentType: "application/json")
        guard let zone = try json(HTTPBinding.ZoneJSON.self, a).zone else { throw .serviceBusy(retryAfter: nil) }
        return zone
    }

    public func removeParticipant(_ participant: String, from zone: ZoneID) async throws(SyncError) {
        _ = try await call("DELETE", HTTPBinding.zonePath(zone) + "/participants/" + HTTPBinding.percentEncode(participant))
    }

    public func stopSharing(_ zone: ZoneID) async throws(SyncError) {
        _ = try await call("DELETE", HTTPBinding.zonePath(zone) + "/participants")
    }

    public func fetchParticipants(_ zone: ZoneID) async throws(SyncError) -> [ShareParticipant] {
        let a = try await call("GET", HTTPBinding.zonePath(zone) + "/participants")
        guard let list = try json(HTTPBinding.ParticipantsJSON.self, a).list else { throw .incompatible("a participant list that does not read") }
        return list
    }

    /// `PUT /v1/account/keys` (Spec/SYNC.md §5.6).
    public func publishAccountKeys(_ keys: PublishedAccountKeys) async throws(SyncError) {
        _ = try await call("PUT", "/v1/account/keys", body: Self.encode(HTTPBinding.AccountKeysJSON(account: keys.account, keys)),
                           contentType: "application/json")
    }

    /// `GET /v1/accounts/{account}/keys` (Spec/SYNC.md §5.6).
    public func fetchAccountKeys(_ account: String) async throws(SyncError) -> PublishedAccountKeys? {
        let a = try await call("GET", "/v1/accounts/" + HTTPBinding.percentEncode(account) + "/keys")
        let answer = try json(HTTPBinding.AccountKeysJSON.self, a)
        guard answer.account == account else { throw .incompatible("the keys of \(answer.account), not of \(account)") }
        do throws(SyncError) { return try answer.keys() } catch { throw .incompatible("account keys that do not read") }
    }

    /// `PUT /v1/account/recovery` (Spec/SYNC.md §5.7).
    public func storeRecoveryKit(_ kit: [UInt8]) async throws(SyncError) {
        _ = try await call("PUT", "/v1/account/recovery", body: Self.encode(HTTPBinding.RecoveryKitJSON(kit)), contentType: "application/json")
    }

    /// `GET /v1/account/recovery` (Spec/SYNC.md §5.7).
    public func fetchRecoveryKit() async throws(SyncError) -> [UInt8]? {
        let a = try await call("GET", "/v1/account/recovery")
        do throws(SyncError) { return try json(HTTPBinding.RecoveryKitJSON.self, a).bytes() } catch { throw .incompatible("a recovery kit that does not read") }
    }

    /// `PUT /v1/account/links/{link}` (Spec/SYNC.md §5.8).
    public func depositDeviceLink(_ link: [UInt8], sealed: [UInt8]) async throws(SyncError) {
        guard link.count == DeviceLinkLimits.linkBytes else { throw .invalidRequest("a link id is \(DeviceLinkLimits.linkBytes) bytes") }
        _ = try await call("PUT", "/v1/account/links/" + HTTPBinding.DeviceLinkJSON.path(link), body: Self.encode(HTTPBinding.DeviceLinkJSON(sealed)),
                           contentType: "application/json")
    }

    /// `GET /v1/account/links/{link}` (Spec/SYNC.md §5.8).
    public func fetchDeviceLink(_ link: [UInt8]) async throws(SyncError) -> [UInt8]? {
        guard link.count == DeviceLinkLimits.linkBytes else { throw .invalidRequest("a link id is \(DeviceLinkLimits.linkBytes) bytes") }
        let a = try await call("GET", "/v1/account/links/" + HTTPBinding.DeviceLinkJSON.path(link))
        do throws(SyncError) { return try json(HTTPBinding.DeviceLinkJSON.self, a).bytes() } catch { throw .incompatible("a device link that does not read") }
    }

    /// Who the server says this credential is (a check before the first sync).
    public func whoAmI() async throws(SyncError) -> String {
        try json(HTTPBinding.AccountJSON.self, try await call("GET", "/v1/account")).account
    }

    static func paging(_ token: ServiceToken?, _ limit: Int) -> [(String, String)] {
        var q = [("limit", String(max(1, min(limit, 10_000))))]
        if let token { q.append(("token", token.text)) }
        return q
    }
}

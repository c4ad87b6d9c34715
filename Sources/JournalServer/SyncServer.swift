import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import JournalLog
import JournalService
import JournalSync
import JournalSyncWire
import Logging
import Prometheus
import ServiceLifecycle
import NIOCore
import NIOPosix

/// How `jlog serve` runs (Spec/SYNC.md §9.4).
package struct ServerOptions: Sendable {
    package var host = "127.0.0.1"
    package var port = 8080
    /// Requests per second per account, on average, and the burst allowed above it (0: no limit).
    package var requestsPerSecond = 100.0
    package var burst = 200.0
    /// How often a hint channel sends a comment so proxies keep it open.
    package var hintKeepAlive: Duration = .seconds(15)
    /// Connections held at once; more wait in the listen backlog.
    package var maxConnections = 4_096
    /// Where the metrics are served (`GET /metrics`, Prometheus's text format), apart from the
    /// API; nil: not served. The registry is the one the process bootstrapped swift-metrics with.
    package var metrics: (host: String, port: Int, registry: PrometheusCollectorRegistry)?

    package init() {}
}

/// The sync server: the protocol of Spec/SYNC.md over HTTP (Spec/openapi.yaml), in front of a
/// `ServiceBackend`. It authenticates every request but `GET /v1/health`, limits each account's
/// rate, refuses bodies over the backend's limits before reading them, and maps every answer to
/// the binding's status codes (`HTTPBinding`). It never answers 5xx for a client's mistake.
package struct SyncServer: Sendable {
    package let backend: any ServiceBackend
    package let accounts: any CredentialCheck
    package let options: ServerOptions
    /// Who may enrol a device with an identity provider's token (`POST /v1/enrol`), or nil:
    /// credentials come only from an operator (`jlog accounts add`).
    package let enrolment: Enrolment?
    let limiter: RateLimiter
    /// Wall-clock milliseconds (credential expiry).
    let now: @Sendable () -> Int64

    package init(backend: any ServiceBackend, accounts: any CredentialCheck, options: ServerOptions = ServerOptions(),
                enrolment: Enrolment? = nil,
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        self.backend = backend
        self.accounts = accounts
        self.options = options
        self.enrolment = enrolment
        self.now = now
        limiter = RateLimiter(rate: options.requestsPerSecond, burst: options.burst)
    }

    /// For a process that is a server: Swift concurrency's global executor becomes NIO's event
    /// loops, so a request no longer hops between them and the concurrency pool (two thread
    /// wake-ups each way). Call once, from the main thread, before any task runs; the server's
    /// blocking work stays on its own thread pool (`BlockingBackend`). Returns whether it did.
    @discardableResult
    package static func runConcurrencyOnEventLoops() -> Bool {
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }

    /// Runs until the process is told to stop (SIGINT, SIGTERM) or the task is cancelled;
    /// `onRunning` gets the port it listens on (useful with port 0). With `node`, the metrics
    /// address also takes `POST /compact` (a compaction now, for an operator or a test).
    package func run(logger: Logger? = nil, node: ServiceNode? = nil, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        var log = logger ?? Logger(label: "jlog-serve")
        if logger == nil { log.logLevel = .warning }
        let app = Application(
            router: makeRouter(),
            server: .http1(configuration: .init(additionalChannelHandlers: [ConnectionEndWatcher()])),
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: "jlog",
                                 availableConnectionsDelegate: MaximumAvailableConnections(options.maxConnections)),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: log)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: app)]
        if let m = options.metrics { services.append(.init(service: Self.metricsApplication(m, node: node, logger: log))) }
        // The hint closer is last so that it is told first: a device's hint channel never ends
        // by itself, and the server's graceful shutdown waits for every response to end.
        services.append(.init(service: HintCloser(hints: backend.hints)))
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: log))
        try await group.run()
        backend.hints.finishAll()
    }

    /// `GET /metrics` on its own address: what a Prometheus server scrapes, never on the API's
    /// port (a device has no business reading it). With `node`, `POST /compact` runs a compaction
    /// now and answers its report (SYNC.md §11.5): the operator's address only, like the metrics.
    static func metricsApplication(_ m: (host: String, port: Int, registry: PrometheusCollectorRegistry), node: ServiceNode?,
                                   logger: Logger) -> some Service {
        let router = Router()
        let registry = m.registry
        if let node {
            router.post("/compact") { _, _ in
                do throws(SyncError) {
                    let outcome = try await node.compactOnce()
                    return Self.json(200, CompactionJSON(outcome))
                } catch {
                    return Self.error(error)
                }
            }
        }
        router.get("/metrics") { _, _ in
            var buffer: [UInt8] = []
            registry.emit(into: &buffer)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                            body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
        return Application(router: router, configuration: .init(address: .hostname(m.host, port: m.port), serverName: "jlog-metrics"),
                           logger: logger)
    }

    /// The API's routes (Spec/openapi.yaml) behind the middleware that every request passes:
    /// metrics and request logs, 405 for a known path's other methods, 400 for a path with an
    /// empty segment, errors mapped to statuses once (`SyncErrorMiddleware`); and, for every route
    /// but health and readiness, authentication and the account's rate (`AuthenticationMiddleware`).
    package func makeRouter() -> Router<ServerRequestContext> {
        let router = Router(context: ServerRequestContext.self)
        // Requests by route and status, and their latencies (swift-metrics; exported by the
        // process's backend, `jlog serve --metrics`), and at `info` a log line per request with
        // its id (`hb.request.id`).
        router.middlewares.add(MetricsMiddleware())
        router.middlewares.add(LogRequestsMiddleware(.info))
        router.middlewares.add(MethodNotAllowedMiddleware())
        router.middlewares.add(ProtocolVersionMiddleware())
        router.middlewares.add(SyncErrorMiddleware())
        router.middlewares.add(EmptySegmentMiddleware())
        router.get("/v1/health") { _, _ in Self.json(200, ["status": "ok"]) }
        router.get("/v1/ready") { _, _ in await readiness() }
        if let enrolment { addEnrolmentRoute(router, enrolment) }
        let api = router.group("/v1").add(middleware: AuthenticationMiddleware(accounts: accounts, limiter: limiter, now: now))
        addAccountRoutes(api)
        addZoneRoutes(api)
        addSharingRoutes(api)
        return router
    }

    /// Ready: the service's storage takes writes (a failed store refuses every append), answered
    /// within `ServiceCore.readinessDeadline` and a second, whatever the storage does (SYNC.md
    /// §11.5): a load balancer's probe must not hang while the database is down.
    func readiness() async -> Response {
        let limit = ServiceCore.readinessDeadline + .seconds(1)
        let why = await Self.first(within: limit, backend.unreadiness, otherwise: "the storage did not answer within \(limit)")
        guard let why else { return Self.json(200, ["status": "ready"]) }
        return Self.json(503, ["status": "unready", "reason": why])
    }

    /// `body`'s answer, or `otherwise` when it has not answered within `limit` (it goes on, and
    /// its answer is dropped).
    static func first(within limit: Duration, _ body: @escaping @Sendable () async -> String?, otherwise: String) async -> String? {
        let answer = OnceAnswer()
        return await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            answer.set(c)
            Task { answer.give(await body()) }
            Task {
                try? await Task.sleep(for: limit)
                answer.give(otherwise)
            }
        }
    }

    func addAccountRoutes(_ api: RouterGroup<ServerRequestContext>) {
        api.get("account") { _, context in
            Self.json(200, HTTPBinding.AccountJSON(account: try context.authenticatedCaller().account))
        }
        api.get("databases/:scope/changes") { request, context in
            guard let scope = context.parameters.get("scope").flatMap(DatabaseScope.init(rawValue:)) else {
                throw SyncError.invalidRequest("the database scope is private or shared")
            }
            let (token, limit) = try Self.paging(request)
            let page = try await backend.perform(context.authenticatedCaller(), .fetchDatabaseChanges(scope: scope, since: token, limit: limit))
                .databaseChangesPage()
            return Self.json(200, HTTPBinding.DatabaseChangesJSON(page))
        }
        api.get("databases/changes") { request, context in
            let tokens = try Self.databaseTokens(request)
            let (_, limit) = try Self.paging(request)
            let page = try await backend.perform(context.authenticatedCaller(), .fetchBothDatabases(since: tokens, limit: limit)).bothDatabasesPage()
            return Self.json(200, HTTPBinding.BothDatabasesJSON(page))
        }
        api.get("hints") { request, context in
            let watcher = try? await context.channel.pipeline.handler(type: ConnectionEndWatcher.self).get()
            let end = watcher?.end ?? context.channel.closeFuture
            return try hintChannel(for: context.authenticatedCaller().account, credential: context.credential ?? "", connectionEnd: end)
        }
    }

    func addZoneRoutes(_ api: RouterGroup<ServerRequestContext>) {
        api.post("zones/:owner/:name/entries") { request, context in
            let zone = try Self.zone(context)
            let entries = try await Self.uploadedEntries(request, limits: backend.limits)
            let (since, _) = try Self.paging(request)
            let carrying = try Self.carry(request)
            let result: UploadResult
            do throws(SyncError) {
                result = try await backend.perform(context.authenticatedCaller(),
                                                   .upload(entries: entries, zone: zone, since: since, carrying: carrying)).uploadResult()
            } catch {
                guard case .partialFailure(let r) = error else { throw error }
                result = r
            }
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(bytes: HTTPBinding.UploadJSON(result).encoded)))
        }
        api.get("zones/:owner/:name/changes") { request, context in
            let zone = try Self.zone(context)
            let (token, limit) = try Self.paging(request)
            let page = try await backend.perform(context.authenticatedCaller(), .fetchZoneChanges(zone: zone, since: token, limit: limit)).zoneChangesPage()
            var headers = HTTPFields()
            headers[.contentType] = WireBatch.mediaType
            headers[HTTPField.Name(HTTPBinding.tokenHeader)!] = page.token.text
            headers[HTTPField.Name(HTTPBinding.moreComingHeader)!] = page.moreComing ? "true" : "false"
            if let head = page.head { headers[HTTPField.Name(HTTPBinding.headHeader)!] = head.text }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: WireBatch.encode(page.entries))))
        }
        api.get("zones/:owner/:name/history") { request, context in
            let bytes = try await backend.perform(context.authenticatedCaller(), .fetchZoneHistory(zone: try Self.zone(context))).historyBytes()
            return Self.binary(request, bytes, headers: HTTPFields())
        }
        api.get("zones/:owner/:name/history/pages") { request, context in
            let cursor = try Self.historyCursor(request)
            let page = try await backend.perform(context.authenticatedCaller(), .fetchZoneHistoryPage(zone: try Self.zone(context), after: cursor))
                .zoneHistoryPage()
            var headers = HTTPFields()
            if let next = page.next { headers[HTTPField.Name(HTTPBinding.historyNextHeader)!] = next.text }
            return Self.binary(request, page.bytes, headers: headers)
        }
        api.get("zones/:owner/:name/snapshot") { request, context in
            guard let snapshot = try await backend.perform(context.authenticatedCaller(), .fetchZoneSnapshot(zone: try Self.zone(context))).zoneSnapshot() else {
                return Response(status: .noContent)
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/octet-stream"
            headers[HTTPField.Name(HTTPBinding.tokenHeader)!] = snapshot.token.text
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: snapshot.bytes)))
        }
        api.put("zones/:owner/:name") { _, context in
            try await backend.perform(context.authenticatedCaller(), .createZone(try Self.zone(context))).finished()
            return Response(status: .noContent)
        }
        api.delete("zones/:owner/:name") { _, context in
            try await backend.perform(context.authenticatedCaller(), .deleteZone(try Self.zone(context))).finished()
            return Response(status: .noContent)
        }
    }

    func addSharingRoutes(_ api: RouterGroup<ServerRequestContext>) {
        api.post("zones/:owner/:name/invitations") { request, context in
            let zone = try Self.zone(context)
            let body: HTTPBinding.ParticipantJSON = try await Self.decode(request)
            let invitation = try await backend.perform(context.authenticatedCaller(), .shareZone(zone, participant: body.participant)).shareInvitation()
            return Self.json(200, HTTPBinding.InvitationJSON(invitation: invitation.text))
        }
        api.post("invitations/accept") { request, context in
            let body: HTTPBinding.InvitationJSON = try await Self.decode(request)
            let zone = try await backend.perform(context.authenticatedCaller(), .acceptShare(ShareInvitation(body.invitation))).zoneID()
            return Self.json(200, HTTPBinding.ZoneJSON(zone))
        }
        api.delete("zones/:owner/:name/participants/:account") { _, context in
            let zone = try Self.zone(context)
            guard let participant = context.parameters.get("account"), SyncNames.accountRefusal(participant) == nil else {
                throw SyncError.invalidRequest("not an account name")
            }
            try await backend.perform(context.authenticatedCaller(), .removeParticipant(participant, zone: zone)).finished()
            return Response(status: .noContent)
        }
        api.get("zones/:owner/:name/participants") { _, context in
            let list = try await backend.perform(context.authenticatedCaller(), .fetchParticipants(try Self.zone(context))).participantList()
            return Self.json(200, HTTPBinding.ParticipantsJSON(list))
        }
        api.delete("zones/:owner/:name/participants") { _, context in
            try await backend.perform(context.authenticatedCaller(), .stopSharing(try Self.zone(context))).finished()
            return Response(status: .noContent)
        }
        api.put("account/keys") { request, context in
            let body: HTTPBinding.AccountKeysJSON = try await Self.decode(request)
            guard let keys = try body.keys() else { throw SyncError.invalidRequest("an account publishes both its keys") }
            try await backend.perform(context.authenticatedCaller(), .publishAccountKeys(keys)).finished()
            return Response(status: .noContent)
        }
        api.put("account/recovery") { request, context in
            let body: HTTPBinding.RecoveryKitJSON = try await Self.decode(request)
            guard let kit = try body.bytes() else { throw SyncError.invalidRequest("an account stores a kit") }
            try await backend.perform(context.authenticatedCaller(), .storeRecoveryKit(kit)).finished()
            return Response(status: .noContent)
        }
        api.get("account/recovery") { _, context in
            let kit = try await backend.perform(context.authenticatedCaller(), .fetchRecoveryKit).storedRecoveryKit()
            return Self.json(200, HTTPBinding.RecoveryKitJSON(kit))
        }
        api.put("account/links/:link") { request, context in
            let link = try Self.link(context)
            let body: HTTPBinding.DeviceLinkJSON = try await Self.decode(request)
            guard let sealed = try body.bytes() else { throw SyncError.invalidRequest("a link carries sealed keys") }
            try await backend.perform(context.authenticatedCaller(), .depositDeviceLink(link: link, sealed: sealed)).finished()
            return Response(status: .noContent)
        }
        api.get("account/links/:link") { _, context in
            let sealed = try await backend.perform(context.authenticatedCaller(), .fetchDeviceLink(try Self.link(context))).linkedKeys()
            return Self.json(200, HTTPBinding.DeviceLinkJSON(sealed))
        }
        api.get("accounts/:account/keys") { _, context in
            guard let account = context.parameters.get("account"), SyncNames.accountRefusal(account) == nil else {
                throw SyncError.invalidRequest("not an account name")
            }
            let keys = try await backend.perform(context.authenticatedCaller(), .fetchAccountKeys(account)).publishedAccountKeys()
            return Self.json(200, HTTPBinding.AccountKeysJSON(account: account, keys))
        }
    }

    // MARK: Every request

    /// The entries of an upload's body: a wire batch within the upload limits (more entries are
    /// refused before any is built).
    static func uploadedEntries(_ request: Request, limits: ServiceLimits) async throws(SyncError) -> [JournalEntry] {
        let bytes = try await Self.body(request, limit: limits.maxUploadBytes + 64 << 10)
        let entries: [JournalEntry]
        do throws(CodecError) { entries = try WireBatch.decode(bytes, maxEntries: limits.maxUploadEntries) } catch {
            if case .lengthOutOfRange(field: "entry count", _, _) = error.kind { throw .limitExceeded }
            throw .invalidRequest("the body is not a jlog wire batch: \(error)")
        }
        guard !entries.isEmpty else { throw .invalidRequest("an upload holds at least one entry") }
        return entries
    }

    /// A history body: LZ4-compressed when the client takes it and it pays (SYNC.md §9.5).
    static func binary(_ request: Request, _ bytes: [UInt8], headers: HTTPFields) -> Response {
        var headers = headers
        if Self.accepts(request, CompressedBody.mediaType), let packed = CompressedBody.encode(bytes) {
            headers[.contentType] = CompressedBody.mediaType
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: packed)))
        }
        headers[.contentType] = "application/octet-stream"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The credential of an `Authorization: Bearer …` header. The scheme's name is matched
    /// case-insensitively and one or more spaces may follow it (RFC 7235 §2.1, SYNC.md §9.2).
    static func bearer(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        return credential(ofAuthorization: header)
    }

    /// The credential of an `Authorization` value whose scheme is `Bearer` in any case, or nil.
    static func credential(ofAuthorization header: String) -> String? {
        let scheme = header.prefix { $0 != " " }
        guard scheme.lowercased() == "bearer" else { return nil }
        let credential = header[scheme.endIndex...].drop { $0 == " " }
        guard credential.startIndex > scheme.endIndex, !credential.isEmpty else { return nil }
        return String(credential)
    }

    static func hasBody(_ request: Request) -> Bool {
        if let length = request.headers[.contentLength] { return length != "0" }
        return request.headers[.transferEncoding] != nil
    }

    /// `response`, with `Connection: close`, and the connection closed once it is written.
    static func closingConnection(_ response: Response, _ channel: any Channel) -> Response {
        var r = response
        r.headers[.connection] = "close"
        let inner = response.body
        r.body = ResponseBody(contentLength: response.body.contentLength) { writer in
            try await inner.write(writer)
            channel.close(promise: nil)
        }
        return r
    }

    static func error(_ e: SyncError) -> Response {
        let (status, body) = HTTPBinding.response(for: e)
        var r = json(status, body)
        if let after = body.retryAfter { r.headers[.retryAfter] = String(after) }
        return r
    }

    /// Keys in one order: the same answer is the same bytes every time (a refusal for a zone the
    /// caller may not see must not differ from one for no zone, even in its key order).
    private static let sortedEncoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return e
    }()

    /// `value` as the JSON every answer carries (keys sorted).
    static func jsonBytes(_ value: some Encodable) -> [UInt8] { Array((try? sortedEncoder.encode(value)) ?? Data("{}".utf8)) }

    static func json(_ status: Int, _ value: some Encodable) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: jsonBytes(value))))
    }

    /// The zone a path names. A name no zone can have is `invalidRequest` with the reason, never
    /// `zoneNotFound`, which tells a client to remove its list (SYNC.md §4.1): the answer depends
    /// on the name alone, so it says nothing about which zones exist.
    /// The link id a `/v1/account/links/{link}` path names.
    static func link(_ context: ServerRequestContext) throws(SyncError) -> [UInt8] {
        guard let raw = context.parameters.get("link"), let link = HTTPBinding.DeviceLinkJSON.link(raw) else {
            throw .invalidRequest("a link is addressed as /v1/account/links/ and 32 lowercase hex digits")
        }
        return link
    }

    static func zone(_ context: ServerRequestContext) throws(SyncError) -> ZoneID {
        guard let owner = context.parameters.get("owner"), let raw = context.parameters.get("name") else {
            throw .invalidRequest("a zone is addressed as /v1/zones/OWNER/NAME")
        }
        if let why = SyncNames.accountRefusal(owner) { throw .invalidRequest("not a zone owner: \(why)") }
        guard let name = HTTPBinding.percentDecode(Substring(raw)) else {
            throw .invalidRequest("the zone name is not validly percent-encoded UTF-8")
        }
        guard let zone = ZoneID(owner: owner, name: name) else {
            throw .invalidRequest("not a zone name: \(ZoneID.refusal(owner: owner, name: name) ?? "invalid")")
        }
        return zone
    }

    /// The `private` and `shared` query parameters of `GET /v1/databases/changes`: each a
    /// database token, 1–1,024 bytes, absent for a fetch from no token.
    static func databaseTokens(_ request: Request) throws(SyncError) -> DatabaseTokens {
        let q = request.uri.queryParameters
        var tokens = DatabaseTokens(private: nil, shared: nil)
        for scope in DatabaseScope.allCases {
            guard let t = q[Substring(scope.rawValue)] else { continue }
            guard !t.isEmpty, t.utf8.count <= HTTPBinding.maxTokenBytes else { throw .invalidRequest("a token is 1–\(HTTPBinding.maxTokenBytes) bytes") }
            if scope == .private { tokens.private = ServiceToken(String(t)) } else { tokens.shared = ServiceToken(String(t)) }
        }
        return tokens
    }

    /// Whether the request's `Accept` names `mediaType` (a media range list; parameters ignored,
    /// no wildcard matches it: the plain body is what an unspecific client gets).
    static func accepts(_ request: Request, _ mediaType: String) -> Bool {
        request.headers[values: .accept].contains { value in
            value.split(separator: ",").contains { $0.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == mediaType }
        }
    }

    /// The `token` and `limit` query parameters (SYNC.md §9). A token sent in a `JLog-Token`
    /// request header is refused, not ignored: served as "from the start", such a client would
    /// download the whole list on every fetch without knowing it.
    /// The `after` query parameter of a history page: 1–512 bytes, or none (the first page).
    static func historyCursor(_ request: Request) throws(SyncError) -> HistoryCursor? {
        guard let after = request.uri.queryParameters["after"] else { return nil }
        guard !after.isEmpty, after.utf8.count <= HistoryCursor.maxBytes else {
            throw .invalidRequest("a history cursor is 1–\(HistoryCursor.maxBytes) bytes")
        }
        return HistoryCursor(String(after))
    }

    /// An upload's `carry`: how many others' entries its answer may bring (0…256; 0 when absent).
    static func carry(_ request: Request) throws(SyncError) -> Int {
        guard let c = request.uri.queryParameters["carry"] else { return 0 }
        guard let n = Int(c), n >= 0, n <= HTTPBinding.maxCarriedEntries else {
            throw .invalidRequest("carry is 0…\(HTTPBinding.maxCarriedEntries)")
        }
        return n
    }

    static func paging(_ request: Request) throws(SyncError) -> (ServiceToken?, Int) {
        if request.headers[HTTPField.Name(HTTPBinding.tokenHeader)!] != nil {
            throw .invalidRequest("a request's change token goes in the token query parameter; \(HTTPBinding.tokenHeader) is a response header")
        }
        let q = request.uri.queryParameters
        var token: ServiceToken? = nil
        if let t = q["token"] {
            guard !t.isEmpty, t.utf8.count <= HTTPBinding.maxTokenBytes else { throw .invalidRequest("a token is 1–\(HTTPBinding.maxTokenBytes) bytes") }
            token = ServiceToken(String(t))
        }
        var limit = 500
        if let l = q["limit"] {
            guard let n = Int(l), n >= 1, n <= 10_000 else { throw .invalidRequest("limit is 1…10000") }
            limit = n
        }
        return (token, limit)
    }

    /// The whole body, refused (413) past `limit` before more than `limit` bytes are read: a
    /// declared length over it is refused without reading any.
    static func body(_ request: Request, limit: Int) async throws(SyncError) -> [UInt8] {
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit { throw .limitExceeded }
        do {
            var buffer = try await request.body.collect(upTo: limit)
            return buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch is NIOTooManyBytesError {
            throw .limitExceeded
        } catch {
            throw .invalidRequest("the body could not be read")
        }
    }

    static func decode<T: Decodable>(_ request: Request) async throws(SyncError) -> T {
        let bytes = try await body(request, limit: HTTPBinding.maxJSONBody)
        do { return try JSONDecoder().decode(T.self, from: Data(bytes)) } catch {
            throw .invalidRequest("the body is not the JSON this call takes (\(T.self))")
        }
    }
}

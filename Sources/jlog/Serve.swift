import ArgumentParser
import Foundation
import JournalLog
import JournalServer
import JournalService
import JournalSync
import JournalSyncWire
import Logging

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the sync server: the protocol of Spec/SYNC.md over HTTP (Spec/openapi.yaml), over a store.",
        discussion: """
        The store holds every account's lists (one zone each), the membership of shared lists, \
        and `service/accounts` (hashes of device credentials; `jlog accounts` edits it while the \
        server runs). The server compacts finished lifecycles past the retention every \
        --compact-every seconds; a device whose token predates a compaction re-fetches. Plain \
        HTTP: put a TLS proxy in front of it for anything but loopback (README, "Running a server"). \
        SIGINT or SIGTERM stops it cleanly; SIGKILL loses nothing acknowledged.

        While its database (or store) does not answer, the node answers every request, sign-in \
        checks included, 503 serviceBusy with Retry-After: devices keep their lists and \
        credentials and try again; no device is ever signed out because a credential could not be \
        looked up. GET /v1/ready answers 503 within 3 s, compaction runs fail and are tried again \
        within 5 s, and jlog_storage_failures_total{kind="unavailable"} (or "damaged": an \
        operator must act) counts each failure (--metrics). With --metrics, POST /compact on that \
        address runs a compaction now.

        With --jwks, a device that holds a token of the app's own identity provider (a JWT signed \
        RS256, ES256 or EdDSA by a key of that JWKS, naming --jwt-issuer and --jwt-audience, not \
        expired) enrols itself: POST /v1/enrol with the token as its bearer answers a device \
        credential of the account the token's --jwt-account-claim names (made on first sight). \
        Each such credential is listed, expires and is revoked like one `jlog accounts add` issued; \
        an account enrols at most 64 valid credentials.
        """)

    @Argument(help: "The server's store directory (created if missing); or give --database.") var store: String?
    @Option(help: ArgumentHelp("Serve over this PostgreSQL database instead of a store (postgres://user@host/db, or ?host=/socket/dir); any number of nodes may share it.",
                               valueName: "url"))
    var database: String?
    @Option(help: ArgumentHelp("With --database: the PostgreSQL schema the tables live in (default: the user's search path).", valueName: "name"))
    var schema: String?
    @Option(help: ArgumentHelp("With --database: connections this node keeps to it (about twice the database's cores: more only take turns on them).",
                               valueName: "n"))
    var databaseConnections = 8
    @Option(help: ArgumentHelp("Address and port to listen on.", valueName: "host:port")) var listen = "127.0.0.1:8080"
    @Option(help: ArgumentHelp("Days a finished lifecycle stays before compaction purges it.", valueName: "days")) var retentionDays: Double = 14
    @Option(help: ArgumentHelp("Seconds between compactions (0: never).", valueName: "s")) var compactEvery: Double = 3_600
    @Option(help: ArgumentHelp("Requests per second per account, on average (0: no limit).", valueName: "n")) var rateLimit: Double = 100
    @Option(help: ArgumentHelp("Requests an account may make in a burst above --rate-limit.", valueName: "n")) var burst: Double = 200
    @Option(help: ArgumentHelp("Entries per upload.", valueName: "n")) var maxUploadEntries = 400
    @Option(help: ArgumentHelp("Lists an account may own.", valueName: "n")) var maxZonesPerAccount = 1_000
    @Option(help: ArgumentHelp("Entries in the lists an account owns (default: no quota).", valueName: "n")) var maxEntriesPerAccount: Int?
    @Option(help: ArgumentHelp("Write the port to this file once listening (for scripts that listen on port 0).", valueName: "file"))
    var portFile: String?
    @Option(help: ArgumentHelp("Serve Prometheus metrics (GET /metrics) on this address, apart from the API.", valueName: "host:port"))
    var metrics: String?
    @Option(help: ArgumentHelp("Let devices enrol with this identity provider's tokens (POST /v1/enrol): its JWKS document, a file or an http(s) URL. Needs --jwt-issuer and --jwt-audience.",
                               valueName: "file|url"))
    var jwks: String?
    @Option(help: ArgumentHelp("With --jwks: the issuer (iss) its tokens must name, exactly.", valueName: "iss")) var jwtIssuer: String?
    @Option(help: ArgumentHelp("With --jwks: the audience (aud) its tokens must name: this server.", valueName: "aud")) var jwtAudience: String?
    @Option(help: ArgumentHelp("With --jwks: the claim whose value is the account name.", valueName: "claim")) var jwtAccountClaim = "sub"
    @Option(help: ArgumentHelp("Log level: trace, debug, info (a line per request, with its id), notice, warning, error, critical.", valueName: "level"))
    var logLevel = "warning"

    func validate() throws {
        guard (store == nil) != (database == nil) else { throw ValidationError("give a store directory or --database postgres://…, not both") }
        guard schema == nil || database != nil else { throw ValidationError("--schema goes with --database") }
        guard (1...1_000).contains(databaseConnections) else { throw ValidationError("--database-connections must be 1…1000") }
        guard hostPort != nil else { throw ValidationError("--listen takes HOST:PORT (port 0 picks a free one)") }
        guard retentionDays >= 0, retentionDays <= 3_650 else { throw ValidationError("--retention-days must be 0…3650") }
        guard compactEvery >= 0, compactEvery <= 86_400 * 365 else { throw ValidationError("--compact-every must be 0…31536000 seconds") }
        guard rateLimit >= 0, burst >= 1 else { throw ValidationError("--rate-limit must be ≥ 0 and --burst ≥ 1") }
        guard (1...65_536).contains(maxUploadEntries) else { throw ValidationError("--max-upload-entries must be 1…65536") }
        guard maxZonesPerAccount >= 1, (maxEntriesPerAccount ?? 1) >= 1 else { throw ValidationError("quotas must be ≥ 1") }
        guard metrics == nil || Self.hostPort(metrics!) != nil else { throw ValidationError("--metrics takes HOST:PORT") }
        guard (jwks == nil) == (jwtIssuer == nil), (jwks == nil) == (jwtAudience == nil) else {
            throw ValidationError("--jwks, --jwt-issuer and --jwt-audience go together")
        }
        guard !jwtAccountClaim.isEmpty, jwtIssuer?.isEmpty != true, jwtAudience?.isEmpty != true else {
            throw ValidationError("--jwt-issuer, --jwt-audience and --jwt-account-claim are not empty")
        }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level is one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    var hostPort: (String, Int)? { Self.hostPort(listen) }

    static func hostPort(_ text: String) -> (String, Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else { return nil }
        let host = String(text[..<colon])
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    func run() async throws {
        let (host, port) = hostPort!
        var limits = ServiceLimits()
        limits.retentionMillis = Int64(retentionDays * 86_400_000)
        limits.maxUploadEntries = maxUploadEntries
        limits.maxZonesPerAccount = maxZonesPerAccount
        limits.maxEntriesPerAccount = maxEntriesPerAccount
        var log = Logger(label: "jlog-serve")
        log.logLevel = Logger.Level(rawValue: logLevel) ?? .warning
        let place: ServePlace = if let database {
            try await ServePlace.database(database, schema: schema, connections: databaseConnections, limits: limits, logger: log)
        } else {
            try ServePlace.store(store!, limits: limits)
        }
        var options = ServerOptions()
        options.host = host
        options.port = port
        if let metrics, let (mh, mp) = Self.hostPort(metrics) { options.metrics = (mh, mp, ServerMetrics.bootstrapPrometheus()) }
        options.requestsPerSecond = rateLimit
        options.burst = burst
        let backend = BlockingBackend(core: place.core)
        var enrolment: Enrolment?
        if let jwks, let jwtIssuer, let jwtAudience {
            let provider = IdentityProvider(policy: IdentityPolicy(issuer: jwtIssuer, audience: jwtAudience, accountClaim: jwtAccountClaim),
                                            source: IdentityProvider.KeySource(jwks))
            // A key set that cannot be used is refused now, not at the first device's enrolment.
            do { try await provider.load() } catch {
                await place.close()
                printError("--jwks: \(error)")
                throw ExitCode(Status.badInput)
            }
            enrolment = Enrolment(provider: provider, devices: place.accounts)
        }
        let server = SyncServer(backend: MeteredBackend(backend), accounts: place.accounts, options: options, enrolment: enrolment)
        let node = ServiceNode(backend: backend, logger: log)
        let compaction = node.compactions(every: compactEvery > 0 ? .milliseconds(Int64(compactEvery * 1000)) : nil) { outcome in
            let r = outcome.report.storage
            printError("compacted: \(r.entriesPurged) purged, \(r.entriesReplaced) replaced; \(outcome.devicesSentBack) devices will re-fetch from the snapshot")
        }
        let signals = place.signals.map { node.follow($0) }
        let portFile = self.portFile
        let name = place.name
        do {
            try await server.run(logger: log, node: node) { bound in
                printError("serving \(name) on http://\(host):\(bound)")
                if let portFile { try? "\(bound)\n".write(toFile: portFile, atomically: true, encoding: .utf8) }
            }
        } catch {
            compaction.cancel()
            signals?.cancel()
            await place.close()
            printError("the server stopped: \(error)")
            throw ExitCode(Status.failure)
        }
        compaction.cancel()
        signals?.cancel()
        try? place.core.saveDevices()
        await place.close()
    }
}

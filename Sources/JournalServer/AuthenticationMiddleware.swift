import Hummingbird
import JournalService
import JournalSync
import JournalSyncWire

/// Authenticates every request of the routes behind it (Spec/SYNC.md §9.2), once: a credential
/// the service judged and refused is `401` (the device signs out), one that could not be judged
/// because the credentials are unavailable is `503 serviceBusy` with `Retry-After` (the device
/// keeps its credential and tries again), and an accepted one acts as its account within the
/// account's rate (`429` above it). The caller goes into the context for the route.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let accounts: any CredentialCheck
    let limiter: RateLimiter
    /// Wall-clock milliseconds (credential expiry).
    let now: @Sendable () -> Int64

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let credential = SyncServer.bearer(request) else { throw SyncError.notAuthenticated }
        let account = try await accounts.authenticate(credential, now: now()).account()
        if let wait = limiter.admit(account) {
            ServerMetrics.rateLimited.increment()
            throw SyncError.rateLimited(retryAfter: .seconds(wait))
        }
        var context = context
        // The device is the credential's id: one credential per device (SYNC.md §9.2).
        context.caller = ServiceCaller(account: account, device: DeviceCredential(credential)?.id)
        context.credential = credential
        return try await next(request, context)
    }
}

import HTTPTypes
import Hummingbird
import JournalService
import JournalSync
import JournalSyncWire

/// A server's identity provider and where it issues the credentials of the devices that enrol
/// with the provider's tokens (Spec/SYNC.md §9.2, enrolment).
package struct Enrolment: Sendable {
    package let provider: IdentityProvider
    package let devices: any DeviceEnrolling
    /// The most valid credentials an account may have for another device to enrol.
    package var maxDevicesPerAccount = DeviceEnrolment.maxDevicesPerAccount

    package init(provider: IdentityProvider, devices: any DeviceEnrolling) {
        self.provider = provider
        self.devices = devices
    }
}

extension SyncServer {
    /// `POST /v1/enrol`: the identity provider's token in `Authorization: Bearer` becomes a device
    /// credential of the account it names, made on first sight (201). A token refused is `401`
    /// with the reason; keys that could not be read are `503` (retry, never a refusal); an
    /// account at its device limit is `409 tooManyDevices`. Within the account's rate, like every
    /// authenticated request, and all enrolments together within one account's rate.
    func addEnrolmentRoute(_ router: Router<ServerRequestContext>, _ enrolment: Enrolment) {
        router.post("/v1/enrol") { request, _ in
            guard let token = Self.bearer(request) else { throw SyncError.notAuthenticated }
            // All enrolments together within one account's rate, before any signature is checked:
            // made-up tokens cost the server a bounded number of verifications ("_" names no account).
            if let wait = limiter.admit("_enrolment") {
                ServerMetrics.rateLimited.increment()
                throw SyncError.rateLimited(retryAfter: .seconds(wait))
            }
            let account: String
            do throws(IdentityTokenError) { account = try await enrolment.provider.account(of: token, now: now()) } catch {
                ServerMetrics.enrolmentsRefused.increment()
                return Self.refusal(error)
            }
            if let wait = limiter.admit(account) {
                ServerMetrics.rateLimited.increment()
                throw SyncError.rateLimited(retryAfter: .seconds(wait))
            }
            let credential = try await enrolment.devices.enrol(account: account, now: now(), limit: enrolment.maxDevicesPerAccount)
            ServerMetrics.enrolments.increment()
            return Self.json(201, HTTPBinding.EnrolmentJSON(account: account, credential: credential.text))
        }
    }

    /// The answer to a token not taken: its status and error name as `SyncError` gives them, and
    /// the reason as the message, so that the app's developer sees which check failed.
    static func refusal(_ error: IdentityTokenError) -> Response {
        let plain = SyncErrorMiddleware.response(for: error.syncError)
        var (_, body) = HTTPBinding.response(for: error.syncError)
        body.message = error.description
        var r = json(Int(plain.status.code), body)
        for name in [HTTPField.Name.wwwAuthenticate, .retryAfter] { r.headers[name] = plain.headers[name] }
        return r
    }
}

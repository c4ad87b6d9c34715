import Foundation
import JournalSync
import JournalSyncWire

extension HTTPSyncService {
    /// Enrols this device with a server that takes the app's identity provider's tokens (`jlog
    /// serve --jwks`; Spec/SYNC.md §9.2, enrolment): `identityToken`, the JWT the app's sign-in gave it,
    /// becomes a device credential of the account the token names. Keep the credential (in the
    /// Keychain) and make the service from it; the token is not needed again until the device
    /// enrols anew.
    ///
    /// ```swift
    /// let credential = try await HTTPSyncService.enrol(server: "https://lists.example.com", identityToken: jwt)
    /// try await engine.signIn(HTTPSyncService(server: "https://lists.example.com", credential: credential))
    /// ```
    ///
    /// Throws `notAuthenticated` when the server refuses the token (its message says which check
    /// failed), `tooManyDevices` when the account has the most devices the server enrols,
    /// `serviceBusy` or `networkUnavailable` when it may work later, and `invalidRequest` when the
    /// server enrols no one (it was started without `--jwks`: 404).
    public static func enrol(server: String, identityToken: String, transport: any HTTPTransport = URLSessionTransport(),
                             timeout: Duration = .seconds(30)) async throws(SyncError) -> DeviceCredential {
        let base = server.hasSuffix("/") ? String(server.dropLast()) : server
        let answer = try await exchange(transport, server: base, authorization: "Bearer " + identityToken, timeout: timeout, "POST", "/v1/enrol",
                                    noRoute: .invalidRequest("the server \(base) enrols no devices with identity tokens (it runs without --jwks)"))
        guard let body = try? JSONDecoder().decode(HTTPBinding.EnrolmentJSON.self, from: Data(answer.body)),
              let credential = DeviceCredential(body.credential), credential.account == body.account else {
            throw .incompatible("an enrolment answer that does not read")
        }
        return credential
    }
}

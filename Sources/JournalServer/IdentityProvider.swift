import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JournalService
import Synchronization

/// The identity provider whose tokens `jlog serve` takes at `POST /v1/enrol` (Spec/SYNC.md
/// §9.2, enrolment): its policy (issuer, audience, the account claim) and its keys, read from a JWKS file or
/// URL. The keys are read again when they may have changed: a file at most every
/// `refreshInterval`, a URL every `refreshInterval` and, at most every `retryInterval`, when a
/// token names a key the set does not hold (the provider rotated its keys).
package final class IdentityProvider: Sendable {
    /// Where the keys are read from.
    package enum KeySource: Sendable, Equatable {
        case file(String)
        case url(URL)

        /// A path, or an `http://` or `https://` URL.
        package init(_ text: String) {
            if let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http" {
                self = .url(url)
            } else {
                self = .file(text)
            }
        }
    }

    package let policy: IdentityPolicy
    package let source: KeySource
    static let refreshInterval: Duration = .seconds(600)
    static let retryInterval: Duration = .seconds(30)
    static let fetchTimeout: TimeInterval = 10
    private let state = Mutex<(keys: IdentityKeys?, read: ContinuousClock.Instant?)>((nil, nil))

    package init(policy: IdentityPolicy, source: KeySource) {
        self.policy = policy
        self.source = source
    }

    /// Reads the keys now; throws why they could not be read (`jlog serve` refuses to start
    /// with a key set it cannot use).
    package func load() async throws(IdentityTokenError) {
        let keys = try await Self.read(source)
        state.withLock { $0 = (keys, .now) }
    }

    /// The account `token` names, or why it is not taken: `keysUnavailable` when the keys could
    /// not be read (the device retries), never a refusal for that.
    package func account(of token: String, now: Int64) async throws(IdentityTokenError) -> String {
        let keys = try await currentKeys(forceIfOlderThan: nil)
        do {
            return try IdentityToken.account(of: token, keys: keys, policy: policy, now: now)
        } catch .unknownKey {
            // The provider may have rotated: read the set again (not more often than retryInterval).
            let fresh = try await currentKeys(forceIfOlderThan: Self.retryInterval)
            return try IdentityToken.account(of: token, keys: fresh, policy: policy, now: now)
        }
    }

    private func currentKeys(forceIfOlderThan age: Duration?) async throws(IdentityTokenError) -> IdentityKeys {
        let (keys, read) = state.withLock { ($0.keys, $0.read) }
        let limit = age ?? Self.refreshInterval
        if let keys, let read, ContinuousClock.now - read < limit { return keys }
        do {
            let fresh = try await Self.read(source)
            state.withLock { $0 = (fresh, .now) }
            return fresh
        } catch {
            // Not read again before the interval is up, whether or not it answers.
            state.withLock { $0.read = .now }
            // Keys read before still verify the tokens they verified; only none at all is a failure.
            if let keys { return keys }
            throw .keysUnavailable(error.description)
        }
    }

    static func read(_ source: KeySource) async throws(IdentityTokenError) -> IdentityKeys {
        let bytes: [UInt8]
        switch source {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else { throw .keysUnavailable("\(path) cannot be read") }
            bytes = Array(data)
        case .url(let url):
            var request = URLRequest(url: url, timeoutInterval: fetchTimeout)
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            do {
                let (data, response) = try await URLSession.shared.data(for: request)
                guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
                    throw IdentityTokenError.keysUnavailable("\(url) answered \((response as? HTTPURLResponse)?.statusCode ?? 0)")
                }
                bytes = Array(data)
            } catch let failure as IdentityTokenError {
                throw failure
            } catch {
                throw .keysUnavailable("\(url): \(error.localizedDescription)")
            }
        }
        return try IdentityKeys(jwks: bytes)
    }
}

import Hummingbird
import JournalService
import JournalSync
import NIOCore

/// A request's context: its connection, so that a refusal can close it (`SyncErrorMiddleware`;
/// Hummingbird otherwise reads an unread body to its end to keep the connection), and, once
/// `AuthenticationMiddleware` has judged the request's credential, who is calling.
package struct ServerRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    package let channel: any Channel
    /// The authenticated caller: set by `AuthenticationMiddleware` before any authenticated route runs.
    package var caller: ServiceCaller?
    /// The credential the caller presented (a hint channel checks it again as it runs).
    package var credential: String?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }

    /// The caller of an authenticated route. A route outside the authenticated group that asks
    /// is refused as unauthenticated, never served as nobody.
    package func authenticatedCaller() throws(SyncError) -> ServiceCaller {
        guard let caller else { throw .notAuthenticated }
        return caller
    }
}

import Hummingbird
import JournalSync

/// Maps every `SyncError` a route or a middleware behind it throws to its status and body
/// (`HTTPBinding.response(for:)`), in one place: `401` with `WWW-Authenticate`, `Retry-After`
/// where the error carries one. A refusal of a request whose body may be unread closes the
/// connection: reading the rest, as keeping it would, lets a client make the server swallow any
/// number of bytes.
struct SyncErrorMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response: Response
        do { response = try await next(request, context) } catch let error as SyncError {
            response = Self.response(for: error)
        }
        guard response.status.code >= 400, SyncServer.hasBody(request) else { return response }
        return SyncServer.closingConnection(response, context.channel)
    }

    /// The answer to `error`.
    static func response(for error: SyncError) -> Response {
        var r = SyncServer.error(error)
        if error == .notAuthenticated { r.headers[.wwwAuthenticate] = "Bearer realm=\"jlog\"" }
        return r
    }
}

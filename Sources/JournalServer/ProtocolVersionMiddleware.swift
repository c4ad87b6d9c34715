import HTTPTypes
import Hummingbird
import JournalSync
import JournalSyncWire

/// The protocol version a client and this server speak (Spec/SYNC.md §3.13): a request names
/// the client's in `JLog-Protocol` (none: 1, a client from before the header), and a request
/// naming a version this server does not speak is refused `426 incompatible`, in words, before
/// any route sees it. Every answer names this server's version, so a client can say the same
/// of a server too old for it.
struct ProtocolVersionMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let field = HTTPField.Name(HTTPBinding.protocolHeader)!
        var response: Response
        if let refusal = HTTPBinding.protocolRefusal(request.headers[field]) {
            response = SyncErrorMiddleware.response(for: .incompatible(refusal))
            if SyncServer.hasBody(request) { response = SyncServer.closingConnection(response, context.channel) }
        } else {
            response = try await next(request, context)
        }
        response.headers[field] = String(HTTPBinding.protocolVersion)
        return response
    }
}

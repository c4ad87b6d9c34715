import Hummingbird
import JournalSync
import JournalSyncWire

/// 405 with `Allow` for a path the API has under other methods (RFC 9110 §15.5.6); the router
/// alone answers 404, as if the path did not exist. Paths are matched by shape (`:x` is any one
/// segment), so the answer says nothing about which zones exist.
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    /// The API's paths and their methods (Spec/openapi.yaml).
    static let routes: [([String], [HTTPRequest.Method])] = [
        (["v1", "health"], [.get]),
        (["v1", "ready"], [.get]),
        (["v1", "account"], [.get]),
        (["v1", "account", "keys"], [.put]),
        (["v1", "account", "recovery"], [.get, .put]),
        (["v1", "account", "links", ":"], [.get, .put]),
        (["v1", "accounts", ":", "keys"], [.get]),
        (["v1", "enrol"], [.post]),
        (["v1", "hints"], [.get]),
        (["v1", "databases", "changes"], [.get]),
        (["v1", "databases", ":", "changes"], [.get]),
        (["v1", "invitations", "accept"], [.post]),
        (["v1", "zones", ":", ":"], [.put, .delete]),
        (["v1", "zones", ":", ":", "entries"], [.post]),
        (["v1", "zones", ":", ":", "changes"], [.get]),
        (["v1", "zones", ":", ":", "history"], [.get]),
        (["v1", "zones", ":", ":", "snapshot"], [.get]),
        (["v1", "zones", ":", ":", "history", "pages"], [.get]),
        (["v1", "zones", ":", ":", "invitations"], [.post]),
        (["v1", "zones", ":", ":", "participants"], [.get, .delete]),
        (["v1", "zones", ":", ":", "participants", ":"], [.delete]),
    ]

    /// The methods the API has at `path`, or nil when it has no such path.
    static func methods(at path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        return routes.first { route, _ in
            route.count == segments.count && zip(route, segments).allSatisfy { $0 == ":" || $0 == $1 }
        }?.1
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // NIO's encoder writes no body in an answer to CONNECT (a 2xx one switches to a tunnel),
        // so the refusal is written past it, with its body, and the connection closed
        // (`ConnectRefusal`); what the router would answer after that goes nowhere.
        guard request.method != .connect else {
            let allowed = Self.methods(at: request.uri.path)?.map(\.rawValue).joined(separator: ", ")
            let body = HTTPBinding.ErrorJSON(error: "invalidRequest",
                                             message: allowed.map { "CONNECT is not a method of this path; it takes \($0)" } ?? "no such path")
            await ConnectRefusal.write(status: allowed == nil ? .notFound : .methodNotAllowed, json: SyncServer.jsonBytes(body),
                                       allow: allowed, on: context.channel)
            return SyncServer.closingConnection(Response(status: allowed == nil ? .notFound : .methodNotAllowed), context.channel)
        }
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            guard let allowed = Self.methods(at: request.uri.path), !allowed.contains(request.method) else { throw error }
            let names = allowed.map(\.rawValue).joined(separator: ", ")
            var r = SyncServer.json(405, HTTPBinding.ErrorJSON(error: "invalidRequest", message: "\(request.method.rawValue) is not a method of this path; it takes \(names)"))
            r.headers[.allow] = names
            if SyncServer.hasBody(request) { r = SyncServer.closingConnection(r, context.channel) }
            return r
        }
    }
}

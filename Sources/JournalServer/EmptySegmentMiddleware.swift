import Hummingbird
import JournalSync

/// Refuses a path with an empty segment (`//`, or a trailing `/`) with `400 invalidRequest`
/// before any route sees it (Spec/SYNC.md §9.3). The router merges empty segments, so
/// `DELETE /v1/zones/alice//participants` would otherwise reach `DELETE /v1/zones/alice/participants`
/// and delete the list `alice/participants`: a client's bug must never address another list.
struct EmptySegmentMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if Self.hasEmptySegment(request.uri.path) {
            throw SyncError.invalidRequest("a path has no empty segments (no '//', no trailing '/'): this one names no resource")
        }
        return try await next(request, context)
    }

    /// Whether `path` (without its query) has an empty segment after its leading `/` (the root
    /// `/` alone has none: it names no resource, and is answered 404 like any unknown path).
    static func hasEmptySegment(_ path: String) -> Bool {
        guard path != "/" else { return false }
        let segments = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        return segments.dropFirst().contains { $0.isEmpty }
    }
}

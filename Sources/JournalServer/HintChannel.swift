import Hummingbird
import JournalService
import NIOCore
import ServiceLifecycle

extension SyncServer {
    /// `GET /v1/hints`: server-sent events, one `changed` event per zone change the caller sees
    /// (`data:` the zone, `owner/name`), and a comment every `hintKeepAlive` so idle proxies keep
    /// the connection. A hint carries no entries: the device fetches (Spec/SYNC.md §7.7). The
    /// first event, `ready`, tells the device it is subscribed, so it syncs once to miss nothing.
    func hintChannel(for caller: String) -> Response {
        let hints = backend.hints.subscribe(caller)
        let keepAlive = options.hintKeepAlive
        let events = AsyncStream<String> { continuation in
            let forward = Task {
                for await zone in hints { continuation.yield("event: changed\ndata: \(zone)\n\n") }
                continuation.finish()
            }
            let ticks = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: keepAlive)
                    continuation.yield(": keep-alive\n\n")
                }
            }
            continuation.onTermination = { _ in
                forward.cancel()
                ticks.cancel()
            }
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            try await writer.write(ByteBuffer(string: "event: ready\ndata: subscribed\n\n"))
            for await event in events { try await writer.write(ByteBuffer(string: event)) }
            try await writer.finish(nil)
        })
    }
}

/// Ends every hint channel when the server is told to stop (SIGTERM, SIGINT), so that the
/// server's graceful shutdown, which waits for open responses, can finish.
struct HintCloser: Service {
    let hints: HintHub

    func run() async throws {
        try? await gracefulShutdown()
        hints.finishAll()
    }
}

import Hummingbird
import JournalService
import JournalSync
import JournalSyncWire
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

extension SyncServer {
    /// `GET /v1/hints`: server-sent events, one `changed` event per zone change the caller sees
    /// (a `data:` line with the zone, `owner/name`, and one with its head after the change when
    /// known; `*`: everything), and a comment every `hintKeepAlive` so idle proxies keep the
    /// connection. A hint carries no entries: the device fetches (Spec/SYNC.md §7.7). The first
    /// event, `ready`, tells the device it is subscribed, so it syncs once to miss nothing; a
    /// hint dropped on the way is followed by a `*`.
    ///
    /// The channel outlives the request that authenticated it, so the credential is asked again
    /// before each event is written: a revoked or expired one ends the channel (a stolen device
    /// would otherwise go on learning the names of the zones its account sees). A reader that
    /// stops reading holds at most the newest `HintHub.buffered` events, of which one keep-alive.
    /// A closed connection ends the channel at once and frees its place among the account's
    /// `HintHub.maxPerAccount` (not at the next keep-alive, which alone would notice it).
    func hintChannel(for caller: String, credential: String, connectionEnd: EventLoopFuture<Void>?) throws(SyncError) -> Response {
        guard let hints = backend.hints.subscribe(caller) else {
            throw .rateLimited(retryAfter: options.hintKeepAlive)
        }
        let keepAlive = options.hintKeepAlive
        let accounts = accounts, now = now
        let keepAliveQueued = KeepAliveFlag()
        let (events, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(HintHub.buffered))
        let forward = Task {
            for await hint in hints {
                if case .dropped(let old) = continuation.yield(Self.event(hint)), old.hasPrefix("event:"), hint.zone != nil {
                    continuation.yield(Self.event(.everything))
                }
            }
            continuation.finish()
        }
        let ticks = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: keepAlive)
                if keepAliveQueued.set() { continuation.yield(": keep-alive\n\n") }
            }
        }
        ServerMetrics.hintChannels.increment()
        continuation.onTermination = { _ in
            forward.cancel()
            ticks.cancel()
            ServerMetrics.hintChannels.decrement()
        }
        connectionEnd?.whenComplete { _ in continuation.finish() }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            try await writer.write(ByteBuffer(string: "event: ready\ndata: subscribed\n\n"))
            for await event in events {
                // A credential refused since ends the channel; one that could not be judged (the
                // credentials unavailable) does not: a hint carries no data.
                guard await Self.stillSignedIn(accounts.authenticate(credential, now: now()), as: caller) else { break }
                keepAliveQueued.clear()
                try await writer.write(ByteBuffer(string: event))
            }
            // Ends the subscription too when the loop stopped early.
            continuation.finish()
            try await writer.finish(nil)
        })
    }
}

extension SyncServer {
    /// Whether a hint channel's credential, checked again, still acts as `caller`.
    static func stillSignedIn(_ judged: Authentication, as caller: String) -> Bool {
        switch judged {
        case .accepted(let account): account == caller
        case .refused: false
        case .unavailable: true
        }
    }

    /// A hint as its server-sent event: `data:` the zone (or `*`), then its head when known.
    static func event(_ hint: ServiceHint) -> String { HintEvent.text(zone: hint.zone, head: hint.head) }
}

/// Whether a keep-alive waits in a hint channel's queue: a tick adds one only when none does, so
/// a stalled reader's queue keeps its hints rather than filling with comments.
final class KeepAliveFlag: Sendable {
    private let queued = NIOLockedValueBox(false)

    /// Marks a keep-alive queued; false when one already is.
    func set() -> Bool { queued.withLockedValue { q in defer { q = true }; return !q } }

    /// Something was written: the next tick may queue a keep-alive.
    func clear() { queued.withLockedValue { $0 = false } }
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

/// Tells when a connection's client stopped sending (its half of the connection closed) or the
/// connection ended. The server allows half-closed connections, so a hint channel whose client
/// went away would otherwise be noticed only at its next keep-alive, holding its place among the
/// account's channels until then.
final class ConnectionEndWatcher: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    /// Reads pass through untouched: the type is never unwrapped.
    typealias InboundIn = NIOAny
    private let ended = NIOLockedValueBox<EventLoopPromise<Void>?>(nil)

    /// Completes when the client's input closes or the connection ends (nil before the handler
    /// is in a pipeline).
    var end: EventLoopFuture<Void>? { ended.withLockedValue { $0?.futureResult } }

    func handlerAdded(context: ChannelHandlerContext) {
        ended.withLockedValue { $0 = context.eventLoop.makePromise() }
    }

    func handlerRemoved(context: ChannelHandlerContext) { finish() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { context.fireChannelRead(data) }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let e = event as? ChannelEvent, e == .inputClosed { finish() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    private func finish() { ended.withLockedValue { $0?.succeed() } }
}

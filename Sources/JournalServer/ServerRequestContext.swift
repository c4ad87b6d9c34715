import Hummingbird
import NIOCore

/// A request's context that keeps its connection, so that a refusal can close it (SyncServer's
/// `handle`): Hummingbird otherwise reads an unread body to its end to keep the connection.
public struct ServerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

import Hummingbird
import NIOCore

/// A request's context that keeps its connection, so that a refusal can close it (SyncServer's
/// `handle`): Hummingbird otherwise reads an unread body to its end to keep the connection.
package struct ServerRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    package let channel: any Channel

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// What the HTTP sync client needs of an HTTP library: one request and its whole answer, and a
/// streamed answer for the hint channel. `URLSessionTransport` (Foundation, this module) is an
/// app's; `AsyncHTTPClientTransport` (`JournalSyncHTTPNIO`) a server's or a tool's. No type of
/// either library appears in the client's API, so an app builds neither SwiftNIO nor BoringSSL.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the answer, its body at most `maxBody` bytes. Throws when no
    /// answer came (refused, reset, timed out, a body over `maxBody`): the client reads that as
    /// `networkUnavailable`.
    func send(_ request: HTTPTransportRequest, maxBody: Int) async throws -> HTTPTransportResponse

    /// Sends `request` and streams the body of a 200 answer as it arrives, until the server ends
    /// it or the task is cancelled. Another status, or no answer, ends the stream with an error.
    func stream(_ request: HTTPTransportRequest) -> AsyncThrowingStream<[UInt8], any Error>
}

/// One request of the sync protocol.
public struct HTTPTransportRequest: Sendable {
    /// The HTTP method, e.g. `GET` or `POST`.
    public var method: String
    /// The absolute URL, server base and path together.
    public var url: String
    /// Header fields in the order they are sent; a name may repeat.
    public var headers: [(name: String, value: String)]
    /// The request body, or nil to send none.
    public var body: [UInt8]?
    /// The longest it may take, connecting included (nil: as long as it lasts, for the hint channel).
    public var timeout: Duration?

    /// A request; by default with no headers, no body and no time limit.
    public init(method: String, url: String, headers: [(name: String, value: String)] = [], body: [UInt8]? = nil, timeout: Duration? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// An answer: its status, headers and whole body.
public struct HTTPTransportResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// Header fields as received; look one up with `header(_:)`.
    public var headers: [(name: String, value: String)]
    /// The whole response body.
    public var body: [UInt8]

    /// An answer from its parts, as a transport builds it.
    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header named `name`, compared without case.
    public func header(_ name: String) -> String? {
        let n = name.lowercased()
        return headers.first { $0.name.lowercased() == n }?.value
    }
}

/// An answer that did not come whole: a body over the limit, a status the stream cannot serve.
public struct HTTPTransportError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// An error explaining, in `description`, what was wrong with the answer.
    public init(_ description: String) { self.description = description }
}

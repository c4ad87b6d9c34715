import AsyncHTTPClient
import JournalSyncHTTP
import NIOCore
import NIOHTTP1

/// `HTTPTransport` over AsyncHTTPClient (SwiftNIO): for servers, tools and load tests, which
/// build NIO anyway (`jlog`, `jlog-load`). Connections are pooled and reused by the client.
public struct AsyncHTTPClientTransport: HTTPTransport {
    let client: HTTPClient

    /// A transport over `client`: by default the process's shared client and its pool.
    public init(client: HTTPClient = .shared) { self.client = client }

    public func send(_ request: HTTPTransportRequest, maxBody: Int) async throws -> HTTPTransportResponse {
        let response = try await client.execute(Self.request(request), timeout: Self.timeAmount(request.timeout))
        var buffer = try await response.body.collect(upTo: maxBody)
        return HTTPTransportResponse(status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
                                     body: buffer.readBytes(length: buffer.readableBytes) ?? [])
    }

    public func stream(_ request: HTTPTransportRequest) -> AsyncThrowingStream<[UInt8], any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self)
        let client = self.client
        let task = Task {
            do {
                let response = try await client.execute(Self.request(request), timeout: Self.timeAmount(request.timeout))
                guard response.status == .ok else { throw HTTPTransportError("status \(response.status.code)") }
                for try await buffer in response.body { continuation.yield(Array(buffer.readableBytesView)) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    static func request(_ r: HTTPTransportRequest) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: r.url)
        request.method = HTTPMethod(rawValue: r.method)
        for (name, value) in r.headers { request.headers.add(name: name, value: value) }
        if let body = r.body { request.body = .bytes(ByteBuffer(bytes: body)) }
        return request
    }

    static func timeAmount(_ d: Duration?) -> TimeAmount {
        guard let d else { return .hours(24 * 365) }
        let (s, a) = d.components
        return .nanoseconds(s * 1_000_000_000 + a / 1_000_000_000)
    }
}

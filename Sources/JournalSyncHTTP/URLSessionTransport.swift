import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `HTTPTransport` over `URLSession` (Foundation; on Linux, FoundationNetworking): what an app
/// uses, with no SwiftNIO or BoringSSL to build. The hint channel streams through a data task's
/// delegate, which Linux's URLSession has too (it has no `bytes(for:)`).
public struct URLSessionTransport: HTTPTransport {
    let session: URLSession

    /// `session`: one with the app's configuration (proxies, cellular access); one shared by
    /// default.
    public init(session: URLSession = .shared) { self.session = session }

    public func send(_ request: HTTPTransportRequest, maxBody: Int) async throws -> HTTPTransportResponse {
        let (data, response) = try await session.data(for: Self.urlRequest(request))
        guard let http = response as? HTTPURLResponse else { throw HTTPTransportError("not an HTTP answer") }
        guard data.count <= maxBody else { throw HTTPTransportError("an answer of \(data.count) bytes, over \(maxBody)") }
        return HTTPTransportResponse(status: http.statusCode, headers: Self.headers(http), body: [UInt8](data))
    }

    public func stream(_ request: HTTPTransportRequest) -> AsyncThrowingStream<[UInt8], any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self)
        let receiver = StreamReceiver(continuation)
        let session = URLSession(configuration: self.session.configuration, delegate: receiver, delegateQueue: nil)
        let task = session.dataTask(with: Self.urlRequest(request))
        continuation.onTermination = { _ in
            task.cancel()
            session.invalidateAndCancel()
        }
        task.resume()
        return stream
    }

    static func urlRequest(_ r: HTTPTransportRequest) -> URLRequest {
        var u = URLRequest(url: URL(string: r.url)!)
        u.httpMethod = r.method
        for (name, value) in r.headers { u.addValue(value, forHTTPHeaderField: name) }
        if let body = r.body { u.httpBody = Data(body) }
        if let t = r.timeout {
            let (s, a) = t.components
            u.timeoutInterval = Double(s) + Double(a) / 1e18
        } else {
            u.timeoutInterval = 365 * 86_400
        }
        return u
    }

    static func headers(_ r: HTTPURLResponse) -> [(name: String, value: String)] {
        r.allHeaderFields.compactMap { k, v in (k as? String).map { ($0, "\(v)") } }
    }

    /// Feeds a data task's body into a stream; a status other than 200 ends it with an error.
    final class StreamReceiver: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
        init(_ c: AsyncThrowingStream<[UInt8], any Error>.Continuation) { continuation = c }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
            guard (response as? HTTPURLResponse)?.statusCode == 200 else {
                continuation.finish(throwing: HTTPTransportError("status \((response as? HTTPURLResponse)?.statusCode ?? 0)"))
                completionHandler(.cancel)
                return
            }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            continuation.yield([UInt8](data))
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            if let error { continuation.finish(throwing: error) } else { continuation.finish() }
            session.finishTasksAndInvalidate()
        }
    }
}

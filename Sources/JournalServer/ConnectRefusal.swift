import Hummingbird
import NIOCore
import NIOHTTP1

/// The refusal of a `CONNECT`, written with its body (RFC 9112 §6.3: only a 2xx answer to
/// CONNECT turns the connection into a tunnel and carries no body; a refusal is framed like any
/// answer). NIO's response encoder drops every body of an answer to CONNECT, so the refusal's
/// bytes are written past it, straight to the connection, which is then closed: the client reads
/// the same `{"error": "invalidRequest", …}` as every other 405, framed by its Content-Length.
enum ConnectRefusal {
    /// Writes `status` and `json` as a whole HTTP/1.1 answer on `channel`, then closes it.
    static func write(status: HTTPResponse.Status, json: [UInt8], allow: String?, on channel: any Channel) async {
        var head = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n"
        head += "Content-Type: application/json\r\nContent-Length: \(json.count)\r\n"
        if let allow { head += "Allow: \(allow)\r\n" }
        head += "Connection: close\r\n\r\n"
        var bytes = ByteBuffer(string: head)
        bytes.writeBytes(json)
        let raw = bytes
        let written = channel.pipeline.context(handlerType: HTTPResponseEncoder.self).flatMap { encoder in
            encoder.writeAndFlush(NIOAny(raw))
        }
        try? await written.get()
        try? await channel.close()
    }
}

import AsyncHTTPClient
import Foundation
import JournalLog
import JournalQuery
import JournalServer
import JournalService
import JournalSync
import JournalSyncWire
import JournalSyncHTTP
import ListModel
import NIOCore
import NIOHTTP1
import Testing
import JournalTesting
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Helpers for the server's security and end-to-end tests: raw HTTP through AsyncHTTPClient (exact
// statuses, headers and bodies), raw sockets (bodies the client never finishes), devices that sync
// over HTTP with stores in memory, and entries to upload.

/// One answer of the server, as it came.
struct RawResponse: Sendable, CustomStringConvertible {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }
    func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    /// The body as the binding's error JSON, when it is one.
    var error: HTTPBinding.ErrorJSON? { try? JSONDecoder().decode(HTTPBinding.ErrorJSON.self, from: Data(body)) }
    var description: String { "\(status) \(text.prefix(300))" }
}

struct TestTimeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out: \(what)" }
}

/// `body`, or `TestTimeout` when it takes longer than `seconds` (a bound on a hang, never a wait
/// for state: nothing here sleeps to let something happen).
func withTimeout<T: Sendable>(_ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw TestTimeout(what: what) }
        return value
    }
}

func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

/// An `add` entry for `zone` by `author` (an account or `account:device`).
func addEntry(_ zone: ZoneID, author: String, text: String = "Milk", zoneName: String? = nil) -> JournalEntry {
    let now = nowMillis()
    return JournalEntry(id: CompactID.random(), zone: zoneName ?? zone.storeName, author: author, wallTime: now,
                        clock: HybridTime(physicalMillis: UInt64(now), counter: 0),
                        operation: .add(item: CompactID.random(), text: text, after: nil))
}

func jsonBytes(_ value: some Encodable) -> [UInt8] { Array((try? JSONEncoder().encode(value)) ?? Data()) }

extension DeviceCredential {
    var bearer: String { "Bearer " + text }
}

extension TestServer {
    /// One request through `HTTPClient.shared`, answered whatever the status.
    func send(_ method: HTTPMethod, _ path: String, authorization: String?, body: [UInt8]? = nil,
              contentType: String? = nil, headers: [(String, String)] = []) async throws -> RawResponse {
        var request = HTTPClientRequest(url: url + path)
        request.method = method
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(15))
        var buffer = try await response.body.collect(upTo: 64 << 20)
        return RawResponse(status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
                           body: buffer.readBytes(length: buffer.readableBytes) ?? [])
    }

    func send(_ method: HTTPMethod, _ path: String, as credential: DeviceCredential, body: [UInt8]? = nil,
              contentType: String? = nil) async throws -> RawResponse {
        try await send(method, path, authorization: credential.bearer, body: body, contentType: contentType)
    }

    /// Uploads entries as a wire batch.
    func upload(_ entries: [JournalEntry], to zone: ZoneID, as credential: DeviceCredential) async throws -> RawResponse {
        try await send(.POST, HTTPBinding.zonePath(zone) + "/entries", as: credential, body: WireBatch.encode(entries),
                       contentType: WireBatch.mediaType)
    }

    /// The list as the server's store holds it.
    func serverList(_ zone: ZoneID) throws -> ListState {
        try ListQuery(store: store, fs: store.fileSystem).materialise(zone.storeName).state
    }
}

// MARK: Raw sockets

#if canImport(Glibc)
private let sysSend = Glibc.send
private let sendFlags = Int32(MSG_NOSIGNAL)
#else
private let sysSend = Darwin.send
private let sendFlags: Int32 = 0
#endif

/// A TCP connection to the server through POSIX sockets, for requests no HTTP client sends: a
/// body declared larger than what follows, a chunked body never finished. Every call blocks, so
/// each runs on a thread of its own (`onThread`), never on the cooperative pool the server uses.
final class RawConnection: @unchecked Sendable {
    let fd: Int32

    init(port: Int, receiveTimeoutSeconds: Int = 10) throws {
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port)).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends every byte; false when the server closed the connection (or stopped reading).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { sysSend(fd, $0.baseAddress, $0.count, sendFlags) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads one response (head, then a Content-Length body); nil when none came before the
    /// receive timeout or the connection ended first.
    func readResponse() -> RawResponse? {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        func more() -> Bool {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return false }
            data += chunk[0..<n]
            return true
        }
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int? = nil
        while headEnd == nil {
            if let r = data.firstRange(of: separator) { headEnd = r.upperBound; break }
            guard more() else { return nil }
        }
        let head = String(decoding: data[..<(headEnd! - 4)], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = head[0].split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        var headers: [(name: String, value: String)] = []
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        while data.count - headEnd! < length { guard more() else { break } }
        return RawResponse(status: status, headers: headers, body: Array(data[headEnd!...].prefix(length)))
    }
}

/// Runs blocking work on a thread of its own.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (c: CheckedContinuation<T, any Error>) in
        let thread = Thread {
            do { c.resume(returning: try body()) } catch { c.resume(throwing: error) }
        }
        thread.start()
    }
}

// MARK: Devices

/// A device that syncs with the server over HTTP: its own store in memory and a `SyncEngine`
/// over `HTTPSyncService`.
final class HTTPDevice: @unchecked Sendable {
    let replica: String
    let fs = MemoryFileSystem()
    let store: JournalStore
    let service: HTTPSyncService
    let engine: SyncEngine

    init(_ server: TestServer, replica: String, credential: DeviceCredential, overURLSession: Bool = false) throws {
        self.replica = replica
        try fs.createDirectory("/device")
        var o = StoreOptions(durability: .always, segmentSize: 64 << 10, preallocate: false)
        o.fileSystem = fs
        store = try JournalStore.open("/device/local.wal", options: o)
        service = overURLSession ? server.urlSessionClient(credential) : server.client(credential)
        engine = try SyncEngine(store: store, service: service, replica: replica)
    }

    func list(_ zone: ZoneID) throws -> ListState {
        try ListQuery(store: store, fs: fs).materialise(zone.storeName).state
    }

    func holds(_ zone: ZoneID) -> Bool { store.zone(zone.storeName).map { !$0.isDeleted } ?? false }

    func add(_ text: String, to zone: ZoneID) async throws {
        try await engine.record(.add(item: CompactID.random(), text: text, after: nil), in: zone)
    }

    @discardableResult
    func sync() async -> SyncReport { await engine.sync() }
}

/// Reads `GET /v1/hints` as `credential`: `onReady` runs once the channel says it is subscribed,
/// then `done` is asked with everything read so far after each chunk; returns what was read
/// when `done` says so or the channel ends.
func readHints(_ server: TestServer, as credential: DeviceCredential, timeout: Int64 = 20,
               onReady: @escaping @Sendable () async throws -> Void,
               until done: (String) -> Bool = { _ in false }) async throws -> String {
    var request = HTTPClientRequest(url: server.url + "/v1/hints")
    request.headers.add(name: "Authorization", value: credential.bearer)
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(timeout))
    #expect(response.status == .ok)
    var text = ""
    var ready = false
    for try await buffer in response.body {
        text += String(buffer: buffer)
        if !ready, text.contains("event: ready") {
            ready = true
            try await onReady()
        }
        if done(text) { break }
    }
    return text
}

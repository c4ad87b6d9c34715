import AsyncHTTPClient
import JournalSync
import NIOCore

extension HTTPSyncService {
    /// Listens on the server's hint channel (`GET /v1/hints`, server-sent events) and turns every
    /// event into `hints.hint()`, until the task is cancelled. The channel opening (`ready`) is a
    /// hint too, so nothing that changed while it was closed is missed. A dropped channel is
    /// opened again after a backoff of 1 s doubling to 30 s. Hints carry no data (Spec/SYNC.md §7.7).
    public func listenForHints(_ hints: SyncHints) async {
        var backoff: Int64 = 1
        while !Task.isCancelled {
            var request = HTTPClientRequest(url: server + "/v1/hints")
            request.headers.add(name: "Authorization", value: "Bearer " + credential.text)
            request.headers.add(name: "Accept", value: "text/event-stream")
            do {
                let response = try await client.execute(request, timeout: .hours(24 * 365))
                if response.status == .ok {
                    backoff = 1
                    var line: [UInt8] = []
                    for try await buffer in response.body {
                        for byte in buffer.readableBytesView {
                            guard byte == 0x0A else { line.append(byte); continue }
                            if line.starts(with: Array("event:".utf8)) { hints.hint() }
                            line.removeAll(keepingCapacity: true)
                        }
                        if line.count > 4_096 { line.removeAll() }
                    }
                }
            } catch {}
            if Task.isCancelled { return }
            try? await Task.sleep(for: .seconds(backoff))
            backoff = min(backoff * 2, 30)
        }
    }
}

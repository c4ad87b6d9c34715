import JournalSync
import JournalSyncWire

extension HTTPSyncService {
    /// Listens on the server's hint channel (`GET /v1/hints`, server-sent events) and turns every
    /// event into a hint, until the task is cancelled: a `changed` event that names a zone (and
    /// its head) into `hints.hint(zone, head:)`, any other event (`ready`, `*`, one this version
    /// does not know) into `hints.hint()`. The channel opening (`ready`) is a full hint, so
    /// nothing that changed while it was closed is missed. A dropped channel is opened again
    /// after a backoff of 1 s doubling to 30 s. Hints carry no data (Spec/SYNC.md §7.7).
    public func listenForHints(_ hints: SyncHints) async {
        var backoff: Int64 = 1
        while !Task.isCancelled {
            let request = HTTPTransportRequest(method: "GET", url: server + "/v1/hints",
                                               headers: [("Authorization", authorization), ("Accept", "text/event-stream")])
            do {
                var line: [UInt8] = []
                var event = HintEvent()
                for try await chunk in transport.stream(request) {
                    backoff = 1
                    for byte in chunk {
                        guard byte == 0x0A else { line.append(byte); continue }
                        event.take(line)?.deliver(to: hints)
                        line.removeAll(keepingCapacity: true)
                    }
                    if line.count > 4_096 { line.removeAll() }
                }
            } catch {}
            if Task.isCancelled { return }
            try? await Task.sleep(for: .seconds(backoff))
            backoff = min(backoff * 2, 30)
        }
    }
}

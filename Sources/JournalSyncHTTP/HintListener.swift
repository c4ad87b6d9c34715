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

/// One server-sent event as its lines come (SSE: `event:`, `data:` lines, a blank line ends it).
struct HintEvent {
    private var name: String? = nil
    private var data: [String] = []

    /// Takes one line (without its newline); answers the event a blank line ends.
    mutating func take(_ line: [UInt8]) -> HintEvent? {
        let text = String(decoding: line.last == 0x0D ? line.dropLast() : line[...], as: UTF8.self)
        if text.isEmpty {
            defer { self = HintEvent() }
            return name == nil ? nil : self
        }
        if text.hasPrefix("event:") { name = Self.value(text.dropFirst(6)) }
        // Two lines are all a hint has: the zone and its head.
        else if text.hasPrefix("data:"), data.count < 2 { data.append(Self.value(text.dropFirst(5))) }
        return nil
    }

    /// A field's value: one leading space dropped (SSE).
    private static func value(_ s: Substring) -> String { String(s.first == " " ? s.dropFirst() : s) }

    /// A `changed` event naming a zone fetches that zone; any other event, everything.
    func deliver(to hints: SyncHints) {
        guard name == "changed", let first = data.first, let zone = ZoneID(storeName: first) else { return hints.hint() }
        let head = data.count > 1 && HTTPBinding.isHead(data[1]) ? ZoneHead(data[1]) : nil
        hints.hint(zone, head: head)
    }
}

import JournalSync

/// One event of `GET /v1/hints` as a client reads it, line by line (server-sent events: `event:`
/// and `data:` lines, a blank line ends it), and the hint it gives (Spec/SYNC.md §7.7).
package struct HintEvent {
    package init() {}

    private var name: String? = nil
    private var data: [String] = []

    /// Takes one line (without its newline); answers the event a blank line ends.
    package mutating func take(_ line: [UInt8]) -> HintEvent? {
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

    /// A hint as `GET /v1/hints` writes it: `event: changed`, a `data:` line with the zone (nil:
    /// `*`, everything), then one with its head when known, then a blank line.
    package static func text(zone: String?, head: ZoneHead?) -> String {
        guard let zone else { return "event: changed\ndata: *\n\n" }
        return "event: changed\ndata: \(zone)\n" + (head.map { "data: \($0.text)\n" } ?? "") + "\n"
    }

    /// A field's value: one leading space dropped (SSE).
    private static func value(_ s: Substring) -> String { String(s.first == " " ? s.dropFirst() : s) }

    /// A `changed` event naming a zone fetches that zone; any other event, everything.
    package func deliver(to hints: SyncHints) {
        guard name == "changed", let first = data.first, let zone = ZoneID(storeName: first) else { return hints.hint() }
        let head = data.count > 1 && HTTPBinding.isHead(data[1]) ? ZoneHead(data[1]) : nil
        hints.hint(zone, head: head)
    }
}

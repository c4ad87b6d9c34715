import JournalLog

/// Where a paged history read stands (Spec/SYNC.md §3.12), as a service writes it into a
/// `HistoryCursor` (devices never read it): the zone incarnation, low-water mark and newest history piece the read began
/// under (when any moved, the cursor is `tokenExpired`: the device starts again), and the next
/// events to send. Text: `h1.p.INC.MARK.HEAD.SEQ.CRC.INDEX` or `h1.l.INC.MARK.HEAD.FLOOR[.TOKEN]`,
/// numbers in lowercase hex.
package struct HistoryPosition: Equatable, Sendable {
    package enum Step: Equatable, Sendable {
        /// The events of the piece at `sequence` (stored CRC `crc`) from the `index`th on.
        case piece(sequence: SequenceNumber, crc: UInt32, index: Int)
        /// The events of the log's entries after `floor`, from the zone token `token` on (nil:
        /// from its first entry).
        case log(floor: SequenceNumber, token: String?)
    }

    package var incarnation: SequenceNumber
    package var mark: SequenceNumber
    package var head: SequenceNumber
    package var step: Step

    package var cursor: HistoryCursor {
        let start = "h1.\(step.letter).\(hex(incarnation)).\(hex(mark)).\(hex(head))"
        switch step {
        case .piece(let s, let crc, let index): return HistoryCursor("\(start).\(hex(s)).\(hex(UInt64(crc))).\(hex(UInt64(index)))")
        case .log(let floor, let token): return HistoryCursor("\(start).\(hex(floor))" + (token.map { ".\($0)" } ?? ""))
        }
    }

    package init(incarnation: SequenceNumber, mark: SequenceNumber, head: SequenceNumber, step: Step) {
        self.incarnation = incarnation
        self.mark = mark
        self.head = head
        self.step = step
    }

    /// Parses a cursor's text; nil for anything this service would not have written.
    package init?(_ cursor: HistoryCursor) {
        guard cursor.text.utf8.count <= HistoryCursor.maxBytes else { return nil }
        let parts = cursor.text.split(separator: ".", maxSplits: 6, omittingEmptySubsequences: false)
        guard parts.count >= 6, parts[0] == "h1", let inc = Self.number(parts[2]), let mark = Self.number(parts[3]),
              let head = Self.number(parts[4]), let a = Self.number(parts[5]) else { return nil }
        switch parts[1] {
        case "p":
            let rest = parts.count == 7 ? parts[6].split(separator: ".", omittingEmptySubsequences: false) : []
            guard rest.count == 2, let crc = Self.number(rest[0]), crc <= UInt64(UInt32.max), let index = Self.number(rest[1]),
                  index < 1 << 32, a >= 1 else { return nil }
            step = .piece(sequence: a, crc: UInt32(crc), index: Int(index))
        case "l":
            let token = parts.count == 7 ? String(parts[6]) : nil
            guard token?.isEmpty != true else { return nil }
            step = .log(floor: a, token: token)
        default: return nil
        }
        incarnation = inc
        self.mark = mark
        self.head = head
    }

    /// A lowercase hex number of 1–16 digits below 2^62, without leading zeros.
    private static func number(_ s: Substring) -> UInt64? {
        guard !s.isEmpty, s.utf8.count <= 16, s == "0" || !s.hasPrefix("0"),
              s.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }),
              let n = UInt64(s, radix: 16), n < 1 << 62 else { return nil }
        return n
    }

    private func hex(_ n: UInt64) -> String { String(n, radix: 16) }
}

extension HistoryPosition.Step {
    var letter: String {
        switch self {
        case .piece: "p"
        case .log: "l"
        }
    }
}

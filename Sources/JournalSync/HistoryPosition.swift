import JournalLog

/// Where a paged history read stands (Spec/SYNC.md §3.12), as a service writes it into a
/// `HistoryCursor` (devices never read it). A read goes down the chain of history pieces from the
/// newest it began at, then through the log; a compaction meanwhile only appends pieces, so the
/// read goes on where it was and, at the end of the chain it was reading, reads the pieces written
/// since (down to the one it began at) before the log. Text:
/// `h2.p.INC.HEAD.STOP.FLOOR.SEQ.CRC.INDEX` or `h2.l.INC.HEAD.STOP.FLOOR[.TOKEN]`, numbers in
/// lowercase hex.
package struct HistoryPosition: Equatable, Sendable {
    package enum Step: Equatable, Sendable {
        /// The events of the piece at `sequence` (stored CRC `crc`) from the `index`th on.
        case piece(sequence: SequenceNumber, crc: UInt32, index: Int)
        /// The events of the log's entries after the position's `floor`, from the zone token
        /// `token` on (nil: from its first entry).
        case log(token: String?)
    }

    /// The zone incarnation the read began under: another one ends it (`tokenExpired`).
    package var incarnation: SequenceNumber
    /// The newest piece the read has reached down from (0: none yet).
    package var head: SequenceNumber
    /// Where the stretch of the chain being read ends: the piece at `stop` was read already (the
    /// stretch is pieces written since the read began); 0: the chain's own end.
    package var stop: SequenceNumber
    /// The log's entries at or below `floor` are in the complete piece the chain ended at: only
    /// those after it are read (0: all of them).
    package var floor: SequenceNumber
    package var step: Step

    package var cursor: HistoryCursor {
        let start = "h2.\(step.letter).\(hex(incarnation)).\(hex(head)).\(hex(stop)).\(hex(floor))"
        switch step {
        case .piece(let s, let crc, let index): return HistoryCursor("\(start).\(hex(s)).\(hex(UInt64(crc))).\(hex(UInt64(index)))")
        case .log(let token): return HistoryCursor(start + (token.map { ".\($0)" } ?? ""))
        }
    }

    package init(incarnation: SequenceNumber, head: SequenceNumber, stop: SequenceNumber = 0, floor: SequenceNumber = 0, step: Step) {
        self.incarnation = incarnation
        self.head = head
        self.stop = stop
        self.floor = floor
        self.step = step
    }

    /// Parses a cursor's text; nil for anything this service would not have written.
    package init?(_ cursor: HistoryCursor) {
        guard cursor.text.utf8.count <= HistoryCursor.maxBytes else { return nil }
        let parts = cursor.text.split(separator: ".", maxSplits: 6, omittingEmptySubsequences: false)
        guard parts.count >= 6, parts[0] == "h2", let inc = Self.number(parts[2]), let head = Self.number(parts[3]),
              let stop = Self.number(parts[4]), let floor = Self.number(parts[5]) else { return nil }
        switch parts[1] {
        case "p":
            let rest = parts.count == 7 ? parts[6].split(separator: ".", omittingEmptySubsequences: false) : []
            guard rest.count == 3, let s = Self.number(rest[0]), let crc = Self.number(rest[1]), crc <= UInt64(UInt32.max),
                  let index = Self.number(rest[2]), index < 1 << 32, s >= 1 else { return nil }
            step = .piece(sequence: s, crc: UInt32(crc), index: Int(index))
        case "l":
            let token = parts.count == 7 ? String(parts[6]) : nil
            guard token?.isEmpty != true else { return nil }
            step = .log(token: token)
        default: return nil
        }
        incarnation = inc
        self.head = head
        self.stop = stop
        self.floor = floor
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

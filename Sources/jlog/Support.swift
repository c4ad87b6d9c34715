import ArgumentParser
import Foundation
import JournalLog
import JournalQuery

extension RecoveryMode: ExpressibleByArgument {}
extension Durability: ExpressibleByArgument {}

/// Exit statuses, documented in README.md.
enum Status {
    static let tornTail: Int32 = 1
    static let corruption: Int32 = 2
    static let failure: Int32 = 3
    static let badInput: Int32 = 4
    /// `jlog changes`: the token is older than the zone's low-water mark.
    static let tokenExpired: Int32 = 5
    /// `jlog changes`: the zone, or the incarnation the token names, was deleted.
    static let zoneDeleted: Int32 = 6
}

let stderrIsTerminal = isatty(2) == 1

func printError(_ message: String) {
    FileHandle.standardError.write(Data(("jlog: " + message + "\n").utf8))
}

/// Shows a running count on stderr, only when stderr is a terminal.
struct Progress {
    var label: String
    var every: Int = 100_000
    var count = 0

    mutating func tick(_ n: Int = 1) {
        let before = count / every
        count += n
        if stderrIsTerminal && count / every != before {
            FileHandle.standardError.write(Data("\r\(label) \(count)…".utf8))
        }
    }

    func finish() {
        if stderrIsTerminal && count >= every { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}

/// What an operator does about damage: a torn tail is repaired; a missing start has no prefix to
/// keep (FORMAT.md §9.2), so only the segment itself or a salvage copy helps; other corruption
/// keeps the prefix before it.
func nextStep(_ c: Corruption, path: String) -> String {
    if c.isTornTail {
        return "`jlog recover \(path)` (or any command that writes) repairs the torn tail, keeping the cut bytes in torn/"
    }
    if c.isMissingStart {
        return "put the missing segment back (from a backup, or torn/); no recovery mode keeps a log whose start is gone, "
            + "but `jlog dump \(path) --mode salvage --json` copies what is left"
    }
    return "copy the store aside, then `jlog recover \(path) --mode pointInTime` (keeps the intact prefix, sets the rest aside in torn/), "
        + "or copy what is intact with `jlog dump \(path) --mode salvage --json`"
}

extension Corruption {
    /// The store's oldest segment does not begin its chain: a segment before it is missing.
    var isMissingStart: Bool {
        if case .missingEarlierSegment = problem { return true }
        return false
    }
}

/// Turns an error into a message that says what to do next, and an exit status.
func fail(_ error: any Error, path: String) -> ExitCode {
    switch error {
    case let e as JournalError:
        switch e {
        case .corruption(let c):
            printError(c.description)
            printError(c.isTornTail || c.isMissingStart ? nextStep(c, path: path)
                : "run `jlog verify \(path)` to see what each recovery mode keeps; then " + nextStep(c, path: path))
            return ExitCode(c.isTornTail ? Status.tornTail : Status.corruption)
        case .locked:
            printError(e.description)
            return ExitCode(Status.failure)
        case .acknowledgedEntriesMissing:
            printError(e.description.replacingOccurrences(of: "STORE", with: path))
            return ExitCode(Status.corruption)
        case .storeMissing:
            printError(e.description + "; check the path (`jlog import` creates a store)")
            return ExitCode(Status.failure)
        case .notAStore:
            printError(e.description)
            return ExitCode(Status.badInput)
        case .zoneDeleted:
            printError(e.description)
            return ExitCode(Status.zoneDeleted)
        default:
            printError(e.description)
            return ExitCode(Status.failure)
        }
    default:
        printError(String(describing: error))
        return ExitCode(Status.failure)
    }
}

func iso(_ millis: Int64) -> String { ISO8601Time.format(millis) }

/// A name (a zone, an author) as a terminal may show it: control characters, which older writers
/// may have stored and which could rewrite the screen, are escaped as `\u{..}`.
func printable(_ s: String) -> String {
    guard s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || (0x80..<0xA0).contains($0.value) }) else { return s }
    return s.unicodeScalars.map { c in
        c.value < 0x20 || c.value == 0x7F || (0x80..<0xA0).contains(c.value) ? "\\u{\(String(c.value, radix: 16))}" : String(c)
    }.joined()
}

func entryJSON(_ e: JournalEntry) -> String { EntryJSON.format(e) }

/// `--now 2026-12-31T00:00:00Z` or `--now 1798675200000` (milliseconds since the epoch).
struct TimeArgument: ExpressibleByArgument {
    var millis: Int64

    init?(argument: String) {
        if let ms = Int64(argument), ms >= 0 {
            millis = ms
        } else if let ms = ISO8601Time.parse(argument) {
            millis = ms
        } else {
            return nil
        }
    }
}

/// The real clock, in milliseconds since the epoch.
func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

extension ListQuery {
    /// A query for a command that only reads a list: `jlog` is a process of its own, so its
    /// replays read pages ahead on a helper thread (`ListQuery.helperThreads`).
    static func reading(_ reader: any StoreReading) -> ListQuery {
        var q = ListQuery(reader: reader)
        q.helperThreads = true
        return q
    }
}

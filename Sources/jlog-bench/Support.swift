import Foundation
import JournalLog
#if canImport(Glibc)
import Glibc
#endif

// MARK: Timing

/// Monotonic seconds.
@inline(__always) func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// Monotonic nanoseconds, as an integer: latencies are kept, sorted and ranked exactly.
@inline(__always) func nowNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Runs `body` and returns its duration in seconds.
@inline(__always) func timed(_ body: () throws -> Void) rethrows -> Double {
    let t0 = now()
    try body()
    return now() - t0
}

// MARK: Memory and bytes written (Linux /proc; nil elsewhere)

/// What one step held and wrote, measured in this process: the resident high-water mark is reset
/// before it (`5` to /proc/self/clear_refs) and read after it (VmHWM), so the peak is the step's
/// own, on top of what the process already held (`rssBefore`, after returning freed heap to the
/// system); `bytesWritten` is the bytes the
/// step handed to write calls (/proc/self/io `wchar`).
struct StepCost {
    var rssBefore: Int64?
    var peakRSS: Int64?
    var bytesWritten: Int64?

    /// The peak above what the process held when the step began.
    var peakAboveStart: Int64? { peakRSS.flatMap { p in rssBefore.map { max(0, p - $0) } } }

    /// Measures `body`; the reset and the reads are outside whatever `body` times.
    static func of(_ body: () throws -> Void) rethrows -> StepCost {
        // Freed heap the allocator kept would be reused unseen: give it back first, so what the
        // step allocates shows as growth.
        returnFreedHeap()
        let reset = (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil
        let before = procStatusBytes("VmRSS"), written = procIOField("wchar")
        try body()
        let after = procIOField("wchar")
        return StepCost(rssBefore: before, peakRSS: reset ? procStatusBytes("VmHWM") : nil,
                        bytesWritten: after.flatMap { a in written.map { a - $0 } })
    }

    /// `of` for a step that awaits: `started()` before it, then `finished()` on what it returned.
    static func started() -> StepCost {
        returnFreedHeap()
        let reset = (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil
        return StepCost(rssBefore: procStatusBytes("VmRSS"), peakRSS: reset ? 0 : nil, bytesWritten: procIOField("wchar"))
    }

    func finished() -> StepCost {
        let after = procIOField("wchar")
        return StepCost(rssBefore: rssBefore, peakRSS: peakRSS == nil ? nil : procStatusBytes("VmHWM"),
                        bytesWritten: after.flatMap { a in bytesWritten.map { a - $0 } })
    }

    /// `peak_rss_mb` and `peak_rss_above_start_mb`: the highest of `costs` (one per run).
    static func fields(_ costs: [StepCost]) -> [(String, JSON)] {
        let peaks = costs.compactMap(\.peakRSS), above = costs.compactMap(\.peakAboveStart)
        guard let peak = peaks.max(), let rise = above.max() else { return [] }
        return [("peak_rss_mb", .n(Double(peak) / 1e6)), ("peak_rss_above_start_mb", .n(Double(rise) / 1e6))]
    }
}

/// glibc's `malloc_trim(0)`, which Glibc does not import: freed heap pages go back to the system.
func returnFreedHeap() {
    typealias Trim = @convention(c) (Int) -> Int32
    guard let f = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }  // RTLD_DEFAULT
    _ = unsafeBitCast(f, to: Trim.self)(0)
}

/// A `kB` line of /proc/self/status, in bytes.
func procStatusBytes(_ key: String) -> Int64? {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
        return line.split(separator: " ").compactMap { Int64($0.trimmingCharacters(in: .whitespaces)) }.first.map { $0 * 1024 }
    }
    return nil
}

/// A field of /proc/self/io.
func procIOField(_ key: String) -> Int64? {
    guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
        return Int64(line.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces))
    }
    return nil
}

func medianOf(_ xs: [Double]) -> Double {
    guard !xs.isEmpty else { return .nan }
    let s = xs.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

// MARK: JSON lines

enum JSON {
    case s(String)
    case n(Double)
    case i(Int)
    case b(Bool)
    case a([JSON])
    case o([(String, JSON)])
    case null

    var text: String {
        switch self {
        case .s(let v): return quote(v)
        case .i(let v): return String(v)
        case .b(let v): return v ? "true" : "false"
        case .null: return "null"
        case .a(let xs): return "[" + xs.map(\.text).joined(separator: ",") + "]"
        case .o(let fields): return "{" + fields.map { quote($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
        case .n(let v): return formatNumber(v)
        }
    }
}

func formatNumber(_ v: Double) -> String {
    guard v.isFinite else { return "null" }
    let a = abs(v)
    if a >= 100 { return String(format: "%.1f", v) }
    if a >= 1 { return String(format: "%.3f", v) }
    if a == 0 { return "0" }
    return String(format: "%.4g", v).replacingOccurrences(of: "e-0", with: "e-")
}

private func quote(_ s: String) -> String { EntryJSON.jsonLiteral(s) }

/// One printed measurement: an ordered list of keys.
struct Measurement {
    var name: String
    var system: String
    var unit: String
    var runs: [Double]
    var extra: [(String, JSON)] = []
    /// > 1 means JournalLog is better; set on both lines of a pair.
    var ratio: Double? = nil
    var goal: String? = nil
    var met: Bool? = nil
    /// The summary's name for a line that `name` alone does not tell apart (not in the JSON,
    /// whose fields do).
    var label: String? = nil

    var median: Double { medianOf(runs) }

    var json: String {
        var fields: [(String, JSON)] = [
            ("name", .s(name)), ("system", .s(system)), ("unit", .s(unit)),
            ("median", .n(median)), ("runs", .a(runs.map { .n($0) })),
        ]
        if let ratio { fields.append(("ratio", .n(ratio))) }
        if let goal { fields.append(("goal", .s(goal))) }
        if let met { fields.append(("met", .b(met))) }
        fields += extra
        return "{" + fields.map { quoteKey($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
    }
}

private func quoteKey(_ k: String) -> String { JSON.s(k).text }

/// Collects measurements, prints each as a JSON line at once, and keeps them for the summary.
final class Report {
    private(set) var lines: [Measurement] = []

    func emit(_ m: Measurement) {
        lines.append(m)
        print(m.json)
        fflush(nil)
    }

    func find(_ name: String, _ system: String) -> Measurement? {
        lines.last { $0.name == name && $0.system == system }
    }

    func summary() -> String {
        var rows: [[String]] = [["measurement", "system", "median", "unit", "ratio", "goal", "met"]]
        for m in lines {
            rows.append([m.label ?? m.name, m.system, human(m.median), m.unit, m.ratio.map { String(format: "%.2f×", $0) } ?? "",
                         m.goal ?? "", m.met.map { $0 ? "met" : "MISSED" } ?? ""])
        }
        var widths = [Int](repeating: 0, count: rows[0].count)
        for r in rows { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
        var out = ""
        for (n, r) in rows.enumerated() {
            out += r.enumerated().map { i, c in
                i == 2 || i == 4 ? String(repeating: " ", count: widths[i] - c.count) + c
                    : c + String(repeating: " ", count: widths[i] - c.count)
            }.joined(separator: "  ") + "\n"
            if n == 0 { out += widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ") + "\n" }
        }
        return out
    }
}

/// Thousands separators for the summary, and a few significant digits for small values.
func human(_ v: Double) -> String {
    guard v.isFinite else { return "n/a" }
    if abs(v) >= 10_000 {
        let n = Int(v.rounded())
        let s = String(abs(n))
        var out = ""
        for (i, c) in s.enumerated() {
            if i > 0 && (s.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }
    if abs(v) >= 100 { return String(format: "%.0f", v) }
    if abs(v) >= 1 { return String(format: "%.2f", v) }
    return String(format: "%.3g", v)
}

func log(_ s: String) {
    FileHandle.standardError.write((s + "\n").data(using: .utf8)!)
}

// MARK: Files

func makeDirectory(_ path: String) {
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
}

func removeTree(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

/// (logical size, allocated bytes) of a file, or zeros when it is missing.
func fileSizes(_ path: String) -> (size: Int64, allocated: Int64) {
    var st = stat()
    guard stat(path, &st) == 0 else { return (0, 0) }
    return (Int64(st.st_size), Int64(st.st_blocks) * 512)
}

/// Sum over the regular files directly inside `dir` whose names end in `suffix`.
func directorySizes(_ dir: String, suffix: String) -> (size: Int64, allocated: Int64, files: Int) {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
    var total: (Int64, Int64, Int) = (0, 0, 0)
    for n in names where n.hasSuffix(suffix) {
        let s = fileSizes(dir + "/" + n)
        total.0 += s.size
        total.1 += s.allocated
        total.2 += 1
    }
    return total
}

// MARK: Deterministic workload data

/// The raw UUID halves of an entry's id and item, kept beside the entries so SQLite can bind them as blobs.
struct RowKeys: Sendable {
    var idHi: UInt64, idLo: UInt64, itemHi: UInt64, itemLo: UInt64
}

/// Pre-generated `add` entries: UUID ids and items, short zone/author/text, increasing hybrid clock.
struct EntrySet: Sendable {
    var entries: [JournalEntry]
    var keys: [RowKeys]
    /// Sum of `EntryCodec.encode(e).count`.
    var encodedBytes: Int
    var count: Int { entries.count }
    var bytesPerEntry: Double { Double(encodedBytes) / Double(max(1, count)) }

    static let zones = (0..<16).map { "L" + String($0, radix: 16) + String(($0 * 7) % 10) }  // "L00", "L17", …: 3 bytes
    static let authors = ["ann", "bob", "cat", "dan", "eve"]
    static let texts = ["Milk", "Eggs", "Bread", "Apples", "Butter", "Cheese", "Rice", "Pasta", "Tea", "Coffee",
                        "Onions", "Yogurt", "Ham", "Soap", "Leeks", "Flour"]

    static func generate(_ n: Int, seed: UInt64) -> EntrySet {
        var source = EntryGenerator(seed: seed)
        var entries: [JournalEntry] = []
        var keys: [RowKeys] = []
        entries.reserveCapacity(n)
        keys.reserveCapacity(n)
        var bytes = 0
        for _ in 0..<n {
            let (e, k) = source.next()
            bytes += EntryCodec.encode(e).count
            entries.append(e)
            keys.append(k)
        }
        return EntrySet(entries: entries, keys: keys, encodedBytes: bytes)
    }

    /// The entries `[from, from + n)` as one batch.
    func slice(_ from: Int, _ n: Int) -> [JournalEntry] { Array(entries[from..<min(from + n, count)]) }
}

/// Makes `EntrySet`'s entries one at a time, for a workload that needs fresh ids for as long as
/// it runs rather than a count known up front.
struct EntryGenerator {
    private var g: SplitMix64
    private var clock = HybridClock()
    private var wall: Int64
    private var made = 0

    /// `wall`: the first entry's wall time, in milliseconds (by default late 2026).
    init(seed: UInt64, wall: Int64 = 1_795_000_000_000) {
        g = SplitMix64(seed: seed)
        self.wall = wall
    }

    mutating func next() -> (entry: JournalEntry, keys: RowKeys) {
        wall += Int64(g.next() % 3)
        let id = uuid(), item = uuid()
        let e = JournalEntry(
            id: CompactID(uuidHigh: id.0, low: id.1),
            zone: EntrySet.zones[Int(g.next() % UInt64(EntrySet.zones.count))],
            author: EntrySet.authors[made % EntrySet.authors.count],
            wallTime: wall,
            clock: clock.tick(wallMillis: wall),
            operation: .add(item: CompactID(uuidHigh: item.0, low: item.1),
                            text: EntrySet.texts[Int(g.next() % UInt64(EntrySet.texts.count))], after: nil))
        made += 1
        return (e, RowKeys(idHi: id.0, idLo: id.1, itemHi: item.0, itemLo: item.1))
    }

    private mutating func uuid() -> (UInt64, UInt64) {
        let hi = (g.next() & ~0xF000) | 0x4000
        let lo = (g.next() & ~(0xC000 << 48)) | (0x8000 << 48)
        return (hi, lo)
    }
}

// MARK: Threads

/// Lets N threads line up, then releases them together.
final class StartGate: @unchecked Sendable {
    private let cond = NSCondition()
    private var arrived = 0
    private var open = false

    func arriveAndWait() {
        cond.lock()
        arrived += 1
        cond.broadcast()
        while !open { cond.wait() }
        cond.unlock()
    }

    func waitForArrivals(_ n: Int) {
        cond.lock()
        while arrived < n { cond.wait() }
        cond.unlock()
    }

    func release() {
        cond.lock()
        open = true
        cond.broadcast()
        cond.unlock()
    }
}

/// Starts `n` threads that run `body(index)` together; returns the seconds from release until all finished.
func runThreads(_ n: Int, _ body: @escaping @Sendable (Int) -> Void) -> Double {
    let gate = StartGate()
    let group = DispatchGroup()
    for i in 0..<n {
        group.enter()
        let t = Thread {
            gate.arriveAndWait()
            body(i)
            group.leave()
        }
        t.stackSize = 1 << 20
        t.start()
    }
    gate.waitForArrivals(n)
    let t0 = now()
    gate.release()
    group.wait()
    return now() - t0
}

/// The scratch directory of this run, removed by `fail` too.
final class ScratchDirectory: @unchecked Sendable {
    private let lock = NSLock()
    private var path: String?
    private var parent: String?
    /// `parent`, when given, is removed too if it is left empty (the run created it).
    func set(_ p: String?, parent: String? = nil) {
        lock.lock()
        path = p
        self.parent = parent
        lock.unlock()
    }
    func remove() {
        lock.lock()
        defer { lock.unlock() }
        if let p = path { removeTree(p) }
        if let d = parent { rmdir(d) }  // fails harmlessly when not empty
        path = nil
        parent = nil
    }
}
let scratchDirectory = ScratchDirectory()

func fail(_ what: String, _ error: Error) -> Never {
    log("jlog-bench: \(what) failed: \(error)")
    scratchDirectory.remove()
    exit(2)
}

/// The 1-minute load average: other work on this 2-core machine skews every figure.
func loadAverage() -> Double {
    guard let s = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
          let first = s.split(separator: " ").first, let v = Double(first) else { return .nan }
    return v
}

import Foundation
import Testing
@testable import JournalLog

/// `EntryOperation` alone is ambiguous beside Foundation's NSOperation.
typealias EntryOp = JournalCodec.EntryOperation

// MARK: Temporary directories

/// A unique directory under the system temporary directory, removed when the value is released.
final class TemporaryDirectory: @unchecked Sendable {
    let url: URL
    var path: String { url.path }

    init(_ label: String = "journallog") throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(label)-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the directory (not created).
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Runs `body` with a fresh temporary directory and removes it afterwards, whatever happens.
func withTemporaryDirectory<T>(_ label: String = "journallog", _ body: (TemporaryDirectory) throws -> T) throws -> T {
    let dir = try TemporaryDirectory(label)
    return try withExtendedLifetime(dir) { try body(dir) }
}

// MARK: Deterministic randomness

extension SplitMix64 {
    mutating func bytes(_ n: Int) -> [UInt8] {
        (0..<n).map { _ in UInt8(truncatingIfNeeded: next()) }
    }
}

/// Produces a reproducible stream of entries: every operation kind, several zones and authors,
/// both id forms, texts of 20–40 characters (some non-ASCII), and strictly increasing hybrid times.
struct EntryGenerator {
    static let zones = ["List-db6a6e29", "Groceries", "Hardware store", "Ferien 🏖️ Liste"]
    static let authors = ["alice", "bob", "carol", "dörte", "eve-phone"]
    static let words = ["milk", "eggs", "bread", "Äpfel", "tea", "rice", "soap", "nails", "paint", "crème fraîche",
                        "coffee", "pasta", "tomatoes", "batteries", "日本茶", "olive oil"]

    var rng: SplitMix64
    private var counter = 0
    private var millis: UInt64 = 1_795_424_400_000
    private var clockCounter: UInt16 = 0
    private var items: [CompactID] = []
    /// Include opaque (0x80+) operations now and then.
    var includeOpaque: Bool

    init(seed: UInt64, includeOpaque: Bool = true) {
        rng = SplitMix64(seed: seed)
        self.includeOpaque = includeOpaque
    }

    mutating func text() -> String {
        let target = Int.random(in: 20...40, using: &rng)
        var s = ""
        while s.count < target {
            if !s.isEmpty { s += " " }
            s += EntryGenerator.words.randomElement(using: &rng)!
        }
        return String(s.prefix(target))
    }

    private mutating func newID(_ prefix: String) -> CompactID {
        counter += 1
        if rng.next() % 2 == 0 { return CompactID.random(using: &rng) }
        return CompactID("\(prefix)\(counter)-\(rng.next() % 10_000)")!
    }

    private mutating func existingItem() -> CompactID {
        items.randomElement(using: &rng) ?? newID("item")
    }

    mutating func nextClock() -> HybridTime {
        let step = rng.next() % 4
        if step == 0 {
            clockCounter &+= 1
        } else {
            millis += step * 250
            clockCounter = 0
        }
        return HybridTime(physicalMillis: millis, counter: clockCounter)
    }

    mutating func next() -> JournalEntry {
        let clock = nextClock()
        let op: EntryOp
        switch rng.next() % (includeOpaque ? 8 : 7) {
        case 0, 1:
            let item = newID("item")
            let after = items.isEmpty || rng.next() % 3 == 0 ? nil : existingItem()
            items.append(item)
            op = .add(item: item, text: text(), after: after)
        case 2: op = .markOff(item: existingItem())
        case 3: op = .unmark(item: existingItem())
        case 4: op = .delete(item: existingItem())
        case 5: op = .rename(name: text())
        case 6: op = .recolour(colour: ["yellow", "red", "#3366ff", "grün"].randomElement(using: &rng)!)
        default: op = .opaque(kind: 0x80 | UInt8(rng.next() % 0x80), body: rng.bytes(Int(rng.next() % 24)))
        }
        // The author's wall clock may run a little ahead or behind the hybrid time.
        let skew = Int64(rng.next() % 2001) - 1000
        return JournalEntry(id: newID("e"), zone: EntryGenerator.zones.randomElement(using: &rng)!,
                            author: EntryGenerator.authors.randomElement(using: &rng)!,
                            wallTime: Int64(clock.physicalMillis) + skew, clock: clock, operation: op)
    }

    mutating func entries(_ n: Int) -> [JournalEntry] { (0..<n).map { _ in next() } }
}

// MARK: Files and bytes

func readFile(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

func writeFile(_ path: String, _ bytes: [UInt8]) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

/// XORs one byte of a file with `mask` (0xFF by default, so the byte always changes).
func flipByte(_ path: String, at offset: Int, mask: UInt8 = 0xFF) throws {
    var b = try readFile(path)
    b[offset] ^= mask
    try writeFile(path, b)
}

/// Sets `range` of a file to zeros, as an unwritten preallocated region would be.
func zeroBytes(_ path: String, _ range: Range<Int>) throws {
    var b = try readFile(path)
    for i in range { b[i] = 0 }
    try writeFile(path, b)
}

func truncateFile(_ path: String, to size: Int) throws {
    let h = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? h.close() }
    try h.truncate(atOffset: UInt64(size))
}

func fileSize(_ path: String) throws -> Int {
    (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue ?? -1
}

func fileExists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

/// Segment files of a store, in base order (full paths).
func segmentFiles(_ store: String) throws -> [String] {
    try StoreLayout.segmentPaths(store, fs: PosixFileSystem())
}

/// Full paths of the files recovery set aside under `torn/`, sorted.
func tornFiles(_ store: String) -> [String] {
    let dir = store + "/" + StoreLayout.tornDirectory
    let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
    return names.sorted().map { dir + "/" + $0 }
}

func fileName(_ path: String) -> String { URL(fileURLWithPath: path).lastPathComponent }

// MARK: Stores

func storeOptions(durability: Durability = .always, segmentSize: Int = 64 << 10, preallocate: Bool = false,
                  recovery: RecoveryMode = .tolerateTail) -> StoreOptions {
    StoreOptions(durability: durability, segmentSize: segmentSize, preallocate: preallocate, recovery: recovery)
}

/// Creates a store holding `entries`, one record each, and closes it. Returns the sequences.
@discardableResult
func makeStore(_ path: String, entries: [JournalEntry], options: StoreOptions = storeOptions(durability: .none)) throws -> [SequenceNumber] {
    let store = try JournalStore.open(path, options: options)
    var seqs: [SequenceNumber] = []
    for e in entries { seqs.append(try store.append(e)) }
    try store.close()
    return seqs
}

/// Offset and size of every record in a store, in order.
struct RecordLocation: Equatable {
    var segment: String
    var offset: Int
    var size: Int
    var type: UInt8
    var sequence: SequenceNumber
    var lastSequence: SequenceNumber
    var end: Int { offset + size }
}

func recordLocations(_ path: String, mode: RecoveryMode = .strict) throws -> [RecordLocation] {
    var out: [RecordLocation] = []
    _ = try LogReader.scanRecords(path, mode: mode) { r in
        out.append(RecordLocation(segment: r.segment, offset: Int(r.offset), size: r.header.frameSize, type: r.header.type,
                                  sequence: r.header.sequence, lastSequence: r.lastSequence))
    }
    return out
}

/// Every entry in the store with its sequence.
func readEntries(_ path: String, mode: RecoveryMode = .strict) throws -> [(SequenceNumber, JournalEntry)] {
    try LogReader.entries(path, mode: mode)
}

/// The Corruption inside an error thrown by the storage layer, if it is one.
func corruption(in error: any Error) -> Corruption? {
    if case JournalError.corruption(let c)? = error as? JournalError { return c }
    return error as? Corruption
}

/// Runs `body`, expecting it to throw; returns the error (nil, and a recorded issue, when it did not throw).
func thrownError<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> (any Error)? {
    do {
        _ = try body()
        Issue.record("expected an error, but none was thrown", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// Runs `body`, expecting it to throw `JournalError.corruption`; returns the Corruption.
func thrownCorruption<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> Corruption? {
    guard let error = thrownError(body, sourceLocation: sourceLocation) else { return nil }
    guard let c = corruption(in: error) else {
        Issue.record("expected a corruption, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
    return c
}

// MARK: Batches

/// Writes `entries` as one atomic batch record through `appendRecord`: the same frame
/// `append(batch:)` writes, without depending on that method. Returns the sequences taken.
@discardableResult
func appendBatchRecord(_ store: JournalStore, _ entries: [JournalEntry], durability: Durability? = nil) throws -> ClosedRange<SequenceNumber> {
    let payload = BatchCodec.encode(entries: entries.map(EntryCodec.encode), compress: store.options.compressBatches)
    let last = try store.appendRecord(type: RecordType.batch.rawValue, payload: payload, consuming: entries.count, durability: durability)
    return (last - SequenceNumber(entries.count) + 1)...last
}

private final class BatchCall: @unchecked Sendable {
    var result: Result<ClosedRange<SequenceNumber>, JournalError>?
    let done = DispatchSemaphore(value: 0)
}

/// Calls `store.append(batch:)` on another thread and waits at most `seconds` for it. A call that
/// does not return is recorded as an issue, then released by appending the sequences it waits
/// for (filler entries), so one hang cannot stall the whole suite. Returns nil when it hung.
func appendBatchGuarded(_ store: JournalStore, _ batch: [JournalEntry], durability: Durability? = nil, seconds: Double = 5,
                        sourceLocation: SourceLocation = #_sourceLocation) throws -> ClosedRange<SequenceNumber>? {
    let call = BatchCall()
    let thread = Thread {
        do throws(JournalError) {
            call.result = .success(try store.append(batch: batch, durability: durability ?? store.options.durability))
        } catch { call.result = .failure(error) }
        call.done.signal()
    }
    thread.start()
    if call.done.wait(timeout: .now() + seconds) == .timedOut {
        Issue.record("append(batch:) of \(batch.count) entries did not return within \(seconds) s", sourceLocation: sourceLocation)
        let filler = JournalEntry(id: CompactID("filler")!, zone: "filler", author: "test", wallTime: 0,
                                  clock: HybridTime(rawValue: 0), operation: .rename(name: "filler"))
        for _ in 0..<max(1, batch.count - 1) { try store.append(filler, durability: Durability.none) }
        if call.done.wait(timeout: .now() + seconds) == .timedOut {
            Issue.record("append(batch:) is still stuck after filler appends", sourceLocation: sourceLocation)
        }
        return nil
    }
    return try call.result!.get()
}

/// Rewrites `EPOCHS` as a writer that died instead of closing leaves it: acknowledged through its
/// last roll only. A test that tears the tail of a cleanly closed store stands for a crash; a
/// cleanly closed store whose fsynced tail is damaged is a loss the writer refuses (TOKENS.md §7).
func asIfTheWriterCrashed(_ store: String, fs: any FileSystem = PosixFileSystem()) throws {
    guard case .record(var r) = StoreEpochs.load(store: store, fs: fs) else { return }
    r.acknowledgedThrough = r.activeSegment > 0 ? r.activeSegment - 1 : 0
    r.closedCleanly = false
    try StoreEpochs.write(r, store: store, fs: fs)
}

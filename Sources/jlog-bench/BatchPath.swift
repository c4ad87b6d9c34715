import Foundation
import JournalLog

/// How the benchmark appends 1,000-entry batches.
///
/// `JournalStore.append(batch:)` is what users call. When a probe finds that it does not return
/// (or returns the wrong range), the benchmark falls back to doing exactly what `append(batch:)`
/// does — validate and encode every entry, `BatchCodec.encode`, one framed record of type `batch`
/// consuming `count` sequences — through the public `appendRecord(type:payload:consuming:)`,
/// so the bytes on disk and the work per batch are the same. Every line that used the fallback says so.
enum BatchPath: Sendable {
    case appendBatch
    case appendRecord(reason: String)

    var label: String {
        switch self {
        case .appendBatch: "append(batch:)"
        case .appendRecord: "appendRecord(type: batch) fallback"
        }
    }

    var json: [(String, JSON)] {
        switch self {
        case .appendBatch: [("batch_api", .s(label))]
        case .appendRecord(let why): [("batch_api", .s(label)), ("batch_api_reason", .s(why))]
        }
    }

    func append(_ store: JournalStore, _ batch: [JournalEntry], durability: Durability) throws {
        switch self {
        case .appendBatch:
            try store.append(batch: batch, durability: durability)
        case .appendRecord:
            var encoded: [[UInt8]] = []
            encoded.reserveCapacity(batch.count)
            for e in batch {
                if let why = EntryCodec.validate(e) { throw JournalError.invalidEntry(why) }
                encoded.append(EntryCodec.encode(e))
            }
            let payload = BatchCodec.encode(entries: encoded, compress: store.options.compressBatches)
            try store.appendRecord(type: RecordType.batch.rawValue, payload: payload, consuming: batch.count, durability: durability)
        }
    }
}

private final class ProbeResult: @unchecked Sendable {
    var range: ClosedRange<SequenceNumber>?
    var error: Error?
}

/// Appends a two-entry batch to a fresh store on another thread and checks that it returns 1...2 in time.
/// If it hangs, single entries are appended until the stuck call returns, so no thread is left spinning.
func probeBatchPath(dir: String) -> BatchPath {
    let p = dir + "/probe.store"
    defer { removeTree(p) }
    var o = StoreOptions()
    o.durability = .none
    let store: JournalStore
    do { store = try JournalStore.open(p, options: o) } catch { fail("JournalStore.open (probe)", error) }
    let set = EntrySet.generate(2, seed: 1)
    let result = ProbeResult()
    let done = DispatchSemaphore(value: 0)
    let batch = set.entries
    Thread {
        do { result.range = try store.append(batch: batch, durability: Durability.none) } catch { result.error = error }
        done.signal()
    }.start()
    var hung = false
    if done.wait(timeout: .now() + 2) == .timedOut {
        hung = true
        var released = false
        for _ in 0..<64 {
            do { try store.append(set.entries[0], durability: Durability.none) } catch { break }
            if done.wait(timeout: .now() + 0.5) == .success {
                released = true
                break
            }
        }
        if !released { log("jlog-bench: WARNING: a probe thread is still stuck in append(batch:); CPU figures will suffer") }
    }
    try? store.close()
    let path: BatchPath
    if hung {
        path = .appendRecord(reason: "append(batch:) of 2 entries to an empty store never returned: it waits for sequence \(result.range.map { String($0.upperBound) } ?? "first+count-1") past the last assigned one (enqueue returns the batch's last sequence, which append(batch:) uses as its first)")
    } else if let e = result.error {
        path = .appendRecord(reason: "append(batch:) threw: \(e)")
    } else if result.range != 1...2 {
        path = .appendRecord(reason: "append(batch:) of 2 entries to an empty store returned \(result.range.map { "\($0)" } ?? "nil"), not 1...2")
    } else {
        path = .appendBatch
    }
    if case .appendRecord(let why) = path { log("jlog-bench: WARNING: \(why); batches go through \(path.label)") }
    return path
}

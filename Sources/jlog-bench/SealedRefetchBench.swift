import Foundation
import JournalCodec
import JournalSeal
import ListModel

/// What a re-fetch of a sealed list costs beside a plain one (Spec/SEALING.md, MERGE.md §11): the
/// list's snapshot, as the service serves it (LZ4 when that saves space), and the time a device
/// takes to decode it and build the list, for the same 5,000 items (one in five marked off), plain
/// and sealed; and, for the sealed list only, the time to open every text for display. The
/// bytes do not depend on the build; the times are a release build's only when run as one.
struct SealedRefetchBench {
    let counts: Counts
    let report: Report

    static let items = 5_000

    /// The list's entries: each item added after the one before, texts from the typical set.
    static func entries(sealer: TextSealer?) -> [JournalEntry] {
        let zone = sealer?.zone ?? "alice/weekly"
        var out: [JournalEntry] = []
        out.reserveCapacity(items + items / 5)
        var previous: CompactID? = nil
        for i in 0..<items {
            let id = CompactID(uuidHigh: 0x0000_0000_0000_4000 | UInt64(i) << 16, low: 0x8000_0000_0000_0000 | UInt64(i))
            let item = CompactID(uuidHigh: 0x0000_0000_0000_4000 | UInt64(i) << 16, low: 0x8000_0000_0001_0000 | UInt64(i))
            let clock = HybridTime(physicalMillis: 1_764_000_000_000 + UInt64(i) * 1_000, counter: 0)
            // Typical texts, each made distinct (a list's items differ), so that LZ4 finds in the
            // plain list what a real one offers it, not one text repeated.
            let text = "\(SealingBench.texts[i % SealingBench.texts.count]) \(i)"
            let operation: EntryOperation
            if let sealer {
                guard let change = try? sealer.add(text, item: item, after: previous, entry: id, author: "alice:phone", clock: clock,
                                                   wallTime: Int64(clock.physicalMillis)) else { fail("sealing a text", SealError.cannotOpen) }
                operation = change.operation
            } else {
                operation = .add(item: item, text: text, after: previous)
            }
            out.append(JournalEntry(id: id, zone: zone, author: "alice:phone", wallTime: Int64(clock.physicalMillis), clock: clock, operation: operation))
            if i % 5 == 0 {
                out.append(JournalEntry(id: CompactID(uuidHigh: 0x0000_0000_0000_4000 | UInt64(i) << 16, low: 0x8000_0000_0002_0000 | UInt64(i)),
                                        zone: zone, author: "bob:phone", wallTime: Int64(clock.physicalMillis) + 500,
                                        clock: HybridTime(physicalMillis: clock.physicalMillis + 500, counter: 0), operation: .markOff(item: item)))
            }
            previous = item
        }
        return out
    }

    func run() {
        log("[e2ee] re-fetch of a 5,000-item list: its snapshot, plain and sealed")
        let key = ListKey.random(epoch: 1)
        let sealer = TextSealer(key: key, zone: "alice/Qm9vbXMtMTIzNDU")
        var results: [(String, Int, [Double])] = []
        for (system, s) in [("plain", nil as TextSealer?), ("sealed", sealer)] {
            let entries = Self.entries(sealer: s)
            var reducer = ListReducer(zone: entries[0].zone)
            reducer.apply(contentsOf: entries)
            let file = SnapshotCodec.encode(reducer: reducer, incarnation: 1, sequence: UInt64(entries.count))
            var times: [Double] = []
            for _ in 0..<max(3, counts.runs) {
                let t = now()
                guard let (_, decoded) = try? SnapshotCodec.decode(file) else { fail("decoding a snapshot", SealError.cannotOpen) }
                let state = decoded.state()
                times.append((now() - t) * 1e3)
                precondition(state.items.count == Self.items)
            }
            results.append((system, file.count, times))
        }
        let (plainBytes, plainTimes) = (results[0].1, results[0].2), (sealedBytes, sealedTimes) = (results[1].1, results[1].2)
        let byteRatio = Double(sealedBytes) / Double(plainBytes), timeRatio = medianOf(sealedTimes) / medianOf(plainTimes)
        report.emit(Measurement(name: "e2ee_refetch", system: "plain", unit: "ms to decode the snapshot and build the list", runs: plainTimes,
                                extra: [("snapshot_bytes", .i(plainBytes)), ("items", .i(Self.items)),
                                        ("note", .s("the snapshot a re-fetch installs (SNAPSHOT.md, LZ4 when smaller), then ListReducer.state()"))]))
        report.emit(Measurement(name: "e2ee_refetch", system: "sealed", unit: "ms to decode the snapshot and build the list", runs: sealedTimes,
                                extra: [("snapshot_bytes", .i(sealedBytes)), ("bytes_ratio", .n(byteRatio)), ("time_ratio", .n(timeRatio)),
                                        ("note", .s("the same items sealed (MERGE.md §11): sealed values do not compress, and each carries its 29-byte nonce, tag and header"))],
                                goal: "≤ 1.2× the time and ≤ 1.5× the bytes of the plain list", met: timeRatio <= 1.2 && byteRatio <= 1.5))
        // Opening every text for display: a device's work, apart from the re-fetch.
        var reducer = ListReducer(zone: sealer.zone)
        reducer.apply(contentsOf: Self.entries(sealer: sealer))
        let state = reducer.state()
        var open: [Double] = []
        for _ in 0..<max(3, counts.runs) {
            let t = now()
            var n = 0
            for item in state.items { if let s = item.sealedText, let text = try? sealer.open(s.value, for: s.binding) { n += text.utf8.count } }
            open.append((now() - t) * 1e3)
            precondition(n > 0)
        }
        report.emit(Measurement(name: "e2ee_open_list", system: "sealed", unit: "ms to open every text of the list", runs: open,
                                extra: [("items", .i(Self.items)), ("note", .s("TextSealer.open (what ListKeyring.open calls) over ListState.items, on the device, for display"))]))
    }
}

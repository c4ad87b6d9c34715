import Foundation
import JournalCodec
import JournalSeal

/// Sealed lists' costs (Spec/SEALING.md), beside the plain list's in one run: the bytes a sealed
/// add takes over a plain one (and a mark-off: none), and the time to seal and open one text,
/// to derive a list's text key and to follow a back link.
struct SealingBench {
    let counts: Counts
    let report: Report

    /// Typical item texts: the workload's, and longer ones as people type them.
    static let texts = EntrySet.texts + ["Chopped tomatoes x2", "Semi-skimmed milk 2 pints", "Porridge oats", "Kitchen roll (big pack)",
                                         "Birthday candles", "Cat food pouches x12", "Free-range eggs, 12", "Lemons"]

    func run() {
        log("[e2ee] sealed lists: bytes and time beside plain lists")
        bytes()
        time()
    }

    /// An add of each typical text, plain and sealed, as FORMAT.md §6 encodes it: UUID ids, a
    /// device author; the sealed one in a zone with a random 11-character name (SEALING.md asks
    /// for random names), the plain one in `alice/weekly`.
    func bytes() {
        let sealer = TextSealer(key: ListKey.random(epoch: 1), zone: "alice/Qm9vbXMtMTIzNDU")
        var plain: [Double] = [], sealed: [Double] = [], overhead: [Double] = []
        var zoneCost = 0
        for (i, text) in Self.texts.enumerated() {
            let id = CompactID(uuidHigh: 0x0000_0000_0000_4000, low: 0x8000_0000_0000_0000 | UInt64(i))
            let item = CompactID(uuidHigh: 0x0000_0000_0000_4000, low: 0x8000_0000_0001_0000 | UInt64(i))
            let clock = HybridTime(physicalMillis: 1_764_000_000_000 + UInt64(i), counter: 0)
            let add = JournalEntry(id: id, zone: "alice/weekly", author: "alice:phone", wallTime: 1_764_000_000_000 + Int64(i),
                                   clock: clock, operation: .add(item: item, text: text, after: nil))
            let binding = SealBinding(zone: sealer.zone, entry: id, kind: 0x41, item: item, author: "alice:phone",
                                      clock: clock, wallTime: add.wallTime, epoch: 1)
            guard let value = try? sealer.seal(text, for: binding).encoded else { fail("sealing a text", SealError.cannotOpen) }
            // SEALING.md §5: the add's body with `length | sealed` in place of the text string.
            let plainBytes = EntryCodec.encode(add).count
            let zoneDelta = sealer.zone.utf8.count - "alice/weekly".utf8.count
            let textBytes = varintLength(UInt64(text.utf8.count)) + text.utf8.count
            let sealedBytes = plainBytes + zoneDelta - textBytes + varintLength(UInt64(value.count)) + value.count
            plain.append(Double(plainBytes))
            sealed.append(Double(sealedBytes))
            // Sealing's own cost: against the same add in a zone of the same name.
            overhead.append(Double(sealedBytes - plainBytes - zoneDelta))
            zoneCost = zoneDelta
        }
        let mean = overhead.reduce(0, +) / Double(overhead.count)
        report.emit(Measurement(name: "e2ee_add_bytes", system: "plain", unit: "bytes per add", runs: plain,
                                extra: [("texts", .i(Self.texts.count)), ("note", .s("FORMAT.md §6 add, UUID ids, author alice:phone, zone alice/weekly"))]))
        report.emit(Measurement(name: "e2ee_add_bytes", system: "sealed", unit: "bytes per add", runs: sealed,
                                extra: [("mean_sealing_bytes", .n(mean)), ("max_sealing_bytes", .n(overhead.max() ?? 0)),
                                        ("random_zone_name_bytes", .i(zoneCost)),
                                        ("note", .s("the same adds as sealedAdd (SEALING.md §5): the sealed value of the padded text in place of the text. mean_sealing_bytes is the cost of sealing (against a plain add in a zone of the same name); a sealed list's random 11-character zone name costs every entry random_zone_name_bytes more than alice/weekly"))],
                                goal: "≤ 45 bytes more per add for sealing (mean)", met: mean <= 45))
        report.emit(Measurement(name: "e2ee_markoff_bytes", system: "sealed", unit: "bytes more than plain", runs: [0],
                                extra: [("note", .s("marks, deletes and places carry no text (SEALING.md §5); only the zone's random name differs"))],
                                goal: "0", met: true))
    }

    /// Microseconds per operation, medians over `runs` rounds of every typical text.
    func time() {
        let key = ListKey.random(epoch: 2), previous = ListKey.random(epoch: 1)
        let zone = "alice/Qm9vbXMtMTIzNDU"
        let sealer = TextSealer(key: key, zone: zone)
        let bindings = Self.texts.indices.map { i in
            SealBinding(zone: zone, entry: CompactID(uuidHigh: 0x4000, low: UInt64(i)), kind: 0x41, item: CompactID(uuidHigh: 0x4000, low: 1 << 32 | UInt64(i)),
                        author: "alice:phone", clock: HybridTime(physicalMillis: 1_764_000_000_000, counter: UInt16(i)), wallTime: 1_764_000_000_000, epoch: 2)
        }
        let rounds = counts.runs, perRound = counts.runs > 3 ? 400 : 100
        var seal: [Double] = [], open: [Double] = [], derive: [Double] = [], link: [Double] = []
        var values: [SealedValue] = []
        for _ in 0..<rounds {
            values.removeAll(keepingCapacity: true)
            var t = now()
            for _ in 0..<perRound { for (i, text) in Self.texts.enumerated() { values.append(try! sealer.seal(text, for: bindings[i])) } }
            seal.append((now() - t) * 1e6 / Double(perRound * Self.texts.count))
            t = now()
            var opened = 0
            for (j, v) in values.enumerated() { opened += (try? sealer.open(v, for: bindings[j % Self.texts.count]))?.utf8.count ?? 0 }
            open.append((now() - t) * 1e6 / Double(values.count))
            precondition(opened > 0)
            t = now()
            for _ in 0..<50 { _ = TextSealer(key: key, zone: zone) }
            derive.append((now() - t) * 1e6 / 50)
            let backLink = try! key.backLink(to: previous, zone: zone)
            t = now()
            for _ in 0..<50 { _ = try? key.openBackLink(backLink, zone: zone) }
            link.append((now() - t) * 1e6 / 50)
        }
        // The primitive alone, beside it: AES-256-GCM seal and open of the same padded texts with
        // the same associated data, everything made beforehand.
        let raw = key.textKey(zone: zone)
        let inputs = Self.texts.indices.map { (SealPadding.pad(Self.texts[$0])!, bindings[$0].associatedData) }
        var primitive: [Double] = []
        for _ in 0..<rounds {
            let t = now()
            var n = 0
            for _ in 0..<perRound {
                for (plaintext, aad) in inputs {
                    let box = try! AES.GCM.seal(plaintext, using: raw, authenticating: aad)
                    n += try! AES.GCM.open(box, using: raw, authenticating: aad).count
                }
            }
            primitive.append((now() - t) * 1e6 / Double(perRound * inputs.count))
            precondition(n > 0)
        }
        report.emit(Measurement(name: "e2ee_seal_open", system: "aes-gcm", unit: "µs per text (seal + open)", runs: primitive,
                                extra: [("note", .s("the primitive alone: AES-256-GCM seal and open of the same padded texts and associated data, prepared beforehand"))]))
        let both = zip(seal, open).map { $0 + $1 }
        report.emit(Measurement(name: "e2ee_seal_open", system: "sealed", unit: "µs per text (seal + open)", runs: both,
                                extra: [("seal_us", .n(medianOf(seal))), ("open_us", .n(medianOf(open))),
                                        ("note", .s("AES-256-GCM over the padded text with its binding as associated data (SEALING.md §2); swift-crypto here, CryptoKit on Apple platforms"))],
                                goal: "≤ 10 µs", met: medianOf(both) <= 10))
        report.emit(Measurement(name: "e2ee_text_key", system: "sealed", unit: "µs per list and epoch", runs: derive,
                                extra: [("note", .s("HKDF-SHA256 of the epoch key (SEALING.md §2.4), once per list and epoch"))]))
        report.emit(Measurement(name: "e2ee_back_link", system: "sealed", unit: "µs per epoch followed", runs: link,
                                extra: [("note", .s("opening the key before from a back link (SEALING.md §3), HKDF included"))]))
    }
}

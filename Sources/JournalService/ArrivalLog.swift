import Foundation
import JournalLog

/// When the service received what it holds (SYNC.md §6.2 rule 9, COMPACTION.md §1): retention is
/// judged by the later of an entry's own time and its arrival, so an entry a client dated a month
/// back is not purged at the next compaction (which would expire other devices' tokens early).
///
/// A checkpoint is an entry of kind `opaque 0x82` in `_service/arrivals`, written with the
/// service's own wall time `t`, whose body is `u8 1 | varint P`: every entry at or below
/// position `P` had arrived by `t` (`P` is read before `t`, so the claim holds). The
/// service writes one when it starts, before each compaction, and after an upload when the last
/// one is an `interval` old; between writes it keeps the newest upload's position and time in
/// memory (one sample a minute at most). Positions no checkpoint covers arrived at the first
/// checkpoint after them, which is later than the truth, never earlier: a purge can only come late.
final class ArrivalLog: @unchecked Sendable {
    static let zone = "_service/arrivals"
    static let kind: UInt8 = 0x82
    /// How often, in the service's milliseconds, an upload writes a checkpoint.
    static let interval: Int64 = 3_600_000

    /// Arrivals noted within this many milliseconds of the first one a sample took are folded
    /// into it (the later time kept): at most one sample a minute stays in memory, and no sample
    /// claims an arrival more than this much later than the truth, however often notes come.
    static let granularity: Int64 = 60_000

    private let store: any ServiceStorage
    private let lock = NSLock()
    /// (time, through): every position at or below `through` had arrived by `time`; in the
    /// order noted. Written checkpoints and uploads' arrivals alike.
    private var samples: [(time: Int64, through: SequenceNumber)] = []
    private var lastWritten: Int64?
    private var writing = false
    /// The time the last sample was first noted at: it takes notes until `granularity` after it.
    private var lastStarted: Int64?

    /// Reads the checkpoints `store` holds.
    init(store: any ServiceStorage) throws(JournalError) {
        self.store = store
        let info: ZoneInfo?
        do throws(StorageError) { info = try store.zoneInfo(Self.zone) } catch { throw .writerFailed(error.description) }
        guard info.map({ !$0.isDeleted }) == true else { return }
        var token: FeedToken? = nil
        do {
            while true {
                let page = try store.zoneChanges(Self.zone, since: token, limit: 10_000)
                for e in page.entries {
                    guard case .opaque(Self.kind, let body) = e.entry.operation, let through = Self.decode(body) else { continue }
                    add(e.entry.wallTime, through)
                    lastWritten = e.entry.wallTime
                }
                token = page.token
                if !page.moreComing { break }
            }
        } catch { throw .invalidEntry("the service's arrival checkpoints (\(Self.zone)) cannot be read: \(error)") }
    }

    /// The highest position every entry at or below which had arrived by `time`, or 0.
    func arrived(by time: Int64) -> SequenceNumber {
        lock.withLock { samples.reduce(0) { $1.time <= time ? max($0, $1.through) : $0 } }
    }

    /// Folds the samples at or before `time` into one: a bound asked for later is never for an
    /// earlier time than a compaction's cutoff, which only moves on.
    func forget(before time: Int64) {
        lock.withLock {
            let old = samples.filter { $0.time <= time }
            guard old.count > 1 else { return }
            let folded = (time: old.map(\.time).max()!, through: old.map(\.through).max()!)
            samples = [folded] + samples.filter { $0.time > time }
        }
    }

    /// Notes that everything the store holds now has arrived by `time` (read after the store's
    /// position, so it is never earlier than an arrival it covers), and writes a checkpoint when
    /// `force` or when the last one is `interval` old.
    func note(at time: () -> Int64, force: Bool, write: (JournalEntry) throws(JournalError) -> SequenceNumber) throws(JournalError) {
        let through: SequenceNumber
        do throws(StorageError) { through = try store.readHorizon() } catch { throw .writerFailed(error.description) }
        let t = time()
        let due: Bool = lock.withLock {
            add(t, through)
            guard !writing else { return false }
            guard force || lastWritten.map({ t - $0 >= Self.interval || t < $0 }) ?? true else { return false }
            writing = true
            return true
        }
        guard due else { return }
        defer { lock.withLock { writing = false } }
        var w = ByteWriter()
        w.u8(1)
        w.varint(through)
        var record = JournalEntry(id: CompactID("-")!, zone: Self.zone, author: Membership.author, wallTime: t,
                                  clock: HybridTime(derivedFromWallTime: t), operation: .opaque(kind: Self.kind, body: w.bytes))
        record.id = CompactID.derived(from: record)
        _ = try write(record)
        lock.withLock { lastWritten = t }
    }

    /// Under `lock` (or in `init`): a sample, folded into the last when it is less than
    /// `granularity` after the time that sample was first noted at (its later time claims no
    /// arrival earlier than the truth). Measured from the first, not the latest: notes that keep
    /// coming less than a minute apart (a compaction every second, steady uploads) would
    /// otherwise fold into one sample whose time never stops moving, and nothing would ever
    /// count as arrived by a cutoff.
    private func add(_ time: Int64, _ through: SequenceNumber) {
        if let last = samples.last, let started = lastStarted, time >= last.time, time - started < Self.granularity, through >= last.through {
            samples[samples.count - 1] = (time, through)
        } else {
            samples.append((time, through))
            lastStarted = time
        }
    }

    /// The position a checkpoint's body names, or nil for a body this version does not read.
    static func decode(_ body: [UInt8]) -> SequenceNumber? {
        body.withUnsafeBytes { b -> SequenceNumber? in
            var r = ByteReader(b)
            guard (try? r.u8()) == 1, let through = try? r.varint(), r.isAtEnd else { return nil }
            return through
        }
    }
}

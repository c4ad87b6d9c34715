import Foundation
import JournalQuery
import JournalService
import JournalSync
import Logging

/// What a service node does beside answering requests (Spec/SYNC.md §6, §11.4): it compacts on
/// a schedule, and, over a storage other nodes share, turns their writes' signals into hints for
/// its own devices. `jlog serve` runs one; so does an app that embeds the service in its own
/// server, with nothing to copy from the command.
package struct ServiceNode: Sendable {
    package let backend: BlockingBackend
    let logger: Logger

    package init(backend: BlockingBackend, logger: Logger = Logger(label: "jlog-serve")) {
        self.backend = backend
        self.logger = logger
    }

    /// What one compaction run did: the report, and the devices it sends back to the snapshot.
    package struct CompactionOutcome: Sendable {
        package var report: ListCompactionReport
        package var devicesSentBack: Int
    }

    /// One compaction run now, on the backend's pool (it reads and rewrites for seconds, which no
    /// event loop may wait for), counted in the metrics. A storage that does not answer fails it
    /// (`serviceBusy`): never a run that did nothing reported as done.
    package func compactOnce(now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) async throws(SyncError) -> CompactionOutcome {
        let report = try await backend.compact(now: now)
        let sentBack = try await backend.run { [core = backend.core] () throws(SyncError) in try core.devicesSentBack(by: report) }
        ServerMetrics.compactionRuns.increment()
        ServerMetrics.entriesPurged.increment(by: report.storage.entriesPurged)
        ServerMetrics.devicesSentBack.increment(by: sentBack)
        return CompactionOutcome(report: report, devicesSentBack: sentBack)
    }

    /// Compacts every `interval` until cancelled (never when nil); a failed run is logged and
    /// the next one tries again. `ran` is told of each run that did something (`jlog serve`
    /// prints a line for the operator).
    package func compactions(every interval: Duration?, ran: @escaping @Sendable (CompactionOutcome) -> Void = { _ in }) -> Task<Void, Never> {
        Task.detached { [self] in
            guard let interval else { return }
            var wait = interval
            while !Task.isCancelled {
                try? await Task.sleep(for: wait)
                if Task.isCancelled { return }
                wait = interval
                do {
                    let outcome = try await compactOnce()
                    let purged = outcome.report.storage.entriesPurged, replaced = outcome.report.storage.entriesReplaced
                    if purged + replaced > 0 {
                        logger.notice("compacted: \(purged) purged, \(replaced) replaced; \(outcome.devicesSentBack) devices will re-fetch from the snapshot")
                        ran(outcome)
                    }
                } catch {
                    // A failed run may leave the zones it was purging refused to fetches until a
                    // run succeeds (SYNC.md §6.2 rule 3): the next comes soon, not an interval later.
                    wait = min(interval, Self.retryAfterFailure)
                    ServerMetrics.compactionFailures.increment()
                    logger.error("compaction failed: \(error); the next one tries again in \(wait)")
                }
            }
        }
    }

    /// How soon a compaction run follows one that failed.
    static let retryAfterFailure: Duration = .seconds(5)

    /// Turns other nodes' writes into this node's hints until the signals end or the task is
    /// cancelled (SYNC.md §11.4). A write to a list hints its owner and members, from memory; one
    /// to the service's own records (membership, announcements) is read at once, and what it
    /// changed is hinted to the accounts it concerns (`ServiceCore.catchUp`); a listener that
    /// begins again after a lost connection tells every device here to fetch, since changes may
    /// have gone unheard meanwhile.
    package func follow<Signals: AsyncSequence & Sendable>(_ signals: Signals) -> Task<Void, Never> where Signals.Element == NodeSignal {
        let core = backend.core
        return Task.detached { [backend, logger] in
            var first = true
            do {
                for try await signal in signals {
                    switch signal {
                    case .listening:
                        if !first { core.hints.remindAll() }
                        first = false
                    case .zone(let zone) where zone.hasPrefix("_"):
                        do { try await backend.run { () throws(SyncError) in try core.catchUp() } } catch {
                            // Read again at the next call that needs it; until then, every device
                            // here is told to fetch, so nothing waits for a hint that never came.
                            logger.warning("the service's records could not be read: \(error)")
                            core.hints.remindAll()
                        }
                    case .zone(let zone):
                        // A list: its audience from memory, no round trip (membership changes were
                        // signalled, and read, before the writes that follow them).
                        let audience = core.audience(of: zone)
                        if !audience.isEmpty { core.hints.changed(zone, for: audience) }
                    }
                }
            } catch {
                logger.warning("other nodes' signals ended: \(error)")
            }
        }
    }
}

/// A compaction run's report as `POST /compact` answers it.
struct CompactionJSON: Encodable {
    var zonesCompacted: Int
    var entriesPurged: Int
    var entriesReplaced: Int
    var devicesSentBack: Int
    /// Zones with nothing to compact, and why (`CompactionSkip`, as text).
    var skipped: [String: String]

    init(_ outcome: ServiceNode.CompactionOutcome) {
        zonesCompacted = outcome.report.zones.count
        entriesPurged = outcome.report.storage.entriesPurged
        entriesReplaced = outcome.report.storage.entriesReplaced
        devicesSentBack = outcome.devicesSentBack
        skipped = Dictionary(outcome.report.skipped.map { ($0.zone, "\($0.reason)") }, uniquingKeysWith: { a, _ in a })
    }
}

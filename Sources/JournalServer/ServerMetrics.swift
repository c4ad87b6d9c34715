import CoreMetrics
import JournalService
import JournalSync
import Prometheus

/// What `jlog serve` counts beyond Hummingbird's per-route requests and latencies (its
/// `MetricsMiddleware`), through swift-metrics: whatever backend the process bootstraps
/// (`jlog serve --metrics`: Prometheus) exports them; none, and they cost little. Each is made at
/// its use (the backend hands back the one it holds for the label): one made before the process
/// bootstraps its backend, and kept, would stay bound to none.
package enum ServerMetrics {
    /// Upload calls the service answered, and the entries they saved.
    static var uploads: CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_uploads_total") }
    static var entriesSaved: CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_entries_saved_total") }
    /// Reads, by what was read.
    static func fetches(_ kind: String) -> CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_fetches_total", dimensions: [("kind", kind)]) }
    /// Requests refused for the account's rate, and uploads refused for its quota.
    static var rateLimited: CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_rate_limited_total") }
    static var quotaRefused: CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_quota_refused_total") }
    /// Devices enrolled with an identity provider's token, and tokens refused there.
    static var enrolments: CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_enrolments_total") }
    static var enrolmentsRefused: CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_enrolments_refused_total") }
    /// Hint channels open now.
    static var hintChannels: CoreMetrics.Meter { CoreMetrics.Meter(label: "jlog_hint_channels") }
    /// Compaction runs, what they purged, and the devices they sent back to the snapshot.
    package static var compactionRuns: CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_compaction_runs_total") }
    package static var entriesPurged: CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_entries_purged_total") }
    package static var devicesSentBack: CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_devices_sent_back_total") }
    /// Compaction runs that failed (the storage did not answer, or is damaged): the next one tries again.
    package static var compactionFailures: CoreMetrics.Counter { CoreMetrics.Counter(label: "jlog_compaction_failures_total") }
}

/// A backend whose calls are counted (`ServerMetrics`): uploads and the entries they saved,
/// reads by kind, quota refusals. Everything else passes through.
package struct MeteredBackend: ServiceBackend {
    let inner: any ServiceBackend

    package init(_ inner: any ServiceBackend) { self.inner = inner }

    package var limits: ServiceLimits { inner.limits }
    package var hints: HintHub { inner.hints }
    package func unreadiness() async -> String? { await inner.unreadiness() }

    package func perform(_ caller: ServiceCaller, _ call: SyncCall) async throws(SyncError) -> SyncAnswer {
        let answer: SyncAnswer
        do { answer = try await inner.perform(caller, call) } catch {
            switch error {
            case .quotaExceeded: ServerMetrics.quotaRefused.increment()
            case .partialFailure(let r):
                ServerMetrics.uploads.increment()
                ServerMetrics.entriesSaved.increment(by: r.saved.count)
            default: break
            }
            throw error
        }
        switch answer {
        case .upload(let r):
            ServerMetrics.uploads.increment()
            ServerMetrics.entriesSaved.increment(by: r.saved.count)
        case .databaseChanges, .bothDatabases: ServerMetrics.fetches("database").increment()
        case .zoneChanges: ServerMetrics.fetches("zone").increment()
        case .snapshot: ServerMetrics.fetches("snapshot").increment()
        case .history: ServerMetrics.fetches("history").increment()
        case .historyPage: ServerMetrics.fetches("history_page").increment()
        default: break
        }
        return answer
    }
}

extension ServerMetrics {
    /// Makes Prometheus this process's swift-metrics backend (once, before any metric is made)
    /// and returns the registry `GET /metrics` reads.
    package static func bootstrapPrometheus() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        CoreMetrics.MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }
}

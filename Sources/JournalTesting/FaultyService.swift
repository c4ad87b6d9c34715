import Foundation
import JournalCodec
import JournalLog
import JournalSync

/// What a `FaultyService` does wrong, and how often (each a probability per call, 0 … 1).
package struct ServiceFaults: Sendable {
    /// The request is applied, then its answer is lost (`networkUnavailable`).
    package var dropResponse = 0.0
    /// The request is delivered twice (a retrying proxy); the second answer comes back.
    package var duplicate = 0.0
    /// An upload is held and delivered later, before some later request (`networkUnavailable` now).
    package var delay = 0.0
    /// Uploads of more than this many entries get `limitExceeded` (nil: none).
    package var limitEntries: Int? = nil
    /// `rateLimited` with a `retryAfter` of up to 2 s, or `serviceBusy` without one.
    package var rateLimit = 0.0
    package var busy = 0.0
    /// An upload entry is not taken this time (`partialFailure`, retryable).
    package var entryFailure = 0.0
    /// `quotaExceeded` on an upload.
    package var quota = 0.0

    package init() {}

    /// Every kind at once, at rates a simulation converges through.
    package static var all: ServiceFaults {
        var f = ServiceFaults()
        f.dropResponse = 0.05
        f.duplicate = 0.03
        f.delay = 0.03
        f.limitEntries = 12
        f.rateLimit = 0.03
        f.busy = 0.02
        f.entryFailure = 0.02
        f.quota = 0.01
        return f
    }
}

/// A service that misbehaves on purpose, deterministically from a seed (Spec/SYNC.md §8): what
/// a real network and a real service do to a client, so the engine's every error path runs.
/// `offline` is a partition: nothing is delivered while it holds.
package final class FaultyService: ForwardingSyncService, @unchecked Sendable {
    private let inner: any SyncService
    private let lock = NSLock()
    private var rng: SplitMix64
    private var faultsState: ServiceFaults
    private var offlineState = false
    /// Uploads held by `delay`, delivered before the next request that gets through.
    private var delayed: [(entries: [JournalEntry], zone: ZoneID)] = []
    package private(set) var injected = 0

    package init(_ inner: any SyncService, faults: ServiceFaults, seed: UInt64) {
        self.inner = inner
        faultsState = faults
        rng = SplitMix64(seed: seed)
    }

    package var account: String { inner.account }

    package var offline: Bool {
        get { lock.withLock { offlineState } }
        set { lock.withLock { offlineState = newValue } }
    }

    package var faults: ServiceFaults {
        get { lock.withLock { faultsState } }
        set { lock.withLock { faultsState = newValue } }
    }

    private func roll(_ p: Double) -> Bool {
        lock.withLock {
            guard p > 0 else { return false }
            let hit = Double(rng.next() % 1_000_000) / 1_000_000 < p
            if hit { injected += 1 }
            return hit
        }
    }

    private func random(_ n: UInt64) -> UInt64 { lock.withLock { rng.next() % max(1, n) } }

    /// Delivers what `delay` held, then decides this call's fate before it reaches the service.
    private func before() async throws(SyncError) {
        if offline { throw .networkUnavailable() }
        let held = lock.withLock { () -> [(entries: [JournalEntry], zone: ZoneID)] in
            defer { delayed = [] }
            return delayed
        }
        for (entries, zone) in held { _ = try? await inner.upload(entries, to: zone) }
        let f = faults
        if roll(f.rateLimit) { throw .rateLimited(retryAfter: .milliseconds(Int64(random(2_000)))) }
        if roll(f.busy) { throw .serviceBusy(retryAfter: nil) }
    }

    /// Runs `call`, perhaps twice, perhaps losing its answer.
    private func deliver<T>(_ call: () async throws(SyncError) -> T) async throws(SyncError) -> T {
        try await before()
        let f = faults
        if roll(f.duplicate) { _ = try? await call() }
        let result = try await call()
        if roll(f.dropResponse) { throw .networkUnavailable() }
        return result
    }

    /// Every call goes through the faults; an upload has a few of its own.
    package func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer {
        if case .upload(let entries, let zone, let since, let carrying) = call {
            return .upload(try await faultyUpload(entries, to: zone, since: since, carrying: carrying))
        }
        return try await deliver { () async throws(SyncError) -> SyncAnswer in try await inner.perform(call) }
    }

    /// An upload: perhaps refused for its size or the quota, held back and delivered later, or
    /// only partly taken.
    private func faultyUpload(_ entries: [JournalEntry], to zone: ZoneID, since: ServiceToken?, carrying: Int) async throws(SyncError) -> UploadResult {
        let f = faults
        if let limit = f.limitEntries, entries.count > limit, !offline { throw .limitExceeded }
        if !offline && roll(f.delay) {
            lock.withLock { delayed.append((entries, zone)) }
            throw .networkUnavailable()
        }
        if !offline && roll(f.quota) { throw .quotaExceeded }
        if !offline && entries.count > 1 && roll(f.entryFailure) {
            // Part of the request is not taken this time: the rest is delivered as usual.
            let cut = Int(random(UInt64(entries.count - 1))) + 1
            let (taken, refused) = (Array(entries[..<cut]), Array(entries[cut...]))
            var result = try await deliver { () async throws(SyncError) -> UploadResult in
                do throws(SyncError) { return try await inner.upload(taken, to: zone) } catch {
                    if case .partialFailure(let r) = error { return r }
                    throw error
                }
            }
            for e in refused { result.failed[e.id] = .retryable("injected: the zone was busy") }
            throw .partialFailure(result)
        }
        return try await deliver { () async throws(SyncError) -> UploadResult in try await inner.upload(entries, to: zone, since: since, carrying: carrying) }
    }
}

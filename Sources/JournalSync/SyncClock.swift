import Foundation

/// Time as a sync engine sees it: wall-clock milliseconds for the entries it writes, and waits
/// for backoff. The simulation swaps in virtual time, so a seeded run replays exactly and a
/// minute's backoff costs nothing.
public protocol SyncClock: Sendable {
    /// Milliseconds since the epoch.
    func now() -> Int64
    /// Waits `duration` (or returns early when the task is cancelled).
    func sleep(for duration: Duration) async
}

/// The real clock.
public struct SystemSyncClock: SyncClock {
    /// The system's wall clock and real sleeps.
    public init() {}
    public func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
    public func sleep(for duration: Duration) async { try? await Task.sleep(for: duration) }
}

/// Virtual time: `sleep` advances it at once. Shared by everything a simulation runs.
package final class VirtualClock: SyncClock, @unchecked Sendable {
    private let lock = NSLock()
    private var millis: Int64

    package init(startingAt millis: Int64) { self.millis = millis }

    package func now() -> Int64 { lock.withLock { millis } }

    package func advance(by ms: Int64) { lock.withLock { millis += max(0, ms) } }

    package func sleep(for duration: Duration) async {
        let (s, atto) = duration.components
        advance(by: s * 1000 + atto / 1_000_000_000_000_000)
    }
}

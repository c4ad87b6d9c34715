import Foundation

/// A token bucket per account (Spec/SYNC.md §9.4): `rate` requests a second on average, bursts
/// of up to `burst`. An account over it is told when to come back (429, Retry-After), and its
/// devices wait that long; other accounts are not slowed. Memory is bounded: past `maxKeys`
/// accounts the table starts over (every account gets a full bucket, which only forgives).
final class RateLimiter: @unchecked Sendable {
    private let rate: Double
    private let burst: Double
    private let maxKeys = 100_000
    private let lock = NSLock()
    private var buckets: [String: (tokens: Double, at: Double)] = [:]

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = max(1, burst)
    }

    /// Nil when `key` may go on now; otherwise the seconds until it may.
    func admit(_ key: String, now: Double = Date().timeIntervalSinceReferenceDate) -> Int? {
        guard rate > 0 else { return nil }
        return lock.withLock {
            if buckets.count >= maxKeys && buckets[key] == nil { buckets = [:] }
            var b = buckets[key] ?? (burst, now)
            b.tokens = min(burst, b.tokens + (now - b.at) * rate)
            b.at = now
            defer { buckets[key] = b }
            if b.tokens >= 1 {
                b.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - b.tokens) / rate).rounded(.up)))
        }
    }
}

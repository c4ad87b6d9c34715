import Foundation
import JournalLog

/// Reads a zone's change-feed pages in order, after a token. With `readAhead`, on another thread,
/// at most `depth` pages ahead of its consumer: decoding a page costs about twice what applying it
/// to a reducer does, so on two cores a long replay overlaps the two instead of doing one after
/// the other. Without it, each page is read when asked for.
///
/// The consumer takes pages with `next()` and must call `stop()` before it returns (it waits for
/// the thread to finish, so no read of the store outlives the replay).
final class PageReader: @unchecked Sendable {
    private let cond = NSCondition()
    /// Pages read and not yet taken, oldest first; a failure ends the sequence.
    private var ready: [Result<ZoneChanges, FeedError>] = []
    private var reading = true
    private var stopping = false
    private let depth: Int
    /// Without read-ahead, `next()` reads each page itself: from this store (nil with read-ahead),
    /// after `token` (nil once the last page was read).
    private let store: (any StoreReading)?
    private let zone: String
    private let pageSize: Int
    private var token: FeedToken?

    /// Starts reading the pages after `token` (on another thread with `readAhead`).
    init(store: any StoreReading, zone: String, after token: FeedToken, pageSize: Int, readAhead: Bool = true, depth: Int = 2) {
        precondition(depth >= 1 && pageSize >= 1)
        self.depth = depth
        self.zone = zone
        self.pageSize = pageSize
        guard readAhead else {
            self.store = store
            self.token = token
            return
        }
        self.store = nil
        let thread = Thread { [self] in read(store, zone, token, pageSize) }
        thread.name = "jlog-page-reader"
        thread.start()
    }

    /// Whether a replay of more than one page is worth a thread: only with a core to spare.
    static var worthwhile: Bool { ProcessInfo.processInfo.activeProcessorCount > 1 }

    private func read(_ store: any StoreReading, _ zone: String, _ first: FeedToken, _ pageSize: Int) {
        var token = first
        while true {
            cond.lock()
            while ready.count >= depth && !stopping { cond.wait() }
            if stopping {
                finishLocked()
                return
            }
            cond.unlock()
            let page: Result<ZoneChanges, FeedError>
            do { page = .success(try store.changes(in: zone, since: token, limit: pageSize)) } catch { page = .failure(error) }
            cond.lock()
            ready.append(page)
            guard case .success(let p) = page, p.moreComing else {
                finishLocked()
                return
            }
            token = p.token
            cond.broadcast()
            cond.unlock()
        }
    }

    private func finishLocked() {
        reading = false
        cond.broadcast()
        cond.unlock()
    }

    /// The next page in order; nil after the last one.
    func next() throws(FeedError) -> ZoneChanges? {
        if let store {
            guard let t = token else { return nil }
            token = nil
            let page = try store.changes(in: zone, since: t, limit: pageSize)
            if page.moreComing { token = page.token }
            return page
        }
        cond.lock()
        while ready.isEmpty && reading { cond.wait() }
        guard !ready.isEmpty else {
            cond.unlock()
            return nil
        }
        let page = ready.removeFirst()
        cond.broadcast()
        cond.unlock()
        return try page.get()
    }

    /// Stops reading and waits for the thread to finish. Idempotent.
    func stop() {
        if store != nil {
            token = nil
            return
        }
        cond.lock()
        stopping = true
        cond.broadcast()
        while reading { cond.wait() }
        ready = []
        cond.unlock()
    }
}

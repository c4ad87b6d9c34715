import Foundation
import JournalLog

/// Reads a zone's change-feed pages on another thread, at most `depth` pages ahead of its
/// consumer. Decoding a page costs about twice what applying it to a reducer does, so on two cores
/// a long replay overlaps the two instead of doing one after the other.
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

    /// Starts reading the pages after `token`.
    init(store: JournalStore, zone: String, after token: FeedToken, pageSize: Int, depth: Int = 2) {
        precondition(depth >= 1 && pageSize >= 1)
        self.depth = depth
        let thread = Thread { [self] in read(store, zone, token, pageSize) }
        thread.name = "jlog-page-reader"
        thread.start()
    }

    /// Whether a replay of more than one page is worth a thread: only with a core to spare.
    static var worthwhile: Bool { ProcessInfo.processInfo.activeProcessorCount > 1 }

    private func read(_ store: JournalStore, _ zone: String, _ first: FeedToken, _ pageSize: Int) {
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
        cond.lock()
        stopping = true
        cond.broadcast()
        while reading { cond.wait() }
        ready = []
        cond.unlock()
    }
}

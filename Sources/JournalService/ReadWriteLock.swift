import Foundation

/// Many readers or one writer; a waiting writer goes before readers that arrive after it, so a
/// steady stream of readers (uploads) cannot hold a writer (compaction) off for ever.
final class ReadWriteLock: @unchecked Sendable {
    private let cond = NSCondition()
    private var readers = 0
    private var writing = false
    private var writersWaiting = 0

    func reading<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        cond.lock()
        while writing || writersWaiting > 0 { cond.wait() }
        readers += 1
        cond.unlock()
        defer {
            cond.lock()
            readers -= 1
            if readers == 0 { cond.broadcast() }
            cond.unlock()
        }
        return try body()
    }

    func writing<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        cond.lock()
        writersWaiting += 1
        while writing || readers > 0 { cond.wait() }
        writersWaiting -= 1
        writing = true
        cond.unlock()
        defer {
            cond.lock()
            writing = false
            cond.broadcast()
            cond.unlock()
        }
        return try body()
    }
}

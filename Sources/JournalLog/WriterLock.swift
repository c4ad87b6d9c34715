import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's single-writer lock (FORMAT.md §10): an exclusive `flock` on the store directory
/// itself. A lock on a file inside it would be lost the moment someone unlinked that file and a
/// second writer created a new one; a directory cannot be replaced under an open store. The lock
/// belongs to the process: a holder that dies releases it.
///
/// `LOCK` only names the holder, so that a second writer's error can say who it waits for;
/// removing it releases nothing.
struct WriterLock {
    let lock: any FileLock

    /// Takes the lock, waiting up to `wait` for a holder to let go; throws `.locked` naming the
    /// holder when it does not.
    static func acquire(store: String, fs: any FileSystem, wait: Duration) throws(JournalError) -> WriterLock {
        let deadline = ContinuousClock.now + wait
        var pause = Duration.milliseconds(1)
        while true {
            do {
                let lock = try fs.lockDirectory(store)
                writeHolder(store: store, fs: fs)
                return WriterLock(lock: lock)
            } catch {
                guard case .locked = error else { throw error }
                let now = ContinuousClock.now
                guard now < deadline else { throw JournalError.locked(path: store, holder: holder(store: store, fs: fs)) }
                let nap = min(pause, deadline - now)
                Thread.sleep(forTimeInterval: Double(nap.components.seconds) + Double(nap.components.attoseconds) / 1e18)
                pause = min(pause * 2, .milliseconds(50))
            }
        }
    }

    func release() { lock.unlock() }

    /// Who holds the lock: process id, program and since when. Informational only.
    static func describeThisProcess() -> String {
        let info = ProcessInfo.processInfo
        let program = info.arguments.first.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? info.processName
        let command = ([program] + info.arguments.dropFirst().prefix(3)).joined(separator: " ")
        return "pid \(getpid()) (\(command)) since \(ISO8601Time.format(Int64(Date().timeIntervalSince1970 * 1000)))"
    }

    private static func writeHolder(store: String, fs: any FileSystem) {
        let text = describeThisProcess() + "\nThis file only names the writer; the lock is on the store directory, and removing this file releases nothing.\n"
        guard let file = try? fs.openFile(store + "/" + StoreLayout.lockFile, create: true, truncate: true) else { return }
        defer { file.close() }
        try? file.write(Array(text.utf8), at: 0)
    }

    private static func holder(store: String, fs: any FileSystem) -> String? {
        guard let bytes = try? AtomicFile.read(store + "/" + StoreLayout.lockFile, fs: fs, limit: 4_096),
              let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first, !line.isEmpty else { return nil }
        return String(line)
    }
}

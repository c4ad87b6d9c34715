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
    /// Names this holding in `LOCK`, so a reader in this process can tell a live writer from
    /// one that closed (another process's liveness is its process id's).
    let nonce: UInt64
    let store: String
    let fs: any FileSystem

    private static let registry = NSLock()
    nonisolated(unsafe) private static var liveNonces: Set<UInt64> = []

    /// Takes the lock, waiting up to `wait` for a holder to let go; throws `.locked` naming the
    /// holder when it does not.
    static func acquire(store: String, fs: any FileSystem, wait: Duration) throws(JournalError) -> WriterLock {
        let deadline = ContinuousClock.now + wait
        var pause = Duration.milliseconds(1)
        while true {
            do {
                let lock = try fs.lockDirectory(store)
                let nonce = UInt64.random(in: 1 ... .max)
                registry.lock()
                liveNonces.insert(nonce)
                registry.unlock()
                writeHolder(store: store, fs: fs, nonce: nonce)
                return WriterLock(lock: lock, nonce: nonce, store: store, fs: fs)
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

    func release() {
        // Still holding the lock: no other writer's name can be overwritten.
        if let file = try? fs.openFile(store + "/" + StoreLayout.lockFile, create: false, truncate: true) {
            try? file.write(Array("released: no writer holds this store\n".utf8), at: 0)
            file.close()
        }
        WriterLock.registry.lock()
        WriterLock.liveNonces.remove(nonce)
        WriterLock.registry.unlock()
        lock.unlock()
    }

    /// Whether a writer may be appending to the store now, judged without touching its lock:
    /// `LOCK` names a process that is alive (in this process: a holding not yet released). A
    /// reader that finds damage at the end of the log waits for such a writer to finish the
    /// frame before it calls the damage real. A store without `LOCK` has no writer: every writer
    /// writes it at open, before it appends anything (FORMAT.md §2), so a store an independent
    /// writer left, or a copy, is judged by its bytes at once. Otherwise errs towards "maybe".
    static func writerMayBeLive(store: String, fs: any FileSystem) -> Bool {
        let path = store + "/" + StoreLayout.lockFile
        if fs.kind(of: path) == .missing { return false }
        guard let bytes = try? AtomicFile.read(path, fs: fs, limit: 4_096) else { return true }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix("pid "), let pid = Int32(text.dropFirst(4).prefix { $0.isNumber }) else { return !text.hasPrefix("released") }
        if pid == getpid() {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("nonce ") }), let nonce = UInt64(line.dropFirst(6)) else { return true }
            registry.lock()
            defer { registry.unlock() }
            return liveNonces.contains(nonce)
        }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    /// Who holds the lock: process id, program and since when. Informational only.
    static func describeThisProcess() -> String {
        let info = ProcessInfo.processInfo
        let program = info.arguments.first.map { String($0.split(separator: "/").last ?? Substring($0)) } ?? info.processName
        let command = ([program] + info.arguments.dropFirst().prefix(3)).joined(separator: " ")
        return "pid \(getpid()) (\(command)) since \(ISO8601Time.format(Int64(Date().timeIntervalSince1970 * 1000)))"
    }

    private static func writeHolder(store: String, fs: any FileSystem, nonce: UInt64) {
        let text = describeThisProcess() + "\nnonce \(nonce)\nThis file only names the writer; the lock is on the store directory, and removing this file releases nothing.\n"
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

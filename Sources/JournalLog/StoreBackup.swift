import Foundation

/// What a backup copied.
package struct BackupReport: Sendable {
    package var segments = 0
    /// The copy holds the log through this sequence.
    package var lastSequence: SequenceNumber = 0
    /// Snapshot, history, consumer, key and epoch files copied.
    package var files = 0
    package var bytes: Int64 = 0
    /// Tries it took: a copy that overlapped a compaction or a snapshot is taken again.
    package var attempts = 0
}

/// A physical copy of a store that restores to exactly the same store: the log (compacted
/// segments, `place` entries, zone records and low-water marks as they are), the snapshot and
/// history files (the only copy of purged events), the consumers and the token key. It reads as a
/// `StoreReader` does, without the writer's lock, so it copies a live store: one consistent set
/// of segments, cut at the last whole frame, with the files beside it from the same moment (a
/// copy that a compaction, a snapshot or a consumer change overlapped is taken again).
///
/// `jlog dump --json | jlog import` copies the entries an application wrote, not a store: it
/// cannot carry `place` entries (only the compactor writes them), deletions, marks, histories or
/// consumers. This is the backup.
package enum StoreBackup {
    /// Files beside the log that a backup carries (the index is a cache, `torn/` forensics, `LOCK`
    /// a name): relative paths.
    static func sideFiles(_ store: String, fs: any FileSystem) throws(JournalError) -> [String: FileIdentity?] {
        var out: [String: FileIdentity?] = [:]
        for name in [StoreLayout.keyFile, StoreEpochs.fileName] where fs.kind(of: store + "/" + name) == .file {
            out[name] = fs.identity(of: store + "/" + name)
        }
        for dir in try carriedDirectories(store, fs: fs) {
            for name in try fs.listDirectory(store + "/" + dir) where !name.hasSuffix(".tmp") {
                let rel = dir + "/" + name
                if fs.kind(of: store + "/" + rel) == .file { out[rel] = fs.identity(of: store + "/" + rel) }
            }
        }
        return out
    }

    /// The store's directories a backup carries, one level deep: snapshots and histories,
    /// consumers, and any other an application keeps in the store (a sync server's accounts and
    /// keys under `service/`); never `torn/` (forensics of this store, not part of it).
    static func carriedDirectories(_ store: String, fs: any FileSystem) throws(JournalError) -> [String] {
        try fs.listDirectory(store).filter {
            $0 != StoreLayout.tornDirectory && !$0.hasPrefix(".") && fs.kind(of: store + "/" + $0) == .directory
        }.sorted()
    }

    /// Copies the store at `source` to `destination`, which must not exist yet. The copy is made
    /// under `destination.partial` and renamed into place once whole and synced.
    @discardableResult
    package static func copy(from source: String, to destination: String, fs: any FileSystem = PosixFileSystem(),
                            attempts: Int = 20) throws(JournalError) -> BackupReport {
        guard fs.kind(of: source) == .directory else {
            throw fs.kind(of: source) == .missing ? JournalError.storeMissing(path: source)
                : JournalError.notAStore(path: source, reason: "it is not a store directory")
        }
        guard fs.kind(of: destination) == .missing else {
            throw JournalError.notAStore(path: destination, reason: "it already exists; a backup or restore goes to a new path")
        }
        let partial = destination + ".partial"
        var report = BackupReport()
        for attempt in 1...max(1, attempts) {
            report = BackupReport()
            report.attempts = attempt
            try removeTree(partial, fs: fs)
            try fs.createDirectory(partial)
            let before = try sideFiles(source, fs: fs)
            for rel in before.keys.sorted() {
                let parent = parentDirectory(partial + "/" + rel)
                if fs.kind(of: parent) == .missing { try fs.createDirectory(parent) }
                let bytes: [UInt8]
                do { bytes = try AtomicFile.read(source + "/" + rel, fs: fs, limit: 256 << 20) } catch {
                    // Removed meanwhile (a superseded snapshot): take the copy again.
                    if case .io(_, _, let e) = error, e == ENOENT { continue }
                    throw error
                }
                try writeSynced(bytes, to: partial + "/" + rel, fs: fs)
                report.files += 1
                report.bytes += Int64(bytes.count)
            }
            let set = try SegmentSet.open(store: source, fs: fs)
            var scanner = StoreScanner(fs: fs, mode: .tolerateTail)
            do {
                try scanner.scan(files: set.segments.map { StoreScanner.ScanInput(name: $0.name, file: $0.file) }, liveTail: true) { _ in }
            } catch { throw JournalError.wrap(error) }
            for (segment, summary) in zip(set.segments, scanner.summaries) where summary.header != nil {
                let out = try fs.openFile(partial + "/" + segment.name, create: true, truncate: true)
                do throws(JournalError) {
                    try copyRange(from: segment.file, to: out, count: summary.validEnd)
                    try out.sync()
                    out.close()
                } catch {
                    out.close()
                    throw error
                }
                report.segments += 1
                report.bytes += summary.validEnd
                report.lastSequence = summary.lastSequence
            }
            let lastBase = Array(zip(set.segments, scanner.summaries)).last { $0.1.header != nil }?.0.base ?? 0
            // A roll rewrites EPOCHS, and the copy's is rewritten below anyway: only snapshots,
            // histories and consumers must be from the same moment as the log.
            let after = try sideFiles(source, fs: fs)
            func moment(_ files: [String: FileIdentity?]) -> [String: FileIdentity?] { files.filter { $0.key != StoreEpochs.fileName } }
            guard moment(after) == moment(before), try set.isCurrent(fs: fs) else { continue }
            // The copy is a closed store: everything in it was acknowledged, and a writer of it
            // appends to its last segment.
            if case .record(var r) = StoreEpochs.load(store: partial, fs: fs) {
                r.acknowledgedThrough = report.lastSequence
                r.activeSegment = lastBase
                r.closedCleanly = true
                try StoreEpochs.write(r, store: partial, fs: fs)
            }
            for dir in try carriedDirectories(partial, fs: fs) { try fs.syncDirectory(partial + "/" + dir) }
            try fs.syncDirectory(partial)
            try fs.rename(partial, destination)
            try fs.syncDirectory(parentDirectory(destination))
            return report
        }
        try removeTree(partial, fs: fs)
        throw JournalError.io(operation: "back up (a compaction or snapshot changed the store under every one of \(attempts) tries; try again when it is quieter)",
                              path: source, errno: EAGAIN)
    }

    /// Restores a backup (or any closed store) to a new path, then opens it once as its writer,
    /// which begins a new token epoch (TOKENS.md §7): tokens issued by the store after the backup
    /// was taken are refused, never answered from the older log.
    package static func restore(from backup: String, to store: String, fs: any FileSystem = PosixFileSystem()) throws(JournalError) -> (BackupReport, RecoveryReport) {
        let copied = try copy(from: backup, to: store, fs: fs)
        var options = StoreOptions()
        options.fileSystem = fs
        options.createIfMissing = false
        let s = try JournalStore.open(store, options: options)
        let recovery = s.recovery
        try s.close()
        return (copied, recovery)
    }

    private static func writeSynced(_ bytes: [UInt8], to path: String, fs: any FileSystem) throws(JournalError) {
        let f = try fs.openFile(path, create: true, truncate: true)
        do throws(JournalError) {
            try f.write(bytes, at: 0)
            try f.sync()
            f.close()
        } catch {
            f.close()
            throw error
        }
    }

    private static func copyRange(from src: any StorageFile, to dst: any StorageFile, count: Int64) throws(JournalError) {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { chunk.deallocate() }
        var at: Int64 = 0
        while at < count {
            let n = Int(min(Int64(chunk.count), count - at))
            let got = try src.read(into: UnsafeMutableRawBufferPointer(rebasing: chunk[0..<n]), at: at)
            guard got == n else { throw JournalError.io(operation: "read (file shrank)", path: "", errno: EIO) }
            try dst.write(UnsafeRawBufferPointer(rebasing: chunk[0..<n]), at: at)
            at += Int64(n)
        }
    }

    /// Removes a directory tree a failed attempt left (never anything else: only `.partial`).
    private static func removeTree(_ path: String, fs: any FileSystem) throws(JournalError) {
        guard path.hasSuffix(".partial") else { return }
        switch fs.kind(of: path) {
        case .missing: return
        case .directory:
            for name in try fs.listDirectory(path) { try removeTree(path + "/" + name, fs: fs, inside: true) }
            try removeDirectory(path, fs: fs)
        default: try fs.remove(path)
        }
    }

    private static func removeTree(_ path: String, fs: any FileSystem, inside: Bool) throws(JournalError) {
        if fs.kind(of: path) == .directory {
            for name in try fs.listDirectory(path) { try removeTree(path + "/" + name, fs: fs, inside: true) }
            try removeDirectory(path, fs: fs)
        } else {
            try fs.remove(path)
        }
    }

    private static func removeDirectory(_ path: String, fs: any FileSystem) throws(JournalError) {
        try fs.removeDirectory(path)
    }
}

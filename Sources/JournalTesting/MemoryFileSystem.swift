import Foundation
import JournalLog

/// An in-memory disk for tests, fuzzers and simulations. It models the page cache: every
/// file keeps what was written and what was last synced, so `crash()` can drop unsynced data.
package final class MemoryFileSystem: FileSystem, @unchecked Sendable {
    final class Node: @unchecked Sendable {
        /// Its inode number: a name renamed over another gives readers holding it a new identity.
        let inode: UInt64 = MemoryFileSystem.nextInode()
        var data: [UInt8] = []
        var synced: [UInt8] = []
        /// Writes since the last sync, in order: what a crash may lose or tear.
        var unsynced: [(offset: Int, bytes: [UInt8])] = []
        init() {}
    }

    /// How a simulated power loss treats data written since the last sync.
    package enum CrashMode: Sendable {
        /// All of it is lost.
        case dropUnsynced
        /// A prefix of the unsynced writes survives, the last of them cut at a sector boundary.
        case tearLastWrite(seed: UInt64)
        /// Like `tearLastWrite`, but the sectors after the cut hold garbage instead of old bytes.
        case garbleLastWrite(seed: UInt64)
    }

    package static let sectorSize = 512

    /// Fails the `failOnCall`-th mutating call (write, sync, truncate, create, rename, remove,
    /// directory sync) with `failErrno`, and every later one while `failPersistently` holds
    /// (a full disk stays full until space returns).
    package struct FaultPlan: Sendable {
        package var failOnCall: Int?
        package var failErrno: Int32 = EIO
        package var failPersistently = false
        package init(failOnCall: Int? = nil, failErrno: Int32 = EIO, failPersistently: Bool = false) {
            self.failOnCall = failOnCall
            self.failErrno = failErrno
            self.failPersistently = failPersistently
        }
    }

    private static let inodes = NSLock()
    nonisolated(unsafe) private static var lastInode: UInt64 = 0
    static func nextInode() -> UInt64 {
        inodes.lock()
        defer { inodes.unlock() }
        lastInode += 1
        return lastInode
    }

    /// Files by path, indexed by directory: syncs, listings and crashes look at one directory,
    /// not at every file (a simulated service holds thousands).
    struct FileTable: Sequence {
        private(set) var byPath: [String: Node] = [:]
        private var byDirectory: [String: Set<String>] = [:]

        subscript(path: String) -> Node? {
            get { byPath[path] }
            set {
                if newValue == nil { removeValue(forKey: path); return }
                if byPath.updateValue(newValue!, forKey: path) == nil { byDirectory[parentDirectory(path), default: []].insert(path) }
            }
        }
        mutating func removeValue(forKey path: String) {
            guard byPath.removeValue(forKey: path) != nil else { return }
            let dir = parentDirectory(path)
            byDirectory[dir]?.remove(path)
            if byDirectory[dir]?.isEmpty == true { byDirectory[dir] = nil }
        }
        var keys: Dictionary<String, Node>.Keys { byPath.keys }
        /// The paths of the files directly in `dir`.
        func paths(in dir: String) -> Set<String> { byDirectory[dir] ?? [] }
        /// Whether any file lies under `dir`, at any depth.
        func hasFiles(under dir: String) -> Bool {
            let prefix = dir + "/"
            return byDirectory.contains { $0.key == dir || $0.key.hasPrefix(prefix) }
        }
        func makeIterator() -> Dictionary<String, Node>.Iterator { byPath.makeIterator() }
    }

    private let mutex = NSLock()
    private var files = FileTable()
    private var directories: Set<String> = ["/"]
    /// Names each directory holds durably (as of its last sync) and now.
    private var durableEntries: [String: [String: Node]] = [:]
    private var locks: Set<String> = []
    private var plan = FaultPlan()
    /// Mutating calls made so far; faults are planned against this count.
    package private(set) var mutatingCalls = 0
    package private(set) var faultsInjected = 0

    package init() {}

    package func setFaults(_ plan: FaultPlan) {
        mutex.lock()
        defer { mutex.unlock() }
        self.plan = plan
        mutatingCalls = 0
    }

    /// Counts a mutating call and throws when the plan says this one fails. Caller holds the mutex.
    fileprivate func mutation(_ op: String, _ path: String) throws(JournalError) {
        mutatingCalls += 1
        if let n = plan.failOnCall, mutatingCalls == n || (plan.failPersistently && mutatingCalls > n) {
            faultsInjected += 1
            throw JournalError.io(operation: op, path: path, errno: plan.failErrno)
        }
    }

    private func withLock<T>(_ body: () throws(JournalError) -> T) throws(JournalError) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return try body()
    }

    /// Adds a file with these bytes, as if written and synced.
    package func install(_ path: String, bytes: [UInt8]) {
        mutex.lock()
        defer { mutex.unlock() }
        let n = Node()
        n.data = bytes
        n.synced = bytes
        files[path] = n
        directories.insert(parentDirectory(path))
    }

    /// Every file's path and bytes (a scan of all a store wrote, as a test reads a service's disk).
    package func everyFile() -> [(path: String, bytes: [UInt8])] {
        mutex.lock()
        defer { mutex.unlock() }
        return files.map { (path: $0.key, bytes: $0.value.data) }.sorted { $0.path < $1.path }
    }

    package func contents(_ path: String) -> [UInt8]? {
        mutex.lock()
        defer { mutex.unlock() }
        return files[path]?.data
    }

    /// Simulates power loss: unsynced data is lost or torn (per `mode`), and so are creates,
    /// renames and removes in directories not synced since. Locks are released.
    package func crash(_ mode: CrashMode = .dropUnsynced) {
        mutex.lock()
        defer { mutex.unlock() }
        var rng: SplitMix64
        switch mode {
        case .dropUnsynced: rng = SplitMix64(seed: 0)
        case .tearLastWrite(let seed), .garbleLastWrite(let seed): rng = SplitMix64(seed: seed)
        }
        var seen = Set<ObjectIdentifier>()
        for (_, n) in files.sorted(by: { $0.key < $1.key }) where seen.insert(ObjectIdentifier(n)).inserted {
            var data = n.synced
            if case .dropUnsynced = mode {} else if !n.unsynced.isEmpty {
                let keep = Int(rng.next() % UInt64(n.unsynced.count + 1))
                for (i, w) in n.unsynced.enumerated() where i <= keep && i < n.unsynced.count {
                    var bytes = w.bytes
                    if i == keep {
                        let sectors = (w.bytes.count + MemoryFileSystem.sectorSize - 1) / MemoryFileSystem.sectorSize
                        let cut = Int(rng.next() % UInt64(sectors + 1)) * MemoryFileSystem.sectorSize
                        if case .garbleLastWrite = mode {
                            for j in min(cut, bytes.count)..<bytes.count { bytes[j] = UInt8(truncatingIfNeeded: rng.next()) }
                        } else {
                            bytes = Array(bytes.prefix(cut))
                        }
                    }
                    if data.count < w.offset + bytes.count { data += repeatElement(0, count: w.offset + bytes.count - data.count) }
                    data.replaceSubrange(w.offset..<w.offset + bytes.count, with: bytes)
                }
            }
            n.data = data
            n.synced = data
            n.unsynced = []
        }
        for dir in directories {
            let entries = durableEntries[dir] ?? [:]
            for path in files.paths(in: dir) where entries[path] == nil { files[path] = nil }
            for (path, node) in entries { files[path] = node }
        }
        locks.removeAll()
    }

    /// Called with the path before every `openFile`, outside the file system's lock: lets a test
    /// act at an exact moment of a run (an append while a compaction opens its `.cleaned` files).
    package var openHook: (@Sendable (String) -> Void)? {
        get { mutex.lock(); defer { mutex.unlock() }; return hook }
        set { mutex.lock(); defer { mutex.unlock() }; hook = newValue }
    }
    private var hook: (@Sendable (String) -> Void)?

    /// Called with the path before every file's `sync`, outside the file system's lock: a test
    /// holds a sync here to show what waits for it (a slow disk's fdatasync).
    package var syncHook: (@Sendable (String) -> Void)? {
        get { mutex.lock(); defer { mutex.unlock() }; return onSync }
        set { mutex.lock(); defer { mutex.unlock() }; onSync = newValue }
    }
    private var onSync: (@Sendable (String) -> Void)?

    package func openFile(_ path: String, create: Bool, truncate: Bool) throws(JournalError) -> any StorageFile {
        openHook?(path)
        return try withLock { () throws(JournalError) -> any StorageFile in
            if let n = files[path] {
                if truncate { n.data = [] }
                return MemoryFile(fs: self, node: n, path: path)
            }
            guard create else { throw JournalError.io(operation: "open", path: path, errno: ENOENT) }
            try mutation("open", path)
            guard directories.contains(parentDirectory(path)) else { throw JournalError.io(operation: "open", path: path, errno: ENOENT) }
            let n = Node()
            files[path] = n
            return MemoryFile(fs: self, node: n, path: path)
        }
    }

    package func openForReading(_ path: String) throws(JournalError) -> any StorageFile {
        openHook?(path)
        return try withLock { () throws(JournalError) -> any StorageFile in
            guard let n = files[path] else { throw JournalError.io(operation: "open", path: path, errno: ENOENT) }
            return MemoryFile(fs: self, node: n, path: path)
        }
    }

    package func identity(of path: String) -> FileIdentity? {
        mutex.lock()
        defer { mutex.unlock() }
        return files[path].map { FileIdentity(device: 0, inode: $0.inode) }
    }

    package func listDirectory(_ path: String) throws(JournalError) -> [String] {
        try withLock { () throws(JournalError) -> [String] in
            guard directories.contains(path) else { throw JournalError.io(operation: "opendir", path: path, errno: ENOENT) }
            let prefix = path.hasSuffix("/") ? path : path + "/"
            var names = Set<String>()
            let depth = prefix.utf8.count
            let dir = prefix == "/" ? "/" : String(prefix.dropLast())
            for p in files.paths(in: dir) { names.insert(String(Substring(p.utf8.dropFirst(depth)))) }
            for d in directories where d.hasPrefix(prefix) && d != path {
                names.insert(String(d.dropFirst(prefix.count).split(separator: "/").first!))
            }
            return names.sorted()
        }
    }

    package func createDirectory(_ path: String) throws(JournalError) {
        try withLock { () throws(JournalError) in
            if directories.contains(path) { return }
            try mutation("mkdir", path)
            directories.insert(path)
        }
    }

    package func rename(_ from: String, _ to: String) throws(JournalError) {
        try withLock { () throws(JournalError) in
            if directories.contains(from) {
                // A directory moves with everything in it (durably once its new parent is synced).
                try mutation("rename", from)
                let prefix = from + "/"
                for (p, n) in files where p.hasPrefix(prefix) {
                    files[p] = nil
                    files[to + "/" + p.dropFirst(prefix.count)] = n
                }
                for d in directories where d == from || d.hasPrefix(prefix) {
                    directories.remove(d)
                    directories.insert(to + d.dropFirst(from.count))
                }
                for (d, entries) in durableEntries where d == from || d.hasPrefix(prefix) {
                    durableEntries[d] = nil
                    var moved: [String: Node] = [:]
                    for (p, n) in entries { moved[to + p.dropFirst(from.count)] = n }
                    durableEntries[to + d.dropFirst(from.count)] = moved
                }
                return
            }
            guard let n = files[from] else { throw JournalError.io(operation: "rename", path: from, errno: ENOENT) }
            try mutation("rename", from)
            files[from] = nil
            files[to] = n
        }
    }

    package func removeDirectory(_ path: String) throws(JournalError) {
        try withLock { () throws(JournalError) in
            guard directories.contains(path) else { return }
            let prefix = path + "/"
            guard !files.hasFiles(under: path), !directories.contains(where: { $0.hasPrefix(prefix) }) else {
                throw JournalError.io(operation: "rmdir", path: path, errno: ENOTEMPTY)
            }
            try mutation("rmdir", path)
            directories.remove(path)
            durableEntries[path] = nil
        }
    }

    package func remove(_ path: String) throws(JournalError) {
        try withLock { () throws(JournalError) in
            try mutation("unlink", path)
            files.removeValue(forKey: path)
        }
    }

    package func syncDirectory(_ path: String) throws(JournalError) {
        try withLock { () throws(JournalError) in
            try mutation("fsync directory", path)
            var entries: [String: Node] = [:]
            for p in files.paths(in: path) { entries[p] = files[p] }
            durableEntries[path] = entries
        }
    }

    package func kind(of path: String) -> FileKind {
        mutex.lock()
        defer { mutex.unlock() }
        if directories.contains(path) { return .directory }
        return files[path] == nil ? .missing : .file
    }

    package func lockDirectory(_ path: String) throws(JournalError) -> any FileLock {
        try withLock { () throws(JournalError) -> any FileLock in
            guard directories.contains(path) else { throw JournalError.io(operation: "open store directory", path: path, errno: ENOENT) }
            guard !locks.contains(path) else { throw JournalError.locked(path: path, holder: nil) }
            locks.insert(path)
            return MemoryLock(fs: self, path: path)
        }
    }

    fileprivate func release(_ path: String) {
        mutex.lock()
        defer { mutex.unlock() }
        locks.remove(path)
    }

    fileprivate func locked<T>(_ body: () throws(JournalError) -> T) throws(JournalError) -> T { try withLock(body) }
}

private final class MemoryLock: FileLock, @unchecked Sendable {
    weak var fs: MemoryFileSystem?
    let path: String
    var held = true
    init(fs: MemoryFileSystem, path: String) {
        self.fs = fs
        self.path = path
    }
    func unlock() {
        if held { fs?.release(path) }
        held = false
    }
}

private final class MemoryFile: StorageFile, @unchecked Sendable {
    let fs: MemoryFileSystem
    let node: MemoryFileSystem.Node
    let path: String
    init(fs: MemoryFileSystem, node: MemoryFileSystem.Node, path: String) {
        self.fs = fs
        self.node = node
        self.path = path
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(JournalError) -> Int {
        try fs.locked { () throws(JournalError) -> Int in
            let start = Int(offset)
            guard start < node.data.count, !buffer.isEmpty else { return 0 }
            let n = min(buffer.count, node.data.count - start)
            node.data.withUnsafeBytes { src in
                buffer.baseAddress!.copyMemory(from: src.baseAddress! + start, byteCount: n)
            }
            return n
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(JournalError) {
        guard !bytes.isEmpty else { return }
        try fs.locked { () throws(JournalError) in
            try fs.mutation("write", path)
            let start = Int(offset)
            node.unsynced.append((start, [UInt8](bytes)))
            if node.data.count < start + bytes.count {
                node.data.append(contentsOf: repeatElement(0, count: start + bytes.count - node.data.count))
            }
            node.data.withUnsafeMutableBytes { dst in
                (dst.baseAddress! + start).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            }
        }
    }

    func sync() throws(JournalError) {
        fs.syncHook?(path)
        try fs.locked { () throws(JournalError) in
            try fs.mutation("fdatasync", path)
            node.synced = node.data
            node.unsynced = []
        }
    }

    func truncate(to size: Int64) throws(JournalError) {
        try fs.locked { () throws(JournalError) in
            try fs.mutation("ftruncate", path)
            let s = Int(size)
            if node.data.count > s { node.data.removeSubrange(s...) } else {
                node.data.append(contentsOf: repeatElement(0, count: s - node.data.count))
            }
            node.synced = node.data
            node.unsynced = []
        }
    }

    func size() throws(JournalError) -> Int64 {
        try fs.locked { () throws(JournalError) -> Int64 in Int64(node.data.count) }
    }

    func identity() throws(JournalError) -> FileIdentity { FileIdentity(device: 0, inode: node.inode) }

    func close() {}
}


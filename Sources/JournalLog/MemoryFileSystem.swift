import Foundation

/// An in-memory disk for tests, fuzzers and simulations. It models the page cache: every
/// file keeps what was written and what was last synced, so `crash()` can drop unsynced data.
public final class MemoryFileSystem: FileSystem, @unchecked Sendable {
    final class Node: @unchecked Sendable {
        var data: [UInt8] = []
        var synced: [UInt8] = []
        init() {}
    }

    private let mutex = NSLock()
    private var files: [String: Node] = [:]
    private var directories: Set<String> = ["/"]
    /// Names each directory holds durably (as of its last sync) and now.
    private var durableEntries: [String: [String: Node]] = [:]
    private var locks: Set<String> = []

    public init() {}

    private func withLock<T>(_ body: () throws(JournalError) -> T) throws(JournalError) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return try body()
    }

    /// Adds a file with these bytes, as if written and synced.
    public func install(_ path: String, bytes: [UInt8]) {
        mutex.lock()
        defer { mutex.unlock() }
        let n = Node()
        n.data = bytes
        n.synced = bytes
        files[path] = n
        directories.insert(parentDirectory(path))
    }

    public func contents(_ path: String) -> [UInt8]? {
        mutex.lock()
        defer { mutex.unlock() }
        return files[path]?.data
    }

    /// Simulates power loss: unsynced data is gone, and so are creates, renames and removes
    /// in directories not synced since.
    public func crash() {
        mutex.lock()
        defer { mutex.unlock() }
        for (dir, entries) in durableEntries {
            for path in files.keys where parentDirectory(path) == dir && entries[path] == nil { files[path] = nil }
            for (path, node) in entries { files[path] = node }
        }
        for n in files.values { n.data = n.synced }
        locks.removeAll()
    }

    public func openFile(_ path: String, create: Bool, truncate: Bool) throws(JournalError) -> any StorageFile {
        try withLock { () throws(JournalError) -> any StorageFile in
            if let n = files[path] {
                if truncate { n.data = [] }
                return MemoryFile(fs: self, node: n, path: path)
            }
            guard create else { throw JournalError.io(operation: "open", path: path, errno: ENOENT) }
            guard directories.contains(parentDirectory(path)) else { throw JournalError.io(operation: "open", path: path, errno: ENOENT) }
            let n = Node()
            files[path] = n
            return MemoryFile(fs: self, node: n, path: path)
        }
    }

    public func listDirectory(_ path: String) throws(JournalError) -> [String] {
        try withLock { () throws(JournalError) -> [String] in
            guard directories.contains(path) else { throw JournalError.io(operation: "opendir", path: path, errno: ENOENT) }
            let prefix = path.hasSuffix("/") ? path : path + "/"
            var names = Set<String>()
            for p in files.keys where p.hasPrefix(prefix) {
                names.insert(String(p.dropFirst(prefix.count).split(separator: "/").first!))
            }
            for d in directories where d.hasPrefix(prefix) && d != path {
                names.insert(String(d.dropFirst(prefix.count).split(separator: "/").first!))
            }
            return names.sorted()
        }
    }

    public func createDirectory(_ path: String) throws(JournalError) {
        _ = try withLock { () throws(JournalError) in directories.insert(path) }
    }

    public func rename(_ from: String, _ to: String) throws(JournalError) {
        try withLock { () throws(JournalError) in
            guard let n = files[from] else { throw JournalError.io(operation: "rename", path: from, errno: ENOENT) }
            files[from] = nil
            files[to] = n
        }
    }

    public func remove(_ path: String) throws(JournalError) {
        _ = try withLock { () throws(JournalError) in files.removeValue(forKey: path) }
    }

    public func syncDirectory(_ path: String) throws(JournalError) {
        try withLock { () throws(JournalError) in
            var entries: [String: Node] = [:]
            for (p, n) in files where parentDirectory(p) == path { entries[p] = n }
            durableEntries[path] = entries
        }
    }

    public func kind(of path: String) -> FileKind {
        mutex.lock()
        defer { mutex.unlock() }
        if directories.contains(path) { return .directory }
        return files[path] == nil ? .missing : .file
    }

    public func lockExclusive(_ path: String) throws(JournalError) -> any FileLock {
        try withLock { () throws(JournalError) -> any FileLock in
            guard !locks.contains(path) else { throw JournalError.locked(path: path) }
            locks.insert(path)
            if files[path] == nil { files[path] = Node() }
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
            let start = Int(offset)
            if node.data.count < start + bytes.count {
                node.data.append(contentsOf: repeatElement(0, count: start + bytes.count - node.data.count))
            }
            node.data.withUnsafeMutableBytes { dst in
                (dst.baseAddress! + start).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            }
        }
    }

    func sync() throws(JournalError) {
        try fs.locked { () throws(JournalError) in node.synced = node.data }
    }

    func truncate(to size: Int64) throws(JournalError) {
        try fs.locked { () throws(JournalError) in
            let s = Int(size)
            if node.data.count > s { node.data.removeSubrange(s...) } else {
                node.data.append(contentsOf: repeatElement(0, count: s - node.data.count))
            }
            node.synced = node.data
        }
    }

    func size() throws(JournalError) -> Int64 {
        try fs.locked { () throws(JournalError) -> Int64 in Int64(node.data.count) }
    }

    func close() {}
}

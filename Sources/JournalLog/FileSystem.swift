import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's only door to the disk. Tests swap in a simulated disk that loses
/// unsynced writes, tears writes and fails calls; production uses `PosixFileSystem`.
package protocol FileSystem: Sendable {
    func openFile(_ path: String, create: Bool, truncate: Bool) throws(JournalError) -> any StorageFile
    /// Opens an existing file only to read it: works on read-only media and never creates.
    func openForReading(_ path: String) throws(JournalError) -> any StorageFile
    /// The file a path names now (nil: none): a reader compares it with the identity of a file it
    /// holds open to learn whether the name was replaced meanwhile (a compaction's swap).
    func identity(of path: String) -> FileIdentity?
    /// Names (not paths) of the entries in a directory.
    func listDirectory(_ path: String) throws(JournalError) -> [String]
    func createDirectory(_ path: String) throws(JournalError)
    func rename(_ from: String, _ to: String) throws(JournalError)
    func remove(_ path: String) throws(JournalError)
    /// Removes an empty directory.
    func removeDirectory(_ path: String) throws(JournalError)
    /// Makes creates, renames and removes in the directory durable.
    func syncDirectory(_ path: String) throws(JournalError)
    func kind(of path: String) -> FileKind
    /// Takes an exclusive advisory lock on the directory itself, or throws `.locked` when another
    /// process (or another open in this one) holds it. The lock belongs to the directory's inode,
    /// not to a name inside it, so no file can be unlinked to steal it, and it is released when the
    /// holder closes it or dies.
    func lockDirectory(_ path: String) throws(JournalError) -> any FileLock
}

package enum FileKind: Sendable { case missing, file, directory, other }

/// Which file (inode) a path or an open file is: device and inode number on POSIX.
package struct FileIdentity: Hashable, Sendable {
    package var device: UInt64
    package var inode: UInt64
    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

package protocol StorageFile: AnyObject, Sendable {
    /// Reads up to `buffer.count` bytes at `offset`; returns fewer only at end of file.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(JournalError) -> Int
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(JournalError)
    /// Makes the file's data durable (fdatasync; F_FULLFSYNC on Apple platforms).
    func sync() throws(JournalError)
    func truncate(to size: Int64) throws(JournalError)
    func size() throws(JournalError) -> Int64
    /// The file this descriptor reads, whatever name it has now.
    func identity() throws(JournalError) -> FileIdentity
    func close()
}

package protocol FileLock: AnyObject, Sendable {
    func unlock()
}

/// POSIX files through swift-system descriptors.
package struct PosixFileSystem: FileSystem {
    package init() {}

    package func openFile(_ path: String, create: Bool, truncate: Bool) throws(JournalError) -> any StorageFile {
        var options: FileDescriptor.OpenOptions = [.closeOnExec]
        if create { options.insert(.create) }
        if truncate { options.insert(.truncate) }
        do {
            let fd = try FileDescriptor.open(FilePath(path), .readWrite, options: options, permissions: [.ownerReadWrite, .groupRead, .otherRead])
            return PosixFile(fd: fd, path: path)
        } catch let errno as Errno {
            // Read-only media or permissions: fall back to a read-only descriptor for readers.
            if !create, errno == .permissionDenied || errno == .readOnlyFileSystem,
               let fd = try? FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec]) {
                return PosixFile(fd: fd, path: path)
            }
            throw JournalError.io(operation: "open", path: path, errno: errno.rawValue)
        } catch {
            throw JournalError.io(operation: "open", path: path, errno: EIO)
        }
    }

    package func openForReading(_ path: String) throws(JournalError) -> any StorageFile {
        do {
            let fd = try FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec])
            return PosixFile(fd: fd, path: path)
        } catch let errno as Errno {
            throw JournalError.io(operation: "open", path: path, errno: errno.rawValue)
        } catch {
            throw JournalError.io(operation: "open", path: path, errno: EIO)
        }
    }

    package func identity(of path: String) -> FileIdentity? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    package func listDirectory(_ path: String) throws(JournalError) -> [String] {
        guard let dir = opendir(path) else { throw JournalError.io(operation: "opendir", path: path, errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let ent = readdir(dir) {
            let name = withUnsafePointer(to: ent.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    package func createDirectory(_ path: String) throws(JournalError) {
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw JournalError.io(operation: "mkdir", path: path, errno: errno)
        }
    }

    package func rename(_ from: String, _ to: String) throws(JournalError) {
        if Glibc_rename(from, to) != 0 { throw JournalError.io(operation: "rename", path: from, errno: errno) }
    }

    package func remove(_ path: String) throws(JournalError) {
        if unlink(path) != 0 && errno != ENOENT { throw JournalError.io(operation: "unlink", path: path, errno: errno) }
    }

    package func removeDirectory(_ path: String) throws(JournalError) {
        if rmdir(path) != 0 && errno != ENOENT { throw JournalError.io(operation: "rmdir", path: path, errno: errno) }
    }

    package func syncDirectory(_ path: String) throws(JournalError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw JournalError.io(operation: "open directory", path: path, errno: errno) }
        defer { _ = Glibc_close(fd) }
        if fsync(fd) != 0 { throw JournalError.io(operation: "fsync directory", path: path, errno: errno) }
    }

    package func kind(of path: String) -> FileKind {
        var st = stat()
        guard stat(path, &st) == 0 else { return .missing }
        switch st.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    package func lockDirectory(_ path: String) throws(JournalError) -> any FileLock {
        // flock(2) on a directory descriptor: open(2) of a directory needs only read access, so
        // this works wherever the store can be read, and the lock dies with the process.
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw JournalError.io(operation: "open store directory", path: path, errno: errno) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            _ = Glibc_close(fd)
            if e == EWOULDBLOCK { throw JournalError.locked(path: path, holder: nil) }
            throw JournalError.io(operation: "flock", path: path, errno: e)
        }
        return PosixLock(fd: fd)
    }
}

final class PosixLock: FileLock, @unchecked Sendable {
    private var fd: Int32
    init(fd: Int32) { self.fd = fd }
    func unlock() {
        if fd >= 0 {
            _ = flock(fd, LOCK_UN)
            _ = Glibc_close(fd)
            fd = -1
        }
    }
    deinit { unlock() }
}

final class PosixFile: StorageFile, @unchecked Sendable {
    let fd: FileDescriptor
    let path: String
    init(fd: FileDescriptor, path: String) {
        self.fd = fd
        self.path = path
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(JournalError) -> Int {
        var done = 0
        while done < buffer.count {
            let n: Int
            do {
                n = try fd.read(fromAbsoluteOffset: offset + Int64(done), into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            } catch let e as Errno {
                throw JournalError.io(operation: "read", path: path, errno: e.rawValue)
            } catch { throw JournalError.io(operation: "read", path: path, errno: EIO) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(JournalError) {
        do {
            _ = try fd.writeAll(toAbsoluteOffset: offset, bytes)
        } catch let e as Errno {
            throw JournalError.io(operation: "write", path: path, errno: e.rawValue)
        } catch { throw JournalError.io(operation: "write", path: path, errno: EIO) }
    }

    func sync() throws(JournalError) {
        #if canImport(Darwin)
        if fcntl(fd.rawValue, F_FULLFSYNC) == 0 { return }
        if fsync(fd.rawValue) != 0 { throw JournalError.io(operation: "fsync", path: path, errno: errno) }
        #else
        if fdatasync(fd.rawValue) != 0 { throw JournalError.io(operation: "fdatasync", path: path, errno: errno) }
        #endif
    }

    func truncate(to size: Int64) throws(JournalError) {
        if ftruncate(fd.rawValue, off_t(size)) != 0 { throw JournalError.io(operation: "ftruncate", path: path, errno: errno) }
        if fsync(fd.rawValue) != 0 { throw JournalError.io(operation: "fsync", path: path, errno: errno) }
    }

    func size() throws(JournalError) -> Int64 {
        var st = stat()
        guard fstat(fd.rawValue, &st) == 0 else { throw JournalError.io(operation: "fstat", path: path, errno: errno) }
        return Int64(st.st_size)
    }

    func identity() throws(JournalError) -> FileIdentity {
        var st = stat()
        guard fstat(fd.rawValue, &st) == 0 else { throw JournalError.io(operation: "fstat", path: path, errno: errno) }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    private var isClosed = false
    /// Idempotent: a second close must never close a descriptor number reused by another open.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        try? fd.close()
    }
}

#if canImport(Glibc)
@inline(__always) private func Glibc_rename(_ a: String, _ b: String) -> Int32 { Glibc.rename(a, b) }
@inline(__always) private func Glibc_close(_ fd: Int32) -> Int32 { Glibc.close(fd) }
#else
@inline(__always) private func Glibc_rename(_ a: String, _ b: String) -> Int32 { Darwin.rename(a, b) }
@inline(__always) private func Glibc_close(_ fd: Int32) -> Int32 { Darwin.close(fd) }
#endif

extension StorageFile {
    /// Writes an array (or part of one) without a rethrowing closure, keeping the error typed.
    package func write(_ bytes: [UInt8], range: Range<Int>? = nil, at offset: Int64) throws(JournalError) {
        let r = range ?? 0..<bytes.count
        let result: Result<Void, JournalError> = bytes.withUnsafeBytes { b in
            do throws(JournalError) {
                try write(UnsafeRawBufferPointer(rebasing: b[r]), at: offset)
                return .success(())
            } catch { return .failure(error) }
        }
        try result.get()
    }
}

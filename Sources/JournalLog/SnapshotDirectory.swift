/// One file of a store's `snapshots/` directory: a zone's materialised state at a sequence
/// (`.snap`, Spec/SNAPSHOT.md), or its activity history up to the same sequence (`.hist`).
/// Storage knows only the files' names and atomic writing; their contents belong to the list
/// model above it.
public struct SnapshotFile: Sendable, Equatable {
    public enum Kind: String, Sendable { case state = "snap", history = "hist" }
    public var path: String
    public var name: String
    public var kind: Kind
    /// `SnapshotDirectory.zoneKey(zone)`: the zone's name is in the file, not in its name.
    public var zoneKey: String
    public var incarnation: SequenceNumber
    public var sequence: SequenceNumber
}

/// The `snapshots/` directory: `<zoneKey>-<incarnation>-<sequence>.snap` and `.hist`, each written
/// atomically (temporary file, fsync, rename, fsync of the directory).
public enum SnapshotDirectory {
    public static let name = "snapshots"

    /// 16 hex digits of SipHash-2-4 (key 0) of the zone's UTF-8: a file-name-safe key for any
    /// zone name (which may hold `/` or be 255 bytes long). The file header names the zone.
    public static func zoneKey(_ zone: String) -> String {
        let h = SipHash24.hash(key: (0, 0), Array(zone.utf8))
        let s = String(h, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    static func digits(_ v: UInt64) -> String {
        let s = String(v)
        return String(repeating: "0", count: 20 - s.count) + s
    }

    public static func fileName(zone: String, incarnation: SequenceNumber, sequence: SequenceNumber, kind: SnapshotFile.Kind) -> String {
        "\(zoneKey(zone))-\(digits(incarnation))-\(digits(sequence)).\(kind.rawValue)"
    }

    public static func parse(_ name: String, in dir: String) -> SnapshotFile? {
        let kind: SnapshotFile.Kind
        if name.hasSuffix(".snap") { kind = .state } else if name.hasSuffix(".hist") { kind = .history } else { return nil }
        let parts = name.dropLast(5).split(separator: "-")
        guard parts.count == 3, parts[0].count == 16, parts[1].count == 20, parts[2].count == 20,
              let inc = UInt64(parts[1]), let seq = UInt64(parts[2]) else { return nil }
        return SnapshotFile(path: dir + "/" + name, name: name, kind: kind, zoneKey: String(parts[0]), incarnation: inc, sequence: seq)
    }

    /// Every snapshot file of the store (none when there is no `snapshots/`), newest sequence first.
    public static func list(store: String, fs: any FileSystem = PosixFileSystem()) -> [SnapshotFile] {
        let dir = store + "/" + name
        guard fs.kind(of: dir) == .directory, let names = try? fs.listDirectory(dir) else { return [] }
        return names.compactMap { SnapshotDirectory.parse($0, in: dir) }.sorted { ($0.sequence, $0.name) > ($1.sequence, $1.name) }
    }

    /// The files of one zone incarnation of one kind, newest first.
    public static func list(store: String, zone: String, incarnation: SequenceNumber, kind: SnapshotFile.Kind,
                            fs: any FileSystem = PosixFileSystem()) -> [SnapshotFile] {
        // Only this incarnation's names are parsed: a service's directory holds thousands.
        let dir = store + "/" + name
        guard fs.kind(of: dir) == .directory, let names = try? fs.listDirectory(dir) else { return [] }
        let prefix = zoneKey(zone) + "-" + digits(incarnation) + "-", suffix = "." + kind.rawValue
        return names.lazy.filter { $0.hasPrefix(prefix) && $0.hasSuffix(suffix) }
            .compactMap { SnapshotDirectory.parse($0, in: dir) }.sorted { ($0.sequence, $0.name) > ($1.sequence, $1.name) }
    }

    /// Writes `bytes` atomically under its final name; a crash leaves the whole file or none.
    public static func write(_ bytes: [UInt8], store: String, name fileName: String, fs: any FileSystem = PosixFileSystem()) throws(JournalError) -> String {
        let path = store + "/" + name + "/" + fileName
        try AtomicFile.write(bytes, to: path, fs: fs)
        return path
    }

    /// The whole file, refusing one above `limit` bytes before reading it.
    public static func read(_ path: String, limit: Int, fs: any FileSystem = PosixFileSystem()) throws(JournalError) -> [UInt8] {
        try AtomicFile.read(path, fs: fs, limit: limit)
    }
}

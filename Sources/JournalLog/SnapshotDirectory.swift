/// One file of a store's `snapshots/` directory: a zone's materialised state at a sequence
/// (`.snap`, Spec/SNAPSHOT.md; or `.delta` against a `.base`, SNAPSHOT.md §6), or its activity
/// history up to the same sequence (`.hist`).
/// Storage knows only the files' names and atomic writing; their contents belong to the list
/// model above it.
package struct SnapshotFile: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        case state = "snap", history = "hist"
        /// The state as a delta against the zone's `.base` (SNAPSHOT.md §6): used like a `.snap`.
        case delta = "delta"
        /// A whole state kept only as deltas' base: never read alone (a compaction after it may
        /// have purged items it holds).
        case base = "base"

        /// The kinds a reader takes the zone's state from.
        package static let states: [Kind] = [.state, .delta]
    }
    package var path: String
    package var name: String
    package var kind: Kind
    /// `SnapshotDirectory.zoneKey(zone)`: the zone's name is in the file, not in its name.
    package var zoneKey: String
    package var incarnation: SequenceNumber
    package var sequence: SequenceNumber
}

/// The `snapshots/` directory: `<zoneKey>-<incarnation>-<sequence>.snap`, `.delta`, `.base` and `.hist`, each written
/// atomically (temporary file, fsync, rename, fsync of the directory).
package enum SnapshotDirectory {
    package static let name = "snapshots"

    /// 16 hex digits of SipHash-2-4 (key 0) of the zone's UTF-8: a file-name-safe key for any
    /// zone name (which may hold `/` or be 255 bytes long). The file header names the zone.
    package static func zoneKey(_ zone: String) -> String {
        let h = SipHash24.hash(key: (0, 0), Array(zone.utf8))
        let s = String(h, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    static func digits(_ v: UInt64) -> String {
        let s = String(v)
        return String(repeating: "0", count: 20 - s.count) + s
    }

    /// The file's name; `keyed`: `zone` is already its `zoneKey`.
    package static func fileName(zone: String, incarnation: SequenceNumber, sequence: SequenceNumber, kind: SnapshotFile.Kind,
                                keyed: Bool = false) -> String {
        "\(keyed ? zone : zoneKey(zone))-\(digits(incarnation))-\(digits(sequence)).\(kind.rawValue)"
    }

    package static func parse(_ name: String, in dir: String) -> SnapshotFile? {
        guard let dot = name.lastIndex(of: "."), let kind = SnapshotFile.Kind(rawValue: String(name[name.index(after: dot)...])) else {
            return nil
        }
        let parts = name[..<dot].split(separator: "-")
        guard parts.count == 3, parts[0].count == 16, parts[1].count == 20, parts[2].count == 20,
              let inc = UInt64(parts[1]), let seq = UInt64(parts[2]) else { return nil }
        return SnapshotFile(path: dir + "/" + name, name: name, kind: kind, zoneKey: String(parts[0]), incarnation: inc, sequence: seq)
    }

    /// Every snapshot file of the store (none when there is no `snapshots/`), newest sequence first.
    package static func list(store: String, fs: any FileSystem = PosixFileSystem()) -> [SnapshotFile] {
        let dir = store + "/" + name
        guard fs.kind(of: dir) == .directory, let names = try? fs.listDirectory(dir) else { return [] }
        return names.compactMap { SnapshotDirectory.parse($0, in: dir) }.sorted { ($0.sequence, $0.name) > ($1.sequence, $1.name) }
    }

    /// The files of one zone incarnation of one kind, newest first.
    package static func list(store: String, zone: String, incarnation: SequenceNumber, kind: SnapshotFile.Kind,
                            fs: any FileSystem = PosixFileSystem()) -> [SnapshotFile] {
        list(store: store, zone: zone, incarnation: incarnation, kinds: [kind], fs: fs)
    }

    /// The files of one zone incarnation of the given kinds, newest first.
    package static func list(store: String, zone: String, incarnation: SequenceNumber, kinds: [SnapshotFile.Kind],
                            fs: any FileSystem = PosixFileSystem()) -> [SnapshotFile] {
        // Only this incarnation's names are parsed: a service's directory holds thousands.
        let dir = store + "/" + name
        guard fs.kind(of: dir) == .directory, let names = try? fs.listDirectory(dir) else { return [] }
        let prefix = zoneKey(zone) + "-" + digits(incarnation) + "-"
        return names.lazy.filter { $0.hasPrefix(prefix) }
            .compactMap { SnapshotDirectory.parse($0, in: dir) }.filter { kinds.contains($0.kind) }
            .sorted { ($0.sequence, $0.name) > ($1.sequence, $1.name) }
    }

    /// Where `file` would be as another kind (a whole snapshot kept as a base is renamed so).
    package static func path(of file: SnapshotFile, as kind: SnapshotFile.Kind) -> String {
        parentPath(file.path) + "/" + fileName(zone: file.zoneKey, incarnation: file.incarnation, sequence: file.sequence, kind: kind, keyed: true)
    }

    static func parentPath(_ path: String) -> String {
        guard let i = path.lastIndex(of: "/") else { return "." }
        return String(path[..<i])
    }

    /// Writes `bytes` atomically under its final name; a crash leaves the whole file or none.
    package static func write(_ bytes: [UInt8], store: String, name fileName: String, fs: any FileSystem = PosixFileSystem()) throws(JournalError) -> String {
        let path = store + "/" + name + "/" + fileName
        try AtomicFile.write(bytes, to: path, fs: fs)
        return path
    }

    /// The whole file, refusing one above `limit` bytes before reading it.
    package static func read(_ path: String, limit: Int, fs: any FileSystem = PosixFileSystem()) throws(JournalError) -> [UInt8] {
        try AtomicFile.read(path, fs: fs, limit: limit)
    }
}

/// The store's files (Spec/FORMAT.md §2).
package enum StoreLayout {
    /// Names the writer that holds the store (WriterLock); the lock itself is on the directory.
    package static let lockFile = "LOCK"
    package static let tornDirectory = "torn"
    package static let keyFile = "KEY"
    package static let indexDirectory = "index"
    package static let indexFile = "index/zones.idx"
    /// What changed since `indexFile` was written (INDEX.md §5).
    package static let indexJournalFile = "index/zones.idj"

    /// Segment paths in base order.
    package static func segmentPaths(_ store: String, fs: any FileSystem) throws(JournalError) -> [String] {
        try fs.listDirectory(store).compactMap { SegmentName(fileName: $0) }.sorted().map { store + "/" + $0.fileName }
    }
}

/// `stem + suffix`, or `stem-2 + suffix`, … : set-aside files never overwrite each other.
func uniquePath(_ stem: String, suffix: String, fs: any FileSystem) -> String {
    var candidate = stem + suffix
    var n = 2
    while fs.kind(of: candidate) != .missing {
        candidate = stem + "-\(n)" + suffix
        n += 1
    }
    return candidate
}

package func parentDirectory(_ path: String) -> String {
    guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
    let p = String(path[..<slash])
    return p.isEmpty ? "/" : p
}

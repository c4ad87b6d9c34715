import Foundation

/// The segment files a reader reads, chosen and opened so that together they are one log that a
/// writer left or is leaving: never half of a compaction run (FORMAT.md §9.4). Once any
/// `.seg.swap` exists the run has committed, so each segment's `.swap`, else its `.cleaned`, else
/// its `.seg` is read (what the next writer's open will rename into place); with no `.swap`,
/// `.seg` files only. Readers hold the files open, so a later swap or roll changes nothing they
/// read; a set is checked by listing the directory again after opening it: every chosen name must
/// still name the file opened (renames never go back, so a file unchanged then was unchanged
/// throughout). Segments that appear after the last one chosen are left for the next set.
final class SegmentSet: @unchecked Sendable {
    struct Segment {
        var base: SequenceNumber
        /// The file read: `<base>.seg`, or its `.swap` or `.cleaned` while a commit is pending.
        var fileName: String
        var file: any StorageFile
        var identity: FileIdentity
        /// The segment's canonical name, `<20 digits>.seg`, which every report uses.
        var name: String { SegmentName(base: base).fileName }
    }

    let store: String
    let segments: [Segment]
    /// A compaction run committed but not yet finished by a writer's open: its `.swap` (and
    /// `.cleaned`) files are read in place of their segments.
    let commitPending: Bool

    private init(store: String, segments: [Segment], commitPending: Bool) {
        self.store = store
        self.segments = segments
        self.commitPending = commitPending
    }

    deinit {
        for s in segments { s.file.close() }
    }

    /// The files `names` (a directory listing) say to read, in base order.
    static func choose(_ names: [String]) -> (files: [(base: SequenceNumber, fileName: String)], commitPending: Bool) {
        var segs: [SequenceNumber: String] = [:]
        var swaps: [SequenceNumber: String] = [:]
        var cleaned: [SequenceNumber: String] = [:]
        for n in names {
            if let s = SegmentName(fileName: n) {
                segs[s.base] = n
            } else if let seg = CompactionFiles.segment(of: n, suffix: CompactionFiles.swap), let s = SegmentName(fileName: seg) {
                swaps[s.base] = n
            } else if let seg = CompactionFiles.segment(of: n, suffix: CompactionFiles.cleaned), let s = SegmentName(fileName: seg) {
                cleaned[s.base] = n
            }
        }
        guard !swaps.isEmpty else { return (segs.keys.sorted().map { ($0, segs[$0]!) }, false) }
        let bases = Set(segs.keys).union(swaps.keys).union(cleaned.keys).sorted()
        return (bases.map { b in (b, swaps[b] ?? cleaned[b] ?? segs[b]!) }, true)
    }

    /// Opens a consistent set of `store`'s segments, retrying while a writer renames files under
    /// it (at most `attempts` times: a store that never holds still for a listing is reported).
    static func open(store: String, fs: any FileSystem, attempts: Int = 200) throws(JournalError) -> SegmentSet {
        var lastProblem = "the directory changed under every attempt"
        for attempt in 0..<attempts {
            if attempt > 0 { Thread.sleep(forTimeInterval: attempt < 10 ? 0.0005 : 0.005) }
            let chosen = choose(try fs.listDirectory(store))
            var opened: [Segment] = []
            var failed = false
            for (base, fileName) in chosen.files {
                do throws(JournalError) {
                    let file = try fs.openForReading(store + "/" + fileName)
                    do throws(JournalError) {
                        opened.append(Segment(base: base, fileName: fileName, file: file, identity: try file.identity()))
                    } catch {
                        file.close()
                        throw error
                    }
                } catch {
                    // Renamed away between the listing and the open: list again.
                    if case .io(_, _, let e) = error, e == ENOENT {
                        lastProblem = "\(fileName) vanished while it was opened"
                        failed = true
                        break
                    }
                    for s in opened { s.file.close() }
                    throw error
                }
            }
            if !failed {
                let again = choose(try fs.listDirectory(store))
                let stable = again.commitPending == chosen.commitPending && again.files.count >= opened.count
                    && zip(again.files, opened).allSatisfy { $0.0.base == $0.1.base && $0.0.fileName == $0.1.fileName }
                    && opened.allSatisfy { fs.identity(of: store + "/" + $0.fileName) == $0.identity }
                if stable { return SegmentSet(store: store, segments: opened, commitPending: chosen.commitPending) }
                lastProblem = "a compaction or a roll renamed segment files while they were opened"
            }
            for s in opened { s.file.close() }
        }
        throw JournalError.io(operation: "open a consistent set of segments (\(lastProblem))", path: store, errno: EAGAIN)
    }

    /// Whether this set still is what the directory holds, apart from segments added after it:
    /// the same names, naming the same files.
    func isCurrent(fs: any FileSystem) throws(JournalError) -> Bool {
        let now = SegmentSet.choose(try fs.listDirectory(store))
        guard now.commitPending == commitPending, now.files.count >= segments.count else { return false }
        return zip(now.files, segments).allSatisfy { $0.0.base == $0.1.base && $0.0.fileName == $0.1.fileName }
            && segments.allSatisfy { fs.identity(of: store + "/" + $0.fileName) == $0.identity }
    }
}

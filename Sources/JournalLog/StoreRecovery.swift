import Foundation

/// Opening a store's files (Spec/FORMAT.md §9): the log scanned and cut at its first damage
/// (what is cut is set aside in `torn/`, never deleted), the acknowledged entries checked
/// against `EPOCHS`, the zone index loaded from its checkpoint or rebuilt, the active segment
/// chosen, files from a future the log lost put right, the key loaded and a new token epoch
/// begun. It runs once, holding the writer's lock, before the store takes its first append.
struct StoreRecovery {
    let path: String
    let options: StoreOptions
    let fs: any FileSystem

    /// What the store starts from.
    struct Recovered {
        var report: RecoveryReport
        var catalog: ZoneCatalog
        /// The last frame the index covers, and the one its checkpoint covers when it is current.
        var lastWritten: CoveredFrame?
        var checkpointed: CoveredFrame?
        var storeID: (UInt64, UInt64)
        var chain: UInt32
        var lastAssigned: SequenceNumber
        var active: LogWriter.ActiveSegment
        var storeKey: (UInt64, UInt64)
        var epochRecord: EpochRecord
    }

    /// The store's end segment and where appends go on.
    private struct End {
        var storeID: (UInt64, UInt64)
        var chain: UInt32
        var lastAssigned: SequenceNumber
        var active: LogWriter.ActiveSegment
    }

    /// Creates the store's directory (and its missing parents) when `options` allow it, or
    /// refuses a path that is not a store directory.
    static func prepareDirectory(_ path: String, options: StoreOptions, fs: any FileSystem) throws(JournalError) {
        switch fs.kind(of: path) {
        case .missing:
            guard options.createIfMissing else { throw JournalError.storeMissing(path: path) }
            var missing: [String] = []
            var p = path
            while fs.kind(of: p) == .missing, p != "/", p != "." {
                missing.append(p)
                p = parentDirectory(p)
            }
            for d in missing.reversed() { try fs.createDirectory(d) }
            try fs.syncDirectory(parentDirectory(path))
        case .directory: break
        case .file, .other: throw JournalError.notAStore(path: path, reason: "it is a file, not a store directory (inspect it with `jlog inspect`)")
        }
    }

    func run() throws(JournalError) -> Recovered {
        try CompactionFiles.recover(store: path, fs: fs)
        var report = RecoveryReport(mode: options.recovery, segments: 0, lastSequence: 0)
        let paths = try StoreLayout.segmentPaths(path, fs: fs)
        var scanner = StoreScanner(fs: fs, mode: options.recovery)
        var builder = IndexBuilder(checkpoint: IndexBuilder.loadCheckpoint(store: path, fs: fs))
        if !paths.isEmpty {
            do { try scanner.scan(paths: paths) { try builder.visit($0) } } catch { throw JournalError.wrap(error) }
        }
        let loaded = StoreEpochs.load(store: path, fs: fs)
        try checkAcknowledged(scanner, paths: paths, epochs: loaded, report: &report)
        if let cut = scanner.cut, let problem = scanner.problems.first {
            report.problem = problem
            try Self.setAside(store: path, paths: paths, cut: cut, summary: scanner.summaries[cut.segment], fs: fs, report: &report)
            scanner.summaries.removeSubrange((cut.segment + 1)...)
            if scanner.summaries[cut.segment].header == nil || cut.offset < Int64(SegmentHeader.size) { scanner.summaries.removeLast() }
        }
        let covered = try index(&builder, scanner: scanner, report: &report)
        let checkpointed = builder.checkpoint != nil && report.indexSource == .checkpoint && builder.replayed == 0 ? covered : nil
        let end = try end(scanner, report: &report)
        report.lastSequence = end.lastAssigned
        do throws(JournalError) {
            let (key, epochs) = try putRight(end, epochs: loaded, report: &report)
            return Recovered(report: report, catalog: builder.catalog, lastWritten: covered, checkpointed: checkpointed,
                             storeID: end.storeID, chain: end.chain, lastAssigned: end.lastAssigned, active: end.active,
                             storeKey: key, epochRecord: epochs)
        } catch {
            end.active.file.close()
            throw error
        }
    }

    /// Before anything changes: does the log (as this open would keep it) still hold everything
    /// the store acknowledged? If not, refuses, unless an operator accepted it (or chose
    /// pointInTime, which keeps a prefix by definition).
    private func checkAcknowledged(_ scanner: StoreScanner, paths: [String], epochs loaded: StoreEpochs.Loaded,
                                   report: inout RecoveryReport) throws(JournalError) {
        let kept = scanner.cut.map { cut in
            scanner.summaries[...cut.segment].enumerated().filter { k, s in
                s.header != nil && (k < cut.segment || cut.offset >= Int64(SegmentHeader.size))
            }.map(\.element)
        } ?? scanner.summaries
        // A segment file that is there, even with a torn header, held nothing acknowledged
        // beyond what its predecessors end with: only an absent one is missing.
        let present = paths.compactMap { SegmentName(fileName: String($0.split(separator: "/").last!))?.base }
        // A store with no segment left but an EPOCHS file had a log: every segment is missing.
        if case .record(let rec) = loaded, kept.first?.header.map({ rec.storeID == $0.storeID }) ?? true,
           let why = StoreEpochs.missing(rec, lastSequence: kept.last?.lastSequence ?? 0, segmentBases: present) {
            guard options.acceptLoss || options.recovery == .pointInTime else { throw JournalError.acknowledgedEntriesMissing(why) }
            report.epochNote = "acknowledged entries are missing and the loss was accepted: \(why)"
        }
    }

    /// The zone index: the checkpoint and the frames after it when it matches the log as
    /// recovered, or else the whole log read again. Returns the last frame it covers.
    private func index(_ builder: inout IndexBuilder, scanner: StoreScanner, report: inout RecoveryReport) throws(JournalError) -> CoveredFrame? {
        guard !builder.isUsable(storeID: scanner.summaries.first?.header?.storeID) else {
            report.index = builder.report(source: builder.usableSource)
            return builder.lastFrame
        }
        // No checkpoint, or it does not match the log (a crash mid-write, recovery cut the log
        // before it, or it is foreign): rebuild from the whole log as recovered.
        var fresh = IndexBuilder(checkpoint: nil)
        let kept = try StoreLayout.segmentPaths(path, fs: fs)
        var rescan = StoreScanner(fs: fs, mode: .strict)
        if !kept.isEmpty {
            do { try rescan.scan(paths: kept) { try fresh.visit($0) } } catch { throw JournalError.wrap(error) }
        }
        report.index = fresh.report(source: .rebuilt(reason: builder.rebuildReason))
        // A stale checkpoint is removed, so it can never match a later log by chance.
        if builder.checkpoint != nil {
            try? fs.remove(path + "/" + StoreLayout.indexFile)
            try? fs.remove(path + "/" + StoreLayout.indexJournalFile)
        }
        builder = fresh
        return fresh.lastFrame
    }

    /// The segment appends go to: the last one, or the next one when the last is sealed or of
    /// an older minor version; a new store's first.
    private func end(_ scanner: StoreScanner, report: inout RecoveryReport) throws(JournalError) -> End {
        guard let last = scanner.summaries.last, let header = last.header else {
            guard scanner.summaries.isEmpty else {
                throw JournalError.corruption(scanner.problems.first ?? Corruption(
                    segment: "?", offset: 0, lastGoodSequence: 0, problem: .badSegmentName, isTornTail: false))
            }
            var g = SystemRandomNumberGenerator()
            let id = (g.next(), g.next())
            let chain = SegmentHeader.firstChain(storeID: id)
            let active = try LogWriter.createSegment(store: path, base: 1, storeID: id, previousChain: chain,
                                                     segmentSize: options.segmentSize, preallocate: options.preallocate, fs: fs)
            report.created = true
            report.segments = 1
            return End(storeID: id, chain: chain, lastAssigned: 0, active: active)
        }
        let name = SegmentName(base: header.baseSequence)
        let file = try fs.openFile(path + "/" + name.fileName, create: false, truncate: false)
        let size = try file.size()
        var active = LogWriter.ActiveSegment(file: file, name: name, writeOffset: last.validEnd, records: last.records, allocated: size)
        report.segments = scanner.summaries.count
        if last.sealed || header.minor < SegmentHeader.currentMinor {
            // A compacted segment is never appended to, and nothing is appended to a segment
            // whose minor version says it cannot hold what this writer may write (a replicated
            // `place`, FORMAT.md §1): start the next one. One that holds no frame is made again
            // under its own name.
            let empty = last.records == 0 && !last.sealed
            if !empty && active.allocated > active.writeOffset { try active.file.truncate(to: active.writeOffset) }
            try active.file.sync()
            active.file.close()
            active = try LogWriter.createSegment(store: path, base: empty ? header.baseSequence : last.lastSequence + 1,
                                                 storeID: header.storeID, previousChain: last.endChain,
                                                 segmentSize: options.segmentSize, preallocate: options.preallocate, fs: fs)
            if !empty { report.segments += 1 }
        }
        return End(storeID: header.storeID, chain: last.endChain, lastAssigned: last.lastSequence, active: active)
    }

    /// Before the first append: what recovery read made durable, files from a future the log
    /// lost set aside or lowered, the key loaded, and a new token epoch written. Returns the key
    /// and `EPOCHS` as written.
    private func putRight(_ end: End, epochs loaded: StoreEpochs.Loaded,
                          report: inout RecoveryReport) throws(JournalError) -> ((UInt64, UInt64), EpochRecord) {
        let lastAssigned = end.lastAssigned
        // What recovery read may sit only in the page cache (the last writer's process died, not
        // the machine): make it durable before serving it as durable.
        if lastAssigned > 0 { try end.active.file.sync() }
        // Snapshots and consumer marks from a future this log lost, put right before anything is
        // appended: the next entries take the sequences they speak of.
        report.snapshotsSetAside = try PastEndFiles.setAsideSnapshots(store: path, above: lastAssigned, fs: fs)
        report.consumerMarksLowered = try PastEndFiles.lowerConsumerMarks(store: path, to: lastAssigned, fs: fs)
        let key = try StoreKey.loadOrCreate(store: path, fs: fs)
        // A new token epoch begins at the end of the log as recovered (TOKENS.md §7).
        var epochs: [EpochRecord.Epoch] = []
        switch loaded {
        case .record(let rec) where rec.storeID == end.storeID: epochs = rec.epochs
        case .record: report.epochNote = report.epochNote ?? "EPOCHS belongs to another store: every earlier change token is refused"
        case .unreadable(let why): report.epochNote = "\(why): every earlier change token is refused"
        case .missing where lastAssigned > 0: report.epochNote = "no EPOCHS file: every earlier change token is refused"
        case .missing: break
        }
        epochs.append(EpochRecord.Epoch(id: StoreEpochs.newID(), start: lastAssigned + 1))
        if epochs.count > EpochCodec.maxEpochs { epochs.removeFirst(epochs.count - EpochCodec.maxEpochs) }
        let record = EpochRecord(storeID: end.storeID, acknowledgedThrough: lastAssigned, activeSegment: end.active.name.base,
                                 closedCleanly: false, epochs: epochs)
        try StoreEpochs.write(record, store: path, fs: fs)
        report.epoch = record.current.id
        return (key, record)
    }

    /// Moves damaged bytes out of the way: the cut segment's tail is copied to `torn/` then
    /// truncated, and later segments are renamed into `torn/`. Nothing is deleted.
    private static func setAside(store: String, paths: [String], cut: (segment: Int, offset: Int64), summary: SegmentSummary,
                                 fs: any FileSystem, report: inout RecoveryReport) throws(JournalError) {
        let tornDir = store + "/" + StoreLayout.tornDirectory
        try fs.createDirectory(tornDir)
        let stamp = Int64(Date().timeIntervalSince1970 * 1000)
        // Damage in the header, or found checking it against its neighbours (a chain break, a
        // foreign segment), sets the whole segment aside: there is no prefix of it to keep.
        let keepWhole = summary.header != nil && cut.offset >= Int64(SegmentHeader.size)
        for (i, p) in paths.enumerated() where i >= cut.segment {
            let name = String(p.split(separator: "/").last!)
            if i == cut.segment && keepWhole {
                let file = try fs.openFile(p, create: false, truncate: false)
                defer { file.close() }
                let size = try file.size()
                let reader = SegmentReader(file: file, fileSize: size)
                let dest = uniquePath(tornDir + "/\(name).\(cut.offset).\(stamp)", suffix: ".torn", fs: fs)
                let out = try fs.openFile(dest, create: true, truncate: true)
                var at = cut.offset
                var lastNonZero = cut.offset
                while at < size {
                    let n = Int(min(Int64(SegmentReader.chunk), size - at))
                    let w = try reader.window(at, n)
                    if let j = w.lastIndex(where: { $0 != 0 }) { lastNonZero = at + Int64(j) + 1 }
                    try out.write(w, at: at - cut.offset)
                    at += Int64(n)
                }
                try out.truncate(to: lastNonZero - cut.offset)
                try out.sync()
                out.close()
                try fs.syncDirectory(tornDir)
                try file.truncate(to: cut.offset)
                report.removedBytes += lastNonZero - cut.offset
                report.setAside.append(dest)
            } else {
                let dest = uniquePath(tornDir + "/\(name).\(stamp)", suffix: ".torn", fs: fs)
                let file = try fs.openFile(p, create: false, truncate: false)
                report.removedBytes += (try? file.size()) ?? 0
                file.close()
                try fs.rename(p, dest)
                report.setAside.append(dest)
            }
        }
        try fs.syncDirectory(tornDir)
        try fs.syncDirectory(store)
    }
}

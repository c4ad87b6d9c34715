/// A consumer mark that stood past the end of the log as a writer's open recovered it, and was
/// lowered to that end (Spec/COMPACTION.md §3).
package struct LoweredConsumerMark: Sendable, Equatable {
    package var consumer: String
    package var zone: String
    package var incarnation: SequenceNumber
    /// The mark as the file held it.
    package var from: SequenceNumber
    /// The log's last sequence: what the consumer can have processed of this log.
    package var to: SequenceNumber
}

/// Files beside the log that speak of sequences past its end: left by a future the log lost. An
/// older copy of the store restored over it keeps the newer snapshot and consumer files that the
/// copy did not replace, and a power loss can drop a tail of unsynced entries that a snapshot or a
/// consumer had already covered. New entries then take those sequences, so a snapshot there would
/// be read as a state holding them (a wrong list, silently), and a mark there would tell an upload
/// queue and the compactor that they were processed. A writer's open puts both right before it
/// appends anything (Spec/SNAPSHOT.md §2.1, COMPACTION.md §3).
enum PastEndFiles {
    /// Moves every state snapshot (`.snap`, `.delta`, `.base`) whose sequence is above
    /// `lastSequence` into `torn/` under its own name, and returns where each went. A snapshot is
    /// a cache: without it the list is a replay of the log, and the compactor writes one again.
    /// History pieces stay: after a lost unsynced tail they may rightly cover sequences above the
    /// end, and they hold the only copy of the events of purges that were durable.
    static func setAsideSnapshots(store: String, above lastSequence: SequenceNumber, fs: any FileSystem) throws(JournalError) -> [String] {
        let stale = SnapshotDirectory.list(store: store, fs: fs).filter { $0.kind != .history && $0.sequence > lastSequence }
        guard !stale.isEmpty else { return [] }
        let tornDir = store + "/" + StoreLayout.tornDirectory
        let tornExisted = fs.kind(of: tornDir) == .directory
        try fs.createDirectory(tornDir)
        var moved: [String] = []
        for file in stale {
            let stem = String(file.name.dropLast(file.kind.rawValue.count + 1))
            let dest = uniquePath(tornDir + "/" + stem, suffix: "." + file.kind.rawValue, fs: fs)
            try fs.rename(file.path, dest)
            moved.append(dest)
        }
        try fs.syncDirectory(tornDir)
        try fs.syncDirectory(store + "/" + SnapshotDirectory.name)
        if !tornExisted { try fs.syncDirectory(store) }
        return moved
    }

    /// Lowers every consumer mark above `lastSequence` to it, writing each changed consumer file
    /// again (atomically, durable on return). The sequences above the end were never processed as
    /// the entries that will take them. A file that cannot be read is left alone: it holds every
    /// zone at 0 already.
    static func lowerConsumerMarks(store: String, to lastSequence: SequenceNumber, fs: any FileSystem) throws(JournalError) -> [LoweredConsumerMark] {
        var lowered: [LoweredConsumerMark] = []
        for (path, consumer) in JournalStore.consumerFiles(store: store, fs: fs).files {
            var state = consumer
            for i in state.marks.indices where state.marks[i].position > lastSequence {
                let m = state.marks[i]
                lowered.append(LoweredConsumerMark(consumer: state.name, zone: m.zone, incarnation: m.incarnation,
                                                   from: m.position, to: lastSequence))
                state.marks[i].position = lastSequence
            }
            if state != consumer { try AtomicFile.write(ConsumerCodec.encode(state), to: path, fs: fs) }
        }
        return lowered
    }
}

extension RecoveryReport {
    /// One line for each file a writer's open found past the log's end and put right, for an
    /// operator (`jlog recover`, and every command that opens a store to write).
    package var pastEndNotes: [String] {
        snapshotsSetAside.map { "snapshot past the log's end (\(lastSequence)) set aside: \($0)" }
            + consumerMarksLowered.map { m in
                "consumer \(m.consumer): mark for zone \(m.zone) (incarnation \(m.incarnation)) lowered from \(m.from) "
                    + "to the log's end \(m.to); the entries that take the sequences above it are new to it"
            }
    }
}

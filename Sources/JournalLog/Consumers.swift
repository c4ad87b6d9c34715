/// Consumers hold back compaction (Spec/COMPACTION.md §3): an upload queue, an apply queue or
/// any reader that must see every entry registers a name, advances its marks as it processes
/// entries, and holds a lease. Nothing above an unexpired consumer's mark is purged; a consumer
/// whose lease ran out holds nothing back and gets `tokenExpired` when it returns.
///
/// Each consumer is one file, `consumers/<key>.consumer` (`ConsumerCodec`), replaced atomically.
/// A file that cannot be read holds every zone at 0, so damage never lets the compactor purge
/// entries a consumer has not seen; `problems` says which, and removing it releases the hold.
extension JournalStore {
    static let consumersDirectory = "consumers"

    static func consumerPath(store: String, name: String) -> String {
        store + "/" + consumersDirectory + "/" + SnapshotDirectory.zoneKey(name) + ".consumer"
    }

    /// Every consumer, and the files that could not be read (each holds everything back).
    package func consumers() -> (consumers: [ConsumerState], problems: [String]) {
        JournalStore.consumers(store: path, fs: fs)
    }

    /// The same without opening the store (no lock): for `jlog inspect` and `jlog consumers`.
    /// A path that is not a directory, or has no `consumers/`, has none.
    package static func consumers(store path: String, fs: any FileSystem = PosixFileSystem()) -> (consumers: [ConsumerState], problems: [String]) {
        let (files, problems) = consumerFiles(store: path, fs: fs)
        return (files.map(\.state), problems)
    }

    /// `consumers(store:fs:)` with the file each consumer was read from.
    static func consumerFiles(store path: String, fs: any FileSystem) -> (files: [(path: String, state: ConsumerState)], problems: [String]) {
        let dir = path + "/" + JournalStore.consumersDirectory
        var found: [(path: String, state: ConsumerState)] = []
        var problems: [String] = []
        let names: [String]
        switch fs.kind(of: dir) {
        case .missing: return ([], [])
        case .directory:
            do { names = try fs.listDirectory(dir) } catch {
                return ([], ["\(dir): unreadable (\(error)); it holds every zone back until it can be read"])
            }
        case .file, .other:
            return ([], ["\(dir): not a directory; it holds every zone back until it is removed"])
        }
        for name in names.sorted() where name.hasSuffix(".consumer") {
            let file = dir + "/" + name
            do {
                let bytes = try AtomicFile.read(file, fs: fs, limit: ConsumerCodec.maxFileBytes)
                let decoded: Result<ConsumerState, CodecError> = bytes.withUnsafeBytes { b in
                    do throws(CodecError) { return .success(try ConsumerCodec.decode(b)) } catch { return .failure(error) }
                }
                switch decoded {
                case .success(let c): found.append((file, c))
                case .failure(let e): problems.append("\(file): damaged (\(e)); \(releaseHint(name))")
                }
            } catch {
                problems.append("\(file): unreadable (\(error)); \(releaseHint(name))")
            }
        }
        return (found, problems)
    }

    private static func releaseHint(_ fileName: String) -> String {
        "it holds every zone back until removed (`jlog consumers STORE --remove \(fileName)`)"
    }

    /// The consumer named `name`, read from its own file; nil when it has none or the file
    /// cannot be read (`consumers()` reports why).
    package func consumer(_ name: String) -> ConsumerState? {
        let file = JournalStore.consumerPath(store: path, name: name)
        guard fs.kind(of: file) == .file, let bytes = try? AtomicFile.read(file, fs: fs, limit: ConsumerCodec.maxFileBytes),
              let state = try? bytes.withUnsafeBytes({ b throws(CodecError) in try ConsumerCodec.decode(b) }), state.name == name else { return nil }
        return state
    }

    /// Registers (or replaces) a consumer. `leaseUntil` nil: the lease never expires.
    public func registerConsumer(_ name: String, leaseUntil: Int64?) throws(JournalError) {
        guard !name.isEmpty, name.utf8.count <= ConsumerCodec.maxNameBytes else {
            throw JournalError.invalidEntry("a consumer name is 1...\(ConsumerCodec.maxNameBytes) UTF-8 bytes")
        }
        consumerLock.lock()
        defer { consumerLock.unlock() }
        var state = consumer(name) ?? ConsumerState(name: name, leaseUntil: leaseUntil)
        state.leaseUntil = leaseUntil
        try writeConsumer(state)
    }

    /// Moves the consumer's mark for the zone's live incarnation up to `position` (marks never
    /// go down) and renews its lease when `leaseUntil` is given. Durable when it returns.
    public func advanceConsumer(_ name: String, zone: String, to position: SequenceNumber, leaseUntil: Int64? = nil) throws(JournalError) {
        consumerLock.lock()
        defer { consumerLock.unlock() }
        guard var state = consumer(name) else { throw JournalError.invalidEntry("no consumer named \(name): register it first") }
        let (incarnation, horizon) = try locked { () throws(JournalError) -> (SequenceNumber, SequenceNumber) in
            guard let t = catalog.live(zone) else { throw JournalError.zoneNotFound(zone) }
            return (catalog.tracks[t].incarnation, horizonLocked)
        }
        guard position <= horizon else { throw JournalError.invalidEntry("position \(position) is past the durable end \(horizon)") }
        if let i = state.marks.firstIndex(where: { $0.zone == zone && $0.incarnation == incarnation }) {
            state.marks[i].position = max(state.marks[i].position, position)
        } else {
            state.marks.removeAll { $0.zone == zone }
            state.marks.append(ConsumerState.Mark(zone: zone, incarnation: incarnation, position: position))
        }
        if let leaseUntil { state.leaseUntil = leaseUntil }
        try writeConsumer(state)
    }

    /// Removes the consumer named `name`; or, when no consumer has that name and it is the file
    /// name of a consumer file (`<key>.consumer`, as `problems` lists a damaged one), that file.
    public func removeConsumer(_ name: String) throws(JournalError) {
        consumerLock.lock()
        defer { consumerLock.unlock() }
        var file = JournalStore.consumerPath(store: path, name: name)
        if fs.kind(of: file) == .missing, let base = name.split(separator: "/").last, base.hasSuffix(".consumer"),
           !base.hasPrefix(".") {
            file = path + "/" + JournalStore.consumersDirectory + "/" + base
        }
        guard fs.kind(of: file) != .missing else { throw JournalError.invalidEntry("no consumer named \(name)") }
        try fs.remove(file)
        try fs.syncDirectory(parentDirectory(file))
    }

    /// The highest sequence of the zone incarnation every unexpired consumer has processed; nil
    /// when no consumer holds it. A consumer with no mark for the zone holds it at 0.
    package func consumerFloor(zone: String, incarnation: SequenceNumber, now: Int64) -> SequenceNumber? {
        let (all, problems) = consumers()
        return Self.consumerFloor(all, problems: problems, zone: zone, incarnation: incarnation, now: now)
    }

    /// The floor of these consumers (read by a writer, or from the files by a reader); any
    /// consumer file that cannot be read holds every zone at 0.
    package static func consumerFloor(_ all: [ConsumerState], problems: [some Any], zone: String, incarnation: SequenceNumber,
                                     now: Int64) -> SequenceNumber? {
        if !problems.isEmpty { return 0 }
        var floor: SequenceNumber?
        for c in all where !c.isExpired(now: now) {
            let p = c.marks.first { $0.zone == zone && $0.incarnation == incarnation }?.position ?? 0
            floor = min(floor ?? p, p)
        }
        return floor
    }

    private func writeConsumer(_ state: ConsumerState) throws(JournalError) {
        try locked { () throws(JournalError) in try checkWritableLocked() }
        // File names are a hash of the name: never overwrite another consumer's file.
        let file = JournalStore.consumerPath(store: path, name: state.name)
        if fs.kind(of: file) == .file, let bytes = try? AtomicFile.read(file, fs: fs, limit: ConsumerCodec.maxFileBytes),
           let other = try? bytes.withUnsafeBytes({ b throws(CodecError) in try ConsumerCodec.decode(b) }), other.name != state.name {
            throw JournalError.invalidEntry("consumer name \(state.name) collides with consumer \(other.name) (\(file)); choose another name")
        }
        try AtomicFile.write(ConsumerCodec.encode(state), to: JournalStore.consumerPath(store: path, name: state.name), fs: fs)
    }
}

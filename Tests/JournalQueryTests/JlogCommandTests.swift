import Foundation
import Testing
import JournalLog
import ListModel
@testable import JournalQuery

/// `jlog compact` and `jlog show --json` run as the operator runs them: the `jlog` binary built
/// beside this test bundle, on a store in a temporary directory (issue 21).
@Suite struct JlogCommandTests {
    typealias C = CompactorTests

    /// The `jlog` executable of the same build as these tests.
    static var jlog: String {
        get throws {
            let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let path = (me as NSString).deletingLastPathComponent + "/jlog"
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw CLIError("no jlog beside the tests at \(path): build every product (swift build --build-tests)")
            }
            return path
        }
    }

    struct CLIError: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }

    /// Runs jlog with `arguments`: its exit status, stdout and stderr.
    static func run(_ arguments: [String]) throws -> (status: Int32, out: [UInt8], err: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try jlog)
        p.arguments = arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // Read both before waiting: a large output would fill the pipe and stall the child.
        nonisolated(unsafe) var errBytes = Data()
        let drained = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            errBytes = err.fileHandleForReading.readDataToEndOfFile()
            drained.signal()
        }
        let outBytes = out.fileHandleForReading.readDataToEndOfFile()
        drained.wait()
        p.waitUntilExit()
        return (p.terminationStatus, Array(outBytes), String(decoding: errBytes, as: UTF8.self))
    }

    /// A fresh directory for one test's store.
    static func directory() throws -> String {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("jlog-cli-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    /// A store on disk holding the seven-entry list (COMPACTION.md §2's example), all older than
    /// the retention as of `C.later`, in segments of which all but the last are sealed.
    static func store(in dir: String) throws -> JournalStore {
        let s = try JournalStore.open(dir + "/s.wal", options: StoreOptions(durability: .always, segmentSize: 4_096, preallocate: false))
        for x in [C.e("e1", .add(item: C.milk, text: "Milk", after: nil), 1), C.e("e2", .add(item: C.bread, text: "Bread", after: C.milk), 2),
                  C.e("e3", .rename(name: "Weekly Shopping"), 3), C.e("e4", .recolour(colour: "yellow"), 4),
                  C.e("e5", .add(item: C.eggs, text: "Eggs", after: C.bread), 5), C.e("e6", .delete(item: C.bread), 6),
                  C.e("e7", .markOff(item: C.milk), 7), C.e("e8", .add(item: C.tea, text: "Tea", after: nil), 8)] {
            try s.append(x)
        }
        try C.seal(s)
        return s
    }

    /// Every file under `path` with its bytes (the LOCK file's too).
    static func files(_ path: String) throws -> [String: Data] {
        var out: [String: Data] = [:]
        let fm = FileManager.default
        guard let walk = fm.enumerator(atPath: path) else { return out }
        for case let name as String in walk {
            var isDirectory: ObjCBool = false
            let p = path + "/" + name
            if fm.fileExists(atPath: p, isDirectory: &isDirectory), !isDirectory.boolValue { out[name] = try Data(contentsOf: URL(fileURLWithPath: p)) }
        }
        return out
    }

    /// The writer stays open in this process, holding the store's lock, while `jlog compact
    /// --dry-run` runs in another: it reads, decides as the library does, and writes nothing.
    @Test func compactDryRunRunsBesideALiveWriterAndWritesNothing() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try Self.store(in: dir)
        defer { try? s.close() }
        let expected = try ListCompactor(query: ListQuery(store: s)).run(now: C.later, dryRun: true)
        let before = try Self.files(s.path)
        let r = try Self.run(["compact", s.path, "--dry-run", "--json", "--now", String(C.later)])
        #expect(r.status == 0, "\(r.err)")
        let chosen = expected.zones.first { $0.zone == C.zone }?.chosen ?? 0
        #expect(chosen > 0)
        #expect(String(decoding: r.out, as: UTF8.self).contains("\"zone\":\"\(C.zone)\",\"incarnation\":1,\"chosen\":\(chosen),"))
        #expect(try Self.files(s.path) == before)
    }

    /// `jlog inspect` reports the zone index's checkpoint; `jlog verify` notes one it cannot use
    /// and still says ok (the index is a cache: rebuilding it loses nothing).
    @Test func inspectReportsTheIndexAndVerifyNotesADamagedOne() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try Self.store(in: dir)
        try s.close()
        let inspected = try Self.run(["inspect", s.path, "--json"])
        #expect(inspected.status == 0, "\(inspected.err)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(inspected.out)) as? [String: Any])
        let index = try #require(object["index"] as? [String: Any])
        #expect(index["source"] as? String == "checkpoint")
        // A closed writer checkpointed everything: nothing is left to replay.
        #expect(index["checkpointSequence"] as? Int == object["lastSequence"] as? Int)
        #expect(index["recordsReplayed"] as? Int == 0)
        try Data("not an index".utf8).write(to: URL(fileURLWithPath: s.path + "/" + StoreLayout.indexFile))
        let verified = try Self.run(["verify", s.path])
        #expect(verified.status == 0, "\(verified.err)")
        let out = String(decoding: verified.out, as: UTF8.self)
        #expect(out.hasPrefix("ok: ") && out.contains("note: the zone index checkpoint (index/zones.idx) is not used: the checkpoint is damaged"), "\(out)")
    }

    /// `lastSequence` is the log's end (FORMAT.md §12.1): verify and inspect say what the last
    /// segment's own `lastSequence` says, seals and segment bases included, and `formatVersion`
    /// is the highest minor of the segment headers.
    @Test func verifyAndInspectReportTheLogsEnd() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try Self.store(in: dir)
        try s.close()
        let inspected = try #require(try JSONSerialization.jsonObject(with: Data(Self.run(["inspect", s.path, "--json"]).out)) as? [String: Any])
        let segments = try #require(inspected["segments"] as? [[String: Any]])
        let end = try #require(segments.last?["lastSequence"] as? Int)
        #expect(inspected["lastSequence"] as? Int == end)
        let verified = try #require(try JSONSerialization.jsonObject(with: Data(Self.run(["verify", s.path, "--json"]).out)) as? [String: Any])
        #expect(verified["lastSequence"] as? Int == end)
        let epochs = try #require(verified["epochs"] as? [String: Any])
        #expect(epochs["closedCleanly"] as? Bool == true)
        #expect(epochs["acknowledgedThrough"] as? Int != nil)
        #expect((inspected["formatVersion"] as? String)?.hasPrefix("1.") == true)
    }

    /// `verify --json` names a problem by its kind in the spec (FORMAT.md §9.1, §12.3).
    @Test func verifyNamesTheProblemsKind() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try Self.store(in: dir)
        try s.close()
        let first = s.path + "/" + (try FileManager.default.contentsOfDirectory(atPath: s.path).filter { $0.hasSuffix(".seg") }.sorted()[0])
        var bytes = try Data(contentsOf: URL(fileURLWithPath: first))
        bytes[80] ^= 0xFF   // inside the first frame
        try bytes.write(to: URL(fileURLWithPath: first))
        let r = try Self.run(["verify", s.path, "--json"])
        #expect(r.status == 2, "\(r.err)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.out)) as? [String: Any])
        let problem = try #require(object["problem"] as? [String: Any])
        #expect(["crcMismatch", "badPayload", "badLength", "lengthPastEOF"].contains(problem["kind"] as? String ?? ""), "\(problem)")
    }

    /// SYNC.md §6 and COMPACTION.md §5 rule 1: a device never compacts a list it syncs, so a
    /// store with sync state is refused, with the way out, and left as it was.
    @Test(arguments: [[], ["--dry-run"]])
    func compactRefusesAStoreThatSyncs(extra: [String]) throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try Self.store(in: dir)
        try s.close()
        try FileManager.default.createDirectory(atPath: s.path + "/sync", withIntermediateDirectories: true)
        // Its content is not read: a damaged state marks a store that syncs too.
        try Data("not decoded".utf8).write(to: URL(fileURLWithPath: s.path + "/sync/state"))
        let before = try Self.files(s.path)
        let r = try Self.run(["compact", s.path, "--now", String(C.later)] + extra)
        #expect(r.status == 3)
        #expect(r.err.contains("never compacts a list it syncs") && r.err.contains("jlog sync"), "\(r.err)")
        #expect(try Self.files(s.path) == before)
    }

    /// A store on disk holding `CompactorRefusalTests`' lists: one its reader refuses, one to compact.
    static func storeWithARefusedList(in dir: String) throws -> String {
        let s = try JournalStore.open(dir + "/s.wal", options: StoreOptions(durability: .always, segmentSize: 4_096, preallocate: false))
        try CompactorRefusalTests.fill(s, base: .undecodable)
        try s.close()
        return s.path
    }

    /// A list its reader refuses (COMPACTION.md §1.1, issue 46 item 9): `jlog compact --json`
    /// prints the whole report, naming the list among the skipped with its reason, and exits 0,
    /// run after run.
    @Test func compactJSONReportsAListItsReaderRefusesAndExitsZero() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.storeWithARefusedList(in: dir)
        for run in 1...2 {
            let r = try Self.run(["compact", path, "--json", "--now", String(C.later)])
            #expect(r.status == 0, "run \(run): \(r.err)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(r.out)) as? [String: Any])
            let skipped = try #require(object["skipped"] as? [[String: Any]])
            let refused = skipped.first { $0["zone"] as? String == CompactorRefusalTests.refused }
            #expect(refused?["reason"] as? String == "baseUnreadable" && refused?["detail"] is String, "run \(run): \(skipped)")
            if run == 1 { #expect((object["zones"] as? [[String: Any]])?.map { $0["zone"] as? String } == [C.zone]) }
        }
    }

    /// The text report names the refused list and what to do, and exits 0.
    @Test func compactTextReportsAListItsReaderRefusesAndExitsZero() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.storeWithARefusedList(in: dir)
        let r = try Self.run(["compact", path, "--now", String(C.later)])
        #expect(r.status == 0, "\(r.err)")
        let out = String(decoding: r.out, as: UTF8.self)
        #expect(out.contains("skipped \(CompactorRefusalTests.refused): its reader refuses the list") && out.contains("segments "), "\(out)")
    }

    /// A server's store is the server's to compact (it announces each compaction to the devices).
    @Test func compactRefusesAServersStore() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try Self.store(in: dir)
        try s.close()
        try FileManager.default.createDirectory(atPath: s.path + "/service", withIntermediateDirectories: true)
        let before = try Self.files(s.path)
        let r = try Self.run(["compact", s.path, "--now", String(C.later)])
        #expect(r.status == 3)
        #expect(r.err.contains("sync server's store"), "\(r.err)")
        #expect(try Self.files(s.path) == before)
    }

    /// `jlog show --json` is streamed (issue 21), byte for byte the object it printed whole: on a
    /// list large enough to take several 64 KiB chunks, with texts that need escaping.
    @Test func showJSONIsTheWholeObjectStreamed() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try JournalStore.open(dir + "/s.wal", options: StoreOptions(durability: .none, preallocate: false))
        var batch: [JournalEntry] = [C.e("n", .rename(name: "Café \"list\"\n"), 0)]
        var previous: CompactID? = nil
        for k in 0..<2_000 {
            let item = CompactID("item-\(k)")!
            batch.append(C.e("a\(k)", .add(item: item, text: "Thing \(k) \u{1}\\ ☕ \"q\"", after: previous), UInt64(k), author: k % 3 == 0 ? "bob" : "alice"))
            if k % 4 == 0 { batch.append(C.e("m\(k)", .markOff(item: item), UInt64(k) + 1)) }
            previous = item
        }
        _ = try s.append(batch: batch)
        try s.close()
        let m = try ListQuery(reader: try StoreReader.open(s.path)).materialise(C.zone)
        let r = try Self.run(["show", s.path, "--zone", C.zone, "--json"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.count > 3 * 65_536)
        #expect(String(decoding: r.out, as: UTF8.self) == Self.wholeShowJSON(m))
    }

    /// The form `jlog show --json` printed before it was streamed: one object, rendered whole.
    static func wholeShowJSON(_ m: MaterialisedList) -> String {
        func s(_ v: String) -> String { EntryJSON.jsonLiteral(v) }
        func t(_ ms: Int64) -> String { s(ISO8601Time.format(ms)) }
        let st = m.state
        let items = st.items.map { i in
            "{\"item\":\(s(i.id.description)),\"text\":\(s(i.text)),\"state\":\(s(i.state == .markedOff ? "markedOff" : "active")),"
                + "\"addedBy\":\(s(i.addedBy)),\"addedAt\":\(t(i.addedAt)),\"markedOffBy\":\(i.markedOffBy.map(s) ?? "null"),"
                + "\"markedOffAt\":\(i.markedOffAt.map(t) ?? "null")}"
        }
        let digest = String(st.digest, radix: 16)
        return "{\"zone\":\(s(m.zone)),\"incarnation\":\(m.incarnation),\"sequence\":\(m.sequence),\"name\":\(s(st.name)),"
            + "\"colour\":\(s(st.colour)),\"items\":[\(items.joined(separator: ","))],"
            + "\"participants\":[\(st.participants.map(s).joined(separator: ","))],"
            + "\"digest\":\"\(String(repeating: "0", count: 16 - digest.count) + digest)\"}\n"
    }
}

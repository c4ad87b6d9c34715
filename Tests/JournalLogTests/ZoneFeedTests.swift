import Foundation
import Testing
@testable import JournalLog

/// Zones, change tokens and the change feed (issue 3; Spec/TOKENS.md, Spec/INDEX.md).
@Suite struct ZoneFeedTests {
    static func entry(_ n: Int, zone: String = "List-a", id: String? = nil) -> JournalEntry {
        JournalEntry(id: CompactID(id ?? "e-\(zone)-\(n)")!, zone: zone, author: "alice", wallTime: 1_795_424_400_000 + Int64(n),
                     clock: HybridTime(physicalMillis: 1_795_424_400_000 + UInt64(n), counter: 0),
                     operation: .add(item: CompactID("item-\(n)")!, text: "thing \(n)", after: nil))
    }

    static func memoryStore(_ fs: MemoryFileSystem = MemoryFileSystem(), segmentSize: Int = 64 << 20,
                            checkpointBytes: Int = 16 << 20) throws -> (JournalStore, StoreOptions) {
        if fs.kind(of: "/d") == .missing { try fs.createDirectory("/d") }
        var options = StoreOptions(durability: .always, segmentSize: segmentSize, preallocate: false)
        options.fileSystem = fs
        options.indexCheckpointBytes = checkpointBytes
        return (try JournalStore.open("/d/s.wal", options: options), options)
    }

    /// Reads a zone's whole feed in pages of `limit`, checking every page made progress.
    static func drain(_ store: JournalStore, _ zone: String, from token: FeedToken? = nil, limit: Int) throws -> ([FeedEntry], FeedToken) {
        var token = token
        var all: [FeedEntry] = []
        for _ in 0..<100_000 {
            let page = try store.changes(in: zone, since: token, limit: limit)
            #expect(page.entries.count <= limit)
            all += page.entries
            token = page.token
            if !page.moreComing { return (all, page.token) }
            #expect(!page.entries.isEmpty, "a page with moreComing must make progress")
        }
        Issue.record("paging did not end")
        return (all, token!)
    }

    static func expectFeedError(_ body: () throws -> Void, _ check: (FeedError) -> Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("expected a feed error", sourceLocation: sourceLocation)
        } catch let e as FeedError {
            #expect(check(e), "unexpected answer: \(e)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected a FeedError, got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func pagingWithSmallLimitsGivesExactlyTheFullSequence() throws {
        let (store, _) = try Self.memoryStore(segmentSize: 2_048)
        var expected: [String: [SequenceNumber]] = [:]
        var n = 0
        for round in 0..<30 {
            if round % 3 == 0 {
                let batch = (0..<5).map { i in Self.entry(n + i, zone: ["List-a", "List-b"][i % 2]) }
                let r = try store.append(batch: batch)
                for (s, e) in zip(r, batch) { expected[e.zone, default: []].append(s) }
                n += 5
            } else {
                let e = Self.entry(n, zone: ["List-a", "List-b", "List-c"][round % 3])
                expected[e.zone, default: []].append(try store.append(e))
                n += 1
            }
        }
        for zone in ["List-a", "List-b", "List-c"] {
            for limit in [1, 2, 3, 7, 1_000] {
                let (got, _) = try Self.drain(store, zone, limit: limit)
                #expect(got.map(\.sequence) == expected[zone], "zone \(zone), limit \(limit)")
                #expect(got.allSatisfy { $0.entry.zone == zone })
            }
        }
    }

    @Test func aTokenContinuesWithOnlyTheNewEntries() throws {
        let (store, _) = try Self.memoryStore()
        for i in 0..<5 { try store.append(Self.entry(i)) }
        let (first, token) = try Self.drain(store, "List-a", limit: 2)
        #expect(first.count == 5)
        let empty = try store.changes(in: "List-a", since: token)
        #expect(empty.entries.isEmpty && !empty.moreComing)
        let s = try store.append(Self.entry(5))
        let next = try store.changes(in: "List-a", since: empty.token)
        #expect(next.entries.map(\.sequence) == [s])
    }

    @Test func tokensSurviveARestart() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try Self.memoryStore(fs)
        for i in 0..<4 { try store.append(Self.entry(i)) }
        let token = try store.changes(in: "List-a", since: nil).token
        let dbToken = try store.changedZones(since: nil).token
        try store.close()
        store = try JournalStore.open("/d/s.wal", options: options)
        let s = try store.append(Self.entry(4))
        #expect(try store.changes(in: "List-a", since: token).entries.map(\.sequence) == [s])
        #expect(try store.changedZones(since: dbToken).changed.map(\.name) == ["List-a"])
        try store.close()
    }

    @Test func aTokenFromAnotherStoreIsRejected() throws {
        let (a, _) = try Self.memoryStore()
        let (b, _) = try Self.memoryStore()
        try a.append(Self.entry(1))
        try b.append(Self.entry(1))
        let token = try a.changes(in: "List-a", since: nil).token
        Self.expectFeedError({ _ = try b.changes(in: "List-a", since: token) }) {
            if case .invalidToken = $0 { return true }
            return false
        }
    }

    @Test func aTokenForAnotherZoneIsRejected() throws {
        let (store, _) = try Self.memoryStore()
        try store.append(Self.entry(1, zone: "List-a"))
        try store.append(Self.entry(2, zone: "List-b"))
        let token = try store.changes(in: "List-a", since: nil).token
        Self.expectFeedError({ _ = try store.changes(in: "List-b", since: token) }) {
            if case .invalidToken(let why) = $0 { return why.contains("another zone") }
            return false
        }
    }

    @Test func aDatabaseTokenIsNotAZoneToken() throws {
        let (store, _) = try Self.memoryStore()
        try store.append(Self.entry(1))
        let db = try store.changedZones(since: nil).token
        Self.expectFeedError({ _ = try store.changes(in: "List-a", since: db) }) {
            if case .invalidToken = $0 { return true }
            return false
        }
        let zone = try store.changes(in: "List-a", since: nil).token
        Self.expectFeedError({ _ = try store.changedZones(since: zone) }) {
            if case .invalidToken = $0 { return true }
            return false
        }
    }

    @Test func everyCorruptionOfATokenIsAnError() throws {
        let (store, _) = try Self.memoryStore()
        try store.append(Self.entry(1))
        let token = try store.changes(in: "List-a", since: nil).token.text
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var bad: [String] = ["", "jlt1.", "garbage", String(token.dropLast()), token + "A", String(repeating: "x", count: 5_000)]
        let chars = Array(token)
        for i in ChangeToken.prefix.count..<chars.count {
            var c = chars
            c[i] = alphabet[(alphabet.firstIndex(of: c[i])! + 1) % alphabet.count]
            bad.append(String(c))
        }
        for text in bad {
            Self.expectFeedError({ _ = try store.changes(in: "List-a", since: FeedToken(text)) }) {
                if case .invalidToken = $0 { return true }
                return false
            }
        }
    }

    @Test func aTokenAheadOfTheStoreIsRejected() throws {
        let (store, _) = try Self.memoryStore()
        try store.append(Self.entry(1))
        let token = ChangeToken(kind: .zone, storeID: store.idPair, incarnation: 1,
                                zoneHash: ChangeToken.zoneHash("List-a", key: store.storeKey), position: 99, epoch: store.recovery.epoch)
        Self.expectFeedError({ _ = try store.changes(in: "List-a", since: FeedToken(token.text(key: store.storeKey))) }) {
            if case .invalidToken(let why) = $0 { return why.contains("ahead") }
            return false
        }
    }

    @Test func theSameEntryAppendedTwiceIsStoredOnce() throws {
        let (store, _) = try Self.memoryStore()
        let e = Self.entry(1)
        let first = try store.append(e)
        #expect(try store.append(e) == first)
        #expect(try store.append(batch: [e, Self.entry(2)]) == 2...2)
        #expect(try store.append(batch: [e, Self.entry(2)]) == 1...2)
        #expect(try store.changes(in: "List-a", since: nil).entries.map(\.sequence) == [1, 2])
        #expect(store.nextSequence == 3)
    }

    @Test func duplicatesInsideOneBatchAreStoredOnce() throws {
        let (store, _) = try Self.memoryStore()
        let e = Self.entry(1)
        #expect(try store.append(batch: [e, Self.entry(2), e]) == 1...2)
        #expect(try store.changes(in: "List-a", since: nil).entries.count == 2)
    }

    @Test func theSameEntryImportedAfterARestartAndARolloverIsStoredOnce() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try Self.memoryStore(fs, segmentSize: 1_024)
        let entries = (0..<60).map { Self.entry($0) }
        for e in entries { try store.append(e) }
        try store.close()
        store = try JournalStore.open("/d/s.wal", options: options)
        #expect(try StoreLayout.segmentPaths("/d/s.wal", fs: fs).count > 3)
        for (i, e) in entries.enumerated() { #expect(try store.append(e) == SequenceNumber(i + 1)) }
        #expect(try store.append(batch: Array(entries[10..<20])) == 11...20)
        #expect(store.nextSequence == 61)
        try store.close()
    }

    @Test func theSameIDInAnotherZoneIsAnotherEntry() throws {
        let (store, _) = try Self.memoryStore()
        #expect(try store.append(Self.entry(1, zone: "List-a", id: "same")) == 1)
        #expect(try store.append(Self.entry(1, zone: "List-b", id: "same")) == 2)
    }

    @Test func deletingAZoneAnswersZoneDeletedAndStopsServingIt() throws {
        let (store, _) = try Self.memoryStore()
        try store.append(Self.entry(1))
        let token = try store.changes(in: "List-a", since: nil).token
        let at = try store.deleteZone("List-a")
        for t in [token, nil] {
            Self.expectFeedError({ _ = try store.changes(in: "List-a", since: t) }) {
                if case .zoneDeleted(let z, let s, .deleted) = $0 { return z == "List-a" && s == at }
                return false
            }
        }
        #expect(throws: JournalError.self) { try store.append(Self.entry(2)) }
        #expect(store.zone("List-a")?.isDeleted == true)
    }

    @Test func aRecreatedZoneIsANewIncarnationThatOldTokensNeverReach() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try Self.memoryStore(fs)
        try store.append(Self.entry(1))
        let old = try store.changes(in: "List-a", since: nil).token
        try store.deleteZone("List-a")
        let incarnation = try store.createZone("List-a")
        let s = try store.append(Self.entry(1))  // same id: the new incarnation does not hold it
        #expect(s > incarnation)
        #expect(try store.changes(in: "List-a", since: nil).entries.map(\.sequence) == [s])
        try store.close()
        store = try JournalStore.open("/d/s.wal", options: options)
        Self.expectFeedError({ _ = try store.changes(in: "List-a", since: old) }) {
            if case .zoneDeleted = $0 { return true }
            return false
        }
        #expect(store.zone("List-a")?.incarnation == incarnation)
        #expect(try store.changes(in: "List-a", since: nil).entries.map(\.sequence) == [s])
        try store.close()
    }

    @Test func aTokenBelowTheLowWaterMarkGetsTokenExpired() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try Self.memoryStore(fs)
        for i in 0..<5 { try store.append(Self.entry(i)) }
        let old = try store.changes(in: "List-a", since: nil, limit: 2).token  // position 2
        try store.setLowWaterMark("List-a", to: 4)
        let check: (FeedError) -> Bool = {
            if case .tokenExpired(let z, 4, let r) = $0 { return z == "List-a" && r.incarnation == 1 }
            return false
        }
        Self.expectFeedError({ _ = try store.changes(in: "List-a", since: old) }, check)
        try store.close()
        store = try JournalStore.open("/d/s.wal", options: options)
        Self.expectFeedError({ _ = try store.changes(in: "List-a", since: old) }, check)
        // A nil token (the re-fetch) still reads what remains; a fresh token is served normally.
        let (all, fresh) = try Self.drain(store, "List-a", limit: 2)
        #expect(all.count == 5)
        #expect(try store.changes(in: "List-a", since: fresh).entries.isEmpty)
        try store.close()
    }

    @Test func changedZonesListsChangedAndDeletedZonesSinceTheToken() throws {
        let (store, _) = try Self.memoryStore()
        try store.append(Self.entry(1, zone: "List-a"))
        try store.append(Self.entry(2, zone: "List-b"))
        try store.append(Self.entry(3, zone: "List-c"))
        let all = try store.changedZones(since: nil)
        #expect(all.changed.map(\.name) == ["List-a", "List-b", "List-c"])
        #expect(all.deleted.isEmpty)
        try store.append(Self.entry(4, zone: "List-b"))
        try store.deleteZone("List-c")
        let since = try store.changedZones(since: all.token)
        #expect(since.changed.map(\.name) == ["List-b"])
        #expect(since.deleted.map(\.name) == ["List-c"])
        let none = try store.changedZones(since: since.token)
        #expect(none.changed.isEmpty && none.deleted.isEmpty)
    }

    @Test func theFeedNeverPassesAnAppendThatIsNotDurable() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        var options = StoreOptions(durability: .onBatch, preallocate: false)
        options.fileSystem = fs
        let store = try JournalStore.open("/d/s.wal", options: options)
        try store.append(Self.entry(1), durability: .always)
        let page = try store.changes(in: "List-a", since: nil)
        try store.append(Self.entry(2))  // written, not yet synced
        #expect(try store.changes(in: "List-a", since: page.token).entries.isEmpty)
        #expect(try store.changedZones(since: nil).token == store.changedZones(since: nil).token)
        try store.sync()
        #expect(try store.changes(in: "List-a", since: page.token).entries.map(\.sequence) == [2])
        try store.close()
    }

    // MARK: The index

    static func feedSnapshot(_ store: JournalStore) throws -> [String: [SequenceNumber]] {
        var out: [String: [SequenceNumber]] = [:]
        for z in store.zones() where !z.isDeleted {
            out[z.name] = try drain(store, z.name, limit: 1_000).0.map(\.sequence)
        }
        return out
    }

    @Test func openUsesTheCheckpointAndReplaysOnlyTheTail() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try Self.memoryStore(fs)
        for i in 0..<20 { try store.append(Self.entry(i, zone: "List-\(i % 3)")) }
        try store.close()
        store = try JournalStore.open("/d/s.wal", options: options)
        #expect(store.recovery.indexSource == .checkpoint)
        #expect(store.recovery.indexRecordsReplayed == 0)
        let expected = try Self.feedSnapshot(store)
        #expect(expected.values.reduce(0) { $0 + $1.count } == 20)
        try store.close()
    }

    @Test func aDamagedCheckpointIsRebuiltFromTheLog() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try Self.memoryStore(fs)
        for i in 0..<20 { try store.append(Self.entry(i, zone: "List-\(i % 3)")) }
        let expected = try Self.feedSnapshot(store)
        try store.close()
        var bytes = try #require(fs.contents("/d/s.wal/index/zones.idx"))
        bytes[bytes.count / 2] ^= 0x40
        fs.install("/d/s.wal/index/zones.idx", bytes: bytes)
        store = try JournalStore.open("/d/s.wal", options: options)
        guard case .rebuilt(let why) = store.recovery.indexSource else { Issue.record("expected a rebuild"); return }
        #expect(why.contains("damaged"))
        #expect(try Self.feedSnapshot(store) == expected)
        try store.close()
    }

    @Test func aCheckpointCoveringRecordsRecoveryCutOffIsRebuilt() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try Self.memoryStore(fs)
        for i in 0..<10 { try store.append(Self.entry(i)) }
        try store.close()
        let seg = "/d/s.wal/" + SegmentName(base: 1).fileName
        var bytes = try #require(fs.contents(seg))
        bytes.removeLast(3)  // a torn last record: recovery cuts it, the checkpoint covered it
        fs.install(seg, bytes: bytes)
        try asIfTheWriterCrashed("/d/s.wal", fs: fs)
        store = try JournalStore.open("/d/s.wal", options: options)
        #expect(store.recovery.indexSource != .checkpoint)
        #expect(try Self.drain(store, "List-a", limit: 3).0.map(\.sequence) == Array(1...9))
        #expect(try store.append(Self.entry(9)) == 10)
        try store.close()
    }

    @Test func aCrashPartwayThroughWritingTheCheckpointIsRecovered() throws {
        // Fail every I/O call in turn while the checkpoint is written on close, lose power, reopen.
        for failOn in 1...8 {
            for crash in [MemoryFileSystem.CrashMode.dropUnsynced, .tearLastWrite(seed: UInt64(failOn)), .garbleLastWrite(seed: UInt64(failOn))] {
                let fs = MemoryFileSystem()
                var (store, options) = try Self.memoryStore(fs)
                for i in 0..<12 { try store.append(Self.entry(i, zone: "List-\(i % 2)")) }
                try store.close()
                store = try JournalStore.open("/d/s.wal", options: options)
                for i in 12..<30 { try store.append(Self.entry(i, zone: "List-\(i % 2)")) }
                let expected = try Self.feedSnapshot(store)
                fs.setFaults(.init(failOnCall: failOn))
                try? store.close()
                fs.crash(crash)
                fs.setFaults(.init())
                store = try JournalStore.open("/d/s.wal", options: options)
                #expect(try Self.feedSnapshot(store) == expected, "fault on call \(failOn), \(crash)")
                try store.close()
            }
        }
    }

    @Test func theCheckpointCodecRoundTripsAndRejectsDamage() throws {
        var z = ZoneTrack(name: "List-a", incarnation: 3, isImplicit: true)
        z.frameSequences = [3, 4, 9, 200]
        z.frameLocations = [64, 100, 1 << 32 | 64, 1 << 32 | 900]
        z.entryCount = 7
        z.lowWaterMark = 5
        var d = ZoneTrack(name: "List-b", incarnation: 1, isImplicit: false)
        d.deletedAt = 2
        d.deletionReason = .purged
        let c = ZoneIndexCheckpoint(storeID: (1, 2), coveredSegment: 150, coveredOffset: 900, coveredCRC: 0xDEAD_BEEF,
                                    coveredSequence: 200, segments: [1, 150], zones: [d, z])
        let bytes = ZoneIndexCodec.encode(c)
        #expect(try bytes.withUnsafeBytes { try ZoneIndexCodec.decode($0) } == c)
        for i in 0..<bytes.count {
            var b = bytes
            b[i] ^= 0x01
            #expect(throws: ZoneIndexCodec.DecodeError.self) { try b.withUnsafeBytes { try ZoneIndexCodec.decode($0) } }
        }
        for n in 0..<bytes.count {
            #expect(throws: ZoneIndexCodec.DecodeError.self) { try Array(bytes.prefix(n)).withUnsafeBytes { try ZoneIndexCodec.decode($0) } }
        }
    }
}

import PropertyBased
import JournalTesting

/// Random interleavings of appends (single, batch, duplicate), zone deletions and re-creations,
/// restarts and paged feed reads, checked against a plain model of what each zone holds.
@Suite struct ZoneFeedPropertyTests {
    final class Model {
        /// Zone to its live entries (sequence, id), or nil while deleted.
        var live: [String: [(SequenceNumber, CompactID)]] = [:]
        var everCreated: Set<String> = []
        /// One reader per zone: its token and how many of the live entries it has seen.
        var readers: [String: (token: FeedToken?, seen: Int)] = [:]
        /// Every entry appended, by id: what a retry sends again.
        var sent: [CompactID: JournalEntry] = [:]
        var n = 0
    }

    static let zones = ["List-a", "List-b", "List-c"]

    static func run(_ ops: [Int]) throws {
        let fs = MemoryFileSystem()
        var (store, options) = try ZoneFeedTests.memoryStore(fs, segmentSize: 1_024, checkpointBytes: 2_000)
        let m = Model()
        func fresh(_ zone: String) -> JournalEntry {
            m.n += 1
            let e = ZoneFeedTests.entry(m.n, zone: zone)
            m.sent[e.id] = e
            return e
        }
        for op in ops {
            let zone = zones[(op / 10) % zones.count]
            switch op % 10 {
            case 0, 1, 2:
                if m.everCreated.contains(zone) && m.live[zone] == nil {
                    #expect(throws: JournalError.self) { try store.append(fresh(zone)) }
                    continue
                }
                let e = fresh(zone)
                let s = try store.append(e)
                m.everCreated.insert(zone)
                m.live[zone, default: []].append((s, e.id))
            case 3:
                let batch = (0..<(2 + op % 3)).map { i in fresh(zones[(op / 10 + i) % zones.count]) }
                    .filter { !(m.everCreated.contains($0.zone) && m.live[$0.zone] == nil) }
                guard batch.count >= 2 else { continue }
                let r = try store.append(batch: batch)
                for (s, e) in zip(r, batch) {
                    m.everCreated.insert(e.zone)
                    m.live[e.zone, default: []].append((s, e.id))
                }
            case 4:
                if m.live[zone] != nil {
                    try store.deleteZone(zone)
                    m.live[zone] = nil
                } else if m.everCreated.contains(zone) {
                    try store.createZone(zone)
                    m.live[zone] = []
                }
            case 5:
                // A retry: an entry the zone already holds comes back with its sequence. The same
                // id with other content is a conflict, and changes nothing.
                guard let held = m.live[zone], let (s, id) = held.last else { continue }
                let before = store.nextSequence
                #expect(try store.append(m.sent[id]!) == s)
                let other = JournalEntry(id: id, zone: zone, author: "alice", wallTime: 0, clock: HybridTime(rawValue: 0),
                                         operation: .rename(name: "retry"))
                #expect(throws: JournalError.self) { try store.append(other) }
                #expect(store.nextSequence == before)
            case 6:
                try store.close()
                store = try JournalStore.open("/d/s.wal", options: options)
            default:
                var reader = m.readers[zone] ?? (nil, 0)
                do {
                    let page = try store.changes(in: zone, since: reader.token, limit: 1 + op % 3)
                    let held = m.live[zone] ?? []
                    let want = Array(held.dropFirst(reader.seen).prefix(1 + op % 3))
                    #expect(page.entries.map(\.sequence) == want.map(\.0))
                    #expect(page.entries.map(\.entry.id) == want.map(\.1))
                    #expect(page.moreComing == (reader.seen + want.count < held.count))
                    reader = (page.token, reader.seen + want.count)
                } catch {
                    switch error {
                    case .zoneDeleted:
                        // Right when the zone is deleted now, or was re-created since the token.
                        #expect(m.live[zone] == nil || reader.token != nil)
                    case .zoneNotFound: #expect(!m.everCreated.contains(zone))
                    default: Issue.record("unexpected \(error)")
                    }
                    reader = (nil, 0)
                }
                m.readers[zone] = reader
            }
            if op % 10 == 4 { m.readers[zone] = nil }
        }
        try store.close()
        store = try JournalStore.open("/d/s.wal", options: options)
        for zone in zones {
            guard let held = m.live[zone] else { continue }
            let (got, _) = try ZoneFeedTests.drain(store, zone, limit: 2)
            #expect(got.map(\.sequence) == held.map(\.0))
        }
        try store.close()
    }

    @Test func randomInterleavingsMatchTheModel() async {
        await propertyCheck(count: 150, input: Gen.int(in: 0...99).array(of: 1...80)) { ops in
            #expect(throws: Never.self) { try Self.run(ops) }
        }
    }
}

/// Spec/vectors for the zone records, change tokens and the zone-index checkpoint. Regenerate with
/// JOURNALLOG_WRITE_VECTORS=1 only together with the spec change that explains the new bytes.
@Suite struct ZoneVectorTests {
    typealias V = SpecVectorTests

    @Test func zoneRecordVectorsMatch() throws {
        let create = ZoneRecordCodec.encodeCreate(zone: "List-db6a6e29")
        let delete = ZoneRecordCodec.encodeDelete(zone: "List-db6a6e29", reason: .purged)
        let mark = LowWaterCodec.encode(zone: "List-db6a6e29", incarnation: 7, mark: 1_000)
        let reach = LowWaterCodec.encode(zone: "List-db6a6e29", incarnation: 7, mark: 1_000, history: 1_010)
        if V.writing {
            try V.write("zone-records.txt", header: "Zone record payloads (FORMAT.md §5.3, §5.4, §5.6).",
                        blocks: [[("record", "zoneCreate"), ("zone", "List-db6a6e29"), ("payload", V.hex(create))],
                                 [("record", "zoneDelete"), ("zone", "List-db6a6e29"), ("reason", "1 (purged)"), ("payload", V.hex(delete))],
                                 [("record", "lowWaterMark (type 0x81)"), ("zone", "List-db6a6e29"), ("incarnation", "7"), ("mark", "1000"),
                                  ("payload", V.hex(mark))],
                                 [("record", "lowWaterMark (type 0x81) with history (segment minor 3)"), ("zone", "List-db6a6e29"),
                                  ("incarnation", "7"), ("mark", "1000"), ("history", "1010"), ("payload", V.hex(reach))]])
        }
        let b = try V.blocks("zone-records.txt")
        #expect(b.map { $0["payload"]! } == [V.hex(create), V.hex(delete), V.hex(mark), V.hex(reach)])
        let m = try V.bytes(b[2]["payload"]!).withUnsafeBytes { try LowWaterCodec.decode($0) }
        #expect(m.zone == "List-db6a6e29" && m.incarnation == 7 && m.mark == 1_000 && m.history == 0, "without the field: history 0")
        let r = try V.bytes(b[3]["payload"]!).withUnsafeBytes { try LowWaterCodec.decode($0) }
        #expect(r.zone == "List-db6a6e29" && r.incarnation == 7 && r.mark == 1_000 && r.history == 1_010)
    }

    @Test func tokenVectorMatches() throws {
        let key: (UInt64, UInt64) = (0x0706_0504_0302_0100, 0x0F0E_0D0C_0B0A_0908)
        let token = ChangeToken(kind: .zone, storeID: (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210), incarnation: 7,
                                zoneHash: ChangeToken.zoneHash("List-db6a6e29", key: key), position: 42, floor: 5,
                                epoch: 0x1122_3344_5566_7788)
        let common: [(String, String)] = [
            ("kind", "zone"), ("storeID", "0123456789abcdef fedcba9876543210 (two u64, written little-endian: bytes efcdab89674523011032547698badcfe)"),
            ("incarnation", "7"), ("zone", "List-db6a6e29"), ("zoneHash", String(token.zoneHash, radix: 16)), ("position", "42"), ("floor", "5"),
            ("epoch", "1122334455667788")]
        let v3 = token.encodedV3(key: key)
        if V.writing {
            try V.write("tokens.txt", header: "A zone change token (TOKENS.md §4–5) under key 000102…0f: as version 4 writes it (what a store issues), then as version 3 wrote it (still read).",
                        blocks: [common + [("version", "4"), ("macInput", V.hex(Self.v4MACInput(token, key: key))),
                                           ("binary", V.hex(token.encoded(key: key))), ("text", token.text(key: key))],
                                 common + [("version", "3"), ("binary", V.hex(v3)), ("text", "jlt3." + Base64URL.encode(v3))]])
        }
        let blocks = try V.blocks("tokens.txt")
        #expect(blocks[0]["binary"] == V.hex(token.encoded(key: key)))
        #expect(blocks[0]["macInput"] == V.hex(Self.v4MACInput(token, key: key)))
        #expect(blocks[1]["binary"] == V.hex(v3))
        for b in blocks {
            #expect(try ChangeToken.parse(b["text"]!, key: key, storeID: token.storeID, zoneHash: token.zoneHash) == token)
        }
    }

    /// What a version 4 token's MAC is computed over: its bytes before the MAC, the store's id
    /// and the zone's hash (TOKENS.md §4).
    static func v4MACInput(_ token: ChangeToken, key: (UInt64, UInt64)) -> [UInt8] {
        var out = Array(token.encoded(key: key).dropLast(8))
        for v in [token.storeID.0, token.storeID.1, token.zoneHash] { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        return out
    }

    @Test func epochsVectorMatches() throws {
        let record = EpochRecord(storeID: (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210), acknowledgedThrough: 120, activeSegment: 101,
                                 closedCleanly: true, epochs: [.init(id: 0x1122_3344_5566_7788, start: 1), .init(id: 0x99AA_BBCC_DDEE_FF00, start: 81)])
        let bytes = EpochCodec.encode(record)
        if V.writing {
            try V.write("epochs.txt", header: "An EPOCHS file (TOKENS.md §7): two epochs, the second begun at 81; acknowledged through 120, appending to segment 101, closed cleanly.",
                        blocks: [[("file", V.hex(bytes))]])
        }
        #expect(try V.blocks("epochs.txt")[0]["file"] == V.hex(bytes))
        #expect(try EpochCodec.decode(bytes) == record)
        #expect(record.refusal(epoch: 0x1122_3344_5566_7788, position: 80) == nil)
        #expect(record.refusal(epoch: 0x1122_3344_5566_7788, position: 81) != nil)
        #expect(record.refusal(epoch: 0x99AA_BBCC_DDEE_FF00, position: 500) == nil)
        #expect(record.refusal(epoch: 7, position: 1) != nil)
    }

    @Test func zoneIndexVectorMatches() throws {
        let c = FuzzChecks.journalBase
        let bytes = ZoneIndexCodec.encode(c)
        if V.writing {
            try V.write("zone-index.txt", header: "A zone index checkpoint (INDEX.md §4), store ID (1, 2): List-a (implicit, mark 4, history reach 9, frames at 1:64, 4:130, 9:64 in segment 9) and List-b (deleted at 3).",
                        blocks: [[("file", V.hex(bytes))]])
        }
        #expect(try V.blocks("zone-index.txt")[0]["file"] == V.hex(bytes))
        #expect(try bytes.withUnsafeBytes { try ZoneIndexCodec.decode($0) } == c)
    }

    /// The vector checkpoint above, then one journal record (INDEX.md §5): List-a gains a frame at
    /// 11 in a new segment 11, and List-c begins at 12.
    @Test func zoneIndexJournalVectorMatches() throws {
        let c = FuzzChecks.journalBase
        var next = c
        next.segments.append(11)
        next.coveredSegment = 11
        next.coveredOffset = 90
        next.coveredCRC = 0x9ABC_DEF0
        next.coveredSequence = 12
        next.zones[0].frameSequences.append(11)
        next.zones[0].frameLocations.append(2 << 32 | 64)
        next.zones[0].entryCount = 6
        next.zones[0].lastSequence = 11
        next.zones[0].historyThrough = 11
        var added = ZoneTrack(name: "List-c", incarnation: 12, isImplicit: true)
        added.frameSequences = [12]
        added.frameLocations = [2 << 32 | 90]
        added.entryCount = 1
        added.lastSequence = 12
        next.zones.append(added)
        let file = ZoneIndexCodec.encode(c)
        let header = ZoneIndexJournalCodec.header(extending: c, baseCRC: ZoneIndexJournalCodec.fileCRC(file))
        let record = try #require(ZoneIndexJournalCodec.record(from: c, to: next))
        if V.writing {
            try V.write("zone-index-journal.txt", header: "An index journal (INDEX.md §5) extending the checkpoint of zone-index.txt: one record covering sequence 12 at 11:90 (CRC 9abcdef0); List-a gains a frame at 11 in the new segment 11 (ordinal 2, offset 64; 6 entries, last 11, history reach 11) and List-c begins at 12 (implicit, one entry, frame at 11:90).",
                        blocks: [[("file", V.hex(file)), ("header", V.hex(header)), ("record", V.hex(record))]])
        }
        let b = try V.blocks("zone-index-journal.txt")[0]
        #expect(b["file"] == V.hex(file) && b["header"] == V.hex(header) && b["record"] == V.hex(record))
        let applied = (header + record).withUnsafeBytes { ZoneIndexJournalCodec.apply($0, to: c, baseCRC: ZoneIndexJournalCodec.fileCRC(file)) }
        #expect(applied.records == 1 && applied.checkpoint == next)
    }
}

extension ZoneVectorTests {
    @Test func aDerivedIDDependsOnlyOnTheEntrysContent() throws {
        let line = #"{"zone":"List-db6a6e29","op":"add","item":"milk","text":"Milk","after":null,"by":"alice","at":"2026-11-22T09:00:00.000Z","hlc":"1795338000000:0"}"#
        let p = try EntryJSON.parse(line: line)
        var e = JournalEntry(id: CompactID("x")!, zone: p.zone, author: p.author, wallTime: p.wallTime, clock: p.clock!, operation: p.operation)
        let id = CompactID.derived(from: e)
        e.id = CompactID("something else")!
        #expect(CompactID.derived(from: e) == id, "the id field itself does not count")
        var other = e
        other.author = "bob"
        #expect(CompactID.derived(from: other) != id)
        if V.writing {
            try V.write("derived-id.txt", header: "An id derived for a JSON line without one (FORMAT.md §7, CompactID.derived).",
                        blocks: [[("line", line), ("id", id.description)]])
        }
        #expect(try V.blocks("derived-id.txt")[0]["id"] == id.description)
    }
}

/// The id index behind idempotent appends agrees with a Dictionary through inserts, updates and
/// removals (backward-shift deletion), for UUID and text ids alike.
@Suite struct IDIndexTests {
    /// What both maps are asked: a lookup, a set and a removal by id, and a count.
    protocol Map {
        init()
        subscript(id: CompactID) -> SequenceNumber? { get set }
        var count: Int { get }
    }

    @Test(arguments: [false, true])
    func agreesWithADictionaryUnderRandomOperations(sharded: Bool) {
        if sharded { check(ShardedIDMap<SequenceNumber>()) } else { check(IDMap<SequenceNumber>()) }
    }

    func check<M: Map>(_ empty: M) {
        var rng = SplitMix64(seed: 42)
        var index = empty
        var model: [CompactID: SequenceNumber] = [:]
        let pool = (0..<600).map { i in i % 7 == 0 ? CompactID("text-\(i)")! : CompactID.random(using: &rng) }
        for step in 0..<20_000 {
            let id = pool[Int(rng.next() % UInt64(pool.count))]
            if rng.next() % 3 == 0 {
                index[id] = nil
                model[id] = nil
            } else {
                let s = SequenceNumber(step + 1)
                index[id] = s
                model[id] = s
            }
            if step % 997 == 0 {
                for p in pool { #expect(index[p] == model[p]) }
                #expect(index.count == model.count)
            }
        }
        for p in pool { #expect(index[p] == model[p]) }
    }
}

extension IDMap: IDIndexTests.Map where Value == SequenceNumber {}
extension ShardedIDMap: IDIndexTests.Map where Value == SequenceNumber {}

/// Regressions found in review: each was reproduced before its fix.
@Suite struct ZoneFeedRegressionTests {
    @Test func aBatchRefusedForADeletedZoneLeavesNoIDBehind() throws {
        let (store, _) = try ZoneFeedTests.memoryStore()
        try store.append(ZoneFeedTests.entry(0, zone: "List-a"))
        try store.append(ZoneFeedTests.entry(0, zone: "List-b"))
        try store.deleteZone("List-b")
        let x = ZoneFeedTests.entry(1, zone: "List-a")
        #expect(throws: JournalError.self) { try store.append(batch: [x, ZoneFeedTests.entry(2, zone: "List-b")]) }
        let s = try store.append(x)
        #expect(try store.changes(in: "List-a", since: nil).entries.map(\.sequence).contains(s))
        #expect(s == store.nextSequence - 1, "x was stored, not acknowledged at a sequence never written")
    }

    @Test func aLowWaterMarkIsWrittenAndSyncedByItsOwnCall() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try ZoneFeedTests.memoryStore(fs)
        for i in 0..<5 { try store.append(ZoneFeedTests.entry(i)) }
        let seg = "/d/s.wal/" + SegmentName(base: 1).fileName
        let before = try #require(fs.contents(seg)).count
        try store.setLowWaterMark("List-a", to: 4)
        #expect(try #require(fs.contents(seg)).count > before)
        fs.crash(.dropUnsynced)
        store = try JournalStore.open("/d/s.wal", options: options)
        #expect(store.zone("List-a")?.lowWaterMark == 4)
        try store.close()
        fs.install("/d/s.wal/index/zones.idx", bytes: [0])  // force a rebuild from the log alone
        store = try JournalStore.open("/d/s.wal", options: options)
        #expect(store.zone("List-a")?.lowWaterMark == 4)
        try store.close()
    }

    @Test func aSkippableRecordIsWrittenByItsOwnCall() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try ZoneFeedTests.memoryStore(fs)
        try store.append(ZoneFeedTests.entry(0))
        try store.appendRecord(type: 0x85, payload: [1, 2, 3], consuming: 0, durability: .always)
        fs.crash(.dropUnsynced)
        store = try JournalStore.open("/d/s.wal", options: options)
        var skipped = 0
        _ = try LogReader.read("/d/s.wal", fs: fs) { event, _ in if case .skipped(0x85, _) = event { skipped += 1 } }
        #expect(skipped == 1)
        try store.close()
    }

    @Test func anInconsistentCheckpointIsRebuiltNotTrusted() throws {
        let fs = MemoryFileSystem()
        var (store, options) = try ZoneFeedTests.memoryStore(fs, segmentSize: 1_024)
        for i in 0..<3 { try store.append(ZoneFeedTests.entry(i)) }
        try store.close()
        var c = try #require(fs.contents("/d/s.wal/index/zones.idx")).withUnsafeBytes { try ZoneIndexCodec.decode($0) }
        c.segments.append(c.segments.last! + 1_000_000)
        fs.install("/d/s.wal/index/zones.idx", bytes: ZoneIndexCodec.encode(c))
        store = try JournalStore.open("/d/s.wal", options: options)
        guard case .rebuilt(let why) = store.recovery.indexSource else { Issue.record("trusted an inconsistent checkpoint"); return }
        #expect(why.contains("inconsistent"))
        for i in 3..<60 { try store.append(ZoneFeedTests.entry(i)) }  // rolls segments: used to trap
        #expect(try ZoneFeedTests.drain(store, "List-a", limit: 7).0.count == 60)
        try store.close()
    }

    @Test func aMarkTakesEffectOnlyOnceDurable() throws {
        let fs = MemoryFileSystem()
        try fs.createDirectory("/d")
        var options = StoreOptions(durability: .none, preallocate: false)
        options.fileSystem = fs
        let store = try JournalStore.open("/d/s.wal", options: options)
        for i in 0..<5 { try store.append(ZoneFeedTests.entry(i)) }
        let token = try store.changes(in: "List-a", since: nil, limit: 2).token
        // setLowWaterMark syncs: by the time it returns the mark is durable and in effect.
        try store.setLowWaterMark("List-a", to: 4)
        #expect(throws: FeedError.self) { _ = try store.changes(in: "List-a", since: token) }
        try store.close()
    }
}

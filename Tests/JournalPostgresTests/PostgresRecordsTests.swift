import JournalLog
import JournalPostgres
import Synchronization
import Testing

/// A flag set until cleared, read from another task.
final class Flag: Sendable {
    private let value = Mutex(true)
    var isSet: Bool { value.withLock { $0 } }
    func clear() { value.withLock { $0 = false } }
}

/// Entries at positions in PostgreSQL (Spec/SYNC.md §11.2): stored once, read back in order, and
/// never visible out of order, whichever node wrote them.
@Suite(.enabled(if: PostgresTestDatabase.url != nil, Comment(rawValue: PostgresTestDatabase.missing)))
struct PostgresRecordsTests {
    let zone = "alice/weekly"

    @Test func appendedEntriesReadBackInOrderAfterTheZonesIncarnation() async throws {
        let node = try await PostgresTestDatabase.open(try await PostgresTestDatabase.freshSchema())
        let inc = try await node.makeZone(zone)
        let batch = (0..<5).map { PostgresTestDatabase.entry("e\($0)", zone) }
        let append = try await node.append(batch, to: zone)
        #expect(append.saved.map(\.position) == (1...5).map { inc + SequenceNumber($0) })
        let read = try await node.entries(of: zone, incarnation: inc, after: 0, limit: 100)
        #expect(read.map(\.entry) == batch)
        #expect(try await node.horizon() == inc + 5)
        #expect(try await node.zoneInfo(zone)?.lastChange == inc + 5)
        #expect(try await node.entries(of: zone, incarnation: inc, after: inc + 3, limit: 100).map(\.entry) == Array(batch[3...]))
        await node.close()
    }

    @Test func anIDTheZoneHoldsWithTheSameContentIsNotStoredAgain() async throws {
        let node = try await PostgresTestDatabase.open(try await PostgresTestDatabase.freshSchema())
        let inc = try await node.makeZone(zone)
        _ = try await node.append([PostgresTestDatabase.entry("a", zone)], to: zone)
        let again = try await node.append([PostgresTestDatabase.entry("a", zone), PostgresTestDatabase.entry("b", zone)], to: zone)
        #expect(again.alreadyHeld == [CompactID("a")!])
        #expect(again.saved.map(\.id) == [CompactID("b")!])
        #expect(try await node.entries(of: zone, incarnation: inc, after: 0, limit: 10).count == 2)
        await node.close()
    }

    @Test func anIDTheZoneHoldsWithOtherContentRefusesTheWholeAppend() async throws {
        let node = try await PostgresTestDatabase.open(try await PostgresTestDatabase.freshSchema())
        let inc = try await node.makeZone(zone)
        _ = try await node.append([PostgresTestDatabase.entry("a", zone)], to: zone)
        await #expect(throws: PostgresStorageError.idConflict(zone: zone, id: "a")) {
            try await node.append([PostgresTestDatabase.entry("b", zone), PostgresTestDatabase.entry("a", zone, text: "eggs")], to: zone)
        }
        #expect(try await node.entries(of: zone, incarnation: inc, after: 0, limit: 10).count == 1)
        // Nothing was taken: the next append's position follows the first's.
        #expect(try await node.append([PostgresTestDatabase.entry("c", zone)], to: zone).saved.map(\.position) == [inc + 2])
        await node.close()
    }

    @Test func anAppendToAZoneNeverMadeIsRefused() async throws {
        let node = try await PostgresTestDatabase.open(try await PostgresTestDatabase.freshSchema())
        await #expect(throws: PostgresStorageError.zoneNotFound("bob/none")) {
            try await node.append([PostgresTestDatabase.entry("a", "bob/none")], to: "bob/none")
        }
        await node.close()
    }

    @Test func appendsCommittedTogetherKeepTheirOwnOutcomes() async throws {
        let node = try await PostgresTestDatabase.open(try await PostgresTestDatabase.freshSchema())
        let inc = try await node.makeZone(zone)
        _ = try await node.append([PostgresTestDatabase.entry("held", zone)], to: zone)
        let zone = self.zone
        let outcomes = await withTaskGroup(of: (Int, Result<PostgresAppend, PostgresStorageError>).self) { group in
            for i in 0..<24 {
                group.addTask {
                    // Every eighth conflicts with what the zone holds; every twelfth names no zone.
                    let target = i % 12 == 5 ? "bob/none" : zone
                    let batch = [PostgresTestDatabase.entry("n\(i)", target), PostgresTestDatabase.entry("held", target, text: i % 8 == 3 ? "other" : "milk")]
                    do throws(PostgresStorageError) { return (i, .success(try await node.append(batch, to: target))) } catch { return (i, .failure(error)) }
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for i in 0..<24 {
            switch (i % 12 == 5, i % 8 == 3, outcomes[i]!) {
            case (true, _, .failure(.zoneNotFound)): break
            case (false, true, .failure(.idConflict(_, let id))): #expect(id == "held")
            case (false, false, .success(let a)):
                #expect(a.saved.map { $0.id } == [CompactID("n\(i)")!])
                #expect(a.alreadyHeld == [CompactID("held")!])
            default: Issue.record("append \(i): \(outcomes[i]!)")
            }
        }
        // What was saved is what the zone holds, at consecutive positions.
        let read = try await node.entries(of: zone, incarnation: inc, after: 0, limit: 100)
        #expect(read.count == 1 + outcomes.values.filter { if case .success = $0 { true } else { false } }.count)
        #expect(read.map(\.position) == Array((inc + 1)...(inc + SequenceNumber(read.count))))
        await node.close()
    }

    /// Two nodes, four uploaders each, and a reader that pages after the last position it saw
    /// while they write: it must see every entry exactly once, in order (a position committed
    /// after a higher one would be skipped for ever). Several runs, each on fresh tables.
    @Test func concurrentUploadsThroughTwoNodesLeaveNoPositionAReaderCouldSkip() async throws {
        for run in 0..<5 {
            let schema = try await PostgresTestDatabase.freshSchema()
            let a = try await PostgresTestDatabase.open(schema), b = try await PostgresTestDatabase.open(schema)
            let inc = try await a.makeZone(zone)
            let zone = self.zone
            let writing = Flag()
            let reader = Task { () async throws -> [SequenceNumber] in
                var seen: [SequenceNumber] = [], last = inc, quiet = 0
                while quiet < 3 {
                    let page = try await b.entries(of: zone, incarnation: inc, after: last, limit: 25)
                    seen += page.map(\.position)
                    last = page.last?.position ?? last
                    if !writing.isSet { quiet = page.isEmpty ? quiet + 1 : 0 }
                }
                return seen
            }
            let saved = try await withThrowingTaskGroup(of: [SequenceNumber].self) { group in
                for w in 0..<8 {
                    let node = w % 2 == 0 ? a : b
                    group.addTask {
                        var mine: [SequenceNumber] = []
                        for i in 0..<12 {
                            let batch = (0...(i % 3)).map { PostgresTestDatabase.entry("r\(run)-w\(w)-\(i)-\($0)", zone) }
                            mine += try await node.append(batch, to: zone).saved.map(\.position)
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            writing.clear()
            let seen = try await reader.value
            #expect(seen == seen.sorted() && Set(seen).count == seen.count, "run \(run): the reader saw a position twice or out of order")
            #expect(Set(seen) == Set(saved), "run \(run): the reader skipped \(Set(saved).subtracting(seen).sorted())")
            // No position is left unused: the next is the one after the last.
            #expect(saved.sorted() == Array((inc + 1)...(inc + SequenceNumber(saved.count))), "run \(run)")
            await a.close()
            await b.close()
        }
    }

    /// Two nodes write to twenty lists while a reader pages the zones changed after the last
    /// position it listed: every change is covered by a zone it saw at that change or later.
    @Test func zonesChangedThroughTwoNodesArePagedWithoutASkip() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let a = try await PostgresTestDatabase.open(schema), b = try await PostgresTestDatabase.open(schema)
        let zones = (0..<20).map { "z\($0)/list" }
        for z in zones { try await a.makeZone(z) }
        let start = try await a.horizon()
        let writing = Flag()
        let reader = Task { () async throws -> [String: [SequenceNumber]] in
            var seen: [String: [SequenceNumber]] = [:], token = start, quiet = 0
            while quiet < 3 {
                let page = try await b.changedZones(after: token, limit: 5)
                for z in page { seen[z.name, default: []].append(z.lastChange) }
                token = page.last?.lastChange ?? token
                if !writing.isSet { quiet = page.isEmpty ? quiet + 1 : 0 }
            }
            return seen
        }
        let saved = try await withThrowingTaskGroup(of: [(String, SequenceNumber)].self) { group in
            for w in 0..<8 {
                let node = w % 2 == 0 ? a : b
                group.addTask {
                    var mine: [(String, SequenceNumber)] = []
                    for i in 0..<15 {
                        let z = zones[(w * 7 + i * 3) % zones.count]
                        mine += try await node.append([PostgresTestDatabase.entry("w\(w)-\(i)", z)], to: z).saved.map { (z, $0.position) }
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        writing.clear()
        let seen = try await reader.value
        for (z, p) in saved {
            #expect(seen[z]?.contains { $0 >= p } == true, "zone \(z)'s change at \(p) was skipped")
        }
        await a.close()
        await b.close()
    }
}

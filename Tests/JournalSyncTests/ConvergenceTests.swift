import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync

/// Several devices converge on the service's lists and histories, and each change goes up once.
@Suite struct ConvergenceTests {
    /// Joins and leaves are list history: every replica that holds the list shows who joined
    /// and who left, and the participants that remain.
    @Test func joinsAndLeavesShowInTheHistoryOnEveryReplica() async throws {
        let world = try World()
        let alice = try world.device("alice:phone"), aliceIpad = try world.device("alice:ipad")
        let bob = try world.device("bob:phone"), carol = try world.device("carol:phone"), dave = try world.device("dave:phone")
        let list = try await sharedList(alice, with: [bob, carol, dave])
        try await alice.add("Milk", list)
        await settle([alice, aliceIpad, bob, carol, dave], rounds: 2)
        try await alice.engine.remove("bob", from: list)      // the owner removes bob
        try await dave.engine.remove("dave", from: list)      // dave leaves
        await settle([alice, aliceIpad, bob, carol, dave], rounds: 2)
        #expect(!bob.holds(list) && !dave.holds(list))

        let expected: [String] = ["joined bob", "joined carol", "joined dave", "left bob", "left dave"]
        func events(_ log: ActivityLog) -> [String] {
            log.participantEvents().map { "\($0.kind == .joined ? "joined" : "left") \($0.text ?? "?")" }
        }
        #expect(events(try world.serviceHistory(list)) == expected)
        for d in [alice, aliceIpad, carol] {
            #expect(events(try d.history(list)) == expected, "\(d.replica)")
            #expect(try d.list(list).participants == ["carol"], "\(d.replica)")
        }
        try expectConverged(world, [alice, aliceIpad, carol], list)
    }

    /// Three devices edit one list through a compaction they follow: each local change is sent
    /// once, and nothing a device fetched is ever uploaded again.
    @Test func threeDevicesUploadEachChangeOnceAndNothingFetched() async throws {
        let world = try World(retentionMillis: day)
        let scripts = [Script(), Script(), Script()]
        let devices = try [
            world.device("alice:phone", script: scripts[0]),
            world.device("alice:ipad", script: scripts[1]),
            world.device("bob:phone", script: scripts[2]),
        ]
        let list = try await sharedList(devices[0], with: [devices[2]])
        await settle(devices, rounds: 1)
        var mine: [[CompactID]] = [[], [], []]
        var items: [CompactID] = []
        var refetches = 0
        for round in 0..<3 {
            for (k, d) in devices.enumerated() {
                let item = CompactID("r\(round)d\(k)")!
                mine[k].append(try await d.engine.record(.add(item: item, text: "Thing \(round).\(k)", after: nil), in: list).id)
                if round > 0 {   // buys what the next device added the round before
                    mine[k].append(try await d.engine.record(.markOff(item: items[(round - 1) * 3 + (k + 1) % 3]), in: list).id)
                }
                refetches += await d.sync().refetched.count
            }
            for k in 0..<3 { items.append(CompactID("r\(round)d\(k)")!) }
            await settle(devices, rounds: 1)
            if round == 1 { try world.compact(after: 2 * day) }
        }
        await settle(devices, rounds: 3)
        #expect(refetches == 0, "every device followed the compaction (SYNC.md §6.7): none fetched the list anew")
        try expectConverged(world, devices, list)
        var received = 0
        for (k, d) in devices.enumerated() {
            let totals = await d.engine.totals
            #expect(totals.localChanges == mine[k].count)
            #expect(totals.entriesSent == totals.localChanges, "\(d.replica) sent \(totals.entriesSent) for \(totals.localChanges) changes")
            #expect(totals.entriesUploaded == totals.localChanges)
            let sent = scripts[k].calls(.upload).flatMap(\.ids)
            #expect(sent.sorted() == mine[k].sorted(), "\(d.replica) uploaded only its own changes, each once")
            received += sent.count
        }
        #expect(world.core.counters.entriesReceived == received)
        #expect(world.core.counters.entriesStored == received)
    }
}

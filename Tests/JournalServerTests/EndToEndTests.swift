import Foundation
import Testing
import JournalLog
import JournalService
import JournalSync
import JournalSyncHTTP
import ListModel

/// Devices syncing through `jlog serve` over HTTP, end to end (Spec/SYNC.md §7).
@Suite struct EndToEndTests {
    /// Two accounts' devices share a list through the server, both change it, and after a few
    /// syncs both show the server's list.
    @Test func twoDevicesShareAListAndConverge() async throws {
        let server = try await TestServer()
        let alice = try HTTPDevice(server, replica: "alice:phone", credential: try server.credential("alice"))
        let bob = try HTTPDevice(server, replica: "bob:phone", credential: try server.credential("bob"))
        let list = try await alice.engine.createList("weekly")
        try await alice.add("Milk", to: list)
        #expect(await alice.sync().isComplete)
        _ = try await bob.engine.accept(try await alice.engine.share(list, with: "bob"))
        #expect(await bob.sync().isComplete)
        try await bob.add("Bread", to: list)
        try await alice.add("Eggs", to: list)
        for _ in 0..<2 {
            for d in [alice, bob] {
                let r = await d.sync()
                #expect(r.isComplete, "\(d.replica): \(r.errors)")
            }
        }
        let served = try server.serverList(list)
        #expect(Set(served.items.map(\.text)) == ["Milk", "Bread", "Eggs"])
        #expect(served.participants.contains("bob"))
        for d in [alice, bob] {
            let mine = try d.list(list)
            #expect(mine == served, "\(d.replica): \(mine.items.map(\.text)), the server: \(served.items.map(\.text))")
            #expect(mine.digest == served.digest)
        }
        await server.stop()
    }

    /// A device listening on the hint channel syncs when another device changes the list: no
    /// timer, no polling, only the server's hint. Over AsyncHTTPClient, and over URLSession as an
    /// app has it (its hint channel streams through a data task's delegate).
    @Test(arguments: [false, true])
    func aListeningDevicePicksUpAChangeFromTheHint(overURLSession: Bool) async throws {
        let server = try await TestServer()
        let phone = try HTTPDevice(server, replica: "alice:phone", credential: try server.credential("alice"), overURLSession: overURLSession)
        let ipad = try HTTPDevice(server, replica: "alice:ipad", credential: try server.credential("alice"), overURLSession: overURLSession)
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", to: list)
        #expect(await phone.sync().isComplete)

        let hints = SyncHints()
        let (reports, reported) = AsyncStream.makeStream(of: SyncReport.self)
        let listener = Task { await ipad.service.listenForHints(hints) }
        let runner = Task { await ipad.engine.run(hints: hints) { reported.yield($0) } }
        defer {
            hints.finish()
            listener.cancel()
            runner.cancel()
        }
        let ipadHolds: @Sendable () throws -> [String] = { try ipad.list(list).items.map(\.text) }
        try await withTimeout(20, "the iPad's syncs") {
            var it = reports.makeAsyncIterator()
            // The channel's opening (`ready`) is the first hint: the iPad catches up once.
            guard let first = await it.next() else { throw TestTimeout(what: "no first sync") }
            #expect(first.isComplete, "\(first.errors)")
            #expect(try ipadHolds() == ["Milk"])
            // Now only a hint can make it sync again.
            try await phone.add("Bread", to: list)
            #expect(await phone.sync().isComplete)
            while try !ipadHolds().contains("Bread") {
                guard let r = await it.next() else { throw TestTimeout(what: "the iPad stopped syncing") }
                #expect(r.isComplete, "\(r.errors)")
            }
        }
        #expect(Set(try ipad.list(list).items.map(\.text)) == ["Milk", "Bread"])
        hints.finish()
        listener.cancel()
        await server.stop()
        _ = await runner.value
        await listener.value
    }
}

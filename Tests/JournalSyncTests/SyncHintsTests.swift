import Foundation
import Testing
import JournalService
@testable import JournalSync

@Suite struct SyncHintsTests {
    /// A burst of hints that arrives before the engine looks costs one sync, not one per hint.
    @Test func aBurstOfHintsCoalescesIntoOneSync() async throws {
        let world = try World()
        let alice = try world.device("alice:phone")
        let hints = SyncHints()
        for _ in 0..<100 { hints.hint() }
        hints.finish()
        let syncs = await alice.engine.run(hints: hints)
        #expect(syncs == 1)
    }

    /// A hint carries no data: the engine fetches, so what changed arrives whatever the hint said.
    @Test func aHintMakesTheEngineFetch() async throws {
        let world = try World()
        let alice = try world.device("alice:phone"), ipad = try world.device("alice:ipad")
        let list = try await alice.engine.createList("weekly")
        try await alice.add("Milk", list)
        await alice.sync()
        let hints = SyncHints()
        hints.hint()
        hints.finish()
        await ipad.engine.run(hints: hints)
        #expect(try ipad.list(list).items.map(\.text) == ["Milk"])
    }
}

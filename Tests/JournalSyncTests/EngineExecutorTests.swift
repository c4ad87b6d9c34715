import Foundation
import Testing
import JournalLog
@testable import JournalSync

/// The engine does its blocking store I/O on the store's own thread (issue 36), not on the
/// cooperative pool or the caller's actor.
@Suite struct EngineExecutorTests {
    @Test func theEngineRunsOnTheStoresThread() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        #expect(await phone.engine.runsOnTheStoresThread)
        #expect(!phone.store.executor.isCurrent)
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        #expect(await phone.sync().isComplete)
    }
}

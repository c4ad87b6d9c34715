import Foundation
import Testing
import JournalLog
import JournalService
@testable import JournalSync

/// Sync reports say what went wrong, typed, with the list it concerns (issue 36).
@Suite struct SyncProblemTests {
    @Test func anUnreachableServiceIsTyped() async throws {
        let world = try World()
        let script = Script()
        let phone = try world.device("alice:phone", script: script)
        _ = try await phone.engine.createList("weekly")
        script.offline = true
        let r = await phone.sync()
        #expect(r.offline)
        #expect(r.problems.map(\.reason) == [.unreachable])
    }

    @Test func aRefusedCredentialIsTyped() async throws {
        let world = try World()
        let script = Script()
        let phone = try world.device("alice:phone", script: script)
        _ = try await phone.engine.createList("weekly")
        script.signedOut = true
        let r = await phone.sync()
        #expect(r.problems.map(\.reason) == [.notAuthenticated])
        #expect(r.problems.first?.zone == nil)
    }

    @Test func aFullQuotaNamesItsList() async throws {
        var limits = ServiceLimits()
        limits.maxEntriesPerAccount = 1
        let world = try World(limits: limits)
        let phone = try world.device("alice:phone")
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        try await phone.add("Eggs", list)
        let r = await phone.sync()
        #expect(r.quotaExceeded)
        #expect(r.problems.contains { $0.reason == .quotaExceeded && $0.zone == list }, "\(r.problems)")
    }
}

import Foundation
import Testing
import JournalLog
import JournalSeal
import ListModel
@testable import JournalSync

/// A member who joined a sealed list that no epoch followed (the inviting device offline, or its
/// record lost) is wrapped to by the next member's device that fetches the list and holds the
/// current key (Spec/SEALING.md §5.2): no app code, and no wait for the owner.
@Suite struct SealedJoinTests {
    /// alice's list, sealed for alice and bob with Milk on it; carol then joins, and no device
    /// begins an epoch for her.
    static func carolJoinsUnwrapped() async throws -> SealedReissueTests.Fixture {
        let f = try await SealedReissueTests.Fixture(members: ["alice", "bob"])
        try await f.add("Milk", on: "bob", under: f.epochs[0])
        await f.devices["bob"]!.sync()
        _ = try await f.devices["carol"]!.engine.accept(try await f.devices["alice"]!.engine.share(f.zone, with: "carol"))
        return f
    }

    @Test func aMemberWithoutAKeyIsWrappedToByTheNextMembersFetch() async throws {
        let f = try await Self.carolJoinsUnwrapped()
        await f.devices["bob"]!.sync()
        let records = try f.world.serviceList(f.zone).keyRecords
        #expect(records.map(\.epoch) == [1, 2])
        #expect(records.last?.reason == .joined && records.last?.creator == "bob")
        #expect(records.last?.wraps.map(\.account) == ["alice", "bob", "carol"])
        await settle(Array(f.devices.values), rounds: 3)
        #expect(try f.texts(on: "carol") == ["Milk"], "the new epoch's back link opens what came before")
    }

    @Test func aMemberWhoseKeysCannotBeWrappedIsLeftAsItIsAndNoEpochBegins() async throws {
        let f = try await Self.carolJoinsUnwrapped()
        // bob's device has no keys pinned for carol: it can make no record that wraps to her.
        let bob = try f.world.device("bob:tablet")
        let keys = f.keys
        await bob.engine.useSealing(SealedListKeys(account: keys["bob"]!, pinned: { $0 == "carol" ? nil : keys[$0]?.publicKeys }))
        for _ in 0..<3 { #expect(await bob.sync().problems.isEmpty) }
        #expect(try f.world.serviceList(f.zone).keyRecords.map(\.epoch) == [1])
    }
}

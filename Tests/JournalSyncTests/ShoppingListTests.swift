import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalService
import ListModel
@testable import JournalSync

/// The app's door (`ShoppingList`): typed edits checked against the list this device holds,
/// written through the engine, the same before and after the list syncs.
@Suite struct ShoppingListTests {
    /// alice's phone with a list holding Milk then Bread.
    static func weekly() async throws -> (World, Device, ShoppingList, milk: CompactID, bread: CompactID) {
        let world = try World()
        let phone = try world.device("alice:phone")
        let weekly = try await phone.engine.createList(named: "weekly")
        let milk = try await weekly.add("Milk")
        let bread = try await weekly.add("Bread", after: milk)
        return (world, phone, weekly, milk, bread)
    }

    /// An empty list alice shares with bob, and alice's phone's door to it.
    static func shared() async throws -> (World, Device, Device, ZoneID, ShoppingList) {
        let world = try World()
        let phone = try world.device("alice:phone")
        let tablet = try world.device("bob:tablet")
        let zone = try await sharedList(phone, with: [tablet])
        return (world, phone, tablet, zone, try await phone.engine.list(zone))
    }

    /// The refusal `body` throws, and that nothing was written.
    static func refusal(_ phone: Device, _ list: ShoppingList, _ body: () async throws(SyncEngineError) -> Void) async throws -> ListEditError? {
        let before = try phone.store.changes(in: list.zone.storeName, since: nil, limit: 100).entries.count
        var refused: ListEditError? = nil
        do { try await body() } catch { if case .refused(let why) = error { refused = why } }
        #expect(try phone.store.changes(in: list.zone.storeName, since: nil, limit: 100).entries.count == before, "nothing written")
        return refused
    }

    @Test func editsShowInTheListInOrder() async throws {
        let (_, _, weekly, milk, _) = try await Self.weekly()
        try await weekly.markOff(milk)
        try await weekly.rename("Weekly shop")
        let state = try await weekly.state()
        #expect(state.name == "Weekly shop")
        #expect(state.items.map(\.text) == ["Milk", "Bread"])
        #expect(state.items.first?.state == .markedOff)
    }

    @Test func anEmptyItemIsRefused() async throws {
        let (_, phone, weekly, _, _) = try await Self.weekly()
        #expect(try await Self.refusal(phone, weekly) { () throws(SyncEngineError) in _ = try await weekly.add("  ") } == .emptyText(field: "item's text"))
    }

    @Test func textOverTheLimitIsRefusedWithTheLimit() async throws {
        let (_, phone, weekly, _, _) = try await Self.weekly()
        let long = String(repeating: "é", count: ListEdit.maxTextBytes)
        let why = try await Self.refusal(phone, weekly) { () throws(SyncEngineError) in _ = try await weekly.add(long) }
        #expect(why == .textTooLong(field: "item's text", bytes: 2 * ListEdit.maxTextBytes))
        #expect(why?.description.contains("4096") == true)
    }

    @Test func aMarkOffOfAnItemNeverOnTheListIsRefused() async throws {
        let (_, phone, weekly, _, _) = try await Self.weekly()
        let ghost = CompactID("ghost")!
        #expect(try await Self.refusal(phone, weekly) { () throws(SyncEngineError) in try await weekly.markOff(ghost) } == .unknownItem(ghost))
    }

    @Test func aDeletedItemCannotBeDeletedAgain() async throws {
        let (_, phone, weekly, milk, _) = try await Self.weekly()
        try await weekly.delete(milk)
        #expect(try await Self.refusal(phone, weekly) { () throws(SyncEngineError) in try await weekly.delete(milk) } == .unknownItem(milk))
    }

    @Test func anAnchorNotOnTheListIsRefused() async throws {
        let (_, phone, weekly, _, _) = try await Self.weekly()
        let ghost = CompactID("ghost")!
        #expect(try await Self.refusal(phone, weekly) { () throws(SyncEngineError) in _ = try await weekly.add("Eggs", after: ghost) } == .anchorNotOnList(ghost))
    }

    @Test func recordChecksTooNotOnlyTheListType() async throws {
        let (_, phone, weekly, _, _) = try await Self.weekly()
        let ghost = CompactID("ghost")!
        let why = try await Self.refusal(phone, weekly) { () throws(SyncEngineError) in _ = try await phone.engine.record(.unmark(item: ghost), in: weekly.zone) }
        #expect(why == .unknownItem(ghost))
    }

    @Test func aMovedItemShowsWhereItWasPut() async throws {
        let (_, _, weekly, milk, bread) = try await Self.weekly()
        let eggs = try await weekly.add("Eggs", after: bread)
        try await weekly.move(eggs, after: nil)
        #expect(try await weekly.state().items.map(\.text) == ["Eggs", "Milk", "Bread"])
        try await weekly.move(milk, after: bread)
        #expect(try await weekly.state().items.map(\.text) == ["Eggs", "Bread", "Milk"])
        #expect(try await weekly.history().events(forItem: milk).map(\.kind) == [.added, .moved])
    }

    @Test func aMoveOfAnItemNotOnTheListOrAfterOneIsRefused() async throws {
        let (_, phone, weekly, milk, _) = try await Self.weekly()
        let ghost = CompactID("ghost")!
        #expect(try await Self.refusal(phone, weekly) { () throws(SyncEngineError) in try await weekly.move(ghost, after: nil) } == .unknownItem(ghost))
        #expect(try await Self.refusal(phone, weekly) { () throws(SyncEngineError) in try await weekly.move(milk, after: ghost) } == .anchorNotOnList(ghost))
        #expect(try await Self.refusal(phone, weekly) { () throws(SyncEngineError) in try await weekly.move(milk, after: milk) } == .anchoredToItself(milk))
    }

    /// Two devices move the same item at once: the later move wins on both.
    @Test func concurrentMovesConvergeOnTheLaterOne() async throws {
        let (world, phone, tablet, zone, weekly) = try await Self.shared()
        let milk = try await weekly.add("Milk")
        let bread = try await weekly.add("Bread", after: milk)
        let eggs = try await weekly.add("Eggs", after: bread)
        await settle([phone, tablet])
        try await weekly.move(milk, after: eggs)
        try await tablet.engine.list(zone).move(milk, after: bread)
        await settle([phone, tablet])
        try expectConverged(world, [phone, tablet], zone)
        #expect(try await weekly.state().items.map(\.text) == ["Bread", "Milk", "Eggs"])
    }

    /// Others' entries still merge as MERGE.md says: Bob marks off the Milk Alice deleted meanwhile.
    @Test func anotherDevicesMarkOffOfAnItemDeletedHereStillMerges() async throws {
        let (world, phone, tablet, zone, weekly) = try await Self.shared()
        let milk = try await weekly.add("Milk")
        await settle([phone, tablet])
        try await weekly.delete(milk)
        try await tablet.engine.list(zone).markOff(milk)
        await settle([phone, tablet])
        try expectConverged(world, [phone, tablet], zone)
        #expect(try await weekly.state().items.isEmpty)
    }

    /// A list made before sign-in (`OfflineService`) is this device's alone; once signed in, the
    /// next sync creates it on the service with its items.
    @Test func aListMadeBeforeSignInJoinsSyncAfterIt() async throws {
        let world = try World()
        let phone = try world.device("alice:phone", service: { _ in OfflineService(account: "alice") })
        let weekly = try await phone.engine.createList(named: "weekly")
        try await weekly.add("Milk")
        #expect(await phone.engine.sync().offline)
        try await phone.engine.signIn(LocalService(core: world.core, account: "alice"))
        let report = await phone.engine.sync()
        #expect(report.isComplete, "\(report.errors)")
        #expect(try world.serviceList(weekly.zone).items.map(\.text) == ["Milk"])
    }

    @Test func theEngineOpensOnTheStoresThread() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let engine = try await SyncEngine.open(store: phone.store, service: LocalService(core: world.core, account: "alice"), replica: "alice:phone")
        #expect(await engine.runsOnTheStoresThread)
        #expect(try await engine.createList(named: "weekly").add("Milk") != CompactID("x")!)
    }

    /// Offline, an invitation for a name no account can have is refused here, in words, not as
    /// a network failure.
    @Test func sharingWithANameNoAccountHasIsRefusedLocallyOffline() async throws {
        let world = try World()
        let phone = try world.device("alice:phone", service: { _ in OfflineService(account: "alice") })
        let weekly = try await phone.engine.createList(named: "weekly")
        do {
            _ = try await phone.engine.share(weekly.zone, with: "bob/\u{0}")
            Issue.record("an invalid name was sent")
        } catch {
            guard case .invalid(let why) = error else { Issue.record("\(error)"); return }
            #expect(why.hasPrefix("\"bob/\\u{0}\" is not an account name"), "\(why)")
        }
    }

    @Test func aBadListNameIsQuotedWithItsRule() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        for (name, rule) in [("", "is not empty"), ("a\u{0}b", "no control characters"), (String(repeating: "x", count: 300), "at most")] {
            do {
                _ = try await phone.engine.createList(named: name)
                Issue.record("\(name.count) characters taken")
            } catch {
                let message = error.description
                #expect(message.hasPrefix("\""), "\(message)")
                #expect(message.contains(rule), "\(message)")
                #expect(!message.contains("\u{0}") && message.count < 200, "\(message)")
            }
        }
    }
}

/// A sync's report says what happened, once.
@Suite struct SyncReportTests {
    @Test func offlineErrorsSayWhatProblemsSay() async throws {
        let world = try World()
        let phone = try world.device("alice:phone", service: { _ in OfflineService(account: "alice") })
        let report = await phone.engine.sync()
        #expect(report.offline)
        #expect(report.problems.map(\.reason) == [.unreachable])
        #expect(report.errors == report.problems.map(\.description))
    }

    @Test func aNewListsFirstFetchIsNotAReFetch() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let tablet = try world.device("bob:tablet")
        let zone = try await sharedList(phone, with: [tablet])
        _ = zone
        let phoneAgain = try world.device("alice:ipad")
        let report = await phoneAgain.engine.sync()
        #expect(report.refetched.isEmpty)
        #expect(report.firstFetched.count == 1)
    }

    @Test func ownChangesComingBackAreNotApplied() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let weekly = try await phone.engine.createList(named: "weekly")
        for i in 0..<5 { try await weekly.add("Item \(i)") }
        let report = await phone.engine.sync()
        #expect(report.uploaded == 5)
        #expect(report.applied == 0, "its own five came back")
    }
}

/// Pasting many items (Part 3's third way to add them): one atomic append and one state write.
@Suite struct PasteTests {
    struct Refusal: Equatable { var offset: Int, why: ListEditError }

    /// The offset and reason `body` was refused with, if it was refused a batch.
    static func batchRefusal(_ body: () async throws(SyncEngineError) -> Void) async -> Refusal? {
        do { try await body() } catch { if case .refusedInBatch(let offset, let why) = error { return Refusal(offset: offset, why: why) } }
        return nil
    }

    @Test func aFortyItemPasteIsOneAppendInOrder() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let weekly = try await phone.engine.createList(named: "Weekly")
        let calls = phone.fs.mutatingCalls
        let milk = try await weekly.add("Milk")
        let one = phone.fs.mutatingCalls - calls, before = phone.fs.mutatingCalls
        let texts = (1...40).map { "Thing \($0)" }
        let items = try await weekly.add(contentsOf: texts, after: milk)
        #expect(items.count == 40)
        // One state write and one append, as one add makes: not forty of each.
        #expect(phone.fs.mutatingCalls - before <= 2 * one, "one add: \(one) writes; the paste: \(phone.fs.mutatingCalls - before)")
        #expect(try await weekly.state().items.map(\.text) == ["Milk"] + texts)
        await phone.sync()
        #expect(try world.serviceList(weekly.zone).items.map(\.text) == ["Milk"] + texts)
    }

    @Test func aRefusedChangeRefusesTheWholeBatch() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let weekly = try await phone.engine.createList(named: "Weekly")
        let before = try await weekly.state()
        let refusal = await Self.batchRefusal { () async throws(SyncEngineError) in _ = try await weekly.add(contentsOf: ["Tea", "Jam", " "]) }
        #expect(refusal == Refusal(offset: 2, why: .emptyText(field: "item's text")))
        #expect(try await weekly.state() == before, "nothing of the batch was written")
    }

    @Test func aBatchMayNameItemsItAddsButNotOnesItDeletes() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let weekly = try await phone.engine.createList(named: "Weekly")
        let tea = CompactID.random()
        try await phone.engine.record([.add(item: tea, text: "Tea", after: nil), .markOff(item: tea)], in: weekly.zone)
        #expect(try await weekly.state().items.first?.state == .markedOff)
        let refusal = await Self.batchRefusal { () async throws(SyncEngineError) in
            _ = try await phone.engine.record([.delete(item: tea), .unmark(item: tea)], in: weekly.zone)
        }
        #expect(refusal == Refusal(offset: 1, why: .unknownItem(tea)))
    }
}

import Foundation
import Testing
import JournalLog
import JournalService
@testable import JournalSync

/// `fetchDatabaseChanges` in pages (Spec/SYNC.md §3.3): at most `limit` zones a page, and a
/// token that covers exactly what its page listed.
@Suite struct DatabaseChangesTests {
    /// Every page of a database listing, from `token` on.
    static func pages(_ core: ServiceCore, _ caller: String, _ scope: DatabaseScope = .private, since token: ServiceToken?,
                      limit: Int) throws -> [DatabaseChangesPage] {
        var out: [DatabaseChangesPage] = []
        var token = token
        repeat {
            let page = try core.fetchDatabaseChanges(caller: caller, scope: scope, since: token, limit: limit)
            out.append(page)
            token = page.token
        } while out.last!.moreComing && out.count < 100
        return out
    }

    static func zones(_ names: [String], of owner: String = "alice") -> [ZoneID] { names.map { ZoneID(owner: owner, name: $0)! } }

    /// Five lists, two a page: three pages, each within the limit, together naming every list once.
    @Test func aListingComesInPagesOfAtMostTheLimit() throws {
        let world = try World()
        let lists = Self.zones(["a", "b", "c", "d", "e"])
        for z in lists { try world.core.createZone(caller: "alice", zone: z) }
        let pages = try Self.pages(world.core, "alice", since: nil, limit: 2)
        #expect(pages.map { $0.changed.count + $0.deleted.count } == [2, 2, 1])
        #expect(pages.map(\.moreComing) == [true, true, false])
        #expect(pages.flatMap(\.changed).sorted() == lists)
        let after = try world.core.fetchDatabaseChanges(caller: "alice", scope: .private, since: pages.last!.token, limit: 2)
        #expect(after.changed.isEmpty && after.deleted.isEmpty && !after.moreComing)
    }

    /// Changes made between two pages are never skipped: a list the first page named and changed
    /// again, a list not named yet, and a list deleted all come in later pages, and the last
    /// token then lists nothing.
    @Test func aPagesTokenNeverSkipsAChangeMadeBetweenPages() throws {
        let world = try World()
        let lists = Self.zones(["a", "b", "c", "d", "e"])
        for z in lists { try world.core.createZone(caller: "alice", zone: z) }
        let start = try Self.pages(world.core, "alice", since: nil, limit: 100).last!.token
        let now = world.clock.now()
        for z in lists { _ = try world.core.upload(caller: "alice", entries: [ServiceCoreTests.entry(z, wall: now)], to: z) }
        let first = try world.core.fetchDatabaseChanges(caller: "alice", scope: .private, since: start, limit: 2)
        #expect(first.changed == Array(lists[0..<2]) && first.moreComing)
        // Between pages: a listed list changes again, an unlisted one too, and one is deleted.
        _ = try world.core.upload(caller: "alice", entries: [ServiceCoreTests.entry(lists[0], wall: now, text: "Tea")], to: lists[0])
        _ = try world.core.upload(caller: "alice", entries: [ServiceCoreTests.entry(lists[4], wall: now, text: "Tea")], to: lists[4])
        try world.core.deleteZone(caller: "alice", zone: lists[3])
        let rest = try Self.pages(world.core, "alice", since: first.token, limit: 2)
        #expect(rest.allSatisfy { $0.changed.count + $0.deleted.count <= 2 })
        #expect(Set(rest.flatMap(\.changed)) == Set([lists[0], lists[2], lists[4]]))
        #expect(rest.flatMap(\.deleted) == [ZoneGone(zone: lists[3], reason: .deleted)])
        let after = try world.core.fetchDatabaseChanges(caller: "alice", scope: .private, since: rest.last!.token, limit: 2)
        #expect(after.changed.isEmpty && after.deleted.isEmpty)
    }

    /// The shared database pages too: a participant of three lists, one a page.
    @Test func aSharedListingComesInPages() throws {
        let world = try World()
        let lists = Self.zones(["a", "b", "c"])
        for z in lists {
            try world.core.createZone(caller: "alice", zone: z)
            _ = try world.core.acceptShare(caller: "bob", invitation: world.core.shareZone(caller: "alice", zone: z, with: "bob"))
        }
        let pages = try Self.pages(world.core, "bob", .shared, since: nil, limit: 1)
        #expect(pages.map(\.changed.count) == [1, 1, 1])
        #expect(pages.flatMap(\.changed).sorted() == lists)
    }

    /// A page token that was tampered with, or that claims more than its store token covers, is
    /// answered `tokenExpired` (the client lists the database again), never a silent skip.
    @Test(arguments: ["jdb2.private.x.y", "jdb2.private.12.not-a-token", "jdb2.private.999999999.%", "jdb2.x", "%"])
    func aDamagedPageTokenIsExpired(_ text: String) throws {
        let world = try World()
        try world.core.createZone(caller: "alice", zone: Self.zones(["a"])[0])
        let real = try world.core.fetchDatabaseChanges(caller: "alice", scope: .private, since: nil, limit: 10).token.text
        let inner = String(real.split(separator: ".", maxSplits: 3, omittingEmptySubsequences: false)[3])
        let token = ServiceToken(text == "%" ? inner : text.replacingOccurrences(of: "%", with: inner))
        #expect(throws: SyncError.tokenExpired) {
            try world.core.fetchDatabaseChanges(caller: "alice", scope: .private, since: token, limit: 10)
        }
    }

    /// A database token serves its own database only (I2): one database's token handed to the
    /// other's fetch is refused like any foreign token, never answered as a normal page.
    @Test(arguments: DatabaseScope.allCases)
    func aTokenOfTheOtherDatabaseIsExpired(_ issued: DatabaseScope) throws {
        let world = try World()
        try world.core.createZone(caller: "alice", zone: Self.zones(["a"])[0])
        let token = try world.core.fetchDatabaseChanges(caller: "alice", scope: issued, since: nil, limit: 10).token
        #expect(try world.core.fetchDatabaseChanges(caller: "alice", scope: issued, since: token, limit: 10).changed.isEmpty)
        let other: DatabaseScope = issued == .private ? .shared : .private
        #expect(throws: SyncError.tokenExpired) {
            try world.core.fetchDatabaseChanges(caller: "alice", scope: other, since: token, limit: 10)
        }
    }

    /// A device that asks for two zones a page still learns of every list.
    @Test func aDeviceLearnsOfEveryListThroughSmallPages() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        var lists: [ZoneID] = []
        for name in ["a", "b", "c", "d", "e"] { lists.append(try await phone.engine.createList(name)) }
        await phone.sync()
        var options = SyncEngineOptions()
        options.databasePageLimit = 2
        let script = Script()
        let ipad = try world.device("alice:ipad", options: options, script: script)
        let r = await ipad.sync()
        #expect(r.isComplete, "\(r.errors)")
        #expect(await ipad.engine.lists == lists)
        #expect(script.calls(.fetchDatabaseChanges).count == 4, "three private pages and one shared")
    }
}

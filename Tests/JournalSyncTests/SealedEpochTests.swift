import Foundation
import Testing
import JournalLog
import JournalSeal
import JournalService
import ListModel
@testable import JournalSync

/// What the service enforces of a sealed list's keys (Spec/SEALING.md §5.1), from clear epoch
/// numbers, accounts and signatures alone: no plaintext kind; every text under the current epoch,
/// none while the epoch owes a rotation; key records only as the next epoch, alone, by a member,
/// wrapping to exactly the members under their published keys, signed; the owner's record that
/// leaves a member out removes it in the same batch; and retries of what it holds stay `saved`.
@Suite struct SealedEpochTests {
    /// A service with three accounts' published keys and alice's sealed list, bob a member.
    struct Fixture {
        let world: World
        let keys: [String: AccountKeys]
        let zone: ZoneID
        var core: ServiceCore { world.core }

        init(sharedWithBob: Bool = true, accounts: [String] = ["alice", "bob", "carol"]) throws {
            world = try World()
            keys = Dictionary(uniqueKeysWithValues: accounts.map { ($0, AccountKeys(account: $0)) })
            zone = ZoneID(owner: "alice", name: SealedZone.name(random: (0..<16).map { _ in UInt8.random(in: 0...255) }))!
            for (account, k) in keys {
                let p = k.publicKeys
                _ = try world.core.perform(caller: account, .publishAccountKeys(PublishedAccountKeys(account: account, identity: p.identity, wrap: p.wrap)))
            }
            try world.core.createZone(caller: "alice", zone: zone)
            if sharedWithBob { try share(with: "bob") }
        }

        func share(with account: String) throws {
            let invitation = try core.perform(caller: "alice", .shareZone(zone, participant: account)).shareInvitation()
            _ = try core.perform(caller: account, .acceptShare(invitation))
        }

        /// The key record of `key`'s epoch, made by `creator`, wrapping to `members`.
        func record(_ key: ListKey, previous: ListKey?, by creator: String, for members: [String],
                    reason: EpochKeyRecord.Reason = .creation) throws -> EpochKeyRecord {
            try EpochKeys.record(for: key, previous: previous, reason: reason, zone: zone.storeName,
                                 members: members.map { keys[$0]!.publicKeys }, creator: keys[creator]!)
        }

        /// `record` as the entry a device uploads: the id its zone and epoch fix.
        func entry(_ r: EpochKeyRecord, author: String, id: CompactID? = nil) -> JournalEntry {
            stamped(id ?? SealedZone.keyRecordID(zone: zone.storeName, epoch: r.epoch), author: author,
                    .opaque(kind: EpochKeyRecord.kind, body: r.encoded))
        }

        /// A sealed add of `text` by `author`, under `key`.
        func add(_ text: String, under key: ListKey, author: String) throws -> JournalEntry {
            let id = CompactID.random(), now = world.clock.now()
            let clock = HybridTime(physicalMillis: UInt64(now), counter: 0)
            let change = try TextSealer(key: key, zone: zone.storeName).add(text, item: .random(), after: nil, entry: id, author: author,
                                                                             clock: clock, wallTime: now)
            return stamped(id, author: author, change.operation)
        }

        func stamped(_ id: CompactID, author: String, _ operation: EntryOperation) -> JournalEntry {
            let now = world.clock.now()
            return JournalEntry(id: id, zone: zone.storeName, author: author, wallTime: now,
                                clock: HybridTime(physicalMillis: UInt64(now), counter: 0), operation: operation)
        }

        /// The upload's answer, a partial failure's included.
        func upload(_ entries: [JournalEntry], as caller: String) throws -> UploadResult {
            do { return try core.upload(caller: caller, entries: entries, to: zone) } catch {
                guard case .partialFailure(let r) = error else { throw error }
                return r
            }
        }

        /// The first epoch, begun by the owner for the current members.
        func begin(for members: [String] = ["alice", "bob"]) throws -> ListKey {
            let key = ListKey.random(epoch: 1)
            let r = try upload([entry(try record(key, previous: nil, by: "alice", for: members), author: "alice:phone")], as: "alice")
            #expect(r.failed.isEmpty, "\(r.failed)")
            return key
        }
    }

    static func isInvalid(_ f: EntryFailure?) -> Bool { if case .invalid = f { true } else { false } }

    @Test func aSealedListTakesNoPlaintextKind() throws {
        let f = try Fixture()
        let key = try f.begin()
        let add = try f.add("Milk", under: key, author: "alice:phone")
        #expect(try f.upload([add], as: "alice").saved == [add.id])
        let item = try #require(try SealedChange(add.operation)?.item)
        let plain = [f.stamped(.random(), author: "alice:phone", .add(item: .random(), text: "Bread", after: nil)),
                     f.stamped(.random(), author: "alice:phone", .rename(name: "Groceries")),
                     f.stamped(.random(), author: "alice:phone", .recolour(colour: "red")),
                     f.stamped(.random(), author: "alice:phone", .opaque(kind: 0x90, body: Array("Eggs".utf8)))]
        let textless = [f.stamped(.random(), author: "alice:phone", .markOff(item: item)),
                        f.stamped(.random(), author: "alice:phone", .move(item: item, after: nil))]
        let r = try f.upload(plain + textless, as: "alice")
        #expect(Set(r.saved) == Set(textless.map(\.id)))
        for e in plain { #expect(Self.isInvalid(r.failed[e.id]), "\(e.operation)") }
    }

    @Test func theFirstKeyRecordIsTheOwnersWrapsToExactlyTheMembersAndIsSigned() throws {
        let f = try Fixture()
        let key = ListKey.random(epoch: 1)
        let good = try f.record(key, previous: nil, by: "alice", for: ["alice", "bob"])
        var forged = good
        forged.signature[0] ^= 1
        let refused: [(String, JournalEntry, String)] = [
            ("a random id", f.entry(good, author: "alice:phone", id: .random()), "alice"),
            ("a bad signature", f.entry(forged, author: "alice:phone"), "alice"),
            ("a member omitted", f.entry(try f.record(key, previous: nil, by: "alice", for: ["alice"]), author: "alice:phone"), "alice"),
            ("a wrap to a stranger", f.entry(try f.record(key, previous: nil, by: "alice", for: ["alice", "bob", "carol"]), author: "alice:phone"), "alice"),
            ("a participant's first epoch", f.entry(try f.record(key, previous: nil, by: "bob", for: ["alice", "bob"]), author: "bob:phone"), "bob"),
            ("a skipped epoch", f.entry(try f.record(ListKey.random(epoch: 2), previous: key, by: "alice", for: ["alice", "bob"]), author: "alice:phone"), "alice"),
        ]
        for (why, e, caller) in refused {
            #expect(Self.isInvalid(try f.upload([e], as: caller).failed[e.id]), "\(why)")
        }
        let withText = [f.entry(good, author: "alice:phone"), try f.add("Milk", under: key, author: "alice:phone")]
        #expect(Self.isInvalid(try f.upload(withText, as: "alice").failed[withText[0].id]), "a record travels alone")

        let e = f.entry(good, author: "alice:phone")
        #expect(try f.upload([e], as: "alice").saved == [e.id])
        #expect(try f.upload([e], as: "alice").saved == [e.id], "a retry is saved")
    }

    @Test func aRecordWrappingToKeysOtherThanThePublishedOnesIsRefused() throws {
        let f = try Fixture()
        let impostor = AccountKeys(account: "bob")
        let r = try EpochKeys.record(for: ListKey.random(epoch: 1), previous: nil, reason: .creation, zone: f.zone.storeName,
                                     members: [f.keys["alice"]!.publicKeys, impostor.publicKeys], creator: f.keys["alice"]!)
        let e = f.entry(r, author: "alice:phone")
        #expect(Self.isInvalid(try f.upload([e], as: "alice").failed[e.id]))
    }

    @Test func aTextSealedUnderAnEarlierEpochIsRefusedAndItsRetrySaved() throws {
        let f = try Fixture()
        let one = try f.begin()
        let kept = try f.add("Milk", under: one, author: "bob:phone")
        #expect(try f.upload([kept], as: "bob").saved == [kept.id])
        let two = ListKey.random(epoch: 2)
        let rotation = f.entry(try f.record(two, previous: one, by: "bob", for: ["alice", "bob"], reason: .accountKeysChanged), author: "bob:phone")
        #expect(try f.upload([rotation], as: "bob").saved == [rotation.id])

        let late = try f.add("Eggs", under: one, author: "bob:phone")
        let r = try f.upload([late, kept], as: "bob")
        #expect(r.failed[late.id] == .staleEpoch(current: 2))
        #expect(r.saved == [kept.id], "the retry of an entry the list holds is saved")
        let fresh = try f.add("Eggs", under: two, author: "alice:phone")
        #expect(try f.upload([fresh], as: "alice").saved == [fresh.id])
    }

    @Test func aParticipantsLeaveOwesARotationThatHoldsBackTextsOnly() throws {
        let f = try Fixture()
        let one = try f.begin()
        let milk = try f.add("Milk", under: one, author: "alice:phone")
        #expect(try f.upload([milk], as: "alice").saved == [milk.id])
        _ = try f.core.perform(caller: "bob", .removeParticipant("bob", zone: f.zone))

        let eggs = try f.add("Eggs", under: one, author: "alice:phone")
        let mark = f.stamped(.random(), author: "alice:phone", .markOff(item: try #require(try SealedChange(milk.operation)?.item)))
        let r = try f.upload([eggs, mark], as: "alice")
        #expect(r.failed[eggs.id] == .rotationDue(epoch: 1))
        #expect(r.saved == [mark.id], "a mark carries no text: not held back")

        // A record that still wraps to bob is refused; the one for the members left is taken.
        let two = ListKey.random(epoch: 2)
        let stale = f.entry(try f.record(two, previous: one, by: "alice", for: ["alice", "bob"], reason: .leave), author: "alice:phone")
        #expect(Self.isInvalid(try f.upload([stale], as: "alice").failed[stale.id]))
        let rotation = f.entry(try f.record(two, previous: one, by: "alice", for: ["alice"], reason: .leave), author: "alice:phone")
        #expect(try f.upload([rotation], as: "alice").saved == [rotation.id])
        let again = try f.add("Eggs", under: two, author: "alice:phone")
        #expect(try f.upload([again], as: "alice").saved == [again.id])
    }

    @Test func theOwnersRecordThatLeavesAMemberOutRemovesItInOneBatch() async throws {
        let f = try Fixture()
        try f.share(with: "carol")
        let one = try f.begin(for: ["alice", "bob", "carol"])
        let two = ListKey.random(epoch: 2)
        let removal = f.entry(try f.record(two, previous: one, by: "alice", for: ["alice", "carol"], reason: .removal), author: "alice:phone")
        #expect(try f.upload([removal], as: "alice").saved == [removal.id])
        #expect(f.core.members(of: f.zone) == ["carol"])
        #expect(throws: SyncError.zoneDeleted(reason: .removed)) {
            _ = try f.core.perform(caller: "bob", .fetchZoneChanges(zone: f.zone, since: nil, limit: 100))
        }
        // The leave and the record, next to each other in the list; no rotation owed after it.
        let entries = try f.world.serviceEntries(f.zone)
        let at = try #require(entries.firstIndex { $0.id == removal.id })
        #expect(entries[at - 1].operation == .leave(participant: "bob"))
        let text = try f.add("Milk", under: two, author: "carol:phone")
        #expect(try f.upload([text], as: "carol").saved == [text.id])
        // A participant may not remove another this way.
        let three = ListKey.random(epoch: 3)
        let byCarol = f.entry(try f.record(three, previous: two, by: "carol", for: ["carol"], reason: .removal), author: "carol:phone")
        #expect(Self.isInvalid(try f.upload([byCarol], as: "carol").failed[byCarol.id]))
    }

    @Test func twoMembersRacingForAnEpochOneWinsTheOtherConflicts() throws {
        let f = try Fixture()
        let one = try f.begin()
        let byAlice = f.entry(try f.record(ListKey.random(epoch: 2), previous: one, by: "alice", for: ["alice", "bob"], reason: .leave), author: "alice:phone")
        let byBob = f.entry(try f.record(ListKey.random(epoch: 2), previous: one, by: "bob", for: ["alice", "bob"], reason: .leave), author: "bob:phone")
        #expect(byAlice.id == byBob.id, "an epoch's record has one id")
        #expect(try f.upload([byAlice], as: "alice").saved == [byAlice.id])
        guard case .conflict = try f.upload([byBob], as: "bob").failed[byBob.id] else { Issue.record("the second record was not a conflict"); return }
    }

    @Test func theKeyDirectoryKeepsAnAccountsOwnValidKeys() throws {
        let f = try Fixture(sharedWithBob: false)
        let alice = f.keys["alice"]!.publicKeys
        let published = PublishedAccountKeys(account: "alice", identity: alice.identity, wrap: alice.wrap)
        #expect(try f.core.perform(caller: "bob", .fetchAccountKeys("alice")).publishedAccountKeys() == published)
        #expect(try f.core.perform(caller: "bob", .fetchAccountKeys("dave")).publishedAccountKeys() == nil)
        _ = try f.core.perform(caller: "alice", .publishAccountKeys(published))
        let other = AccountKeys(account: "alice").publicKeys
        #expect(throws: SyncError.self) { _ = try f.core.perform(caller: "bob", .publishAccountKeys(published)) }
        #expect(throws: SyncError.self) {
            _ = try f.core.perform(caller: "dave", .publishAccountKeys(PublishedAccountKeys(account: "dave", identity: [UInt8](repeating: 0, count: 31), wrap: other.wrap)))
        }
    }

    @Test func aSealedZoneNameIsTildeAndThirtyTwoHexDigits() {
        #expect(ZoneID(owner: "alice", name: SealedZone.name(random: [UInt8](repeating: 0xAB, count: 16))) != nil)
        #expect(ZoneID(owner: "alice", name: "~groceries") == nil)
        #expect(ZoneID(owner: "alice", name: "~" + String(repeating: "A", count: 32)) == nil)
        #expect(SealedZone.isSealed(storeName: "alice/~" + String(repeating: "0", count: 32)))
        #expect(!SealedZone.isSealed(storeName: "alice/groceries"))
    }
}

/// Recovery kits on the service (Spec/SYNC.md §5.7): each account its own, the newest standing,
/// fetches rate-limited.
@Suite struct RecoveryKitServiceTests {
    @Test func anAccountKeepsItsOwnKitAndFetchesItAFewTimesAnHour() throws {
        let world = try World()
        let core = world.core
        #expect(try core.perform(caller: "alice", .fetchRecoveryKit).storedRecoveryKit() == nil)
        _ = try core.perform(caller: "alice", .storeRecoveryKit([1, 2, 3]))
        _ = try core.perform(caller: "alice", .storeRecoveryKit([4, 5, 6]))
        #expect(try core.perform(caller: "alice", .fetchRecoveryKit).storedRecoveryKit() == [4, 5, 6])
        #expect(try core.perform(caller: "bob", .fetchRecoveryKit).storedRecoveryKit() == nil)
        #expect(throws: SyncError.self) { _ = try core.perform(caller: "bob", .storeRecoveryKit([UInt8](repeating: 0, count: 257))) }
        for _ in 0..<(world.limits.maxRecoveryFetchesPerHour - 2) { _ = try core.perform(caller: "alice", .fetchRecoveryKit) }
        #expect(throws: SyncError.self) { _ = try core.perform(caller: "alice", .fetchRecoveryKit) }
        world.clock.advance(by: 3_600_000)
        #expect(try core.perform(caller: "alice", .fetchRecoveryKit).storedRecoveryKit() == [4, 5, 6])
        try world.restartService()
        #expect(try world.core.perform(caller: "alice", .fetchRecoveryKit).storedRecoveryKit() == [4, 5, 6], "kept across a restart")
    }
}

/// Device links on the service (Spec/SYNC.md §5.8): what one device of an account leaves under a
/// link, another device of the same account fetches for 15 minutes; no other account sees it;
/// deposits are rate-limited.
@Suite struct DeviceLinkServiceTests {
    static let link: [UInt8] = Array(0..<16)

    @Test func aDeviceOfTheAccountFetchesWhatAnotherLeftUnderItsLink() throws {
        let world = try World()
        #expect(try world.core.perform(caller: "alice", .fetchDeviceLink(Self.link)).linkedKeys() == nil, "nothing left yet")
        _ = try world.core.perform(caller: "alice", .depositDeviceLink(link: Self.link, sealed: [7, 7, 7]))
        #expect(try world.core.perform(caller: "alice", .fetchDeviceLink(Self.link)).linkedKeys() == [7, 7, 7])
        #expect(try world.core.perform(caller: "alice", .fetchDeviceLink(Self.link)).linkedKeys() == [7, 7, 7], "a lost answer is asked again")
        try world.restartService()
        #expect(try world.core.perform(caller: "alice", .fetchDeviceLink(Self.link)).linkedKeys() == [7, 7, 7], "kept across a restart")
    }

    @Test func anotherAccountSeesNothingUnderTheLink() throws {
        let world = try World()
        _ = try world.core.perform(caller: "alice", .depositDeviceLink(link: Self.link, sealed: [7]))
        #expect(try world.core.perform(caller: "bob", .fetchDeviceLink(Self.link)).linkedKeys() == nil)
    }

    @Test func whatALinkCarriesIsForgottenAfterFifteenMinutes() throws {
        let world = try World()
        _ = try world.core.perform(caller: "alice", .depositDeviceLink(link: Self.link, sealed: [7]))
        world.clock.advance(by: DeviceLinkLimits.lifetimeMillis)
        #expect(try world.core.perform(caller: "alice", .fetchDeviceLink(Self.link)).linkedKeys() == nil)
        try world.restartService()
        #expect(try world.core.perform(caller: "alice", .fetchDeviceLink(Self.link)).linkedKeys() == nil, "and not read back at startup")
    }

    @Test func aBadLinkOrSizeIsRefusedAndDepositsAreRateLimited() throws {
        let world = try World()
        #expect(throws: SyncError.self) { _ = try world.core.perform(caller: "alice", .depositDeviceLink(link: [1, 2], sealed: [7])) }
        #expect(throws: SyncError.self) { _ = try world.core.perform(caller: "alice", .depositDeviceLink(link: Self.link, sealed: [])) }
        #expect(throws: SyncError.self) {
            _ = try world.core.perform(caller: "alice", .depositDeviceLink(link: Self.link, sealed: [UInt8](repeating: 0, count: DeviceLinkLimits.maxBytes + 1)))
        }
        for _ in 0..<world.limits.maxDeviceLinksPerHour { _ = try world.core.perform(caller: "alice", .depositDeviceLink(link: Self.link, sealed: [7])) }
        #expect {
            _ = try world.core.perform(caller: "alice", .depositDeviceLink(link: Self.link, sealed: [7]))
        } throws: { error in
            if case SyncError.rateLimited = error { return true } else { return false }
        }
        world.clock.advance(by: 3_600_000)
        _ = try world.core.perform(caller: "alice", .depositDeviceLink(link: Self.link, sealed: [8]))
    }
}

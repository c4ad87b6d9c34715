import Foundation
import Testing
import JournalLog
import JournalQuery
import JournalSeal
import JournalService
import ListModel
@testable import JournalSync

/// A sealed list's link invitation (Spec/SEALING.md §4.8): the owner leaves the epoch's key in the
/// list under the link's secret; the invitee reads at once and proves its keys with the secret;
/// the join owes a rotation, after which the link opens nothing new.
@Suite struct LinkInvitationTests {
    typealias Fixture = SealedEpochTests.Fixture

    static func linkKey(_ f: Fixture, _ secret: LinkSecret, _ key: ListKey) throws -> JournalEntry {
        f.stamped(.random(), author: "alice:phone", try secret.keyEntry(key, zone: f.zone.storeName))
    }

    @Test func aLinkKeyIsTheOwnersAndUnderTheCurrentEpoch() throws {
        let f = try Fixture(sharedWithBob: true)
        let key = try f.begin()
        let secret = LinkSecret.random()
        let good = try Self.linkKey(f, secret, key)
        #expect(try f.upload([good], as: "alice").saved == [good.id])
        let byBob = f.stamped(.random(), author: "bob:phone", try secret.keyEntry(key, zone: f.zone.storeName))
        #expect(SealedEpochTests.isInvalid(try f.upload([byBob], as: "bob").failed[byBob.id]))
        let ahead = try Self.linkKey(f, secret, ListKey.random(epoch: 2))
        #expect(try f.upload([ahead], as: "alice").failed[ahead.id] == .staleEpoch(current: 1))
    }

    @Test func aJoinWhileALinkKeyIsInTheListOwesARotation() throws {
        let f = try Fixture(sharedWithBob: false)
        let key = try f.begin(for: ["alice"])
        _ = try f.upload([try Self.linkKey(f, LinkSecret.random(), key)], as: "alice")
        try f.share(with: "bob")
        let text = try f.add("Milk", under: key, author: "alice:phone")
        #expect(try f.upload([text], as: "alice").failed[text.id] == .rotationDue(epoch: 1))
    }

    @Test func aJoinWithNoLinkKeyOwesNoRotation() throws {
        let f = try Fixture(sharedWithBob: false)
        let key = try f.begin(for: ["alice"])
        try f.share(with: "bob")
        let text = try f.add("Milk", under: key, author: "alice:phone")
        #expect(try f.upload([text], as: "alice").saved == [text.id])
    }

    @Test func aLinkProofIsOfItsWritersOwnKeys() throws {
        let f = try Fixture()
        _ = try f.begin()
        let secret = LinkSecret.random()
        let own = f.stamped(.random(), author: "bob:phone", secret.proof(f.keys["bob"]!.publicKeys, zone: f.zone.storeName))
        #expect(try f.upload([own], as: "bob").saved == [own.id])
        let carols = f.stamped(.random(), author: "bob:phone", secret.proof(f.keys["carol"]!.publicKeys, zone: f.zone.storeName))
        #expect(SealedEpochTests.isInvalid(try f.upload([carols], as: "bob").failed[carols.id]))
    }
}

/// The whole link invitation between two devices' engines.
@Suite struct LinkInvitationEngineTests {
    typealias Pins = PinBox

    static func entries(_ d: Device, _ zone: ZoneID) throws -> [JournalEntry] {
        try ListQuery(store: d.store, fs: d.fs).entries(zone.storeName).entries.map(\.1)
    }

    static func add(_ text: String, on d: Device, under key: ListKey, in zone: ZoneID) async throws {
        let sealer = TextSealer(key: key, zone: zone.storeName)
        try await d.engine.record(in: zone) { s in
            try sealer.add(text, item: .random(), after: nil, entry: s.id, author: s.author, clock: s.clock, wallTime: s.wallTime).operation
        }
    }

    @Test func theInviteeReadsAtOnceProvesItsKeysAndTheJoinRotatesTheLinkAway() async throws {
        let world = try World()
        let keys = ["alice": AccountKeys(account: "alice"), "bob": AccountKeys(account: "bob")]
        for (account, k) in keys { _ = try world.core.perform(caller: account, .publishAccountKeys(k.published)) }
        let alicePins = Pins(), bobPins = Pins()
        alicePins.update { _ = $0.pin(keys["alice"]!.publicKeys) }
        bobPins.update { _ = $0.pin(keys["bob"]!.publicKeys) }
        let alice = try world.device("alice:phone"), bob = try world.device("bob:phone")
        await alice.engine.useSealing(SealedListKeys(account: keys["alice"]!, pins: { alicePins.value }))
        await bob.engine.useSealing(SealedListKeys(account: keys["bob"]!, pins: { bobPins.value }))
        let zone = try await alice.engine.createList(SealedZone.name(random: (0..<16).map { _ in UInt8.random(in: 0...255) }))
        let first = ListKey.random(epoch: 1)
        try await alice.engine.recordKeys(try EpochKeys.record(for: first, previous: nil, reason: .creation, zone: zone.storeName,
                                                               members: [keys["alice"]!.publicKeys], creator: keys["alice"]!), in: zone)
        try await Self.add("Milk", on: alice, under: first, in: zone)

        // alice leaves the key under the link's secret and sends bob the link.
        let secret = LinkSecret.random()
        try await alice.engine.record(in: zone) { _ in try secret.keyEntry(first, zone: zone.storeName) }
        await alice.sync()
        let preview = InvitationPreview(owner: "alice", listName: "Weekly", ownerKeys: keys["alice"]!.publicKeys.fingerprint, linkSecret: secret.bytes)
        let invitation = try await alice.engine.share(zone, with: "bob", preview: preview)

        // bob joins and reads at once, before anyone wraps the key to him.
        let read = try #require(SyncEngine.preview(of: invitation))
        let received = try #require(read.linkSecret.flatMap(LinkSecret.init(bytes:)))
        _ = try await bob.engine.accept(invitation)
        await bob.sync()
        let linked = try #require(received.newestKey(in: try Self.entries(bob, zone), zone: zone.storeName))
        let onBob = try bob.list(zone)
        let ring = try ListKeyring(zone: zone.storeName, records: onBob.keyRecords, account: keys["bob"]!,
                                   publicKeys: { keys[$0]?.publicKeys }, linked: linked)
        #expect(try onBob.items.map { try ring.open($0.sealedText!.value, for: $0.sealedText!.binding) } == ["Milk"])
        try await bob.engine.record(in: zone) { _ in received.proof(keys["bob"]!.publicKeys, zone: zone.storeName) }
        await bob.sync()

        // alice's device pins bob's keys from his proof, then its next change rotates the link away.
        await alice.sync()
        for e in try Self.entries(alice, zone) {
            guard case .opaque(LinkEntries.proofKind, let body) = e.operation, let k = secret.verifiedKeys(body, zone: zone.storeName) else { continue }
            alicePins.update { $0.repin(k) }
        }
        #expect(alicePins.value.pinned("bob") == keys["bob"]!.publicKeys)
        try await Self.add("Eggs", on: alice, under: first, in: zone)
        let report = await alice.sync()
        #expect(report.rotations == 1 && report.reissued == 1, "\(report.problems)")
        await settle([alice, bob], rounds: 4)

        let state = try bob.list(zone)
        #expect(state.keyRecords.map(\.epoch) == [1, 2])
        let wrapped = try ListKeyring(zone: zone.storeName, records: state.keyRecords, account: keys["bob"]!, publicKeys: { keys[$0]?.publicKeys })
        #expect(wrapped.standing == .member)
        #expect(try state.items.map { try wrapped.open($0.sealedText!.value, for: $0.sealedText!.binding) }.sorted() == ["Eggs", "Milk"])
        // Whoever else holds the link opens nothing written after the join.
        let leaked = try ListKeyring(zone: zone.storeName, records: state.keyRecords, account: AccountKeys(account: "mallory"),
                                     publicKeys: { keys[$0]?.publicKeys }, linked: linked)
        #expect(leaked.standing != .member && leaked.keys[2] == nil)
    }
}

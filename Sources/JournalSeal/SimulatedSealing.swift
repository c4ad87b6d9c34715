import Foundation
import JournalCodec
import JournalLog
import JournalSync

/// Sealing for a simulated run (`jlog simulate --sealed`, and the tests that run one): each
/// account's keys drawn from its name and how often it replaced them (a run replays), every
/// device pinning every account's current keys (it follows every vouched change), key records,
/// and texts sealed and opened with an account's keys from a list's records. Package-only: the
/// simulation is the project's, and it takes these as closures so that it needs no cryptography
/// itself.
package struct SimulatedSealing: Sendable {
    /// By account: how many times it replaced its keys (a vouched change each, SEALING.md §4.7).
    final class Generations: @unchecked Sendable {
        private let lock = NSLock()
        private var byAccount: [String: Int] = [:]

        func of(_ account: String) -> Int { lock.withLock { byAccount[account] ?? 0 } }
        func advance(_ account: String) { lock.withLock { byAccount[account, default: 0] += 1 } }
        func retreat(_ account: String) { lock.withLock { byAccount[account, default: 0] -= 1 } }
    }

    let generations = Generations()

    package init() {}

    /// `account`'s keys of `generation`, the same in every run (generation 0: its first keys).
    package static func keys(_ account: String, generation: Int = 0) -> AccountKeys {
        let seed = account.utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        var rng = SplitMix64(seed: seed &+ UInt64(generation) &* 0x9E37_79B9_7F4A_7C15)
        return AccountKeys(account: account, raw: (0..<64).map { _ in UInt8(truncatingIfNeeded: rng.next()) })!
    }

    /// `account`'s keys now.
    func current(_ account: String) -> AccountKeys { Self.keys(account, generation: generations.of(account)) }

    /// `account`'s keys before its current ones, newest first.
    func former(_ account: String) -> [AccountKeys] {
        (0..<generations.of(account)).reversed().map { Self.keys(account, generation: $0) }
    }

    func pinned(_ account: String) -> AccountPublicKeys? { current(account).publicKeys }

    func formerPublic(_ account: String, _ keyID: [UInt8]) -> AccountPublicKeys? {
        former(account).map(\.publicKeys).first { $0.keyID == keyID }
    }

    func ring(_ records: [EpochKeyRecord], _ zone: String, _ account: String) -> ListKeyring? {
        records.isEmpty ? nil : try? ListKeyring(zone: zone, records: records, account: current(account), publicKeys: pinned,
                                                 formerKeys: formerPublic, formerAccountKeys: former(account))
    }

    package var published: @Sendable (String) -> PublishedAccountKeys {
        { account in
            let now = current(account)
            guard let before = former(account).first else { return now.published }
            return (try? before.vouching(for: now)) ?? now.published
        }
    }

    /// Replaces `account`'s keys with new ones its current keys vouch for; the keys to publish.
    package var changeKeys: @Sendable (String) -> PublishedAccountKeys {
        { account in
            generations.advance(account)
            return published(account)
        }
    }

    /// Takes back the last `changeKeys` of `account` (its keys were never published).
    package var keepKeys: @Sendable (String) -> Void {
        { account in generations.retreat(account) }
    }

    package var engineSealing: @Sendable (String) -> any SealedListSealing {
        { account in EngineSealing(sealing: self, account: account) }
    }

    /// An engine's sealing that follows its account's key changes.
    struct EngineSealing: SealedListSealing {
        let sealing: SimulatedSealing
        let account: String

        var keys: SealedListKeys {
            SealedListKeys(account: sealing.current(account), pinned: sealing.pinned, formerKeys: sealing.formerPublic,
                           formerAccountKeys: sealing.former(account))
        }

        func reseal(_ refused: JournalEntry, for stamp: EntryStamp, records: [EpochKeyRecord]) -> EntryOperation? {
            keys.reseal(refused, for: stamp, records: records)
        }

        func nextEpoch(after records: [EpochKeyRecord], in zone: ZoneID, members: [PublishedAccountKeys],
                       reason: EpochKeyRecord.Reason) -> EpochKeyRecord? {
            keys.nextEpoch(after: records, in: zone, members: members, reason: reason)
        }
    }

    package var nextRecord: @Sendable ([EpochKeyRecord], ZoneID, String, [String], EpochKeyRecord.Reason) -> EpochKeyRecord? {
        { records, zone, creator, members, reason in
            var previous: ListKey? = nil
            if !records.isEmpty {
                guard let r = ring(records, zone.storeName, creator), let current = r.keys[r.currentEpoch] else { return nil }
                previous = current
            }
            return try? EpochKeys.record(for: ListKey.random(epoch: (previous?.epoch ?? 0) + 1), previous: previous, reason: reason,
                                         zone: zone.storeName, members: members.map { self.current($0).publicKeys }, creator: self.current(creator))
        }
    }

    package var seal: @Sendable (String, SealBinding, [EpochKeyRecord], String) -> SealedValue? {
        { text, binding, records, account in
            guard let sealer = ring(records, binding.zone, account)?.sealer(), sealer.epoch == binding.epoch else { return nil }
            return try? sealer.seal(text, for: binding)
        }
    }

    package var open: @Sendable (SealedValue, SealBinding, [EpochKeyRecord], String) -> String? {
        { value, binding, records, account in try? ring(records, binding.zone, account)?.open(value, for: binding) }
    }
}

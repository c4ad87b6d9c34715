import JournalCodec
import JournalLog
import JournalSync

/// Sealing for a simulated run (`jlog simulate --sealed`, and the tests that run one): each
/// account's keys drawn from its name (a run replays), every device pinning every account's
/// keys, key records, and texts sealed and opened with an account's keys from a list's records.
/// Package-only: the simulation is the project's, and it takes these as closures so that it
/// needs no cryptography itself.
package struct SimulatedSealing: Sendable {
    package init() {}

    /// `account`'s keys, the same in every run.
    package static func keys(_ account: String) -> AccountKeys {
        var rng = SplitMix64(seed: account.utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 })
        return AccountKeys(account: account, raw: (0..<64).map { _ in UInt8(truncatingIfNeeded: rng.next()) })!
    }

    static func pinned(_ account: String) -> AccountPublicKeys? { keys(account).publicKeys }

    static func ring(_ records: [EpochKeyRecord], _ zone: String, _ account: String) -> ListKeyring? {
        records.isEmpty ? nil : try? ListKeyring(zone: zone, records: records, account: keys(account), publicKeys: pinned)
    }

    package var published: @Sendable (String) -> PublishedAccountKeys {
        { account in
            let p = Self.keys(account).publicKeys
            return PublishedAccountKeys(account: account, identity: p.identity, wrap: p.wrap)
        }
    }

    package var engineSealing: @Sendable (String) -> any SealedListSealing {
        { account in SealedListKeys(account: Self.keys(account), pinned: Self.pinned) }
    }

    package var nextRecord: @Sendable ([EpochKeyRecord], ZoneID, String, [String], EpochKeyRecord.Reason) -> EpochKeyRecord? {
        { records, zone, creator, members, reason in
            var previous: ListKey? = nil
            if !records.isEmpty {
                guard let r = Self.ring(records, zone.storeName, creator), let current = r.keys[r.currentEpoch] else { return nil }
                previous = current
            }
            return try? EpochKeys.record(for: ListKey.random(epoch: (previous?.epoch ?? 0) + 1), previous: previous, reason: reason,
                                         zone: zone.storeName, members: members.map { Self.keys($0).publicKeys }, creator: Self.keys(creator))
        }
    }

    package var seal: @Sendable (String, SealBinding, [EpochKeyRecord], String) -> SealedValue? {
        { text, binding, records, account in
            guard let sealer = Self.ring(records, binding.zone, account)?.sealer(), sealer.epoch == binding.epoch else { return nil }
            return try? sealer.seal(text, for: binding)
        }
    }

    package var open: @Sendable (SealedValue, SealBinding, [EpochKeyRecord], String) -> String? {
        { value, binding, records, account in try? Self.ring(records, binding.zone, account)?.open(value, for: binding) }
    }
}

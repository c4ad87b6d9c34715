import Foundation
import Testing
import JournalLog
import JournalSeal
import JournalService
import ListModel
@testable import JournalSync

/// A removed participant reads nothing written after its removal (Spec/SEALING.md §5.1), over
/// random schedules of joins, leaves, removals with and without a rotation, rotations (two at
/// once too), texts from devices whose view of the epoch lags (offline across a rotation), and
/// retries. At the end every sealed text the service holds is handed to the keys of each account
/// that left and did not come back: none stored after its departure opens, while every text
/// stored before it under an epoch it was wrapped for does (the control).
@Suite struct SealedRemovalPropertyTests {
    static let accounts = ["alice", "bob", "carol", "dave"]

    /// One schedule's service, keys and what was written.
    final class Schedule {
        let f: SealedEpochTests.Fixture
        var rng: SplitMix64
        /// Every epoch's key, as the device that began it drew it.
        var epochKeys: [UInt64: ListKey] = [:]
        var records: [EpochKeyRecord] = []
        /// The epoch each account's device believes current (it lags while the device is offline).
        var seen: [String: UInt64] = [:]
        var saved: [JournalEntry] = []
        var outcomes: [String: Int] = [:]

        init(seed: UInt64) throws {
            f = try SealedEpochTests.Fixture(sharedWithBob: false, accounts: SealedRemovalPropertyTests.accounts)
            rng = SplitMix64(seed: seed)
            try rotate(by: "alice", for: ["alice"], reason: .creation)
        }

        var epoch: UInt64 { records.last?.epoch ?? 0 }
        var members: [String] { ["alice"] + f.core.members(of: f.zone) }
        func pick<T>(_ xs: [T]) -> T? { xs.isEmpty ? nil : xs[Int(rng.next() % UInt64(xs.count))] }
        func note(_ what: String) { outcomes[what, default: 0] += 1 }

        /// The epochs `account` holds keys of: up to the newest record wrapped to it.
        func held(by account: String) -> UInt64 { records.last { $0.wraps.contains { $0.account == account } }?.epoch ?? 0 }

        /// The next epoch's record, by `creator` for `members`; uploaded, and noted when taken.
        @discardableResult
        func rotate(by creator: String, for members: [String], reason: EpochKeyRecord.Reason) throws -> UploadResult {
            let key = ListKey.random(epoch: epoch + 1)
            let record = try f.record(key, previous: epochKeys[epoch], by: creator, for: members, reason: reason)
            let r = try f.upload([f.entry(record, author: creator + ":phone")], as: creator)
            if !r.saved.isEmpty {
                epochKeys[key.epoch] = key
                records.append(record)
                seen[creator] = key.epoch
            }
            return r
        }

        func step() throws {
            let others = SealedRemovalPropertyTests.accounts.filter { $0 != "alice" }
            switch rng.next() % 8 {
            case 0:
                guard let x = pick(others.filter { !members.contains($0) }) else { return }
                try f.share(with: x)
                note("join")
            case 1:
                guard let x = pick(members.filter { $0 != "alice" }) else { return }
                _ = try f.core.perform(caller: x, .removeParticipant(x, zone: f.zone))
                note("leave")
            case 2:
                guard let x = pick(members.filter { $0 != "alice" }) else { return }
                _ = try f.core.perform(caller: "alice", .removeParticipant(x, zone: f.zone))
                note("removal")
            case 3:
                guard let x = pick(members.filter { $0 != "alice" }) else { return }
                let r = try rotate(by: "alice", for: members.filter { $0 != x }, reason: .removal)
                #expect(r.failed.isEmpty, "the owner's removal with its rotation: \(r.failed)")
                #expect(!members.contains(x))
                note("removal with rotation")
            case 4:
                guard let m = pick(members.filter { held(by: $0) == epoch }) else { return }
                let r = try rotate(by: m, for: members, reason: .leave)
                #expect(r.failed.isEmpty, "a rotation by \(m): \(r.failed)")
                note("rotation")
            case 5:
                // Two members' devices rotate at once: one record is taken, the other conflicts.
                let able = members.filter { held(by: $0) == epoch }
                guard able.count >= 2 else { return }
                let second = try f.record(ListKey.random(epoch: epoch + 1), previous: epochKeys[epoch], by: able[1], for: members, reason: .leave)
                try #require(try rotate(by: able[0], for: members, reason: .leave).failed.isEmpty)
                let e = f.entry(second, author: able[1] + ":phone")
                guard case .conflict = try f.upload([e], as: able[1]).failed[e.id] else { Issue.record("a second record of one epoch was not a conflict"); return }
                note("concurrent rotation")
            case 6:
                guard let e = pick(saved), members.contains(SyncNames.account(ofAuthor: e.author)) else { return }
                #expect(try f.upload([e], as: SyncNames.account(ofAuthor: e.author)).saved == [e.id], "a retry is saved")
                note("retry")
            default:
                try write()
            }
        }

        /// A text from a member's device, under the epoch it believes current: half the time it
        /// learns the current one first (online), otherwise it writes from what it last saw.
        func write() throws {
            guard let m = pick(members) else { return }
            if rng.next() % 2 == 0 { seen[m] = held(by: m) }
            let believed = seen[m] ?? 0
            guard believed > 0, believed <= held(by: m), let key = epochKeys[believed] else { return }
            let e = try f.add("text-\(rng.next() % 1_000_000)", under: key, author: m + ":phone")
            let r = try f.upload([e], as: m)
            switch r.failed[e.id] {
            case nil:
                #expect(believed == epoch, "a text under epoch \(believed) was taken at epoch \(epoch)")
                saved.append(e)
                note("text taken")
            case .staleEpoch(let current)?:
                #expect(current == epoch && believed != epoch)
                seen[m] = held(by: m)
                note("staleEpoch")
            case .rotationDue(let owed)?:
                #expect(owed == epoch && believed == epoch)
                note("rotationDue")
            case let other?: Issue.record("a text was refused: \(other)")
            }
        }

        /// The property, over what the service holds in the end.
        func check() throws -> (afterOpened: Int, after: Int, beforeOpened: Int) {
            var entries: [FeedEntry] = []
            var token: FeedToken? = nil
            repeat {
                let page = try f.core.storage.zoneChanges(f.zone.storeName, since: token, limit: 10_000)
                entries += page.entries
                token = page.token
                if !page.moreComing { break }
            } while true
            let directory: (String) -> AccountPublicKeys? = { [f] in f.keys[$0]?.publicKeys }
            var after = 0, afterOpened = 0, beforeOpened = 0
            for x in SealedRemovalPropertyTests.accounts where x != "alice" && !members.contains(x) {
                guard let left = entries.last(where: { $0.entry.operation == .leave(participant: x) })?.sequence else { continue }
                let ring = try ListKeyring(zone: f.zone.storeName, records: records, account: f.keys[x]!, publicKeys: directory)
                for e in entries {
                    guard let change = try SealedChange(e.entry.operation) else { continue }
                    let opens = (try? ring.sealer(epoch: change.text.epoch)?.open(change, in: e.entry)) != nil
                    if e.sequence > left {
                        after += 1
                        if opens { afterOpened += 1 }
                    } else if opens {
                        beforeOpened += 1
                    } else {
                        #expect(ring.keys[change.text.epoch] == nil, "a text before \(x) left, under an epoch it holds, does not open")
                    }
                }
            }
            return (afterOpened, after, beforeOpened)
        }
    }

    @Test(arguments: 1...24) func aRemovedParticipantOpensNothingStoredAfterItsRemoval(seed: UInt64) throws {
        let s = try Schedule(seed: seed)
        for _ in 0..<60 { try s.step() }
        let (afterOpened, after, _) = try s.check()
        #expect(afterOpened == 0, "\(afterOpened) of \(after) texts stored after a removal open for the removed account (\(s.outcomes))")
    }

    /// The schedules reach every rule, and the control holds: texts stored before a departure
    /// open for the account that left.
    @Test func theSchedulesReachEveryRuleAndTheControlOpens() throws {
        var outcomes: [String: Int] = [:], beforeOpened = 0, after = 0
        for seed in UInt64(1)...24 {
            let s = try Schedule(seed: seed)
            for _ in 0..<60 { try s.step() }
            let checked = try s.check()
            beforeOpened += checked.beforeOpened
            after += checked.after
            outcomes.merge(s.outcomes, uniquingKeysWith: +)
        }
        for rule in ["join", "leave", "removal", "removal with rotation", "rotation", "concurrent rotation", "retry",
                     "text taken", "staleEpoch", "rotationDue"] {
            #expect(outcomes[rule, default: 0] > 0, "no schedule reached \(rule): \(outcomes)")
        }
        #expect(beforeOpened > 0 && after > 0, "the control: \(beforeOpened) texts before a departure open; \(after) after")
    }
}

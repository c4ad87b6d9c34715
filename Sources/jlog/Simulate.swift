import ArgumentParser
import Foundation
import JournalCodec
import JournalPostgres
import JournalSeal
import JournalSimulation
import JournalSync

/// `jlog simulate`: the seeded multi-device run of Spec/SYNC.md §8, for users and for CI sweeps.
struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the seeded sync simulation: devices editing shared lists through a faulty service, then a convergence check.",
        discussion: """
        Every device has its own store on a simulated disk; the service is the reference service \
        over its own store. With --faults all, the service drops responses after applying them, \
        duplicates and delays deliveries, refuses large batches and rate-limits; devices go \
        offline and lose power; the service compacts (devices follow each compaction; a device whose last complete sync \
        is older than the retention re-fetches, and one that re-fetches sooner fails the run), restarts and loses power; \
        and the service's storage fails under it (the database not answering, answers lost after \
        a commit, damage read, slow calls), which must never sign a device out or lose anything. \
        Exit status 0 when every device converged to the service's lists and histories with \
        nothing lost or duplicated, 2 otherwise. The same seed replays the same run exactly.
        """)

    enum Faults: String, ExpressibleByArgument, CaseIterable { case none, all }

    @Option(help: "Devices (each an account's phone; accounts share lists with each other).") var replicas = 5
    @Option(help: "Random steps: edits, syncs, partitions, power losses, compactions, sharing changes.") var ops = 1_000
    @Option(help: "The seed; a failing seed replays exactly.") var seed: UInt64 = 1
    @Option(help: "Which faults to inject: none or all.") var faults: Faults = .none
    @Option(help: "Accounts (at most --replicas).") var accounts = 3
    @Option(help: ArgumentHelp("Run the service over this PostgreSQL database (postgres://…), in a schema of its own per run, instead of an in-memory store.",
                               valueName: "url"))
    var database: String?
    @Flag(help: "Seal every list's item texts and names (Spec/SEALING.md); converging then also means every sealed text opens.")
    var sealed = false
    @Flag(help: "One JSON object: {converged, lost, duplicated, uploadsPerChange, sendsPerChange, seed, …}.") var json = false

    func validate() throws {
        guard (1...64).contains(replicas) else { throw ValidationError("--replicas must be 1…64") }
        guard (0...10_000_000).contains(ops) else { throw ValidationError("--ops must be 0…10000000") }
        guard (1...64).contains(accounts) else { throw ValidationError("--accounts must be 1…64") }
    }

    /// Real sealing for a sealed run (JournalSeal's), handed to the simulation.
    static func sealing() -> SimulationSealing {
        let s = SimulatedSealing()
        return SimulationSealing(published: s.published, engineSealing: s.engineSealing, nextRecord: s.nextRecord, seal: s.seal, open: s.open,
                                 changeKeys: s.changeKeys, keepKeys: s.keepKeys)
    }

    func run() async throws {
        var o = SimulationOptions()
        o.replicas = replicas
        o.ops = ops
        o.seed = seed
        o.faults = faults == .all
        if o.faults { o.storageFaults = .all }
        o.accounts = accounts
        if sealed { o.sealing = Self.sealing() }
        if let database {
            let url = database + (database.contains("?") ? "&" : "?") + "schema=sim_\(seed)_\(UInt32.random(in: 0...UInt32.max))"
            o.storage = { now in try PostgresServiceStorage.openWaiting(url, now: now) }
        }
        let r = await SyncSimulation.run(o)
        if json {
            let out: JSON = .object([
                ("seed", .uint(r.seed)), ("replicas", .int(Int64(r.replicas))), ("ops", .int(Int64(r.ops))),
                ("faults", .string(faults.rawValue)),
                ("converged", .bool(r.converged)), ("lost", .int(Int64(r.lost))), ("duplicated", .int(Int64(r.duplicated))),
                ("uploadsPerChange", .double(r.uploadsPerChange)), ("sendsPerChange", .double(r.sendsPerChange)),
                ("foreignUploads", .int(Int64(r.foreignUploads))),
                ("localChanges", .int(Int64(r.localChanges))), ("entriesSent", .int(Int64(r.entriesSent))),
                ("faultsInjected", .int(Int64(r.faultsInjected))), ("powerLosses", .int(Int64(r.powerLosses))), ("hintedSyncs", .int(Int64(r.hintedSyncs))),
                ("serviceRestarts", .int(Int64(r.serviceRestarts))), ("compactions", .int(Int64(r.compactions))),
                ("purged", .int(Int64(r.purged))), ("refetches", .int(Int64(r.refetches))),
                ("refetchCauses", .object(r.refetchCauses.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
                ("compactionsFollowed", .int(Int64(r.compactionsFollowed))), ("refetchesWithinRetention", .int(Int64(r.refetchesWithinRetention))),
                ("membershipChanges", .int(Int64(r.membershipChanges))), ("settleRounds", .int(Int64(r.settleRounds))),
                ("windowReads", .int(Int64(r.windowReads))),
                ("sealed", .bool(sealed)), ("sealedTexts", .int(Int64(r.sealedTexts))), ("unopened", .int(Int64(r.unopened))),
                ("rotations", .int(Int64(r.rotations))), ("reissued", .int(Int64(r.reissued))), ("keyChanges", .int(Int64(r.keyChanges))),
                ("storageFaultsInjected", .int(Int64(r.storageFaultsInjected))), ("compactionsFailed", .int(Int64(r.compactionsFailed))),
                ("startsFailed", .int(Int64(r.startsFailed))), ("signedOut", .int(Int64(r.signedOut))),
                ("seconds", .double((r.seconds * 1000).rounded() / 1000)),
                ("problems", .array(r.problems.map { .string($0) })),
            ])
            print(out.rendered)
        } else {
            print("seed \(r.seed): \(r.replicas) devices, \(r.ops) steps, faults \(faults.rawValue)")
            print("  \(r.converged ? "converged" : "DID NOT CONVERGE"): lost \(r.lost), duplicated \(r.duplicated)")
            print("  \(r.localChanges) local changes, \(String(format: "%.3f", r.uploadsPerChange)) uploads and \(String(format: "%.3f", r.sendsPerChange)) sends per change")
            print("  \(r.faultsInjected) faults, \(r.powerLosses) power losses, \(r.serviceRestarts) service restarts, \(r.compactions) compactions (\(r.purged) entries purged, \(r.windowReads) lists paged across one), \(r.refetches) re-fetches (\(r.refetchCauses.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))), \(r.compactionsFollowed) compactions followed, \(r.membershipChanges) sharing changes, \(r.hintedSyncs) hinted syncs")
            print("  \(r.storageFaultsInjected) storage faults (\(r.compactionsFailed) compactions and \(r.startsFailed) service starts failed by them), \(r.signedOut) devices signed out")
            if sealed { print("  sealed: \(r.sealedTexts) texts shown, \(r.unopened) not opening; \(r.rotations) epochs begun, \(r.reissued) changes made again under a newer key, \(r.keyChanges) accounts' keys replaced") }
            print("  settled in \(r.settleRounds) rounds, \(String(format: "%.2f", r.seconds)) s")
            for p in r.problems { print("  problem: \(p)") }
            if !r.converged { print("  replay: jlog simulate --replicas \(replicas) --ops \(ops) --seed \(seed) --faults \(faults.rawValue) --accounts \(accounts)" + (sealed ? " --sealed" : "")) }
        }
        if !r.converged { throw ExitCode(Status.corruption) }
    }
}

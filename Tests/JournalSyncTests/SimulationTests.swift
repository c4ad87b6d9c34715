import Foundation
import Testing
import JournalCodec
import JournalSeal
import JournalSimulation

@Suite struct SyncSimulationTests {
    static func run(seed: UInt64, ops: Int, replicas: Int = 5, faults: Bool = true, sealing: SimulationSealing? = nil) async -> SimulationResult {
        var o = SimulationOptions()
        o.seed = seed
        o.ops = ops
        o.replicas = replicas
        o.faults = faults
        o.sealing = sealing
        return await SyncSimulation.run(o)
    }

    /// Every list sealed (SEALING.md) through every fault, with sharing, removals and leaves:
    /// the lists converge, the service compacts and devices re-fetch them, epochs begin on
    /// joins, on the departures and key changes that owe them, changes refused for their epoch are made again,
    /// and every sealed text every device shows opens with its account's keys.
    @Test func aSealedRunWithEveryFaultConvergesAndEveryTextOpens() async {
        let s = SimulatedSealing()
        let sealing = SimulationSealing(published: s.published, engineSealing: s.engineSealing, nextRecord: s.nextRecord, seal: s.seal, open: s.open,
                                        changeKeys: s.changeKeys, keepKeys: s.keepKeys)
        let r = await Self.run(seed: 3, ops: 1_000, replicas: 5, sealing: sealing)
        #expect(r.converged, "\(r.problems)")
        #expect(r.lost == 0 && r.duplicated == 0)
        #expect(r.sealedTexts > 0 && r.unopened == 0)
        #expect(r.compactions > 0 && r.refetches > 0)
        #expect(r.rotations > 0 && r.reissued > 0, "\(r.rotations) epochs, \(r.reissued) made again")
        #expect(r.keyChanges > 0, "accounts replaced their keys")
    }

    @Test func aRunWithoutFaultsConverges() async {
        let r = await Self.run(seed: 1, ops: 400, faults: false)
        #expect(r.converged, "\(r.problems)")
        #expect(r.lost == 0 && r.duplicated == 0)
        #expect(r.sendsPerChange == 1, "without faults every local change is sent exactly once")
    }

    @Test func aRunWithEveryFaultConverges() async {
        let r = await Self.run(seed: 2, ops: 600)
        #expect(r.converged, "\(r.problems)")
        #expect(r.lost == 0 && r.duplicated == 0)
        #expect(r.foreignUploads == 0, "nothing fetched goes back up")
        #expect(r.uploadsPerChange <= 1)
        #expect(r.faultsInjected > 0 && r.powerLosses > 0 && r.compactions > 0)
    }

    /// A few hundred seeds, small: every one converges with nothing lost or duplicated
    /// (`jlog simulate` and `.ci/run` sweep more).
    @Test(arguments: 0..<12)
    func seedsConverge(block: Int) async {
        for seed in UInt64(block * 25 + 100)..<UInt64(block * 25 + 125) {
            let r = await Self.run(seed: seed, ops: 120, replicas: 3)
            #expect(r.converged, "seed \(seed): \(r.problems)")
            if !r.converged { return }
        }
    }

    /// Readers that begin paging a list while a compaction rewrites the service's log
    /// (`WindowReader`) end with the service's entries, or are told to wait or start over.
    @Test func readersPagingAcrossACompactionEndWithTheServicesEntries() async {
        var reads = 0
        for seed in UInt64(0)..<8 {
            let r = await Self.run(seed: seed, ops: 600)
            #expect(r.converged, "seed \(seed): \(r.problems)")
            reads += r.windowReads
        }
        #expect(reads >= 8, "\(reads) readers paged across a rewrite and compared")
    }
}

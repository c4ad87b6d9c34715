import Foundation
import Testing
import JournalLog
import ListModel
@testable import JournalQuery

/// Spec/SYNC.md §6.2 rule 1: a device never compacts a list it syncs, and only the service compacts
/// a server's store. `jlog compact` refused both; the library call now does too.
@Suite struct SyncedStoreTests {
    typealias C = CompactorTests

    static func refused(_ compactor: ListCompactor) -> Bool {
        do {
            _ = try compactor.run(now: C.later)
            return false
        } catch {
            if case .syncedStore = error { return true }
            Issue.record("expected syncedStore, got \(error)")
            return false
        }
    }

    @Test func aDevicesStoreIsNeverCompacted() throws {
        let (s, fs) = try C.sevenEntryStore()
        try fs.createDirectory(s.path + "/sync")
        try AtomicFile.write([1], to: s.path + "/sync/state", fs: fs)
        var compactor = ListCompactor(store: s, fs: fs)
        #expect(Self.refused(compactor))
        compactor.isTheSyncService = true
        #expect(Self.refused(compactor), "a device's store is refused whoever asks")
        #expect(s.zone(C.zone)!.lowWaterMark == 0, "something changed")
        #expect(throws: Never.self) { _ = try compactor.run(now: C.later, dryRun: true) }
    }

    @Test func aServersStoreIsCompactedOnlyByItsService() throws {
        let (s, fs) = try C.sevenEntryStore()
        try fs.createDirectory(s.path + "/service")
        var compactor = ListCompactor(store: s, fs: fs)
        #expect(Self.refused(compactor))
        compactor.isTheSyncService = true
        let report = try compactor.run(now: C.later)
        #expect(!report.zones.isEmpty)
    }
}

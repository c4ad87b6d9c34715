import JournalLog
import JournalQuery
import JournalService
import JournalSync
import NIOPosix

/// `ServiceCore` on a thread pool: its calls block (a durable upload waits for fsync), and a
/// server's event loops must never wait for a disk. Every call of the protocol hops to the pool
/// and back. The pool is wider than the machine: its threads mostly wait for the disk, and
/// uploads waiting together share one fsync (group commit).
package struct BlockingBackend: ServiceBackend {
    package let core: ServiceCore
    let pool: NIOThreadPool

    /// A pool of `threads` threads of its own (started here, for the life of the process).
    package init(core: ServiceCore, threads: Int = 64) {
        self.core = core
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    package var limits: ServiceLimits { core.limits }
    package var hints: HintHub { core.hints }

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws(SyncError) -> T) async throws(SyncError) -> T {
        let work = { @Sendable () -> Result<T, SyncError> in
            do throws(SyncError) { return .success(try body()) } catch { return .failure(error) }
        }
        let outcome: Result<T, SyncError>
        do {
            // Called on an event loop (a server whose tasks run on its loops): the answer comes
            // back to that loop, the request's connection's, and is written there, rather than
            // resuming on whichever loop is next and hopping again to write.
            if let loop = MultiThreadedEventLoopGroup.currentEventLoop {
                outcome = try await pool.runIfActive(eventLoop: loop, work).get()
            } else {
                outcome = try await pool.runIfActive(work)
            }
        } catch {
            throw .serviceBusy(retryAfter: .seconds(1))   // the pool is shutting down
        }
        return try outcome.get()
    }

    /// A compaction of the service's store (`ServiceCore.compact`), on the pool: it reads and
    /// rewrites for seconds, which no event loop or concurrency thread may wait for.
    package func compact(now: Int64) async throws(SyncError) -> ListCompactionReport {
        try await run { () throws(SyncError) in try core.compact(now: now) }
    }

    package func upload(caller: String, entries: [JournalEntry], to zone: ZoneID) async throws(SyncError) -> UploadResult {
        try await run { () throws(SyncError) in try core.upload(caller: caller, entries: entries, to: zone) }
    }
    package func fetchDatabaseChanges(caller: String, scope: DatabaseScope, since token: ServiceToken?, limit: Int) async throws(SyncError) -> DatabaseChangesPage {
        try await run { () throws(SyncError) in try core.fetchDatabaseChanges(caller: caller, scope: scope, since: token, limit: limit) }
    }
    package func fetchZoneChanges(caller: String, zone: ZoneID, since token: ServiceToken?, limit: Int) async throws(SyncError) -> ZoneChangesPage {
        try await run { () throws(SyncError) in try core.fetchZoneChanges(caller: caller, zone: zone, since: token, limit: limit) }
    }
    package func fetchZoneHistory(caller: String, zone: ZoneID) async throws(SyncError) -> [UInt8] {
        try await run { () throws(SyncError) in try core.fetchZoneHistory(caller: caller, zone: zone) }
    }
    package func createZone(caller: String, zone: ZoneID) async throws(SyncError) {
        try await run { () throws(SyncError) in try core.createZone(caller: caller, zone: zone) }
    }
    package func deleteZone(caller: String, zone: ZoneID) async throws(SyncError) {
        try await run { () throws(SyncError) in try core.deleteZone(caller: caller, zone: zone) }
    }
    package func shareZone(caller: String, zone: ZoneID, with participant: String) async throws(SyncError) -> ShareInvitation {
        try await run { () throws(SyncError) in try core.shareZone(caller: caller, zone: zone, with: participant) }
    }
    package func acceptShare(caller: String, invitation: ShareInvitation) async throws(SyncError) -> ZoneID {
        try await run { () throws(SyncError) in try core.acceptShare(caller: caller, invitation: invitation) }
    }
    package func removeParticipant(caller: String, participant: String, from zone: ZoneID) async throws(SyncError) {
        try await run { () throws(SyncError) in try core.removeParticipant(caller: caller, participant: participant, from: zone) }
    }
    package func stopSharing(caller: String, zone: ZoneID) async throws(SyncError) {
        try await run { () throws(SyncError) in try core.stopSharing(caller: caller, zone: zone) }
    }
}

// The README's sync example in code (README, "Syncing in Swift"): two devices share a list through
// the reference service in this process. CI builds and runs it (scripts/sync-example.sh).
import Foundation
import JournalLog
import JournalService
import JournalSync

@main
struct SyncTwoDevices {
    static func main() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sync-two-devices-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)

        // The service: every account's lists in one store (`jlog serve` puts HTTP in front of it).
        let serviceStore = try JournalStore.open(dir + "/service.wal")
        let service = try ServiceCore(store: serviceStore, now: { Int64(Date().timeIntervalSince1970 * 1000) })

        // Two devices, each with its own store and engine; a replica is `account` or `account:device`.
        let alice = try await SyncEngine.open(store: JournalStore.open(dir + "/alice.wal"),
                                              service: LocalService(core: service, account: "alice"), replica: "alice:phone")
        let bob = try await SyncEngine.open(store: JournalStore.open(dir + "/bob.wal"),
                                            service: LocalService(core: service, account: "bob"), replica: "bob:laptop")

        // Alice makes a list, adds to it (offline is fine: the log is the upload queue), and syncs.
        let weekly = try await alice.createList(named: "weekly")
        let milk = try await weekly.add("Milk")
        try await weekly.add("Bread", after: milk)
        await alice.sync()

        // She shares it; Bob accepts, syncs, and marks the milk off.
        let invitation = try await alice.share(weekly.zone, with: "bob")
        let onBobsDevice = try await bob.list(try await bob.accept(invitation))
        await bob.sync()
        try await onBobsDevice.markOff(milk)
        await bob.sync()
        await alice.sync()

        // Both devices show the same list (`observe()` would follow it in an app).
        let onAlice = try await weekly.state()
        let onBob = try await onBobsDevice.state()
        for item in onAlice.items { print(item.state == .markedOff ? "[x]" : "[ ]", item.text) }
        print(onAlice == onBob ? "both devices show the same list" : "the devices differ")
        guard onAlice == onBob else { exit(1) }
        try alice.store.close()
        try bob.store.close()
        try serviceStore.close()
    }
}

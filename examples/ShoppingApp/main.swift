// An app-shaped example (issue 36): what a SwiftUI app's model looks like over JournalLog.
// An @Observable model on the main actor observes one list (`ListStore.observe`), edits it through
// the sync engine (whose disk work runs on the store's own thread), and syncs through `jlog serve`
// when given one. Run: `swift run shopping-app STORE [--server URL --credential jlc1…]`.
import Foundation
import JournalLog
import JournalQuery
import JournalSync
import JournalSyncHTTP
import JournalSyncWire
import ListModel
import Observation

@MainActor @Observable
final class ShoppingListModel {
    private(set) var name = ""
    private(set) var items: [ListItem] = []
    private(set) var status = "starting"

    private let lists: ListStore
    private let engine: SyncEngine
    private let zone: ZoneID
    private var observing: Task<Void, Never>?

    init(lists: ListStore, engine: SyncEngine, zone: ZoneID) {
        self.lists = lists
        self.engine = engine
        self.zone = zone
    }

    /// Follows the list: every change (local or synced in) arrives here as a new state.
    func start() {
        observing = Task { [lists, zone] in
            do {
                for try await state in lists.observe(zone.storeName) {
                    self.name = state.name
                    self.items = state.items
                }
            } catch {
                self.status = "the list went away: \(error)"
            }
        }
    }

    func add(_ text: String) async throws {
        try await engine.record(.add(item: CompactID.random(), text: text, after: items.last?.id), in: zone)
    }

    func markOff(_ item: ListItem) async throws {
        try await engine.record(.markOff(item: item.id), in: zone)
    }

    func sync() async {
        let report = await engine.sync()
        status = report.isComplete ? "synced" : "not synced: \((report.errors + (report.offline ? ["offline"] : [])).joined(separator: "; "))"
    }

    func stop() { observing?.cancel() }
}

@main
struct ShoppingApp {
    static func main() async throws {
        let args = CommandLine.arguments.dropFirst()
        guard let path = args.first else {
            print("usage: shopping-app STORE [--server URL --credential jlc1.ACCOUNT.ID.SECRET]")
            return
        }
        func option(_ name: String) -> String? { args.firstIndex(of: name).flatMap { args.index(after: $0) < args.endIndex ? args[args.index(after: $0)] : nil } }
        let lists = try await ListStore.open(path)
        let service: any SyncService
        if let server = option("--server"), let text = option("--credential"), let credential = DeviceCredential(text) {
            service = HTTPSyncService(server: server, credential: credential)
        } else {
            service = OfflineService(account: "me")
        }
        let engine = try SyncEngine(store: lists.store, service: service, replica: service.account + ":app")
        let zone: ZoneID
        if let existing = await engine.lists.first { zone = existing } else { zone = try await engine.createList("Weekly") }
        let model = ShoppingListModel(lists: lists, engine: engine, zone: zone)
        model.start()
        try await model.add("Milk")
        try await model.add("Bread")
        await model.sync()
        // Give the observation a moment to deliver the latest state, as a screen would redraw.
        for _ in 0..<100 where model.items.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        print("\(model.name.isEmpty ? zone.name : model.name): \(model.items.map(\.text).joined(separator: ", ")) (\(model.status))")
        model.stop()
        try await lists.close()
    }
}

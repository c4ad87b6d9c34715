// An app-shaped example (issue 36): what a SwiftUI app's model looks like over JournalLog.
// An @Observable model on the main actor holds one list (`ShoppingList`): it observes it, edits it
// (checked against the list, written on the store's own thread), and syncs through `jlog serve`
// when given one. Run: `swift run shopping-app STORE [--server URL --credential jlc1…]`.
import Foundation
import JournalKit
import Observation

@MainActor @Observable
final class ShoppingListModel {
    private(set) var name = ""
    private(set) var items: [ListItem] = []
    private(set) var status = "starting"

    private let list: ShoppingList
    private var observing: Task<Void, Never>?

    init(list: ShoppingList) { self.list = list }

    /// Follows the list: every change (local or synced in) arrives here as a new state.
    func start() {
        observing = Task { [list] in
            do {
                for try await state in list.observe() {
                    self.name = state.name
                    self.items = state.items
                }
            } catch {
                self.status = "the list went away: \(error)"
            }
        }
    }

    /// Adds an item at the end (of the list as stored: the observed `items` may be a moment
    /// behind); an empty or over-long text is refused (`SyncEngineError.refused`).
    func add(_ text: String) async throws {
        try await list.add(text, after: try await list.state().items.last?.id)
    }

    func markOff(_ item: ListItem) async throws {
        try await list.markOff(item.id)
    }

    /// Drag and drop: `item` goes right after `anchor` (to the top when nil); nothing else moves.
    func move(_ item: ListItem, after anchor: ListItem?) async throws {
        try await list.move(item.id, after: anchor?.id)
    }

    /// Pastes several lines as items at the end, in one write (all of them or none).
    func paste(_ text: String) async throws {
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        try await list.add(contentsOf: lines, after: try await list.state().items.last?.id)
    }

    /// In the shop: the list stays still (others' new items wait as `waiting`), while their
    /// mark-offs of what is on screen show at once.
    private(set) var waiting: [PendingNotification] = []
    func setShopping(_ on: Bool) async throws {
        try await list.setShopping(on)
        waiting = on ? await list.notifications() : []
    }

    func sync() async {
        let report = await list.engine.sync()
        status = report.isComplete ? "synced" : "not synced: \(report.errors.joined(separator: "; "))"
    }

    /// The app woken in the background (iOS: about 30 s): a sync bounded by a deadline, and the
    /// answer for the system (`UIBackgroundFetchResult` one to one).
    func backgroundFetch() async -> BackgroundSyncResult {
        let report = await list.engine.sync(until: .now + .seconds(25))
        return report.backgroundResult
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
        // Not signed in yet: lists are made and edited on this device, and join the service
        // once signed in (`SyncEngine.signIn`).
        let service: any SyncService
        if let server = option("--server"), let text = option("--credential"), let credential = DeviceCredential(text) {
            service = HTTPSyncService(server: server, credential: credential)
        } else {
            service = OfflineService(account: "me")
        }
        let engine = try await SyncEngine.open(store: lists.store, service: service, replica: service.account + ":app")
        let list: ShoppingList
        if let existing = await engine.shoppingLists.first { list = existing } else { list = try await engine.createList(named: "Weekly") }
        let model = ShoppingListModel(list: list)
        model.start()
        try await model.add("Milk")
        try await model.paste("Bread\nEggs\n")
        try await model.setShopping(true)
        await model.sync()
        try await model.setShopping(false)
        print("a background fetch would answer \(await model.backgroundFetch())")
        // Give the observation a moment to deliver the latest state, as a screen would redraw.
        for _ in 0..<100 where model.items.count < 3 { try await Task.sleep(for: .milliseconds(10)) }
        print("\(model.name.isEmpty ? list.zone.name : model.name): \(model.items.map(\.text).joined(separator: ", ")) (\(model.status))")
        model.stop()
        try await lists.close()
    }
}

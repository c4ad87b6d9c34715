import ArgumentParser
import Foundation
import JournalLog
import JournalQuery
import JournalSync
import ListModel

/// The editing commands of a device store (Spec/SYNC.md §7): each change is appended to the
/// local log durably, as the app would, and queues for the next `jlog sync`; no connection needed.
struct ListEditing: ParsableArguments {
    @Argument(help: "The device's store directory (one that has synced: it knows its account).") var store: String
    @Option(help: ArgumentHelp("The list: OWNER/NAME, or a NAME of this account's.", valueName: "list")) var zone: String
}

/// Runs `body` with the store's engine, closing the store afterwards.
func withOfflineEngine<T>(_ path: String, _ body: (SyncEngine) async throws -> T) async throws -> T {
    let (store, engine) = try openOfflineEngine(path)
    defer { try? store.close() }
    return try await body(engine)
}

/// An item named on the command line: its id, or the text of exactly one item of the list.
func resolveItem(_ text: String, in zone: ZoneID, store: JournalStore) throws -> CompactID {
    let items: [ListItem]
    do { items = try ListQuery(store: store, fs: store.fileSystem).materialise(zone.storeName).state.items } catch {
        printError("the list cannot be read: \(error)")
        throw ExitCode(Status.failure)
    }
    if let id = CompactID(text), items.contains(where: { $0.id == id }) { return id }
    let named = items.filter { $0.text.caseInsensitiveCompare(text) == .orderedSame }
    if named.count == 1 { return named[0].id }
    if named.isEmpty {
        printError("no item \(text) in \(zone.storeName); `jlog show \(store.path) --zone \(zone.storeName)` lists them")
    } else {
        printError("\(named.count) items are called \(text): give one's id (\(named.map(\.id.description).joined(separator: ", ")))")
    }
    throw ExitCode(Status.badInput)
}

/// Records one change; prints what was recorded.
func record(_ op: @escaping (ZoneID, JournalStore) throws -> JournalCodec.EntryOperation, editing: ListEditing) async throws {
    try await withOfflineEngine(editing.store) { engine in
        let zone = try await resolveList(editing.zone, engine: engine)
        let operation = try op(zone, engine.store)
        do {
            let e = try await engine.record(operation, in: zone)
            print("\(e.operation.name) recorded in \(zone.storeName) as \(e.id); `jlog sync` sends it")
        } catch {
            printError(String(describing: error))
            throw ExitCode(Status.failure)
        }
    }
}

struct CreateList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "create-list",
        abstract: "Create a list this store's account owns; the service gets it on the next `jlog sync`.")
    @Argument(help: "The device's store directory.") var store: String
    @Argument(help: "The list's name (the zone is ACCOUNT/NAME).") var name: String

    func run() async throws {
        try await withOfflineEngine(store) { engine in
            do {
                let z = try await engine.createList(name)
                // What people see: the list's name starts as the zone's.
                try await engine.record(.rename(name: name), in: z)
                print("created \(z.storeName)")
            } catch {
                printError(String(describing: error))
                throw ExitCode(Status.badInput)
            }
        }
    }
}

struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Add an item to a list (after another item, or at the top).")
    @OptionGroup var editing: ListEditing
    @Argument(help: "The item's text.") var text: String
    @Option(help: ArgumentHelp("Place it after this item (id or text).", valueName: "item")) var after: String?

    func run() async throws {
        let after = self.after, text = self.text
        try await record({ zone, store in
            .add(item: CompactID.random(), text: text, after: try after.map { try resolveItem($0, in: zone, store: store) })
        }, editing: editing)
    }
}

struct MarkOff: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mark-off", abstract: "Mark an item off (bought).")
    @OptionGroup var editing: ListEditing
    @Argument(help: "The item (id or text).") var item: String
    func run() async throws {
        let item = self.item
        try await record({ zone, store in .markOff(item: try resolveItem(item, in: zone, store: store)) }, editing: editing)
    }
}

struct Unmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Put a marked-off item back on the list.")
    @OptionGroup var editing: ListEditing
    @Argument(help: "The item (id or text).") var item: String
    func run() async throws {
        let item = self.item
        try await record({ zone, store in .unmark(item: try resolveItem(item, in: zone, store: store)) }, editing: editing)
    }
}

struct DeleteItem: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete an item from a list.")
    @OptionGroup var editing: ListEditing
    @Argument(help: "The item (id or text).") var item: String
    func run() async throws {
        let item = self.item
        try await record({ zone, store in .delete(item: try resolveItem(item, in: zone, store: store)) }, editing: editing)
    }
}

struct Move: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Move an item after another (or to the top); the items around it stay.")
    @OptionGroup var editing: ListEditing
    @Argument(help: "The item (id or text).") var item: String
    @Option(help: ArgumentHelp("Put it after this item (id or text); to the top without it.", valueName: "item")) var after: String?
    func run() async throws {
        let item = self.item, after = self.after
        try await record({ zone, store in
            .move(item: try resolveItem(item, in: zone, store: store), after: try after.map { try resolveItem($0, in: zone, store: store) })
        }, editing: editing)
    }
}

struct Rename: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Rename a list (what people see; the zone keeps its name).")
    @OptionGroup var editing: ListEditing
    @Argument(help: "The new name.") var name: String
    func run() async throws {
        let name = self.name
        try await record({ _, _ in .rename(name: name) }, editing: editing)
    }
}

struct Recolour: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Recolour a list.")
    @OptionGroup var editing: ListEditing
    @Argument(help: "The colour.") var colour: String
    func run() async throws {
        let colour = self.colour
        try await record({ _, _ in .recolour(colour: colour) }, editing: editing)
    }
}

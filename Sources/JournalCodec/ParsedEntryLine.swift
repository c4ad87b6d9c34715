/// What one JSON line says; `entry()` derives a missing id (from the content) or clock (from `at`).
package struct ParsedEntryLine: Equatable, Sendable {
    package var id: CompactID?
    package var zone: String
    package var author: String
    package var wallTime: Int64
    package var clock: HybridTime?
    package var operation: EntryOperation

    package init(id: CompactID?, zone: String, author: String, wallTime: Int64, clock: HybridTime?, operation: EntryOperation) {
        self.id = id
        self.zone = zone
        self.author = author
        self.wallTime = wallTime
        self.clock = clock
        self.operation = operation
    }

    /// The entry the line stands for (FORMAT.md §7). A missing `hlc` is derived from `at` alone
    /// (`HybridTime(derivedFromWallTime:)`), and a missing `id` from the entry's content
    /// (`CompactID.derived`): both are functions of the line, never of the lines before it, so
    /// the same lines in any order, sent any number of times, give the same entries.
    package func entry() -> JournalEntry {
        var e = JournalEntry(id: CompactID("-")!, zone: zone, author: author, wallTime: wallTime,
                             clock: clock ?? HybridTime(derivedFromWallTime: wallTime), operation: operation)
        e.id = id ?? CompactID.derived(from: e)
        return e
    }
}

/// Why a JSON line was rejected, and where.
package struct EntryJSONError: Error, Equatable, Sendable, CustomStringConvertible {
    package var message: String
    /// 1-based byte (not character) column in the line.
    package var column: Int

    package init(message: String, column: Int) {
        self.message = message
        self.column = column
    }

    package var description: String { "column \(column): \(message)" }
}

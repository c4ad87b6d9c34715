import Foundation

/// What an append may hold (Spec/FORMAT.md §6, §7): the checks every append runs before it takes
/// a sequence, also used by the sync service on uploads.
extension JournalStore {
    /// Why an application may not append `e`, or nil. A `place` is the compactor's (FORMAT.md
    /// §6): appended, it would land in a minor-1 segment that a 1.1 reader calls corrupt.
    package static func refusal(_ e: JournalEntry, replicated: Bool = false) -> String? {
        withUnsafePointer(to: e) { refusal($0, replicated: replicated) }
    }

    /// `refusal(_:)` for an entry read where it lies: passed by value, it is copied whole first.
    /// `replicated`: copied as another store wrote it (a sync engine installing a zone that its
    /// service compacted), so a `place` is accepted.
    static func refusal(_ e: UnsafePointer<JournalEntry>, replicated: Bool = false) -> String? {
        if !replicated, case .place = e.pointee.operation {
            return "place entries are written only by the compactor (FORMAT.md §6); leave them out of what you append or import "
                + "(a compacted store is copied whole with `jlog backup` and `jlog restore`)"
        }
        if let why = zoneNameRefusal(e.pointee.zone) { return why }
        return EntryCodec.validate(e)
    }

    /// Why a writer may not name a zone `zone` (FORMAT.md §5.3), or nil: 1–255 bytes of UTF-8
    /// without control characters, which would print as anything at all in a terminal or a log.
    /// Readers accept what older writers stored, and print it escaped.
    package static func zoneNameRefusal(_ zone: String) -> String? {
        if zone.isEmpty || zone.utf8.count > Limits.maxZoneBytes { return "zone must be 1...\(Limits.maxZoneBytes) UTF-8 bytes" }
        if zone.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            return "zone names may not contain control characters (U+0000–U+001F, U+007F)"
        }
        return nil
    }
}

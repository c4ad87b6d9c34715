/// Why the PostgreSQL storage refused or failed, one case per meaning.
public enum PostgresStorageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The database could not be reached, or a statement failed (the server's words).
    case database(String)
    /// The database's schema is newer than this program knows: refused, never written to.
    case schemaTooNew(found: Int, known: Int)
    /// No live zone of that name.
    case zoneNotFound(String)
    /// An id the zone holds, with other content (an upload is all or nothing).
    case idConflict(zone: String, id: String)
    /// A stored row that does not decode: the database was changed outside this program.
    case damaged(String)
    /// The zone was compacted since the caller read it (its mark moved): read it again.
    case markMoved(String)
    /// A sealed zone's key epoch moved since the caller read it (SEALING.md §5.1).
    case keysMoved(String)
    /// A location that is not a `postgres://` URL this program reads.
    case invalidLocation(String)

    public var description: String {
        switch self {
        case .database(let why): "PostgreSQL: \(why)"
        case .schemaTooNew(let found, let known):
            "the database's schema is at version \(found), newer than the \(known) this program knows: upgrade it before it touches this database"
        case .zoneNotFound(let zone): "no live zone \(zone)"
        case .idConflict(let zone, let id): "zone \(zone) holds entry \(id) with other content"
        case .damaged(let why): "a stored row is damaged: \(why)"
        case .markMoved(let zone): "zone \(zone) was compacted meanwhile: try again"
        case .keysMoved(let zone): "the key epoch of zone \(zone) moved on meanwhile: read it again"
        case .invalidLocation(let why): "not a PostgreSQL location: \(why)"
        }
    }
}

import Logging
import PostgresNIO

/// The schema, as numbered migrations applied in order on start (Spec/SYNC.md §11.1). Each runs
/// in its own transaction and records its version; nodes starting at once take turns under an
/// advisory lock, so each migration runs exactly once. A database at a version this program does
/// not know is refused before anything is written. Columns hold positions, ids and encodings,
/// never text the service would have to read.
enum SchemaMigrations {
    struct Migration {
        let version: Int
        let name: String
        let statements: [String]
    }

    /// The advisory lock nodes take while migrating ("jlogmigr").
    static let lockKey: Int64 = 0x6A6C_6F67_6D69_6772

    static let all: [Migration] = [
        Migration(version: 1, name: "positions, zones and records", statements: [
            // One row: the next position. An append locks it until it commits, so positions
            // commit in order and a reader never sees N+1 before N (SYNC.md §11.2).
            """
            CREATE TABLE jlog_positions (
                only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
                next bigint NOT NULL CHECK (next >= 1))
            """,
            "INSERT INTO jlog_positions (next) VALUES (1)",
            // Each zone's newest incarnation (a zone made again gets a new one).
            """
            CREATE TABLE jlog_zones (
                name text PRIMARY KEY,
                incarnation bigint NOT NULL,
                low_water_mark bigint NOT NULL DEFAULT 0,
                last_change bigint NOT NULL,
                deleted_at bigint,
                deletion_reason smallint)
            """,
            // Every record at its position: entries (kind 0: the entry's FORMAT.md §6 encoding,
            // its id beside it) and the zone's own records (kind 1: made).
            """
            CREATE TABLE jlog_records (
                position bigint PRIMARY KEY,
                zone text NOT NULL,
                incarnation bigint NOT NULL,
                kind smallint NOT NULL,
                entry_id bytea,
                body bytea NOT NULL)
            """,
            "CREATE UNIQUE INDEX jlog_records_entry ON jlog_records (zone, incarnation, entry_id) WHERE entry_id IS NOT NULL",
            "CREATE INDEX jlog_records_zone ON jlog_records (zone, incarnation, position)",
        ]),
        Migration(version: 2, name: "accounts and device credentials", statements: [
            // What the accounts file holds (SYNC.md §9.2), a row per credential: never a secret,
            // only the SHA-256 of it.
            """
            CREATE TABLE jlog_credentials (
                id text PRIMARY KEY,
                account text NOT NULL,
                secret_sha256 text NOT NULL CHECK (length(secret_sha256) = 64),
                issued_at bigint NOT NULL,
                expires_at bigint,
                revoked_at bigint)
            """,
            "CREATE INDEX jlog_credentials_account ON jlog_credentials (account)",
        ]),
        Migration(version: 3, name: "zones by their last change", statements: [
            // The database feed pages zones by the position of their newest record (§11.2).
            "CREATE INDEX jlog_zones_last_change ON jlog_zones (last_change)",
        ]),
        Migration(version: 4, name: "the service's storage: counts, deletions, histories, snapshots and keys", statements: [
            // How many entries each incarnation holds, and how far its history pieces reach.
            "ALTER TABLE jlog_zones ADD COLUMN entry_count bigint NOT NULL DEFAULT 0, ADD COLUMN history_through bigint NOT NULL DEFAULT 0",
            // Every incarnation deleted, at the position of its deletion: the database feed's
            // `deleted` (a zone made again keeps only its newest incarnation in jlog_zones).
            """
            CREATE TABLE jlog_deleted_zones (
                name text NOT NULL,
                incarnation bigint NOT NULL,
                deleted_at bigint NOT NULL,
                reason smallint NOT NULL,
                PRIMARY KEY (name, incarnation))
            """,
            "CREATE INDEX jlog_deleted_zones_at ON jlog_deleted_zones (deleted_at)",
            // History pieces (SNAPSHOT.md §5) and state snapshots (§1), as the engine writes them
            // to files: opaque bytes; the service never reads text from them.
            """
            CREATE TABLE jlog_history_pieces (
                zone text NOT NULL,
                incarnation bigint NOT NULL,
                sequence bigint NOT NULL,
                crc bigint NOT NULL,
                body bytea NOT NULL,
                PRIMARY KEY (zone, incarnation, sequence))
            """,
            """
            CREATE TABLE jlog_snapshots (
                zone text NOT NULL,
                incarnation bigint NOT NULL,
                sequence bigint NOT NULL,
                body bytea NOT NULL,
                PRIMARY KEY (zone, incarnation, sequence))
            """,
            // The database's identity and keys (its id in tokens, the key that signs tokens, the
            // key that signs invitations): made once, by whichever node needs one first.
            """
            CREATE TABLE jlog_keys (
                name text PRIMARY KEY,
                k0 bigint NOT NULL,
                k1 bigint NOT NULL)
            """,
        ]),
        Migration(version: 5, name: "where each device last caught up with each zone, and when each entry arrived", statements: [
            // SYNC.md §6.6: every node merges its rows at each compaction and at shutdown.
            """
            CREATE TABLE jlog_device_fetches (
                device text NOT NULL,
                zone text NOT NULL,
                account text NOT NULL,
                mark bigint NOT NULL,
                at bigint NOT NULL,
                PRIMARY KEY (device, zone))
            """,
            // When the service received each entry, by the receiving node's clock (SYNC.md §6.2
            // rule 9): any node's compaction knows what arrived when, whichever node took it.
            "ALTER TABLE jlog_records ADD COLUMN arrived_at bigint",
            "CREATE INDEX jlog_records_arrived ON jlog_records (arrived_at) WHERE arrived_at IS NOT NULL",
        ]),
    ]

    static var newest: Int { all.last?.version ?? 0 }

    /// Applies the migrations the database lacks; the versions it applied.
    static func apply(_ client: PostgresClient, logger: Logger) async throws -> [Int] {
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(lockKey))", logger: logger)
            do {
                let applied = try await applyLocked(connection, logger: logger)
                try await connection.query("SELECT pg_advisory_unlock(\(lockKey))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(lockKey))", logger: logger)
                throw error
            }
        }
    }

    private static func applyLocked(_ connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        try await connection.query("""
            CREATE TABLE IF NOT EXISTS jlog_migrations (
                version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
            """, logger: logger)
        var current = 0
        for try await version in try await connection.query("SELECT coalesce(max(version), 0) FROM jlog_migrations", logger: logger).decode(Int.self) {
            current = version
        }
        guard current <= newest else { throw PostgresStorageError.schemaTooNew(found: current, known: newest) }
        var applied: [Int] = []
        for m in all where m.version > current {
            try await connection.withTransaction(logger: logger) { c in
                for sql in m.statements { try await c.query(PostgresQuery(unsafeSQL: sql), logger: logger) }
                try await c.query("INSERT INTO jlog_migrations (version, name) VALUES (\(m.version), \(m.name))", logger: logger)
            }
            logger.info("applied schema migration", metadata: ["version": "\(m.version)", "name": "\(m.name)"])
            applied.append(m.version)
        }
        return applied
    }
}

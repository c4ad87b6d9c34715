import Foundation
import PostgresNIO

/// Where the database is, from a `postgres://` URL (libpq's form, the parts this program uses):
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE` over TCP, or
/// `postgres://USER@/DATABASE?host=/SOCKET/DIRECTORY` over the Unix socket in that directory.
/// TLS is off on a socket and preferred over TCP (`?sslmode=disable` turns it off).
/// `?schema=NAME` puts the tables in that schema (made if missing): one database can hold the
/// storage of several services (or tests) apart.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    /// The PostgreSQL role to connect as.
    public var user: String
    /// Its password (none over a socket with peer or trust authentication).
    public var password: String?
    /// The database the tables live in.
    public var database: String
    /// A host name, or a directory holding the server's socket (starts with `/`).
    public var host: String
    /// The TCP port, or the number in the socket's name (`.s.PGSQL.PORT`); 5432 when not given.
    public var port: Int
    /// Whether TLS is asked for (preferred over TCP unless `?sslmode=disable`; never on a socket).
    public var usesTLS: Bool
    /// The schema the tables live in (nil: the role's search path).
    public var schema: String?

    /// Reads a `postgres://` (or `postgresql://`) URL; `invalidLocation` with what is missing.
    public init(_ url: String) throws(PostgresStorageError) {
        guard let c = URLComponents(string: url), c.scheme == "postgres" || c.scheme == "postgresql" else {
            throw .invalidLocation("expected postgres://USER@HOST/DATABASE")
        }
        guard let user = c.user, !user.isEmpty else { throw .invalidLocation("no user") }
        let db = c.path.hasPrefix("/") ? String(c.path.dropFirst()) : c.path
        guard !db.isEmpty, !db.contains("/") else { throw .invalidLocation("no database") }
        let query = Dictionary((c.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let host = query["host"] ?? c.host ?? ""
        guard !host.isEmpty else { throw .invalidLocation("no host, and no ?host=/socket/directory") }
        self.user = user
        password = c.password
        database = db
        self.host = host
        port = c.port ?? 5432
        guard (1...65_535).contains(port) else { throw .invalidLocation("port \(port)") }
        usesTLS = !host.hasPrefix("/") && query["sslmode"] != "disable"
        if let s = query["schema"] {
            guard (1...48).contains(s.utf8.count), s.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F }),
                  !(s.first!.isNumber) else {
                throw .invalidLocation("schema must be 1–48 of a-z, 0-9 and _, not starting with a digit")
            }
            schema = s
        }
    }

    /// The client's configuration for this location.
    public var clientConfiguration: PostgresClient.Configuration {
        if host.hasPrefix("/") {
            return .init(unixSocketPath: host + "/.s.PGSQL.\(port)", username: user, password: password, database: database)
        }
        return .init(host: host, port: port, username: user, password: password, database: database,
                     tls: usesTLS ? .prefer(.makeClientConfiguration()) : .disable)
    }

    /// One connection's configuration for this location (a first connection, whose failure
    /// says why, where the pool would retry for a minute).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        if host.hasPrefix("/") {
            return .init(unixSocketPath: host + "/.s.PGSQL.\(port)", username: user, password: password, database: database)
        }
        let tls: PostgresConnection.Configuration.TLS = usesTLS ? .prefer(try NIOSSLContext(configuration: .makeClientConfiguration())) : .disable
        return .init(host: host, port: port, username: user, password: password, database: database, tls: tls)
    }

    /// The URL without its password.
    public var description: String {
        (host.hasPrefix("/") ? "postgres://\(user)@/\(database)?host=\(host)" : "postgres://\(user)@\(host):\(port)/\(database)")
            + (schema.map { (host.hasPrefix("/") ? "&" : "?") + "schema=" + $0 } ?? "")
    }
}

import ArgumentParser
import Foundation
import JournalLog
import JournalPostgres
import JournalService
import JournalSyncWire
import Logging

/// `jlog accounts`: a server's accounts and device credentials, in its store's `service/accounts`
/// or, with `--database`, in the PostgreSQL database its nodes share (Spec/SYNC.md §9.2, §11).
struct Accounts: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage a server's accounts and device credentials (the server may be running).",
        subcommands: [AccountsAdd.self, AccountsList.self, AccountsRevoke.self, AccountsDevices.self])
}

/// Where the accounts are: a store directory (the first operand), or a PostgreSQL database.
struct AccountsPlace: ParsableArguments {
    @Option(help: ArgumentHelp("The PostgreSQL database the server's nodes share, instead of a store directory (postgres://USER@HOST/DB, or postgres://USER@/DB?host=/socket/dir).",
                               valueName: "url")) var database: String?

    /// The store directory and the rest of `operands`, or the database and all of them.
    func split(_ operands: [String], wanting n: Int, usage: String) throws -> (store: String?, rest: [String]) {
        if database != nil {
            guard operands.count == n else { throw ValidationError("usage: \(usage.replacingOccurrences(of: "STORE", with: "--database URL"))") }
            return (nil, operands)
        }
        guard operands.count == n + 1 else { throw ValidationError("usage: \(usage)") }
        return (operands[0], Array(operands.dropFirst()))
    }

    /// Runs `body` against the database, then closes it; its failures as the command's.
    func withDatabase<T: Sendable>(_ body: (PostgresStorage) async throws -> T) async throws -> T {
        let location: PostgresLocation
        do { location = try PostgresLocation(database ?? "") } catch {
            printError("\(error)")
            throw ExitCode(Status.badInput)
        }
        let db: PostgresStorage
        var logger = Logger(label: "jlog.postgres")
        logger.logLevel = .error
        do { db = try await PostgresStorage.open(location, connections: 2, logger: logger) } catch {
            printError("\(location): \(error)")
            throw ExitCode(Status.failure)
        }
        do {
            let result = try await body(db)
            await db.close()
            return result
        } catch {
            await db.close()
            printError("\(location): \(error)")
            throw ExitCode(Status.failure)
        }
    }
}

struct AccountsAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add",
        abstract: "Issue a device credential for an account (creating the account); prints it once — the server keeps only its hash.",
        discussion: "jlog accounts add STORE NAME, or jlog accounts add --database URL NAME.")
    @OptionGroup var place: AccountsPlace
    @Argument(help: ArgumentHelp("The server's store directory (unless --database), then the account name (letters, digits, '.', '_', '-').",
                                 valueName: "store-or-account")) var operands: [String] = []
    @Option(help: ArgumentHelp("The credential expires after this many days (default: never).", valueName: "days")) var expiresInDays: Double?
    @Option(help: ArgumentHelp("Write the credential to this file (mode 0600) instead of printing it.", valueName: "file")) var output: String?

    func run() async throws {
        let (store, rest) = try place.split(operands, wanting: 1, usage: "jlog accounts add STORE NAME")
        let account = rest[0]
        let now = nowMillis()
        let expires = expiresInDays.map { now + Int64($0 * 86_400_000) }
        let credential: DeviceCredential
        if let store {
            let dir: AccountDirectory
            do { dir = try AccountDirectory(store: store) } catch { throw fail(error, path: store) }
            do { credential = try dir.issue(account: account, now: now, expiresAt: expires) } catch {
                printError("\(error)")
                throw ExitCode(Status.badInput)
            }
        } else {
            let record: AccountCredential
            do { (credential, record) = try AccountDirectory.newCredential(account: account, now: now, expiresAt: expires) } catch {
                printError("\(error)")
                throw ExitCode(Status.badInput)
            }
            try await place.withDatabase { try await $0.addCredential(record) }
        }
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: Data((credential.text + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
                printError("cannot write \(output)")
                throw ExitCode(Status.failure)
            }
            printError("credential for \(account) written to \(output); give it to one device (`jlog sync STORE --server URL --credential \(output)`)")
        } else {
            print(credential.text)
        }
    }
}

struct AccountsList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List accounts and their credentials (never a secret).")
    @OptionGroup var place: AccountsPlace
    @Argument(help: ArgumentHelp("The server's store directory (none with --database).", valueName: "store")) var operands: [String] = []
    @Flag(help: "One JSON object: {credentials:[{id,account,issuedAt,expiresAt,revokedAt,valid}]}.") var json = false

    func run() async throws {
        let (store, _) = try place.split(operands, wanting: 0, usage: "jlog accounts list STORE")
        let list: [AccountCredential]
        if let store {
            do { list = try AccountDirectory(store: store).list() } catch { throw fail(error, path: store) }
        } else {
            list = try await place.withDatabase { try await $0.credentials() }
        }
        let now = nowMillis()
        if json {
            print(JSON.object([("credentials", .array(list.map { c in
                .object([("id", .string(c.id)), ("account", .string(c.account)), ("issuedAt", .string(iso(c.issuedAt))),
                         ("expiresAt", c.expiresAt.map { .string(iso($0)) } ?? .null), ("revokedAt", c.revokedAt.map { .string(iso($0)) } ?? .null),
                         ("valid", .bool(c.isValid(now: now)))])
            }))]).rendered)
            return
        }
        if list.isEmpty { print("no accounts; `jlog accounts add \(store ?? "--database URL") NAME` issues the first credential") }
        for c in list {
            let state = c.revokedAt.map { "revoked \(iso($0))" } ?? (c.isValid(now: now) ? "valid" : "expired")
            print("\(c.account)  \(c.id)  issued \(iso(c.issuedAt))\(c.expiresAt.map { ", expires \(iso($0))" } ?? "")  \(state)")
        }
    }
}

struct AccountsRevoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "revoke",
        abstract: "Revoke a credential (by its id) or every credential of an account (by its name); refused from the next request on.")
    @OptionGroup var place: AccountsPlace
    @Argument(help: ArgumentHelp("The server's store directory (unless --database), then a credential id (from `jlog accounts list`) or an account name.",
                                 valueName: "store-or-credential")) var operands: [String] = []

    func run() async throws {
        let (store, rest) = try place.split(operands, wanting: 1, usage: "jlog accounts revoke STORE CREDENTIAL")
        let credential = rest[0]
        let n: Int
        if let store {
            do { n = try AccountDirectory(store: store).revoke(credential, now: nowMillis()) } catch { throw fail(error, path: store) }
        } else {
            n = try await place.withDatabase { try await $0.revokeCredentials(credential, now: nowMillis()) }
        }
        guard n > 0 else {
            printError("no valid credential or account \(credential); `jlog accounts list` shows them")
            throw ExitCode(Status.badInput)
        }
        print("revoked \(n) credential\(n == 1 ? "" : "s")")
    }
}

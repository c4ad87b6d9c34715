import JournalSyncWire
import PostgresNIO

/// Accounts and their device credentials in the shared database (Spec/SYNC.md §9.2, §11.1
/// version 2): what `service/accounts` holds for a single server, one row per credential, so that
/// every node authenticates the same devices and a revocation reaches all of them at once.
extension PostgresStorage {
    /// Stores a newly issued credential (its secret's hash only).
    package func addCredential(_ c: AccountCredential) async throws(PostgresStorageError) {
        try await Self.mapped {
            try await client.query("""
                INSERT INTO jlog_credentials (id, account, secret_sha256, issued_at, expires_at, revoked_at)
                VALUES (\(c.id), \(c.account), \(c.secretHash), \(c.issuedAt), \(c.expiresAt), \(c.revokedAt))
                """, logger: logger)
        }
    }

    /// Stores a credential a device enrolled for (SYNC.md §9.3) unless its account already has
    /// `limit` valid ones: counted and inserted in one transaction under an advisory lock on the
    /// account's name, so nodes enrolling at once never pass the limit together. Whether it was added.
    package func addCredential(_ c: AccountCredential, ifFewerThan limit: Int, now: Int64) async throws(PostgresStorageError) -> Bool {
        try await Self.mapped {
            try await client.withTransaction(logger: logger) { t in
                try await t.query("SELECT pg_advisory_xact_lock(\(Self.enrolmentLockClass), hashtext(current_schema() || '/' || \(c.account)))", logger: logger)
                var valid = 0
                let rows = try await t.query("""
                    SELECT count(*) FROM jlog_credentials
                    WHERE account = \(c.account) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > \(now))
                    """, logger: logger)
                for try await n in rows.decode(Int.self) { valid = n }
                guard valid < limit else { return false }
                try await t.query("""
                    INSERT INTO jlog_credentials (id, account, secret_sha256, issued_at, expires_at, revoked_at)
                    VALUES (\(c.id), \(c.account), \(c.secretHash), \(c.issuedAt), \(c.expiresAt), \(c.revokedAt))
                    """, logger: logger)
                return true
            }
        }
    }

    /// The advisory lock's first key while a device enrols: "jlog enrolment".
    static let enrolmentLockClass: Int32 = 0x6A6C_656E

    /// Every credential, by account, then when it was issued.
    package func credentials() async throws(PostgresStorageError) -> [AccountCredential] {
        try await Self.mapped {
            try await rows("SELECT id, account, secret_sha256, issued_at, expires_at, revoked_at FROM jlog_credentials ORDER BY account, issued_at, id")
        }
    }

    /// The credential with this id, or nil.
    package func credential(id: String) async throws(PostgresStorageError) -> AccountCredential? {
        try await Self.mapped {
            try await rows("SELECT id, account, secret_sha256, issued_at, expires_at, revoked_at FROM jlog_credentials WHERE id = \(id)").first
        }
    }

    /// The account's credentials.
    package func credentials(of account: String) async throws(PostgresStorageError) -> [AccountCredential] {
        try await Self.mapped {
            try await rows("SELECT id, account, secret_sha256, issued_at, expires_at, revoked_at FROM jlog_credentials WHERE account = \(account)")
        }
    }

    /// Revokes the credential with this id, or every credential of the account of this name,
    /// from `now` on; how many it revoked (those revoked already are left as they were).
    @discardableResult
    package func revokeCredentials(_ idOrAccount: String, now: Int64) async throws(PostgresStorageError) -> Int {
        try await Self.mapped {
            var n = 0
            let rows = try await client.query("""
                UPDATE jlog_credentials SET revoked_at = \(now)
                WHERE (id = \(idOrAccount) OR account = \(idOrAccount)) AND revoked_at IS NULL RETURNING id
                """, logger: logger)
            for try await _ in rows.decode(String.self) { n += 1 }
            return n
        }
    }

    private func rows(_ query: PostgresQuery) async throws -> [AccountCredential] {
        var out: [AccountCredential] = []
        let rows = try await client.query(query, logger: logger)
        for try await (id, account, hash, issued, expires, revoked) in rows.decode((String, String, String, Int64, Int64?, Int64?).self) {
            out.append(AccountCredential(id: id, account: account, secretHash: hash, issuedAt: issued, expiresAt: expires, revokedAt: revoked))
        }
        return out
    }
}

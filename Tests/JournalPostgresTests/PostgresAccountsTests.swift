import JournalPostgres
import JournalService
import JournalSync
import JournalSyncWire
import Testing

/// Credentials in the shared database (Spec/SYNC.md §9.2, §11.1): what every node authenticates.
@Suite(.enabled(if: PostgresTestDatabase.url != nil, Comment(rawValue: PostgresTestDatabase.missing)))
struct PostgresAccountsTests {
    static func credential(_ id: String, _ account: String, at: Int64) -> AccountCredential {
        AccountCredential(id: id, account: account, secretHash: String(repeating: "ab", count: 32), issuedAt: at, expiresAt: nil, revokedAt: nil)
    }

    @Test func issuedCredentialsAreListedByAccountAndFoundByID() async throws {
        let node = try await PostgresTestDatabase.open(try await PostgresTestDatabase.freshSchema())
        try await node.addCredential(Self.credential("c2", "bob", at: 5))
        try await node.addCredential(Self.credential("c1", "alice", at: 9))
        try await node.addCredential(Self.credential("c3", "alice", at: 7))
        #expect(try await node.credentials().map(\.id) == ["c3", "c1", "c2"])
        #expect(try await node.credential(id: "c2") == Self.credential("c2", "bob", at: 5))
        #expect(try await node.credential(id: "nope") == nil)
        await node.close()
    }

    @Test func revokingAnAccountRevokesEachOfItsCredentialsOnce() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let a = try await PostgresTestDatabase.open(schema), b = try await PostgresTestDatabase.open(schema)
        try await a.addCredential(Self.credential("c1", "alice", at: 1))
        try await a.addCredential(Self.credential("c2", "alice", at: 2))
        try await a.addCredential(Self.credential("c3", "bob", at: 3))
        #expect(try await b.revokeCredentials("c1", now: 10) == 1)
        #expect(try await b.revokeCredentials("alice", now: 20) == 1)
        #expect(try await b.revokeCredentials("alice", now: 30) == 0)
        // The other node sees it at once.
        let revoked = try await a.credentials().map { ($0.id, $0.revokedAt) }
        #expect(revoked.map(\.0) == ["c1", "c2", "c3"])
        #expect(revoked.map(\.1) == [10, 20, nil])
        await a.close()
        await b.close()
    }

    @Test func aSecondCredentialWithAnIDInUseIsRefused() async throws {
        let node = try await PostgresTestDatabase.open(try await PostgresTestDatabase.freshSchema())
        try await node.addCredential(Self.credential("c1", "alice", at: 1))
        await #expect(throws: PostgresStorageError.self) { try await node.addCredential(Self.credential("c1", "bob", at: 2)) }
        await node.close()
    }

    @Test func devicesOfOneAccountEnrollingAtOnceThroughTwoNodesNeverPassTheLimit() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let a = try await PostgresTestDatabase.open(schema), b = try await PostgresTestDatabase.open(schema)
        let added = try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<8 {
                let node = i % 2 == 0 ? a : b
                group.addTask { try await node.addCredential(Self.credential("e\(i)", "dora", at: Int64(i)), ifFewerThan: 3, now: 100) }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(added == 3)
        #expect(try await a.credentials(of: "dora").count == 3)
        // A revoked credential leaves room for one more.
        try await a.revokeCredentials("e0", now: 200)
        try await a.revokeCredentials(try await a.credentials(of: "dora")[0].id, now: 200)
        #expect(try await b.addCredential(Self.credential("late", "dora", at: 300), ifFewerThan: 3, now: 300))
        await a.close()
        await b.close()
    }

    /// A device enrolled through a node over the database (SYNC.md §9.2): its credential
    /// authenticates on any node; past the limit the node answers tooManyDevices.
    @Test func aDeviceEnrolledThroughOneNodeSignsInOnAnotherAndTheLimitHolds() async throws {
        let schema = try await PostgresTestDatabase.freshSchema()
        let a = try await PostgresTestDatabase.open(schema), b = try await PostgresTestDatabase.open(schema)
        let now: Int64 = 1_000
        let credential = try await PostgresCredentials(a).enrol(account: "dora", now: now, limit: 1)
        #expect(await PostgresCredentials(b).authenticate(credential.text, now: now) == .accepted(account: "dora"))
        await #expect(throws: SyncError.tooManyDevices(limit: 1)) { try await PostgresCredentials(b).enrol(account: "dora", now: now, limit: 1) }
        await a.close()
        await b.close()
    }
}

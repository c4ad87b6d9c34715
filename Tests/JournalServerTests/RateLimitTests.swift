import Foundation
import Testing
import JournalLog
import JournalServer
import JournalService
import JournalSync

/// Rate limiting (Spec/SYNC.md §9.4): a token bucket per account.
@Suite struct RateLimitTests {
    /// A server allowing a burst of 3 requests, then one every 10 s.
    static func server() async throws -> TestServer {
        var options = ServerOptions()
        options.requestsPerSecond = 0.1
        options.burst = 3
        return try await TestServer(options: options)
    }

    /// A burst past the bucket gets 429 rateLimited, with Retry-After (whole seconds, ≥ 1) in
    /// the header and the body alike.
    @Test func aBurstOverTheLimitIsToldWhenToComeBack() async throws {
        let server = try await Self.server()
        let alice = try server.credential("alice")
        var statuses: [Int] = []
        var refused: RawResponse? = nil
        for _ in 0..<6 {
            let r = try await server.send(.GET, "/v1/account", as: alice)
            statuses.append(r.status)
            if r.status == 429 && refused == nil { refused = r }
        }
        #expect(statuses == [200, 200, 200, 429, 429, 429], "\(statuses)")
        let after = refused?.header("Retry-After").flatMap { Int($0) }
        #expect(after != nil && after! >= 1, "Retry-After: \(refused?.header("Retry-After") ?? "none")")
        #expect(refused?.error?.error == "rateLimited" && refused?.error?.retryAfter == after, "\(refused.map(String.init(describing:)) ?? "")")
        await server.stop()
    }

    /// One account over its limit does not slow another: bob's requests go through while
    /// alice is refused.
    @Test func anotherAccountIsNotSlowed() async throws {
        let server = try await Self.server()
        let alice = try server.credential("alice"), bob = try server.credential("bob")
        for _ in 0..<4 { _ = try await server.send(.GET, "/v1/account", as: alice) }
        #expect(try await server.send(.GET, "/v1/account", as: alice).status == 429)
        for _ in 0..<3 {
            let r = try await server.send(.GET, "/v1/account", as: bob)
            #expect(r.status == 200, "\(r)")
        }
        await server.stop()
    }

    /// The engine reads a 429 as rateLimited with the server's wait (what it must honour).
    @Test func theClientReadsA429AsRateLimited() async throws {
        let server = try await Self.server()
        let alice = server.client(try server.credential("alice"))
        for _ in 0..<3 { _ = try await alice.whoAmI() }
        await #expect(throws: SyncError.self) { try await alice.whoAmI() }
        do {
            _ = try await alice.whoAmI()
        } catch {
            guard case .rateLimited(let after) = error, let after else {
                Issue.record("expected rateLimited with a wait, got \(error)")
                return
            }
            #expect(after >= .seconds(1))
        }
        await server.stop()
    }
}

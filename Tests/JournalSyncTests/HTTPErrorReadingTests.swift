import JournalSync
import JournalSyncWire
import Testing

/// How a client reads an error answer (SYNC.md §9.3): the service's own answers read back as the
/// errors they were written for; a 404 or 410 that is not the service's never reads as a zone
/// gone or a token expired, which would have the engine drop lists and their unsent changes.
struct HTTPErrorReadingTests {
    static let written: [SyncError] = [
        .limitExceeded, .rateLimited(retryAfter: .seconds(3)), .serviceBusy(retryAfter: .seconds(2)),
        .tokenExpired, .zoneNotFound, .zoneDeleted(reason: .deleted), .zoneDeleted(reason: .removed),
        .notAuthenticated, .quotaExceeded, .invalidRequest("no"), .incompatible("protocol 0"), .tooManyParticipants(limit: 100), .zoneDeleted(reason: .left),
    ]

    @Test func theServicesAnswersReadBackAsTheirErrors() {
        for error in Self.written {
            let (status, body) = HTTPBinding.response(for: error)
            #expect(HTTPBinding.error(status: status, body: body, retryAfter: nil) == error, "\(error)")
        }
    }

    @Test func aNotFoundWithoutTheServicesBodyIsNotAZoneNotFound() {
        let proxy = HTTPBinding.ErrorJSON(error: "notFound", message: "no route")
        for body in [nil, proxy] {
            #expect(HTTPBinding.error(status: 404, body: body, retryAfter: nil) == .serviceBusy(retryAfter: nil))
        }
    }

    @Test func aGoneWithoutTheServicesBodyIsNotATokenExpired() {
        let proxy = HTTPBinding.ErrorJSON(error: "gone", message: "moved")
        for body in [nil, proxy] {
            #expect(HTTPBinding.error(status: 410, body: body, retryAfter: nil) == .serviceBusy(retryAfter: nil))
        }
    }

    /// SYNC.md §3.13: no header is version 1; a number from the oldest on is spoken (a newer one
    /// too: the newer side decides); anything else is refused in words.
    @Test func aProtocolVersionIsSpokenFromTheOldestOn() {
        for ok in [nil, "1", "2", "3"] { #expect(HTTPBinding.protocolRefusal(ok) == nil, "\(ok ?? "none")") }
        for bad in ["0", "-1", "two", "", "999999"] { #expect(HTTPBinding.protocolRefusal(bad) != nil, "\(bad)") }
    }
}

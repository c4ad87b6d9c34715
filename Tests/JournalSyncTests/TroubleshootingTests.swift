import Foundation
import Testing
import JournalLog
import ListModel
import Logging
@testable import JournalSync

/// The troubleshooting menu (Part 7, Part 8; Spec/SYNC.md §7.9): re-fetch every list, queues by
/// kind with the stuck changes listed, and a diagnostic report an app attaches to a support mail.
@Suite struct TroubleshootingTests {
    @Test func reFetchingEveryListReplacesEachCopyAndKeepsWhatIsQueued() async throws {
        let world = try World()
        let phone = try world.device("alice:phone")
        let weekly = try await phone.engine.createList("weekly"), party = try await phone.engine.createList("party")
        try await phone.add("Milk", weekly)
        try await phone.add("Cake", party)
        await phone.sync()
        let tea = try await phone.add("Tea", weekly)   // queued, not yet uploaded
        let r = await phone.engine.refetchAllLists()
        #expect(r.isComplete, "\(r.errors)")
        #expect(Set(r.refetched) == [weekly, party])
        #expect(r.refetchCauses[.requested] == 2)
        for list in [weekly, party] { #expect(try phone.list(list) == world.serviceList(list)) }
        #expect(try world.serviceList(weekly).items.contains { $0.id == tea }, "the queued change went up")
    }

    @Test func theStatusCountsQueuedChangesByKindAndListsTheOldest() async throws {
        let world = try World()
        let phone = try world.device("alice:phone") { OfflineService(account: $0.account) }
        let list = try await phone.engine.createList("weekly")
        let milk = try await phone.add("Milk", list)
        try await phone.engine.record(.markOff(item: milk), in: list)
        await phone.sync()
        let status = try #require(await phone.engine.status().lists.first)
        #expect(status.queuedByKind == ["add": 1, "markOff": 1])
        #expect(status.oldestQueued.map(\.kind) == ["add", "markOff"])
        #expect(status.oldestQueued.allSatisfy { $0.item == milk })
    }

    @Test func theDiagnosticReportNamesTheServiceAndRecentProblemsNeverACredential() async throws {
        let world = try World()
        let secret = "jlc1.alice.SECRETSECRET"
        struct Unreachable: ForwardingSyncService {
            let account = "alice"
            let secret: String
            var diagnosticName: String { "HTTP https://lists.example" }
            func forward(_ call: SyncCall) async throws(SyncError) -> SyncAnswer { throw .networkUnavailable(cause: "refused") }
        }
        let phone = try world.device("alice:phone") { _ in Unreachable(secret: secret) }
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        let report = await phone.engine.diagnosticReport()
        #expect(report.contains("service: HTTP https://lists.example"))
        #expect(report.contains("alice/weekly"))
        #expect(report.contains("queued by kind: add 1"))
        #expect(report.contains("the service could not be reached"))
        #expect(!report.contains(secret) && !report.contains("Milk"), "no credential, no list contents")
    }

    /// The app's logger, at the app's level: a sync's summary and its problems, never a list's text.
    @Test func theEngineLogsThroughTheAppsLogger() async throws {
        let world = try World()
        let lines = LogLines()
        var options = SyncEngineOptions()
        options.logger = Logger(label: "test", factory: { _ in LogLines.Handler(lines: lines) })
        options.logger.logLevel = .info
        let phone = try world.device("alice:phone", options: options) { OfflineService(account: $0.account) }
        let list = try await phone.engine.createList("weekly")
        try await phone.add("Milk", list)
        await phone.sync()
        let logged = lines.all
        #expect(logged.contains { $0.level == .info && $0.message == "sync" })
        #expect(logged.contains { $0.level == .warning && $0.message.contains("could not be reached") })
        #expect(!logged.contains { $0.message.contains("Milk") })
    }
}

/// What a test's log handler received.
final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [(level: Logger.Level, message: String)] = []
    var all: [(level: Logger.Level, message: String)] { lock.withLock { lines } }
    func add(_ level: Logger.Level, _ message: String) { lock.withLock { lines.append((level, message)) } }

    struct Handler: LogHandler {
        let lines: LogLines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
            lines.add(level, message.description)
        }
    }
}

import JournalLog
import JournalSync

/// What a sync server stores and answers, per authenticated caller (Spec/SYNC.md §3): the
/// boundary between a transport (`jlog serve`'s HTTP, an in-process `LocalService`) and the
/// storage behind it. `ServiceCore` is the implementation over one `JournalStore`; a backend over
/// a shared database (PostgreSQL, for several stateless servers) implements the same calls with
/// the same invariants, and the transports above do not change.
public protocol ServiceBackend: Sendable {
    /// Answers `call` for the authenticated `caller` (Spec/SYNC.md §3: the service's side of
    /// each `SyncService` call), its device noted where the transport knows it.
    func perform(_ caller: ServiceCaller, _ call: SyncCall) async throws(SyncError) -> SyncAnswer
    /// The limits requests are held to (a transport refuses larger bodies before reading them).
    var limits: ServiceLimits { get }
    /// "Zone Z changed" for the accounts that see it: hints, never data.
    var hints: HintHub { get }
    /// Why the backend cannot take requests now (its storage refuses writes, or does not answer),
    /// or nil when it can: a server's readiness (`GET /v1/ready`).
    func unreadiness() async -> String?
}

extension ServiceCore: ServiceBackend {}

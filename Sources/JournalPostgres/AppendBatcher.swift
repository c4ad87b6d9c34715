import Synchronization

/// Group commit within a node: appends that arrive while one transaction commits wait and share
/// the next (at most `maxRequests`), so a node pays one positions lock and one commit for many
/// uploads, not one each (Spec/SYNC.md §11.2). Each request keeps its own outcome.
final class AppendBatcher: Sendable {
    typealias Outcome = Result<PostgresAppend, PostgresStorageError>
    private struct Waiting: Sendable {
        var request: AppendRequest
        var continuation: CheckedContinuation<Outcome, Never>
    }

    static let maxRequests = 256
    private let state = Mutex<(queue: [Waiting], committing: Bool)>(([], false))
    private let commit: @Sendable ([AppendRequest]) async -> [Outcome]

    init(commit: @escaping @Sendable ([AppendRequest]) async -> [Outcome]) {
        self.commit = commit
    }

    /// Appends `request` with whatever else is waiting; its outcome.
    func submit(_ request: AppendRequest) async -> Outcome {
        await withCheckedContinuation { continuation in
            let leads = state.withLock { s in
                s.queue.append(Waiting(request: request, continuation: continuation))
                if s.committing { return false }
                s.committing = true
                return true
            }
            // On the bridge (the connections' event loop), like every database call (`BridgeExecutor`).
            if leads { Task(executorPreference: BridgeExecutor.shared) { await self.drain() } }
        }
    }

    /// Commits what waits, a batch at a time, until nothing does.
    private func drain() async {
        while true {
            let batch: [Waiting] = state.withLock { s in
                guard !s.queue.isEmpty else {
                    s.committing = false
                    return []
                }
                let n = min(s.queue.count, Self.maxRequests)
                defer { s.queue.removeFirst(n) }
                return Array(s.queue.prefix(n))
            }
            guard !batch.isEmpty else { return }
            let outcomes = await commit(batch.map(\.request))
            for (w, o) in zip(batch, outcomes) { w.continuation.resume(returning: o) }
        }
    }
}

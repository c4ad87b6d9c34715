import JournalLog
import JournalService
import Logging
import PostgresNIO

/// What another node's writes tell this one (Spec/SYNC.md §11.4): a signal only, never data.
public typealias PostgresChangeSignal = NodeSignal

extension PostgresStorage {
    /// Signals of writes committed by other nodes, through PostgreSQL's `LISTEN/NOTIFY` on one
    /// connection of the pool: a signal's payload is the writer's tag, a tab and the zone (an
    /// older node's, the zone alone), and those of this storage's own writes are left out (the
    /// node hinted its devices when it wrote). Begins with `listening`; a lost connection is
    /// listened to again (after `retry`), with `listening` again. Ends when the consumer stops
    /// iterating, or at `close`.
    public func changeSignals(retry: Duration = .milliseconds(200)) -> AsyncStream<PostgresChangeSignal> {
        let (stream, continuation) = AsyncStream<PostgresChangeSignal>.makeStream(bufferingPolicy: .bufferingNewest(4_096))
        let listener = Task(executorPreference: BridgeExecutor.shared) { [client, logger, changesChannel, signalTag] in
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: changesChannel) { notifications in
                            continuation.yield(.listening)
                            for try await n in notifications {
                                if let zone = Self.zone(signalled: n.payload, notFrom: signalTag) { continuation.yield(.zone(zone)) }
                            }
                        }
                    }
                } catch {
                    if Task.isCancelled { break }
                    logger.warning("listening for other nodes' changes failed; listening again", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: retry)
            }
            continuation.finish()
        }
        listeners.withLock { $0.append(listener) }
        continuation.onTermination = { _ in listener.cancel() }
        return stream
    }

    /// Notifies the other nodes that `zone` changed, inside the transaction: at its commit, and
    /// only then.
    func notifyChange(_ zone: String, on c: PostgresConnection) async throws {
        try await c.query("SELECT pg_notify(\(changesChannel), \(signalTag + "\t" + zone))", logger: logger)
    }

    /// The zone a signal's payload names, nil when `tag` wrote it. A zone name holds no control
    /// character, so the first tab ends the tag; a payload with none is a zone alone.
    static func zone(signalled payload: String, notFrom tag: String) -> String? {
        guard let tab = payload.firstIndex(of: "\t") else { return payload }
        return payload[..<tab] == tag ? nil : String(payload[payload.index(after: tab)...])
    }
}

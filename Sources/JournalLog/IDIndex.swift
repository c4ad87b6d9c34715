/// What a zone incarnation knows of an entry id it holds: where it was stored, and the
/// fingerprint of its encoding (`EntryFingerprint`), so that a retry (same bytes) is acknowledged
/// and a conflict (other bytes under the same id) is refused.
struct StoredID {
    var sequence: SequenceNumber
    var fingerprint: UInt64
}

/// Entry id to where and what was stored, for one zone incarnation: what makes appends idempotent.
/// Sharded, so that growing it under the writer's lock never rehashes the whole zone at once.
typealias IDIndex = ShardedIDMap<StoredID>

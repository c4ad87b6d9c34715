/// Hard limits from Spec/FORMAT.md §8. Every parser enforces them before it allocates.
package enum Limits {
    /// Largest frame payload. A batch, once encoded and before compression, must fit too.
    package static let maxPayloadBytes = 4 * 1024 * 1024
    /// Most entries in one atomic batch.
    package static let maxBatchEntries = 65_536
    package static let maxZoneBytes = 255
    package static let maxAuthorBytes = 64
    package static let maxIDBytes = 64
    package static let maxTextBytes = 4_096
    /// Raw batch bodies at least this long are LZ4-compressed when that saves space.
    package static let compressionThreshold = 512
}

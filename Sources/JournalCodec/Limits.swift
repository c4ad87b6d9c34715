/// Hard limits from Spec/FORMAT.md §8. Every parser enforces them before it allocates.
public enum Limits {
    /// Largest frame payload. A batch, once encoded and before compression, must fit too.
    public static let maxPayloadBytes = 4 * 1024 * 1024
    /// Most entries in one atomic batch.
    public static let maxBatchEntries = 65_536
    public static let maxZoneBytes = 255
    public static let maxAuthorBytes = 64
    public static let maxIDBytes = 64
    public static let maxTextBytes = 4_096
    /// Raw batch bodies at least this long are LZ4-compressed when that saves space.
    public static let compressionThreshold = 512
}

import ListModel

/// Where a paged read of a zone's history resumes (Spec/SYNC.md §3.12): the service's words,
/// which a device sends back as they came and never reads.
public struct HistoryCursor: Sendable, Hashable {
    /// The cursor as the service wrote it (at most `maxBytes`).
    public let text: String

    /// Longest cursor a service writes or accepts.
    public static let maxBytes = 512

    /// A cursor as a service wrote it.
    public init(_ text: String) { self.text = text }
}

/// One page of a zone's activity history (`SyncService.fetchZoneHistoryPage`).
public struct HistoryPage: Sendable, Equatable {
    /// The page's events as a history piece (Spec/SNAPSHOT.md §5.2, not complete, no previous
    /// piece); empty for a zone that was never compacted (its log holds every event).
    public var bytes: [UInt8]
    /// Where the next page starts; nil on the last page.
    public var next: HistoryCursor?

    /// A page and the cursor after it.
    public init(bytes: [UInt8], next: HistoryCursor?) {
        self.bytes = bytes
        self.next = next
    }
}

extension SyncService {
    /// The whole history as one page (a service without pages, such as CloudKit's adapter: one
    /// `fetchZoneHistory`, re-encoded as a piece). A cursor is refused: this service issues none.
    public func fetchZoneHistoryPage(_ zone: ZoneID, after cursor: HistoryCursor?) async throws(SyncError) -> HistoryPage {
        guard cursor == nil else { throw .invalidRequest("this service sends a history in one page; it issued no cursor") }
        let blob = try await fetchZoneHistory(zone)
        guard !blob.isEmpty else { return HistoryPage(bytes: [], next: nil) }
        let log: ActivityLog
        do { log = try ActivityLogCodec.decode(blob) } catch { throw .invalidRequest("the service's history does not decode: \(error)") }
        let header = HistoryPieceHeader(zone: log.zone, incarnation: 0, sequence: 0, complete: false)
        return HistoryPage(bytes: HistoryPieceCodec.encode(log, header: header), next: nil)
    }
}

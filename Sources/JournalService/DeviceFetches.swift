import Foundation
import JournalLog
import JournalSync

/// Who is calling: the account the credential names and, when the transport knows it, the
/// device (the reference server: the credential's id, one per device).
public struct ServiceCaller: Sendable, Hashable {
    /// The account every call acts as.
    public var account: String
    /// The device, or nil when the transport cannot tell devices apart.
    public var device: String?

    /// A caller; `device` nil when unknown.
    public init(account: String, device: String? = nil) {
        self.account = account
        self.device = device
    }
}

/// Where each device last caught up with each zone (Spec/SYNC.md §6.6): when, and under which
/// mark. A compaction raises a zone's mark and expires every token under an older one, so every
/// device recorded with a lower mark re-fetches the list (from its snapshot) at its next sync:
/// what an operator sees before a run (`jlog accounts devices`) and a run reports after it.
/// Kept in memory and written to `service/devices` (one JSON object a line) at each compaction
/// and at shutdown; at most `maxRows` rows, the oldest forgotten first.
public final class DeviceFetches: @unchecked Sendable {
    /// One device's last catch-up with one zone.
    public struct Row: Sendable, Equatable, Codable {
        /// The device (the credential's id, for `jlog serve`).
        public var device: String
        /// Its account.
        public var account: String
        /// The zone's store name (`owner/name`).
        public var zone: String
        /// The zone's low-water mark when the device caught up: its tokens are under it.
        public var mark: UInt64
        /// When, in milliseconds since 1970 by the service's clock.
        public var at: Int64

        package init(device: String, account: String, zone: String, mark: UInt64, at: Int64) {
            self.device = device
            self.account = account
            self.zone = zone
            self.mark = mark
            self.at = at
        }
    }

    /// Rows kept at most (a device × zone each).
    public static let maxRows = 100_000
    /// The file the rows are written to, under the store.
    public static let file = StoreLayout.serviceDirectory + "/devices"

    private let lock = NSLock()
    private var rows: [String: Row] = [:]

    /// Empty, or the rows `path` holds (a file that cannot be read starts empty: the rows are a
    /// report, never a decision).
    package init(loadingFrom path: String? = nil, fs: any FileSystem = PosixFileSystem()) {
        guard let path, let bytes = try? AtomicFile.read(path, fs: fs, limit: 64 << 20) else { return }
        for line in bytes.split(separator: 0x0A) {
            guard let row = try? JSONDecoder().decode(Row.self, from: Data(line)) else { continue }
            rows[Self.key(row.device, row.zone)] = row
        }
    }

    /// These rows (read from a database every node shares).
    package init(rows: [Row]) {
        for row in rows { self.rows[Self.key(row.device, row.zone)] = row }
    }

    static func key(_ device: String, _ zone: String) -> String { device + "\u{0}" + zone }

    /// `device` of `account` caught up with `zone` under `mark` at `at`.
    func note(device: String, account: String, zone: String, mark: UInt64, at: Int64) {
        lock.withLock {
            rows[Self.key(device, zone)] = Row(device: device, account: account, zone: zone, mark: mark, at: at)
            if rows.count > Self.maxRows, let oldest = rows.min(by: { $0.value.at < $1.value.at })?.key { rows[oldest] = nil }
        }
    }

    /// Every row, by zone, then device.
    public var all: [Row] { lock.withLock { Array(rows.values) }.sorted { ($0.zone, $0.device) < ($1.zone, $1.device) } }

    /// The devices whose copy of `zone` is under a mark below `mark`: those a compaction that
    /// raised it to `mark` sends back to the snapshot.
    public func behind(_ zone: String, mark: UInt64) -> [Row] { all.filter { $0.zone == zone && $0.mark < mark } }

    /// Writes the rows to `path`, atomically.
    package func save(to path: String, fs: any FileSystem = PosixFileSystem()) throws(JournalError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var out: [UInt8] = []
        for row in all {
            guard let line = try? encoder.encode(row) else { continue }
            out += Array(line)
            out.append(0x0A)
        }
        try AtomicFile.write(out, to: path, fs: fs)
    }
}

import JournalService
import PostgresNIO

/// Where each device last caught up with each zone (SYNC.md §6.6), kept by every node in memory
/// and merged into `jlog_device_fetches`: for each device and zone, the newest row wins.
extension PostgresStorage {
    package func deviceRows() async throws(PostgresStorageError) -> [DeviceFetches.Row] {
        try await Self.mapped {
            var out: [DeviceFetches.Row] = []
            for try await (device, zone, account, mark, at) in try await client.query(
                "SELECT device, zone, account, mark, at FROM jlog_device_fetches", logger: logger).decode((String, String, String, Int64, Int64).self) {
                out.append(DeviceFetches.Row(device: device, account: account, zone: zone, mark: UInt64(mark), at: at))
            }
            return out
        }
    }

    package func saveDeviceRows(_ rows: [DeviceFetches.Row]) async throws(PostgresStorageError) {
        guard !rows.isEmpty else { return }
        try await Self.mapped {
            try await client.query("""
                INSERT INTO jlog_device_fetches (device, zone, account, mark, at)
                SELECT * FROM unnest(\(rows.map(\.device))::text[], \(rows.map(\.zone))::text[], \(rows.map(\.account))::text[],
                                     \(rows.map { Int64($0.mark) })::bigint[], \(rows.map(\.at))::bigint[])
                ON CONFLICT (device, zone) DO UPDATE SET account = excluded.account, mark = excluded.mark, at = excluded.at
                WHERE jlog_device_fetches.at <= excluded.at
                """, logger: logger)
        }
    }
}

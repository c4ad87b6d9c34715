import ArgumentParser
import JournalLog
import JournalPostgres
import JournalService

/// `jlog accounts devices`: where each device last caught up with each list, and which will
/// re-fetch from the snapshot (Spec/SYNC.md §6.6).
struct AccountsDevices: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List each device's last catch-up with each list, and the devices the next compaction sends back to the snapshot.",
        discussion: """
        Read from the server's `service/devices` (written at each compaction and when `jlog serve` \
        stops) and its log, or with --database from `jlog_device_fetches` (merged into by every node \
        at each compaction and when it stops) and the zones' rows, without stopping the server. A \
        device is `expired` when the list was compacted since it caught up (its next sync \
        re-fetches from the snapshot), and `next run` when the list has changes a compaction would \
        take (every device of it then re-fetches).
        """)
    @OptionGroup var place: AccountsPlace
    @Argument(help: ArgumentHelp("The server's store directory (unless --database).", valueName: "store")) var operands: [String] = []
    @Flag(help: "One JSON object: {devices:[{device,account,zone,caughtUpAt,mark,zoneMark,expired,nextRun}], sentBackByNextRun}.")
    var json = false

    /// One device's catch-up with one live list, against the list's row now.
    typealias Line = (row: DeviceFetches.Row, zoneMark: UInt64, expired: Bool, nextRun: Bool)

    func run() async throws {
        let (store, _) = try place.split(operands, wanting: 0, usage: "jlog accounts devices STORE")
        let rows: [DeviceFetches.Row]
        let zones: [String: ZoneInfo]
        if let store {
            rows = DeviceFetches(loadingFrom: store + "/" + DeviceFetches.file).all
            let reader: StoreReader
            do { reader = try StoreReader.open(store) } catch { throw fail(error, path: store) }
            zones = Dictionary(rows.compactMap { r in reader.zone(r.zone).map { (r.zone, $0) } }, uniquingKeysWith: { a, _ in a })
        } else {
            (rows, zones) = try await place.withDatabase { db in
                (try await db.deviceRows(), Dictionary(try await db.zoneInfos(nil).map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a }))
            }
        }
        report(Self.lines(rows, zones: zones))
    }

    /// The rows of live lists, each against its list's mark and last change.
    static func lines(_ rows: [DeviceFetches.Row], zones: [String: ZoneInfo]) -> [Line] {
        rows.compactMap { row in
            guard let z = zones[row.zone], !z.isDeleted else { return nil }
            return (row, z.lowWaterMark, row.mark < z.lowWaterMark, z.lastChange > z.lowWaterMark)
        }
    }

    private func report(_ lines: [Line]) {
        let sentBack = lines.filter { $0.expired || $0.nextRun }.count
        if json {
            print(JSON.object([
                ("devices", .array(lines.map { l in
                    .object([("device", .string(l.row.device)), ("account", .string(l.row.account)), ("zone", .string(l.row.zone)),
                             ("caughtUpAt", .string(iso(l.row.at))), ("mark", .uint(l.row.mark)), ("zoneMark", .uint(l.zoneMark)),
                             ("expired", .bool(l.expired)), ("nextRun", .bool(l.nextRun))])
                })),
                ("sentBackByNextRun", .int(Int64(sentBack))),
            ]).rendered)
            return
        }
        if lines.isEmpty { print("no device has caught up with a list yet (or no server has written where its devices are)") }
        for l in lines {
            let state = l.expired ? "expired: re-fetches at its next sync" : (l.nextRun ? "re-fetches after the next compaction" : "current")
            print("\(l.row.zone)  \(l.row.account)  \(l.row.device)  caught up \(iso(l.row.at)) under mark \(l.row.mark)  \(state)")
        }
        print("\(sentBack) of \(lines.count) device copies go back to the snapshot by the next compaction")
    }
}

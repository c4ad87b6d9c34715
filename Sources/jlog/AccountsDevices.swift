import ArgumentParser
import JournalLog
import JournalService

/// `jlog accounts devices`: where each device last caught up with each list, and which will
/// re-fetch from the snapshot (Spec/SYNC.md §6.6).
struct AccountsDevices: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List each device's last catch-up with each list, and the devices the next compaction sends back to the snapshot.",
        discussion: """
        Read from the server's `service/devices` (written at each compaction and when `jlog serve` \
        stops) and its log, without stopping the server. A device is `expired` when the list was \
        compacted since it caught up (its next sync re-fetches from the snapshot), and `next run` \
        when the list has changes a compaction would take (every device of it then re-fetches).
        """)
    @Argument(help: "The server's store directory.") var store: String
    @Flag(help: "One JSON object: {devices:[{device,account,zone,caughtUpAt,mark,zoneMark,expired,nextRun}], sentBackByNextRun}.")
    var json = false

    func run() throws {
        let rows = DeviceFetches(loadingFrom: store + "/" + DeviceFetches.file).all
        let reader: StoreReader
        do { reader = try StoreReader.open(store) } catch { throw fail(error, path: store) }
        var lines: [(DeviceFetches.Row, zoneMark: UInt64, expired: Bool, nextRun: Bool)] = []
        for row in rows {
            guard let z = reader.zone(row.zone), !z.isDeleted else { continue }
            lines.append((row, z.lowWaterMark, row.mark < z.lowWaterMark, z.lastChange > z.lowWaterMark))
        }
        let sentBack = lines.filter { $0.expired || $0.nextRun }.count
        if json {
            print(JSON.object([
                ("devices", .array(lines.map { l in
                    .object([("device", .string(l.0.device)), ("account", .string(l.0.account)), ("zone", .string(l.0.zone)),
                             ("caughtUpAt", .string(iso(l.0.at))), ("mark", .uint(l.0.mark)), ("zoneMark", .uint(l.zoneMark)),
                             ("expired", .bool(l.expired)), ("nextRun", .bool(l.nextRun))])
                })),
                ("sentBackByNextRun", .int(Int64(sentBack))),
            ]).rendered)
            return
        }
        if lines.isEmpty { print("no device has caught up with a list yet (or the server has not written service/devices)") }
        for l in lines {
            let state = l.expired ? "expired: re-fetches at its next sync" : (l.nextRun ? "re-fetches after the next compaction" : "current")
            print("\(l.0.zone)  \(l.0.account)  \(l.0.device)  caught up \(iso(l.0.at)) under mark \(l.0.mark)  \(state)")
        }
        print("\(sentBack) of \(lines.count) device copies go back to the snapshot by the next compaction")
    }
}

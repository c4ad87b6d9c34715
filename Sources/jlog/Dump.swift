import ArgumentParser
import Foundation
import JournalLog

struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print one line per record; with --json, entries in the JSON Lines form `jlog import` reads.")

    @Argument(help: "A store directory or a segment file.") var path: String
    @Flag(help: "Print entries as import-ready JSON Lines, with every field.") var json = false
    @Option(help: "Recovery mode for reading (strict, tolerateTail, pointInTime, salvage).") var mode: RecoveryMode = .tolerateTail
    @Option(help: "Start at this sequence.") var from: UInt64 = 0

    func run() throws {
        var out = ""
        out.reserveCapacity(1 << 16)
        func emit(_ line: String) {
            out += line
            out += "\n"
            if out.utf8.count >= 1 << 16 {
                FileHandle.standardOutput.write(Data(out.utf8))
                out.removeAll(keepingCapacity: true)
            }
        }
        var progress = Progress(label: "dumped records")
        let report: ScanReport
        do {
            report = try LogReader.read(path, mode: mode, from: from) { event, record in
                progress.tick()
                if json {
                    if case .entry(_, let e) = event { emit(entryJSON(e)) }
                    return
                }
                let loc = "\(record.segment)@\(record.offset)"
                switch event {
                case .entry(let s, let e):
                    var line = "\(s) \(loc) \(RecordType(rawValue: record.header.type)?.name ?? "?") \(e.operation.name) zone=\(quote(e.zone)) by=\(quote(e.author)) at=\(iso(e.wallTime)) hlc=\(e.clock) id=\(e.id)"
                    switch e.operation {
                    case .add(let item, let text, let after):
                        line += " item=\(item) after=\(after.map { $0.description } ?? "-") text=\(quote(text))"
                    case .markOff(let item), .unmark(let item), .delete(let item): line += " item=\(item)"
                    case .place(let item, let after), .move(let item, let after): line += " item=\(item) after=\(after.map { $0.description } ?? "-")"
                    case .rename(let name): line += " name=\(quote(name))"
                    case .recolour(let colour): line += " colour=\(quote(colour))"
                    case .join(let who), .leave(let who): line += " participant=\(quote(who))"
                    case .opaque(_, let body): line += " body=\(body.count)B"
                    }
                    emit(line)
                case .zoneCreated(let s, let zone): emit("\(s) \(loc) zoneCreate zone=\(quote(zone))")
                case .zoneDeleted(let s, let zone, let reason): emit("\(s) \(loc) zoneDelete zone=\(quote(zone)) reason=\(reason)")
                case .seal(let last): emit("\(record.header.sequence) \(loc) seal lastSequence=\(last)")
                case .lowWaterMark(let s, let zone, let inc, let mark, let history):
                    emit("\(s) \(loc) lowWaterMark zone=\(zone) incarnation=\(inc) mark=\(mark)" + (history > 0 ? " history=\(history)" : ""))
                case .skipped(let type, let s): emit("\(s) \(loc) skipped type=0x\(String(type, radix: 16)) bytes=\(record.payload.count)")
                }
            }
        } catch {
            FileHandle.standardOutput.write(Data(out.utf8))
            throw fail(error, path: path)
        }
        FileHandle.standardOutput.write(Data(out.utf8))
        progress.finish()
        for p in report.problems { printError((mode == .salvage ? "skipped " : "stopped at ") + p.description) }
    }
}

func quote(_ s: String) -> String {
    var out = ""
    JSON.escape(s, into: &out)
    return out
}

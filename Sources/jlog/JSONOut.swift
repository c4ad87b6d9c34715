import Foundation
import JournalLog

/// A small ordered JSON value: `jlog`'s machine-readable output keeps keys in a fixed order.
enum JSON {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    var rendered: String {
        var out = ""
        render(into: &out)
        return out
    }

    func render(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .uint(let u): out += String(u)
        case .double(let d): out += d.isFinite ? String(d) : "null"
        case .string(let s): JSON.escape(s, into: &out)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() {
                if i > 0 { out += "," }
                v.render(into: &out)
            }
            out += "]"
        case .object(let kv):
            out += "{"
            for (i, (k, v)) in kv.enumerated() {
                if i > 0 { out += "," }
                JSON.escape(k, into: &out)
                out += ":"
                v.render(into: &out)
            }
            out += "}"
        }
    }

    static func escape(_ s: String, into out: inout String) {
        out += EntryJSON.jsonLiteral(s)
    }
}

/// A field of an object written as it is produced: a value, or an array whose elements are made
/// and written one at a time, so a million-item list is never held whole as JSON or as text.
enum StreamedField {
    case value(JSON)
    case elements(count: Int, (Int) -> JSON)
}

/// Text for stdout, written in chunks of about 64 KiB as it is produced: the output is byte for
/// byte what rendering the whole value would print, at the memory of one chunk. Each chunk
/// flushes stdio first, so it stays in order after what `print` wrote.
final class StreamedOutput {
    static let chunkBytes = 64 << 10
    private var buffer = ""

    init() { buffer.reserveCapacity(Self.chunkBytes + 4_096) }

    func write(_ text: String) {
        buffer += text
        flushIfFull()
    }

    func write(_ value: JSON) {
        value.render(into: &buffer)
        flushIfFull()
    }

    /// `JSON.object(fields).rendered`, written field by field and element by element.
    func writeObject(_ fields: [(String, StreamedField)]) {
        write("{")
        for (i, (key, field)) in fields.enumerated() {
            if i > 0 { write(",") }
            JSON.escape(key, into: &buffer)
            write(":")
            switch field {
            case .value(let v): write(v)
            case .elements(let count, let element):
                write("[")
                for k in 0..<count {
                    if k > 0 { write(",") }
                    write(element(k))
                }
                write("]")
            }
        }
        write("}")
    }

    /// Writes what is buffered, after whatever `print` left in stdio's buffer.
    func flush() {
        fflush(nil)
        FileHandle.standardOutput.write(Data(buffer.utf8))
        buffer.removeAll(keepingCapacity: true)
    }

    private func flushIfFull() {
        if buffer.utf8.count >= Self.chunkBytes { flush() }
    }
}

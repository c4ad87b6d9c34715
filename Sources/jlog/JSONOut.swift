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

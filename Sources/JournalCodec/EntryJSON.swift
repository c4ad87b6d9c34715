// The JSON Lines form of an entry (Spec/FORMAT.md §7): the writer here, the parser in
// EntryJSONParser.swift, the timestamps in ISO8601Time.swift.
// Pure byte-level code: no Foundation, no recursion, bounded work per byte, so it can be fuzzed
// and can parse millions of import lines quickly.

// MARK: - JSON lines

/// The JSON Lines form of an entry (Spec/FORMAT.md §7): a strict parser for one flat object,
/// and the writer `jlog dump --json` uses.
package enum EntryJSON {
    package static let maxLineBytes = 65_536

    /// Parses one line (without or with a trailing newline, which is whitespace).
    package static func parse(line: String) throws(EntryJSONError) -> ParsedEntryLine {
        var line = line
        let result: Result<ParsedEntryLine, EntryJSONError> = line.withUTF8 { u in
            do throws(EntryJSONError) { return .success(try parse(bytes: u)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Parses one line given as UTF-8 bytes, which are checked to be well-formed.
    package static func parse(utf8 b: UnsafeRawBufferPointer) throws(EntryJSONError) -> ParsedEntryLine {
        try parse(bytes: b.assumingMemoryBound(to: UInt8.self))
    }

    static func parse(bytes b: UnsafeBufferPointer<UInt8>) throws(EntryJSONError) -> ParsedEntryLine {
        guard b.count <= maxLineBytes else {
            throw EntryJSONError(message: "line is longer than \(maxLineBytes) bytes", column: maxLineBytes + 1)
        }
        var scanner = Scanner(b)
        let fields = try scanner.object()
        return try build(fields, b, scanner.arena, closeColumn: scanner.closeColumn)
    }

    // MARK: Writing

    /// One line, no trailing newline, keys in the order of FORMAT.md §7.
    package static func format(_ e: JournalEntry) -> String {
        var out: [UInt8] = []
        format(e, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `format(e)` as UTF-8 (no newline), for writers that batch many lines.
    package static func format(_ e: JournalEntry, into out: inout [UInt8]) {
        var extra = 0
        switch e.operation {
        case .add(_, let t, _), .rename(let t), .recolour(let t), .join(let t), .leave(let t): extra = t.utf8.count
        case .opaque(_, let body): extra = body.count * 2
        default: break
        }
        out.reserveCapacity(out.count + 200 + e.zone.utf8.count + e.author.utf8.count + extra)
        put(#"{"id":"#, &out)
        appendID(e.id, to: &out)
        put(#","zone":"#, &out)
        appendString(e.zone, to: &out)
        put(#","op":""#, &out)
        switch e.operation {
        case .opaque(let kind, _):
            put("op0x", &out)
            out.append(hexDigit(kind >> 4))
            out.append(hexDigit(kind & 15))
        default:
            out.append(contentsOf: e.operation.name.utf8)
        }
        out.append(0x22)
        switch e.operation {
        case .add(let item, let text, let after):
            put(#","item":"#, &out)
            appendID(item, to: &out)
            put(#","text":"#, &out)
            appendString(text, to: &out)
            put(#","after":"#, &out)
            if let after { appendID(after, to: &out) } else { put("null", &out) }
        case .markOff(let item), .unmark(let item), .delete(let item):
            put(#","item":"#, &out)
            appendID(item, to: &out)
        case .place(let item, let after), .move(let item, let after):
            put(#","item":"#, &out)
            appendID(item, to: &out)
            put(#","after":"#, &out)
            if let after { appendID(after, to: &out) } else { put("null", &out) }
        case .rename(let text), .recolour(let text), .join(let text), .leave(let text):
            put(#","text":"#, &out)
            appendString(text, to: &out)
        case .opaque(_, let body):
            put(#","body":""#, &out)
            for x in body {
                out.append(hexDigit(x >> 4))
                out.append(hexDigit(x & 15))
            }
            out.append(0x22)
        }
        put(#","by":"#, &out)
        appendString(e.author, to: &out)
        put(#","at":""#, &out)
        ISO8601Time.append(e.wallTime, to: &out)
        put(#"","hlc":""#, &out)
        appendDecimal(e.clock.physicalMillis, to: &out)
        out.append(0x3A)
        appendDecimal(UInt64(e.clock.counter), to: &out)
        put(#""}"#, &out)
    }

    /// The lowercase hex digit for 0...15.
    @inline(__always) static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }

    /// Up to 8 bytes packed little-endian into one integer, for matching short names, with the
    /// length alongside (NUL bytes add nothing to the integer); 0 and 0 if longer than 8 bytes.
    @inline(__always) static func packed(_ u: UnsafeBufferPointer<UInt8>) -> (count: Int, bits: UInt64) {
        guard u.count <= 8 else { return (0, 0) }
        var v: UInt64 = 0
        for k in 0..<u.count { v |= UInt64(u[k]) << (8 * UInt64(k)) }
        return (u.count, v)
    }

    private static func put(_ s: StaticString, _ out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    private static func appendDecimal(_ v: UInt64, to out: inout [UInt8]) {
        if v == 0 {
            out.append(0x30)
            return
        }
        var divisor: UInt64 = 1
        while divisor <= v / 10 { divisor *= 10 }
        var rest = v
        while divisor > 0 {
            out.append(UInt8(truncatingIfNeeded: 0x30 + rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// A quoted id; canonical UUIDs are written straight from their 128 bits.
    private static func appendID(_ id: CompactID, to out: inout [UInt8]) {
        switch id.storage {
        case .text(let s):
            appendString(s, to: &out)
        case .uuid(let hi, let lo):
            out.append(0x22)
            for n in 0..<32 {
                if n == 8 || n == 12 || n == 16 || n == 20 { out.append(0x2D) }
                let word = n < 16 ? hi : lo
                let shift = UInt64(60 - 4 * (n % 16))
                out.append(hexDigit(UInt8(truncatingIfNeeded: word >> shift) & 15))
            }
            out.append(0x22)
        }
    }

    /// `s` as a JSON string literal, quotes included: the one JSON escaper that `jlog` and the
    /// benchmark share with the entry writer.
    package static func jsonLiteral(_ s: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count + 2)
        appendString(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// A quoted JSON string: `"` and `\` escaped, control characters as `\n` `\r` `\t` or `\u00XX`,
    /// everything else (including non-ASCII) copied as UTF-8.
    package static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        var s = s
        s.withUTF8 { u in
            var run = 0
            for j in 0..<u.count {
                let c = u[j]
                if c >= 0x20 && c != 0x22 && c != 0x5C { continue }
                if run < j { out.append(contentsOf: UnsafeBufferPointer(rebasing: u[run..<j])) }
                run = j + 1
                out.append(0x5C)
                switch c {
                case 0x22, 0x5C: out.append(c)
                case 0x0A: out.append(0x6E)
                case 0x0D: out.append(0x72)
                case 0x09: out.append(0x74)
                default:
                    out.append(0x75); out.append(0x30); out.append(0x30)
                    out.append(hexDigit(c >> 4))
                    out.append(hexDigit(c & 15))
                }
            }
            if run < u.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: u[run..<u.count])) }
        }
        out.append(0x22)
    }
}

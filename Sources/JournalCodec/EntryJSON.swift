// The JSON Lines form of an entry (Spec/FORMAT.md §7) and the ISO-8601 timestamps it uses.
// Pure byte-level code: no Foundation, no recursion, bounded work per byte, so it can be fuzzed
// and can parse millions of import lines quickly.

// MARK: - ISO-8601

/// ISO-8601 / RFC 3339 timestamps with millisecond precision, using only integer arithmetic.
package enum ISO8601Time {
    /// `0001-01-01T00:00:00.000Z`, the earliest instant `parse` returns and `format` writes.
    package static let minMillis: Int64 = -62_135_596_800_000
    /// `9999-12-31T23:59:59.999Z`, the latest instant `parse` returns and `format` writes.
    package static let maxMillis: Int64 = 253_402_300_799_999

    /// Milliseconds since 1970-01-01T00:00:00Z for exactly
    /// `YYYY-MM-DDTHH:MM:SS[.d{1,9}](Z|z|±HH:MM)`, or nil.
    ///
    /// Fraction digits past the third are truncated. Leap seconds (`:60`) are rejected, as is any
    /// instant that, once the offset is applied, falls outside years 0001–9999 (UTC), so that
    /// `format(parse(s)!)` always succeeds.
    package static func parse(_ s: String) -> Int64? {
        var s = s
        return s.withUTF8 { parse(bytes: $0) }
    }

    /// `parse(_:)` over UTF-8 bytes.
    package static func parse(utf8 b: UnsafeRawBufferPointer) -> Int64? {
        parse(bytes: b.assumingMemoryBound(to: UInt8.self))
    }

    static func parse(bytes b: UnsafeBufferPointer<UInt8>) -> Int64? {
        let n = b.count
        // The fixed part is 19 bytes and a zone needs at least one more.
        guard n >= 20, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54, b[13] == 0x3A, b[16] == 0x3A else { return nil }
        /// The decimal value of `width` digits at `at`, or -1 when one is not a digit.
        func number(_ at: Int, _ width: Int) -> Int {
            var v = 0
            for k in at..<at + width {
                let d = b[k] &- 0x30
                if d > 9 { return -1 }
                v = v * 10 + Int(d)
            }
            return v
        }
        let year = number(0, 4), month = number(5, 2), day = number(8, 2)
        let hour = number(11, 2), minute = number(14, 2), second = number(17, 2)
        guard year >= 1, month >= 1, month <= 12, day >= 1, day <= daysIn(month: month, year: year),
              hour >= 0, hour <= 23, minute >= 0, minute <= 59, second >= 0, second <= 59 else { return nil }
        var i = 19
        var millis = 0
        if b[i] == 0x2E {
            i += 1
            let start = i
            while i < n, b[i] &- 0x30 <= 9 {
                if i - start < 3 { millis = millis * 10 + Int(b[i] &- 0x30) }
                i += 1
            }
            let digits = i - start
            guard digits >= 1, digits <= 9 else { return nil }
            if digits < 3 { for _ in digits..<3 { millis *= 10 } }
        }
        guard i < n else { return nil }
        var offsetMinutes = 0
        switch b[i] {
        case 0x5A, 0x7A: // Z z
            i += 1
        case 0x2B, 0x2D: // + -
            guard n - i == 6, b[i + 3] == 0x3A else { return nil }
            let oh = number(i + 1, 2), om = number(i + 4, 2)
            guard oh >= 0, oh <= 23, om >= 0, om <= 59 else { return nil }
            offsetMinutes = (b[i] == 0x2D ? -1 : 1) * (oh * 60 + om)
            i += 6
        default:
            return nil
        }
        guard i == n else { return nil }
        let days = Int64(daysFromCivil(year: year, month: month, day: day))
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes) * 60
        let result = seconds * 1000 + Int64(millis)
        guard result >= minMillis, result <= maxMillis else { return nil }
        return result
    }

    /// `YYYY-MM-DDTHH:MM:SS.sssZ` in UTC. Instants outside years 0001–9999 cannot be written in
    /// this form and are clamped to `minMillis...maxMillis`.
    package static func format(_ millis: Int64) -> String {
        String(unsafeUninitializedCapacity: 24) { buf in
            write(millis, to: buf.baseAddress!)
            return 24
        }
    }

    /// Appends the 24 bytes of `format(millis)`.
    static func append(_ millis: Int64, to out: inout [UInt8]) {
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: 24))
        out.withUnsafeMutableBufferPointer { write(millis, to: $0.baseAddress! + start) }
    }

    /// Writes exactly 24 bytes.
    private static func write(_ millis: Int64, to p: UnsafeMutablePointer<UInt8>) {
        let m = min(max(millis, minMillis), maxMillis)
        var days = m / 86_400_000
        var rem = m % 86_400_000
        if rem < 0 {
            rem += 86_400_000
            days -= 1
        }
        let (year, month, day) = civilFromDays(Int(days))
        let ms = Int(rem % 1000)
        let secs = Int(rem / 1000)
        func put(_ v: Int, _ at: Int, _ width: Int) {
            var v = v
            for k in stride(from: at + width - 1, through: at, by: -1) {
                p[k] = UInt8(truncatingIfNeeded: 0x30 + v % 10)
                v /= 10
            }
        }
        put(year, 0, 4); p[4] = 0x2D
        put(month, 5, 2); p[7] = 0x2D
        put(day, 8, 2); p[10] = 0x54
        put(secs / 3600, 11, 2); p[13] = 0x3A
        put(secs / 60 % 60, 14, 2); p[16] = 0x3A
        put(secs % 60, 17, 2); p[19] = 0x2E
        put(ms, 20, 3); p[23] = 0x5A
    }

    static func isLeap(_ y: Int) -> Bool { y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) }

    static func daysIn(month m: Int, year y: Int) -> Int {
        switch m {
        case 2: isLeap(y) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
    static func daysFromCivil(year y0: Int, month m: Int, day d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The inverse of `daysFromCivil` (civil_from_days).
    static func civilFromDays(_ z0: Int) -> (year: Int, month: Int, day: Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

// MARK: - Parsed line and errors

/// What one JSON line says; `entry()` derives a missing id (from the content) or clock (from `at`).
package struct ParsedEntryLine: Equatable, Sendable {
    package var id: CompactID?
    package var zone: String
    package var author: String
    package var wallTime: Int64
    package var clock: HybridTime?
    package var operation: EntryOperation

    package init(id: CompactID?, zone: String, author: String, wallTime: Int64, clock: HybridTime?, operation: EntryOperation) {
        self.id = id
        self.zone = zone
        self.author = author
        self.wallTime = wallTime
        self.clock = clock
        self.operation = operation
    }

    /// The entry the line stands for (FORMAT.md §7). A missing `hlc` is derived from `at` alone
    /// (`HybridTime(derivedFromWallTime:)`), and a missing `id` from the entry's content
    /// (`CompactID.derived`): both are functions of the line, never of the lines before it, so
    /// the same lines in any order, sent any number of times, give the same entries.
    package func entry() -> JournalEntry {
        var e = JournalEntry(id: CompactID("-")!, zone: zone, author: author, wallTime: wallTime,
                             clock: clock ?? HybridTime(derivedFromWallTime: wallTime), operation: operation)
        e.id = id ?? CompactID.derived(from: e)
        return e
    }
}

/// Why a JSON line was rejected, and where.
package struct EntryJSONError: Error, Equatable, Sendable, CustomStringConvertible {
    package var message: String
    /// 1-based byte (not character) column in the line.
    package var column: Int

    package init(message: String, column: Int) {
        self.message = message
        self.column = column
    }

    package var description: String { "column \(column): \(message)" }
}

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
        case .place(let item, let after):
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

// MARK: - Scanner

extension EntryJSON {
    /// The keys a line may hold, in the order `format` writes them.
    enum Key: Int, CaseIterable {
        case id, zone, op, item, text, after, body, by, at, hlc

        var name: String {
            switch self {
            case .id: "id"
            case .zone: "zone"
            case .op: "op"
            case .item: "item"
            case .text: "text"
            case .after: "after"
            case .body: "body"
            case .by: "by"
            case .at: "at"
            case .hlc: "hlc"
            }
        }

        /// The key spelled by `u` (names packed little-endian, as `EntryJSON.packed` does).
        init?(_ u: UnsafeBufferPointer<UInt8>) {
            switch EntryJSON.packed(u) {
            case (2, 0x6469): self = .id
            case (4, 0x656E_6F7A): self = .zone
            case (2, 0x706F): self = .op
            case (4, 0x6D65_7469): self = .item
            case (4, 0x7478_6574): self = .text
            case (5, 0x72_6574_6661): self = .after
            case (4, 0x7964_6F62): self = .body
            case (2, 0x7962): self = .by
            case (2, 0x7461): self = .at
            case (3, 0x63_6C68): self = .hlc
            default: return nil
            }
        }
    }

    enum Value {
        case absent
        /// A string without escapes: the byte range of its contents (already checked as UTF-8).
        case raw(Int, Int)
        /// A string that had escapes: the byte range of its decoded UTF-8 in the scanner's arena.
        case decoded(Int, Int)
        case null
        case bool
        case number

        var isAbsent: Bool { if case .absent = self { true } else { false } }

        /// How the value is described when it has the wrong type.
        var typeName: String {
            switch self {
            case .absent: "missing"
            case .raw, .decoded: "a string"
            case .null: "null"
            case .bool: "a boolean"
            case .number: "a number"
            }
        }
    }

    struct Slot {
        var value: Value = .absent
        /// 1-based columns of the value and of its key.
        var column = 0
        var keyColumn = 0
    }

    /// One slot per key, without a heap allocation per line.
    struct Fields {
        var id = Slot(), zone = Slot(), op = Slot(), item = Slot(), text = Slot()
        var after = Slot(), body = Slot(), by = Slot(), at = Slot(), hlc = Slot()

        subscript(key: Key) -> Slot {
            get {
                switch key {
                case .id: id
                case .zone: zone
                case .op: op
                case .item: item
                case .text: text
                case .after: after
                case .body: body
                case .by: by
                case .at: at
                case .hlc: hlc
                }
            }
            set {
                switch key {
                case .id: id = newValue
                case .zone: zone = newValue
                case .op: op = newValue
                case .item: item = newValue
                case .text: text = newValue
                case .after: after = newValue
                case .body: body = newValue
                case .by: by = newValue
                case .at: at = newValue
                case .hlc: hlc = newValue
                }
            }
        }
    }

    /// Tokenizes one flat object. Iterative throughout: nested values are rejected, never descended.
    struct Scanner {
        let b: UnsafeBufferPointer<UInt8>
        var i = 0
        /// Decoded bytes of the strings that contain escapes (allocated only when one does), so that
        /// `Value` stays plain data and nothing becomes a `String` before it is needed.
        var arena: [UInt8] = []
        /// 1-based column of the object's closing brace.
        var closeColumn = 0

        init(_ b: UnsafeBufferPointer<UInt8>) { self.b = b }

        func fail(_ message: String, at offset: Int) -> EntryJSONError {
            EntryJSONError(message: message, column: offset + 1)
        }

        /// What is at `i`, for messages.
        func found() -> String {
            guard i < b.count else { return "end of line" }
            let c = b[i]
            if c >= 0x21 && c < 0x7F { return "'" + String(UnicodeScalar(c)) + "'" }
            return "byte 0x" + hex2(c)
        }

        mutating func skipSpace() {
            while i < b.count {
                let c = b[i]
                guard c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D else { return }
                i += 1
            }
        }

        mutating func object() throws(EntryJSONError) -> Fields {
            var fields = Fields()
            skipSpace()
            guard i < b.count, b[i] == 0x7B else { throw fail("expected '{' but found \(found())", at: i) }
            i += 1
            skipSpace()
            if i < b.count, b[i] == 0x7D {
                i += 1
            } else {
                while true {
                    skipSpace()
                    guard i < b.count, b[i] == 0x22 else {
                        throw fail("expected a key in double quotes but found \(found())", at: i)
                    }
                    let keyAt = i
                    let keyValue = try string()
                    guard let key = key(keyValue) else {
                        throw fail("unknown key \(quoted(text(keyValue)))", at: keyAt)
                    }
                    guard fields[key].value.isAbsent else { throw fail("duplicate key \"\(key.name)\"", at: keyAt) }
                    skipSpace()
                    guard i < b.count, b[i] == 0x3A else { throw fail("expected ':' but found \(found())", at: i) }
                    i += 1
                    skipSpace()
                    let valueAt = i
                    let value = try value(for: key)
                    fields[key] = Slot(value: value, column: valueAt + 1, keyColumn: keyAt + 1)
                    skipSpace()
                    guard i < b.count else { throw fail("expected ',' or '}' but found end of line", at: i) }
                    if b[i] == 0x2C {
                        i += 1
                        continue
                    }
                    if b[i] == 0x7D {
                        i += 1
                        break
                    }
                    throw fail("expected ',' or '}' but found \(found())", at: i)
                }
            }
            closeColumn = i
            skipSpace()
            guard i == b.count else { throw fail("unexpected \(found()) after the object", at: i) }
            return fields
        }

        func key(_ v: Value) -> Key? {
            switch v {
            case .raw(let s, let e): return Key(UnsafeBufferPointer(rebasing: b[s..<e]))
            case .decoded(let s, let e): return arena[s..<e].withUnsafeBufferPointer { Key($0) }
            default: return nil
            }
        }

        func text(_ v: Value) -> String {
            switch v {
            case .raw(let s, let e): String(decoding: UnsafeBufferPointer(rebasing: b[s..<e]), as: UTF8.self)
            case .decoded(let s, let e): String(decoding: arena[s..<e], as: UTF8.self)
            default: ""
            }
        }

        mutating func value(for key: Key) throws(EntryJSONError) -> Value {
            guard i < b.count else { throw fail("expected a value for \"\(key.name)\" but found end of line", at: i) }
            switch b[i] {
            case 0x22:
                return try string()
            case 0x6E:
                try literal("null")
                return .null
            case 0x74:
                try literal("true")
                return .bool
            case 0x66:
                try literal("false")
                return .bool
            case 0x2D, 0x30...0x39:
                try number()
                return .number
            case 0x7B, 0x5B:
                throw fail("\"\(key.name)\" holds a nested \(b[i] == 0x7B ? "object" : "array"); values must be strings", at: i)
            default:
                throw fail("expected a value for \"\(key.name)\" but found \(found())", at: i)
            }
        }

        mutating func literal(_ word: StaticString) throws(EntryJSONError) {
            let n = word.utf8CodeUnitCount
            let start = i
            guard b.count - i >= n else { throw fail("invalid literal (expected \(word))", at: start) }
            for k in 0..<n where b[i + k] != word.utf8Start[k] {
                throw fail("invalid literal (expected \(word))", at: start)
            }
            i += n
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
        mutating func number() throws(EntryJSONError) {
            let start = i
            func isDigit(_ at: Int) -> Bool { at < b.count && b[at] &- 0x30 <= 9 }
            if b[i] == 0x2D { i += 1 }
            guard isDigit(i) else { throw fail("invalid number", at: start) }
            if b[i] == 0x30 {
                i += 1
            } else {
                while isDigit(i) { i += 1 }
            }
            if i < b.count, b[i] == 0x2E {
                i += 1
                guard isDigit(i) else { throw fail("invalid number", at: start) }
                while isDigit(i) { i += 1 }
            }
            if i < b.count, b[i] == 0x65 || b[i] == 0x45 {
                i += 1
                if i < b.count, b[i] == 0x2B || b[i] == 0x2D { i += 1 }
                guard isDigit(i) else { throw fail("invalid number", at: start) }
                while isDigit(i) { i += 1 }
            }
            if isDigit(i) || (i < b.count && (b[i] == 0x2E || b[i] == 0x2D || b[i] == 0x2B)) {
                throw fail("invalid number", at: start)
            }
        }

        /// A string starting at the opening quote at `i`. Escapes, control characters and UTF-8
        /// are all checked here, with the column of the offending byte.
        mutating func string() throws(EntryJSONError) -> Value {
            let open = i
            i += 1
            let start = i
            var escaped = false
            var arenaStart = 0
            let n = b.count
            while true {
                // ASCII that needs no attention: the common case, kept tight.
                let runStart = i
                var j = i // a local index keeps the loop in registers
                while j < n {
                    let c = b[j]
                    guard c >= 0x20, c < 0x80, c != 0x22, c != 0x5C else { break }
                    j += 1
                }
                i = j
                if escaped && i > runStart { arena.append(contentsOf: UnsafeBufferPointer(rebasing: b[runStart..<i])) }
                guard i < n else { throw fail("unterminated string", at: open) }
                let c = b[i]
                if c == 0x22 { break }
                if c == 0x5C {
                    if !escaped {
                        escaped = true
                        arenaStart = arena.count
                        arena.append(contentsOf: UnsafeBufferPointer(rebasing: b[start..<i]))
                    }
                    try escape()
                } else if c < 0x20 {
                    throw fail("control character U+00\(hex2(c)) in a string must be escaped", at: i)
                } else {
                    let len = sequenceLength(at: i)
                    guard len > 0 else { throw fail("invalid UTF-8 in a string", at: i) }
                    if escaped { arena.append(contentsOf: UnsafeBufferPointer(rebasing: b[i..<i + len])) }
                    i += len
                }
            }
            let end = i
            i += 1
            return escaped ? .decoded(arenaStart, arena.count) : .raw(start, end)
        }

        /// The length of the well-formed UTF-8 sequence of 2 to 4 bytes at `at`, or 0.
        func sequenceLength(at: Int) -> Int {
            let n = b.count
            let c0 = b[at]
            func cont(_ k: Int, _ lo: UInt8 = 0x80, _ hi: UInt8 = 0xBF) -> Bool {
                at + k < n && b[at + k] >= lo && b[at + k] <= hi
            }
            switch c0 {
            case 0xC2...0xDF: return cont(1) ? 2 : 0
            case 0xE0: return cont(1, 0xA0) && cont(2) ? 3 : 0
            case 0xE1...0xEC, 0xEE...0xEF: return cont(1) && cont(2) ? 3 : 0
            case 0xED: return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0 // no UTF-16 surrogates
            case 0xF0: return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0
            case 0xF1...0xF3: return cont(1) && cont(2) && cont(3) ? 4 : 0
            case 0xF4: return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0
            default: return 0
            }
        }

        /// The escape at `i` (a backslash), appended to `arena` as UTF-8.
        mutating func escape() throws(EntryJSONError) {
            let at = i
            guard i + 1 < b.count else { throw fail("unterminated escape", at: at) }
            let e = b[i + 1]
            i += 2
            switch e {
            case 0x22, 0x5C, 0x2F: arena.append(e)
            case 0x62: arena.append(0x08)
            case 0x66: arena.append(0x0C)
            case 0x6E: arena.append(0x0A)
            case 0x72: arena.append(0x0D)
            case 0x74: arena.append(0x09)
            case 0x75:
                var scalar = try hex4(escapeAt: at)
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    guard b.count - i >= 6, b[i] == 0x5C, b[i + 1] == 0x75 else {
                        throw fail("lone UTF-16 surrogate \\u\(String(scalar, radix: 16)) (a high surrogate must be followed by a low one)", at: at)
                    }
                    let lowAt = i
                    i += 2
                    let low = try hex4(escapeAt: lowAt)
                    guard low >= 0xDC00 && low <= 0xDFFF else {
                        throw fail("lone UTF-16 surrogate \\u\(String(scalar, radix: 16)) (a high surrogate must be followed by a low one)", at: at)
                    }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                    throw fail("lone UTF-16 surrogate \\u\(String(scalar, radix: 16))", at: at)
                }
                appendUTF8(scalar)
            default:
                throw fail("invalid escape \\\(e >= 0x21 && e < 0x7F ? String(UnicodeScalar(e)) : "followed by byte 0x" + hex2(e))", at: at)
            }
        }

        mutating func hex4(escapeAt: Int) throws(EntryJSONError) -> UInt32 {
            guard b.count - i >= 4 else { throw fail("\\u needs four hex digits", at: escapeAt) }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = b[i]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                default: throw fail("\\u needs four hex digits", at: escapeAt)
                }
                v = v << 4 | d
                i += 1
            }
            return v
        }

        mutating func appendUTF8(_ v: UInt32) {
            switch v {
            case ..<0x80:
                arena.append(UInt8(v))
            case ..<0x800:
                arena.append(UInt8(0xC0 | v >> 6))
                arena.append(UInt8(0x80 | v & 0x3F))
            case ..<0x10000:
                arena.append(UInt8(0xE0 | v >> 12))
                arena.append(UInt8(0x80 | v >> 6 & 0x3F))
                arena.append(UInt8(0x80 | v & 0x3F))
            default:
                arena.append(UInt8(0xF0 | v >> 18))
                arena.append(UInt8(0x80 | v >> 12 & 0x3F))
                arena.append(UInt8(0x80 | v >> 6 & 0x3F))
                arena.append(UInt8(0x80 | v & 0x3F))
            }
        }
    }
}

// MARK: - From fields to an entry

extension EntryJSON {
    static func build(_ f: Fields, _ b: UnsafeBufferPointer<UInt8>, _ arena: [UInt8], closeColumn: Int) throws(EntryJSONError) -> ParsedEntryLine {
        func string(_ v: Value) -> String {
            switch v {
            case .raw(let s, let e): String(decoding: UnsafeBufferPointer(rebasing: b[s..<e]), as: UTF8.self)
            case .decoded(let s, let e): String(decoding: arena[s..<e], as: UTF8.self)
            default: ""
            }
        }
        /// Runs `body` over the UTF-8 of a string value.
        func withBytes<R>(_ v: Value, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
            switch v {
            case .raw(let s, let e): return body(UnsafeBufferPointer(rebasing: b[s..<e]))
            case .decoded(let s, let e): return arena[s..<e].withUnsafeBufferPointer(body)
            default: return body(UnsafeBufferPointer(start: nil, count: 0))
            }
        }
        func requireString(_ key: Key, _ what: String = "") throws(EntryJSONError) -> Value {
            let slot = f[key]
            switch slot.value {
            case .raw, .decoded: return slot.value
            case .absent: throw EntryJSONError(message: "missing \"\(key.name)\"\(what)", column: closeColumn)
            default: throw EntryJSONError(message: "\"\(key.name)\" must be a string, not \(slot.value.typeName)", column: slot.column)
            }
        }
        func optionalString(_ key: Key) throws(EntryJSONError) -> Value? {
            if f[key].value.isAbsent { return nil }
            return try requireString(key)
        }
        func compactID(_ key: Key, _ v: Value) throws(EntryJSONError) -> CompactID {
            if let (hi, lo) = withBytes(v, { CompactID.parseCanonicalUUID($0) }) {
                return CompactID(uuidHigh: hi, low: lo)
            }
            guard let id = CompactID(string(v)) else {
                throw EntryJSONError(message: "\"\(key.name)\" must be an id of 1...\(Limits.maxIDBytes) UTF-8 bytes", column: f[key].column)
            }
            return id
        }

        // The operation decides which other keys apply.
        let opValue = try requireString(.op)
        // A known name gives its kind byte; `op0xNN` gives 0x100 + NN; anything else -1.
        let match: Int = withBytes(opValue) { u in
            switch packed(u) {
            case (3, 0x64_6461): return Int(EntryOperation.Kind.add.rawValue)
            case (7, 0x66_664F_6B72_616D): return Int(EntryOperation.Kind.markOff.rawValue)
            case (6, 0x6B72_616D_6E75): return Int(EntryOperation.Kind.unmark.rawValue)
            case (6, 0x6574_656C_6564): return Int(EntryOperation.Kind.delete.rawValue)
            case (6, 0x656D_616E_6572): return Int(EntryOperation.Kind.rename.rawValue)
            case (8, 0x7275_6F6C_6F63_6572): return Int(EntryOperation.Kind.recolour.rawValue)
            case (4, 0x6E69_6F6A): return Int(EntryOperation.Kind.join.rawValue)
            case (5, 0x65_7661_656C): return Int(EntryOperation.Kind.leave.rawValue)
            case (5, 0x65_6361_6C70): return Int(EntryOperation.Kind.place.rawValue)
            default: break
            }
            guard u.count == 6, u[0] == 0x6F, u[1] == 0x70, u[2] == 0x30, u[3] == 0x78,
                  let hi = lowerHex(u[4]), let lo = lowerHex(u[5]) else { return -1 }
            return 0x100 | Int(hi << 4 | lo)
        }
        guard match >= 0 else {
            throw EntryJSONError(message: "unknown op \(quoted(string(opValue))) (expected add, markOff, unmark, delete, rename, recolour, join, leave, place or op0x80…op0xff)",
                                 column: f.op.column)
        }
        let kindByte = UInt8(truncatingIfNeeded: match)
        if match >= 0x100 && kindByte < 0x80 {
            throw EntryJSONError(message: "op \(quoted(string(opValue))) is not an opaque kind (those are op0x80…op0xff)", column: f.op.column)
        }
        let kind = EntryOperation.Kind(rawValue: kindByte)
        let opName = string(opValue)
        let takesItem: Bool, takesText: Bool
        switch kind {
        case .add: (takesItem, takesText) = (true, true)
        case .markOff, .unmark, .delete, .place: (takesItem, takesText) = (true, false)
        case .rename, .recolour, .join, .leave: (takesItem, takesText) = (false, true)
        case nil: (takesItem, takesText) = (false, false)
        }
        let takesAfter = kind == .add || kind == .place, takesBody = kind == nil
        func forbid(_ key: Key, unless applies: Bool) throws(EntryJSONError) {
            guard !applies, !f[key].value.isAbsent else { return }
            throw EntryJSONError(message: "\"\(key.name)\" does not apply to op \"\(opName)\"", column: f[key].keyColumn)
        }
        try forbid(.item, unless: takesItem)
        try forbid(.text, unless: takesText)
        try forbid(.after, unless: takesAfter)
        try forbid(.body, unless: takesBody)

        let id = try optionalString(.id).map { (v) throws(EntryJSONError) in try compactID(.id, v) }
        let zone = string(try requireString(.zone))
        let author = string(try requireString(.by, " (the author)"))
        let atValue = try requireString(.at)
        guard let wallTime = withBytes(atValue, { ISO8601Time.parse(bytes: $0) }) else {
            throw EntryJSONError(message: "\"at\" must be an ISO-8601 time like 2026-11-22T09:00:00.000Z (years 0001-9999, Z or ±HH:MM)",
                                 column: f.at.column)
        }
        var clock: HybridTime? = nil
        if let h = try optionalString(.hlc) {
            guard let t = withBytes(h, { parseHybridTime($0) }) ?? HybridTime(string(h)) else {
                throw EntryJSONError(message: "\"hlc\" must be \"millis:counter\" (millis < 2^48, counter < 65536)", column: f.hlc.column)
            }
            clock = t
        }

        func after() throws(EntryJSONError) -> CompactID? {
            switch f.after.value {
            case .absent, .null: return nil
            case .raw, .decoded: return try compactID(.after, f.after.value)
            default:
                throw EntryJSONError(message: "\"after\" must be an item id or null, not \(f.after.value.typeName)", column: f.after.column)
            }
        }
        let operation: EntryOperation
        switch kind {
        case .add:
            let item = try compactID(.item, try requireString(.item, " (required for op \"add\")"))
            let text = string(try requireString(.text, " (the item text, required for op \"add\")"))
            operation = .add(item: item, text: text, after: try after())
        case .place:
            let item = try compactID(.item, try requireString(.item, " (required for op \"place\")"))
            operation = .place(item: item, after: try after())
        case .markOff, .unmark, .delete:
            let item = try compactID(.item, try requireString(.item, " (required for op \"\(opName)\")"))
            operation = kind == .markOff ? .markOff(item: item) : kind == .unmark ? .unmark(item: item) : .delete(item: item)
        case .rename:
            operation = .rename(name: string(try requireString(.text, " (the new name, required for op \"rename\")")))
        case .recolour:
            operation = .recolour(colour: string(try requireString(.text, " (the colour, required for op \"recolour\")")))
        case .join:
            operation = .join(participant: string(try requireString(.text, " (the participant, required for op \"join\")")))
        case .leave:
            operation = .leave(participant: string(try requireString(.text, " (the participant, required for op \"leave\")")))
        case nil:
            let bodyValue = try requireString(.body, " (lowercase hex, required for op \"\(opName)\")")
            guard let body = withBytes(bodyValue, { decodeHex($0) }) else {
                throw EntryJSONError(message: "\"body\" must be lowercase hex with an even number of digits", column: f.body.column)
            }
            operation = .opaque(kind: kindByte, body: body)
        }

        let entry = JournalEntry(id: id ?? CompactID(uuidHigh: 0, low: 0), zone: zone, author: author, wallTime: wallTime,
                                 clock: clock ?? HybridTime(rawValue: 0), operation: operation)
        if let why = EntryCodec.validate(entry) {
            let column =
                why.hasPrefix("zone") ? f.zone.column
                : why.hasPrefix("author") ? f.by.column
                : why.hasPrefix("text") || why.hasPrefix("participant") ? f.text.column
                : why.hasPrefix("opaque operation kinds") ? f.op.column
                : why.hasPrefix("opaque") ? f.body.column
                : 1
            throw EntryJSONError(message: why, column: column)
        }
        return ParsedEntryLine(id: id, zone: zone, author: author, wallTime: wallTime, clock: clock, operation: operation)
    }

    /// `s` as a JSON string literal, shortened to 40 characters, for error messages.
    static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        appendString(s.count <= 40 ? s : String(s.prefix(40)) + "…", to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func hex2(_ c: UInt8) -> String {
        String(decoding: [hexDigit(c >> 4), hexDigit(c & 15)], as: UTF8.self)
    }

    private static func lowerHex(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    /// Lowercase hex, even length; nil otherwise.
    static func decodeHex(_ u: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard u.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let hi = lowerHex(u[i]), let lo = lowerHex(u[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    /// The common `digits:digits` form without building a String; nil sends the caller to
    /// `HybridTime(_:)`, which stays the authority on what is accepted.
    static func parseHybridTime(_ u: UnsafeBufferPointer<UInt8>) -> HybridTime? {
        var i = 0
        var millis: UInt64 = 0
        while i < u.count, u[i] &- 0x30 <= 9 {
            millis = millis * 10 + UInt64(u[i] &- 0x30)
            guard millis < 1 << 48 else { return nil }
            i += 1
        }
        guard i > 0, i < u.count, u[i] == 0x3A else { return nil }
        i += 1
        let counterStart = i
        var counter: UInt32 = 0
        while i < u.count, u[i] &- 0x30 <= 9 {
            counter = counter * 10 + UInt32(u[i] &- 0x30)
            guard counter <= UInt32(UInt16.max) else { return nil }
            i += 1
        }
        guard i > counterStart, i == u.count else { return nil }
        return HybridTime(physicalMillis: millis, counter: UInt16(counter))
    }
}

extension CompactID {
    /// `parseCanonicalUUID(_: String)` over bytes: 8-4-4-4-12 lowercase hex, nothing else.
    static func parseCanonicalUUID(_ u: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64)? {
        guard u.count == 36, u[8] == 0x2D, u[13] == 0x2D, u[18] == 0x2D, u[23] == 0x2D else { return nil }
        var hi: UInt64 = 0, lo: UInt64 = 0, n = 0
        for i in 0..<36 where i != 8 && i != 13 && i != 18 && i != 23 {
            let c = u[i]
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c - 0x30
            case 0x61...0x66: v = c - 0x61 + 10
            default: return nil
            }
            if n < 16 { hi = hi << 4 | UInt64(v) } else { lo = lo << 4 | UInt64(v) }
            n += 1
        }
        return (hi, lo)
    }
}

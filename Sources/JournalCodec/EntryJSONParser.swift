// The JSON Lines parser (Spec/FORMAT.md §7): one flat object per line, scanned byte by byte
// with bounded work per byte, then built into an entry.

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

// The JSON Lines parser's last step: the fields of a line, checked and built into an entry.

extension EntryJSON {
    /// The values of one line's fields, read from the line (`b`) or, when they held escapes, from
    /// the decoded copies in `arena`.
    struct FieldReader {
        let f: Fields
        let b: UnsafeBufferPointer<UInt8>
        let arena: [UInt8]
        /// Where the object closes: the column of an error about a key that is missing.
        let closeColumn: Int

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

        /// The item a key names, which the op requires.
        func item(for opName: String) throws(EntryJSONError) -> CompactID {
            try compactID(.item, try requireString(.item, " (required for op \"\(opName)\")"))
        }

        /// The `after` anchor: an item id, or nil when absent or null.
        func after() throws(EntryJSONError) -> CompactID? {
            switch f.after.value {
            case .absent, .null: return nil
            case .raw, .decoded: return try compactID(.after, f.after.value)
            default:
                throw EntryJSONError(message: "\"after\" must be an item id or null, not \(f.after.value.typeName)", column: f.after.column)
            }
        }

        /// A text-valued op's text, which it requires (`what` says what the text is).
        func text(_ what: String) throws(EntryJSONError) -> String { string(try requireString(.text, " (\(what))")) }
    }

    static func build(_ f: Fields, _ b: UnsafeBufferPointer<UInt8>, _ arena: [UInt8], closeColumn: Int) throws(EntryJSONError) -> ParsedEntryLine {
        let r = FieldReader(f: f, b: b, arena: arena, closeColumn: closeColumn)
        // The operation decides which other keys apply.
        let opValue = try r.requireString(.op)
        let opName = r.string(opValue)
        let kindByte = try self.kindByte(r, opValue)
        let kind = EntryOperation.Kind(rawValue: kindByte)
        try forbidKeys(r, kind: kind, opName: opName)
        let id = try r.optionalString(.id).map { (v) throws(EntryJSONError) in try r.compactID(.id, v) }
        let zone = r.string(try r.requireString(.zone))
        let author = r.string(try r.requireString(.by, " (the author)"))
        let atValue = try r.requireString(.at)
        guard let wallTime = r.withBytes(atValue, { ISO8601Time.parse(bytes: $0) }) else {
            throw EntryJSONError(message: "\"at\" must be an ISO-8601 time like 2026-11-22T09:00:00.000Z (years 0001-9999, Z or ±HH:MM)",
                                 column: f.at.column)
        }
        var clock: HybridTime? = nil
        if let h = try r.optionalString(.hlc) {
            guard let t = r.withBytes(h, { parseHybridTime($0) }) ?? HybridTime(r.string(h)) else {
                throw EntryJSONError(message: "\"hlc\" must be \"millis:counter\" (millis < 2^48, counter < 65536)", column: f.hlc.column)
            }
            clock = t
        }
        let operation = try self.operation(r, kind: kind, kindByte: kindByte, opName: opName)
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

    /// The kind byte `op` names: a known name's, or `op0xNN`'s (an opaque kind, 0x40…0xff).
    private static func kindByte(_ r: FieldReader, _ opValue: Value) throws(EntryJSONError) -> UInt8 {
        // A known name gives its kind byte; `op0xNN` gives 0x100 + NN; anything else -1.
        let match: Int = r.withBytes(opValue) { u in
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
            case (4, 0x6576_6F6D): return Int(EntryOperation.Kind.move.rawValue)
            default: break
            }
            guard u.count == 6, u[0] == 0x6F, u[1] == 0x70, u[2] == 0x30, u[3] == 0x78,
                  let hi = lowerHex(u[4]), let lo = lowerHex(u[5]) else { return -1 }
            return 0x100 | Int(hi << 4 | lo)
        }
        guard match >= 0 else {
            throw EntryJSONError(message: "unknown op \(quoted(r.string(opValue))) (expected add, markOff, unmark, delete, rename, recolour, join, leave, place, move or op0x41…op0xff)",
                                 column: r.f.op.column)
        }
        let kindByte = UInt8(truncatingIfNeeded: match)
        if match >= 0x100 && kindByte < EntryOperation.firstNewerListKind {
            throw EntryJSONError(message: "op \(quoted(r.string(opValue))) is not an opaque kind (those are op0x41…op0xff)", column: r.f.op.column)
        }
        if match >= 0x100, let defined = EntryOperation.Kind(rawValue: kindByte) {
            throw EntryJSONError(message: "op \(quoted(r.string(opValue))) is \"\(defined.name)\", not an opaque kind (write op \"\(defined.name)\")", column: r.f.op.column)
        }
        return kindByte
    }

    /// Refuses a key the op does not take (`kind` nil: an opaque op).
    private static func forbidKeys(_ r: FieldReader, kind: EntryOperation.Kind?, opName: String) throws(EntryJSONError) {
        let takesItem: Bool, takesText: Bool
        switch kind {
        case .add: (takesItem, takesText) = (true, true)
        case .markOff, .unmark, .delete, .place, .move: (takesItem, takesText) = (true, false)
        case .rename, .recolour, .join, .leave: (takesItem, takesText) = (false, true)
        case nil: (takesItem, takesText) = (false, false)
        }
        let takesAfter = kind == .add || kind == .place || kind == .move, takesBody = kind == nil
        func forbid(_ key: Key, unless applies: Bool) throws(EntryJSONError) {
            guard !applies, !r.f[key].value.isAbsent else { return }
            throw EntryJSONError(message: "\"\(key.name)\" does not apply to op \"\(opName)\"", column: r.f[key].keyColumn)
        }
        try forbid(.item, unless: takesItem)
        try forbid(.text, unless: takesText)
        try forbid(.after, unless: takesAfter)
        try forbid(.body, unless: takesBody)
    }

    /// The operation the op and its keys say.
    private static func operation(_ r: FieldReader, kind: EntryOperation.Kind?, kindByte: UInt8, opName: String) throws(EntryJSONError) -> EntryOperation {
        switch kind {
        case .add:
            let item = try r.item(for: "add")
            let text = r.string(try r.requireString(.text, " (the item text, required for op \"add\")"))
            return .add(item: item, text: text, after: try r.after())
        case .place: return .place(item: try r.item(for: "place"), after: try r.after())
        case .move: return .move(item: try r.item(for: "move"), after: try r.after())
        case .markOff: return .markOff(item: try r.item(for: opName))
        case .unmark: return .unmark(item: try r.item(for: opName))
        case .delete: return .delete(item: try r.item(for: opName))
        case .rename: return .rename(name: try r.text("the new name, required for op \"rename\""))
        case .recolour: return .recolour(colour: try r.text("the colour, required for op \"recolour\""))
        case .join: return .join(participant: try r.text("the participant, required for op \"join\""))
        case .leave: return .leave(participant: try r.text("the participant, required for op \"leave\""))
        case nil:
            let bodyValue = try r.requireString(.body, " (lowercase hex, required for op \"\(opName)\")")
            guard let body = r.withBytes(bodyValue, { decodeHex($0) }) else {
                throw EntryJSONError(message: "\"body\" must be lowercase hex with an even number of digits", column: r.f.body.column)
            }
            return .opaque(kind: kindByte, body: body)
        }
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

import Testing
@testable import JournalCodec

/// The JSON Lines form of entries (Spec/FORMAT.md §7) and its ISO-8601 timestamps.
@Suite struct EntryJSONTests {
    // MARK: Helpers

    static let uuid = CompactID("0f8e2c1a-9b7d-4e21-8c3f-5a6b7c8d9e0f")!
    static let milk = CompactID("milk")!
    static let nineAM: Int64 = 1_795_338_000_000 // 2026-11-22T09:00:00Z

    static func entry(_ op: EntryOperation, id: CompactID = uuid, zone: String = "List-1", author: String = "alice",
                      wallTime: Int64 = nineAM, clock: HybridTime = HybridTime(physicalMillis: 1_795_424_400_000, counter: 3)) -> JournalEntry {
        JournalEntry(id: id, zone: zone, author: author, wallTime: wallTime, clock: clock, operation: op)
    }

    static func parsed(_ e: JournalEntry) -> ParsedEntryLine {
        ParsedEntryLine(id: e.id, zone: e.zone, author: e.author, wallTime: e.wallTime, clock: e.clock, operation: e.operation)
    }

    /// The error a line is rejected with, or nil when it parses.
    static func rejection(_ line: String) -> EntryJSONError? {
        do {
            _ = try EntryJSON.parse(line: line)
            return nil
        } catch {
            return error
        }
    }

    /// The raw-bytes overload, for input that is not valid UTF-8.
    static func rejection(bytes: [UInt8]) -> EntryJSONError? {
        bytes.withUnsafeBytes { p -> EntryJSONError? in
            do throws(EntryJSONError) {
                _ = try EntryJSON.parse(utf8: p)
                return nil
            } catch {
                return error
            }
        }
    }

    static func parseBytes(_ bytes: [UInt8]) -> ParsedEntryLine? {
        bytes.withUnsafeBytes { p -> ParsedEntryLine? in
            do throws(EntryJSONError) { return try EntryJSON.parse(utf8: p) } catch { return nil }
        }
    }

    /// A valid delete line with `extra` spliced in before the closing brace.
    static func deleteLine(_ extra: String = "") -> String {
        #"{"zone":"z","op":"delete","item":"milk","by":"alice","at":"2026-11-22T09:00:00Z""# + extra + "}"
    }

    // MARK: Round trips

    static let everyOperation: [EntryOperation] = [
        .add(item: milk, text: "Milk", after: nil),
        .add(item: uuid, text: "Eggs – free range", after: milk),
        .markOff(item: milk),
        .unmark(item: uuid),
        .delete(item: milk),
        .rename(name: "Weekly Shopping"),
        .recolour(colour: "yellow"),
        .opaque(kind: 0x80, body: [0x00, 0x01, 0xAB, 0xFF]),
        .opaque(kind: 0xFF, body: []),
    ]

    @Test(arguments: everyOperation)
    func everyOperationKindRoundTripsThroughFormatAndParse(op: EntryOperation) throws {
        let e = Self.entry(op)
        #expect(try EntryJSON.parse(line: EntryJSON.format(e)) == Self.parsed(e))
    }

    /// The spec's sample lines are the canonical output, byte for byte.
    static let specLines = [
        #"{"id":"0f8e2c1a-9b7d-4e21-8c3f-5a6b7c8d9e0f","zone":"List-db6a6e29","op":"add","item":"milk","text":"Milk","after":null,"by":"alice","at":"2026-11-22T09:00:00.000Z","hlc":"1795424400000:0"}"#,
        #"{"id":"e2","zone":"List-db6a6e29","op":"add","item":"3b0c5d2e-1f4a-4b6c-9d8e-7f6a5b4c3d2e","text":"Eggs – free range","after":"milk","by":"bob","at":"2026-11-22T09:00:01.250Z","hlc":"1795424401250:3"}"#,
        #"{"id":"e3","zone":"List-db6a6e29","op":"markOff","item":"milk","by":"alice","at":"2026-11-22T18:30:00.000Z","hlc":"1795458600000:0"}"#,
        #"{"id":"e4","zone":"List-db6a6e29","op":"unmark","item":"milk","by":"alice","at":"2026-11-22T18:31:00.000Z","hlc":"1795458660000:0"}"#,
        #"{"id":"e5","zone":"List-db6a6e29","op":"delete","item":"milk","by":"carol","at":"2026-11-22T18:32:00.000Z","hlc":"1795458700000:1"}"#,
        #"{"id":"e6","zone":"List-db6a6e29","op":"rename","text":"Weekly Shopping","by":"bob","at":"2026-11-22T09:02:00.000Z","hlc":"1795424520000:0"}"#,
        #"{"id":"e7","zone":"List-db6a6e29","op":"recolour","text":"yellow","by":"bob","at":"2026-11-22T09:03:00.000Z","hlc":"1795424580000:0"}"#,
        #"{"id":"e8","zone":"z","op":"op0x9a","body":"00ff10","by":"dave","at":"1969-12-31T23:59:59.999Z","hlc":"0:65535"}"#,
    ]

    @Test(arguments: specLines)
    func formatWritesCanonicalLinesWithKeysInFixedOrder(line: String) throws {
        let p = try EntryJSON.parse(line: line)
        let e = try JournalEntry(id: #require(p.id), zone: p.zone, author: p.author, wallTime: p.wallTime,
                                 clock: #require(p.clock), operation: p.operation)
        #expect(EntryJSON.format(e) == line)
    }

    @Test func addAtTheTopWritesAfterAsNull() {
        let line = EntryJSON.format(Self.entry(.add(item: Self.milk, text: "Milk", after: nil)))
        #expect(line.contains(#""after":null,"by":"#))
    }

    @Test func formatOmitsKeysThatDoNotApplyToTheOperation() {
        let line = EntryJSON.format(Self.entry(.markOff(item: Self.milk)))
        #expect(line == #"{"id":"0f8e2c1a-9b7d-4e21-8c3f-5a6b7c8d9e0f","zone":"List-1","op":"markOff","item":"milk","by":"alice","at":"2026-11-22T09:00:00.000Z","hlc":"1795424400000:3"}"#)
    }

    @Test func formatIntoAppendsTheSameBytesAsFormat() {
        let e = Self.entry(.rename(name: "Ünïcode \"quoted\"\n"))
        var out: [UInt8] = Array("prefix".utf8)
        EntryJSON.format(e, into: &out)
        #expect(out == Array("prefix".utf8) + Array(EntryJSON.format(e).utf8))
    }

    @Test func missingIdAndHlcAreLeftForTheCallerToFill() throws {
        let p = try EntryJSON.parse(line: Self.deleteLine())
        #expect(p.id == nil)
        #expect(p.clock == nil)
        #expect(p == ParsedEntryLine(id: nil, zone: "z", author: "alice", wallTime: Self.nineAM, clock: nil, operation: .delete(item: Self.milk)))
    }

    @Test func keysMayComeInAnyOrderWithWhitespaceAroundTokens() throws {
        let line = " \t{ \"at\" : \"2026-11-22T09:00:00Z\" ,\r\n\"by\":\"alice\" , \"item\":\"milk\",\"op\":\"delete\", \"zone\" :\"z\" }\n"
        #expect(try EntryJSON.parse(line: line) == EntryJSON.parse(line: Self.deleteLine()))
    }

    @Test func afterMayBeNullAbsentOrAnId() throws {
        let base = #"{"zone":"z","op":"add","item":"milk","text":"Milk","by":"a","at":"2026-11-22T09:00:00Z""#
        #expect(try EntryJSON.parse(line: base + "}").operation == .add(item: Self.milk, text: "Milk", after: nil))
        #expect(try EntryJSON.parse(line: base + #","after":null}"#).operation == .add(item: Self.milk, text: "Milk", after: nil))
        #expect(try EntryJSON.parse(line: base + #","after":"eggs"}"#).operation == .add(item: Self.milk, text: "Milk", after: CompactID("eggs")))
    }

    @Test func emptyTextAndEmptyOpaqueBodyAreAllowed() throws {
        let rename = try EntryJSON.parse(line: #"{"zone":"z","op":"rename","text":"","by":"a","at":"2026-11-22T09:00:00Z"}"#)
        #expect(rename.operation == .rename(name: ""))
        let opaque = try EntryJSON.parse(line: #"{"zone":"z","op":"op0x80","body":"","by":"a","at":"2026-11-22T09:00:00Z"}"#)
        #expect(opaque.operation == .opaque(kind: 0x80, body: []))
    }

    // MARK: ISO-8601

    @Test func isoFormatsTheEpochAndInstantsBefore1970() {
        #expect(ISO8601Time.format(0) == "1970-01-01T00:00:00.000Z")
        #expect(ISO8601Time.format(-1) == "1969-12-31T23:59:59.999Z")
        #expect(ISO8601Time.format(-86_400_000) == "1969-12-31T00:00:00.000Z")
        #expect(ISO8601Time.parse("1969-12-31T23:59:59.999Z") == -1)
        #expect(ISO8601Time.parse("1970-01-01T00:00:00Z") == 0)
    }

    @Test func isoParsesAKnownInstant() {
        #expect(ISO8601Time.parse("2026-11-22T09:00:00.000Z") == Self.nineAM)
        #expect(ISO8601Time.format(Self.nineAM) == "2026-11-22T09:00:00.000Z")
    }

    @Test func isoAcceptsLeapDaysOnlyInLeapYears() {
        #expect(ISO8601Time.parse("2024-02-29T12:00:00Z") == ISO8601Time.parse("2024-03-01T12:00:00Z")! - 86_400_000)
        #expect(ISO8601Time.parse("2000-02-29T00:00:00Z") != nil)
        #expect(ISO8601Time.parse("2023-02-29T00:00:00Z") == nil)
        #expect(ISO8601Time.parse("1900-02-29T00:00:00Z") == nil)
        #expect(ISO8601Time.parse("2024-02-30T00:00:00Z") == nil)
        #expect(ISO8601Time.format(ISO8601Time.parse("2024-02-29T23:59:59.999Z")!) == "2024-02-29T23:59:59.999Z")
    }

    @Test func isoOffsetsAreConvertedToUTC() {
        let utc = ISO8601Time.parse("2026-11-22T09:00:00Z")
        #expect(ISO8601Time.parse("2026-11-22T10:30:00+01:30") == utc)
        #expect(ISO8601Time.parse("2026-11-22T01:00:00-08:00") == utc)
        #expect(ISO8601Time.parse("2026-11-21T23:00:00-10:00") == utc)
        #expect(ISO8601Time.parse("2026-11-22T09:00:00+00:00") == utc)
        #expect(ISO8601Time.parse("2026-11-22T09:00:00-00:00") == utc)
        #expect(ISO8601Time.parse("2026-11-22T09:00:00z") == utc)
    }

    @Test func isoFractionKeepsMillisecondsAndTruncatesTheRest() {
        let base = ISO8601Time.parse("2026-11-22T09:00:00Z")!
        #expect(ISO8601Time.parse("2026-11-22T09:00:00.1Z") == base + 100)
        #expect(ISO8601Time.parse("2026-11-22T09:00:00.12Z") == base + 120)
        #expect(ISO8601Time.parse("2026-11-22T09:00:00.123Z") == base + 123)
        #expect(ISO8601Time.parse("2026-11-22T09:00:00.1239Z") == base + 123)
        #expect(ISO8601Time.parse("2026-11-22T09:00:00.999999999Z") == base + 999)
        #expect(ISO8601Time.parse("2026-11-22T09:00:00.5+01:00") == base - 3_600_000 + 500)
        #expect(ISO8601Time.parse("2026-11-22T09:00:00.0000000000Z") == nil) // ten digits
    }

    @Test(arguments: [
        "", "2026-11-22", "2026-11-22T09:00:00", "2026-11-22T09:00:00.000", "2026-11-22 09:00:00Z",
        "2026-11-22t09:00:00Z", "2026-11-22T09:00Z", "2026-11-22T09:00:00.Z", "2026-11-22T09:00:00,5Z",
        "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-04-31T00:00:00Z", "2026-01-32T00:00:00Z",
        "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T23:60:00Z", "2026-12-31T23:59:60Z",
        "0000-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "+2026-11-22T09:00:00Z", "2026-1-22T09:00:00Z",
        "2026-11-22T09:00:00+0100", "2026-11-22T09:00:00+01", "2026-11-22T09:00:00+24:00",
        "2026-11-22T09:00:00+01:60", "2026-11-22T09:00:00ZZ", "2026-11-22T09:00:00Z ", " 2026-11-22T09:00:00Z",
        "2026-11-22T09:00:00UTC", "２026-11-22T09:00:00Z", "2026-11-22T09:00:-1Z",
    ])
    func isoRejectsMalformedOrOutOfRangeTimes(text: String) {
        #expect(ISO8601Time.parse(text) == nil)
    }

    @Test func isoKeepsToYears0001Through9999() {
        #expect(ISO8601Time.parse("0001-01-01T00:00:00Z") == ISO8601Time.minMillis)
        #expect(ISO8601Time.parse("9999-12-31T23:59:59.999Z") == ISO8601Time.maxMillis)
        #expect(ISO8601Time.format(ISO8601Time.minMillis) == "0001-01-01T00:00:00.000Z")
        #expect(ISO8601Time.format(ISO8601Time.maxMillis) == "9999-12-31T23:59:59.999Z")
        // An offset may not carry the instant outside the range `format` can write.
        #expect(ISO8601Time.parse("0001-01-01T00:00:00+00:01") == nil)
        #expect(ISO8601Time.parse("9999-12-31T23:59:59-00:01") == nil)
        // Out-of-range values are clamped when written.
        #expect(ISO8601Time.format(.min) == "0001-01-01T00:00:00.000Z")
        #expect(ISO8601Time.format(.max) == "9999-12-31T23:59:59.999Z")
    }

    @Test func isoFormatThenParseRoundTripsAcrossTheWholeYearRange() {
        var rng = SplitMix64(seed: 0x150_8601)
        var samples: [Int64] = [ISO8601Time.minMillis, ISO8601Time.maxMillis, 0, -1, 1, 951_782_400_000]
        for _ in 0..<20_000 { samples.append(Int64.random(in: ISO8601Time.minMillis...ISO8601Time.maxMillis, using: &rng)) }
        for x in samples {
            let text = ISO8601Time.format(x)
            #expect(text.utf8.count == 24)
            #expect(ISO8601Time.parse(text) == x, "\(x) → \(text)")
        }
    }

    @Test func isoCivilDateConversionMatchesDayByDayCounting() {
        // Walk every day of 1968...2032 and check the conversions agree with simple counting.
        var days = ISO8601Time.daysFromCivil(year: 1968, month: 1, day: 1)
        for year in 1968...2032 {
            for month in 1...12 {
                for day in 1...ISO8601Time.daysIn(month: month, year: year) {
                    #expect(ISO8601Time.daysFromCivil(year: year, month: month, day: day) == days)
                    let c = ISO8601Time.civilFromDays(days)
                    #expect(c.year == year && c.month == month && c.day == day)
                    days += 1
                }
            }
        }
    }

    // MARK: Escapes

    @Test func parseDecodesEveryJSONEscape() throws {
        let line = #"{"zone":"z","op":"rename","text":"\"\\\/\b\f\n\r\t\u00e9\u20AC\ud83d\ude00\u0000","by":"a","at":"2026-11-22T09:00:00Z"}"#
        let p = try EntryJSON.parse(line: line)
        #expect(p.operation == .rename(name: "\"\\/\u{8}\u{C}\n\r\t\u{E9}\u{20AC}\u{1F600}\u{0}"))
    }

    @Test func escapedKeysAreRecognised() throws {
        let line = #"{"\u007Aone":"z","op":"delete","item":"milk","by":"alice","at":"2026-11-22T09:00:00Z"}"#
        #expect(try EntryJSON.parse(line: line).zone == "z")
    }

    @Test func formatEscapesQuotesBackslashesAndControlCharactersMinimally() {
        let line = EntryJSON.format(Self.entry(.rename(name: "a\"b\\c\nd\re\tf\u{1}\u{8}\u{1F}\u{7F}é/😀")))
        #expect(line.contains(#""text":"a\"b\\c\nd\re\tf\u0001\u0008\u001f"# + "\u{7F}é/😀\","))
    }

    @Test func everyControlCharacterRoundTrips() throws {
        let text = String(decoding: (0..<0x20).map { UInt8($0) } + Array("end".utf8), as: UTF8.self)
        let e = Self.entry(.add(item: Self.milk, text: text, after: nil), zone: "zone\u{0}\u{1F}", author: "a\"\\")
        let back = try EntryJSON.parse(line: EntryJSON.format(e))
        #expect(back == Self.parsed(e))
        #expect(Array(EntryJSON.format(e).utf8).allSatisfy { $0 >= 0x20 })
    }

    @Test(arguments: [#"\ud83d"#, #"\ude00"#, #"\ud83d\u0041"#, #"\ud83dx"#, #"\ud83d\ud83d"#, #"\udbff"#])
    func loneSurrogatesAreRejected(escape: String) throws {
        let error = try #require(Self.rejection(#"{"zone":"z","op":"rename","text":""# + escape + #"","by":"a","at":"2026-11-22T09:00:00Z"}"#))
        #expect(error.message.contains("surrogate"))
        #expect(error.column == 35)
    }

    @Test(arguments: [#"\x"#, #"\u12G4"#, #"\U0041"#, #"\u004"#, #"\'"#])
    func invalidEscapesAreRejected(escape: String) throws {
        let error = try #require(Self.rejection(#"{"zone":"z","op":"rename","text":"ab"# + escape + #"","by":"a","at":"2026-11-22T09:00:00Z"}"#))
        #expect(error.column == 37)
    }

    @Test func unescapedControlCharacterInAStringIsRejected() throws {
        let error = try #require(Self.rejection(#"{"zone":"z","op":"rename","text":"a"# + "\t" + #"b","by":"a","at":"2026-11-22T09:00:00Z"}"#))
        #expect(error.message.contains("control character U+0009"))
        #expect(error.column == 36)
    }

    // MARK: Rejects

    @Test func unknownKeyIsRejectedByName() throws {
        let error = try #require(Self.rejection(Self.deleteLine(#","colour":"red""#)))
        #expect(error.message == #"unknown key "colour""#)
        #expect(error.column == 82)
        #expect(error.description == #"column 82: unknown key "colour""#)
    }

    @Test func keyOrOpWithATrailingNULIsNotMistakenForAKnownName() throws {
        #expect(Self.rejection(Self.deleteLine(#","id\u0000":"x""#))?.message == #"unknown key "id\u0000""#)
        let op = #"{"zone":"z","op":"add\u0000","item":"milk","text":"x","by":"a","at":"2026-11-22T09:00:00Z"}"#
        #expect(Self.rejection(op)?.message.hasPrefix("unknown op") == true)
    }

    @Test func longUnknownKeyIsShortenedInTheMessage() throws {
        let error = try #require(Self.rejection(Self.deleteLine(",\"" + String(repeating: "k", count: 1000) + "\":1")))
        #expect(error.message == "unknown key \"" + String(repeating: "k", count: 40) + "…\"")
    }

    @Test func duplicateKeyIsRejected() throws {
        let error = try #require(Self.rejection(Self.deleteLine(#","zone":"y""#)))
        #expect(error.message == #"duplicate key "zone""#)
    }

    @Test(arguments: [#"{"a":1}"#, #"{}"#, #"[]"#, #"{"x":[1]}"#])
    func nestedValuesAreRejectedWithoutDescending(value: String) throws {
        let error = try #require(Self.rejection(#"{"zone":"z","op":"rename","text":"# + value + #","by":"a","at":"2026-11-22T09:00:00Z"}"#))
        #expect(error.message.contains("nested"))
        #expect(error.column == 34)
    }

    @Test func deeplyNestedInputDoesNotRecurse() throws {
        let line = #"{"zone":"# + String(repeating: "[", count: 60_000) + "}"
        #expect(Self.rejection(line)?.message.contains("nested") == true)
    }

    @Test(arguments: [
        (#"{"op":"delete","item":"milk","by":"a","at":"2026-11-22T09:00:00Z"}"#, #"missing "zone""#),
        (#"{"zone":"z","op":"delete","item":"milk","at":"2026-11-22T09:00:00Z"}"#, #"missing "by""#),
        (#"{"zone":"z","op":"delete","item":"milk","by":"a"}"#, #"missing "at""#),
        (#"{"zone":"z","item":"milk","by":"a","at":"2026-11-22T09:00:00Z"}"#, #"missing "op""#),
        (#"{"zone":"z","op":"add","text":"Milk","by":"a","at":"2026-11-22T09:00:00Z"}"#, #"missing "item""#),
        (#"{"zone":"z","op":"markOff","by":"a","at":"2026-11-22T09:00:00Z"}"#, #"missing "item""#),
        (#"{"zone":"z","op":"add","item":"milk","by":"a","at":"2026-11-22T09:00:00Z"}"#, #"missing "text""#),
        (#"{"zone":"z","op":"rename","by":"a","at":"2026-11-22T09:00:00Z"}"#, #"missing "text""#),
        (#"{"zone":"z","op":"recolour","by":"a","at":"2026-11-22T09:00:00Z"}"#, #"missing "text""#),
        (#"{"zone":"z","op":"op0x80","by":"a","at":"2026-11-22T09:00:00Z"}"#, #"missing "body""#),
        (#"{}"#, #"missing "op""#),
    ])
    func missingRequiredFieldIsRejected(line: String, message: String) throws {
        let error = try #require(Self.rejection(line))
        #expect(error.message.hasPrefix(message), "\(error)")
        #expect(error.column == line.utf8.count) // reported at the closing brace
    }

    @Test(arguments: [
        (#"{"zone":"z","op":"delete","item":"milk","text":"x","by":"a","at":"2026-11-22T09:00:00Z"}"#, "text"),
        (#"{"zone":"z","op":"markOff","item":"milk","after":null,"by":"a","at":"2026-11-22T09:00:00Z"}"#, "after"),
        (#"{"zone":"z","op":"rename","item":"milk","text":"x","by":"a","at":"2026-11-22T09:00:00Z"}"#, "item"),
        (#"{"zone":"z","op":"recolour","text":"red","after":"milk","by":"a","at":"2026-11-22T09:00:00Z"}"#, "after"),
        (#"{"zone":"z","op":"add","item":"milk","text":"x","body":"00","by":"a","at":"2026-11-22T09:00:00Z"}"#, "body"),
        (#"{"zone":"z","op":"op0x80","body":"00","text":"x","by":"a","at":"2026-11-22T09:00:00Z"}"#, "text"),
        (#"{"zone":"z","op":"op0x80","body":"00","item":"milk","by":"a","at":"2026-11-22T09:00:00Z"}"#, "item"),
    ])
    func fieldThatDoesNotApplyToTheOperationIsRejected(line: String, key: String) throws {
        let error = try #require(Self.rejection(line))
        #expect(error.message.hasPrefix("\"\(key)\" does not apply to op"), "\(error)")
    }

    @Test(arguments: [
        #""item":"""#, #""item":"\#(String(repeating: "x", count: 65))""#,
    ])
    func invalidItemIdIsRejected(item: String) throws {
        let error = try #require(Self.rejection(#"{"zone":"z","op":"delete","# + item + #","by":"a","at":"2026-11-22T09:00:00Z"}"#))
        #expect(error.message.hasPrefix(#""item" must be an id"#))
        #expect(error.column == 34)
    }

    @Test func invalidEntryIdAndAfterIdAreRejected() {
        #expect(Self.rejection(Self.deleteLine(#","id":"""#))?.message.hasPrefix(#""id" must be an id"#) == true)
        let add = #"{"zone":"z","op":"add","item":"milk","text":"x","after":"","by":"a","at":"2026-11-22T09:00:00Z"}"#
        #expect(Self.rejection(add)?.message.hasPrefix(#""after" must be an id"#) == true)
    }

    @Test(arguments: [Self.deleteLine() + "x", Self.deleteLine() + "}", Self.deleteLine() + " {}", Self.deleteLine() + "\u{0}"])
    func trailingGarbageIsRejected(line: String) throws {
        let error = try #require(Self.rejection(line))
        #expect(error.message.contains("after the object"))
    }

    @Test func lineLongerThanTheLimitIsRejectedBeforeParsing() throws {
        let valid = Self.deleteLine()
        let exact = valid + String(repeating: " ", count: EntryJSON.maxLineBytes - valid.utf8.count)
        #expect(throws: Never.self) { try EntryJSON.parse(line: exact) }
        let error = try #require(Self.rejection(exact + " "))
        #expect(error.message.contains("longer than 65536"))
    }

    @Test(arguments: [
        [0xFF], [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
        [0xE2, 0x82], [0x80], [0xF0, 0x9F, 0x98],
    ] as [[UInt8]])
    func invalidUTF8BytesAreRejectedAtTheirColumn(bad: [UInt8]) throws {
        let before = Array(#"{"zone":"z","op":"rename","text":"ab"#.utf8)
        let after = Array(#"cd","by":"a","at":"2026-11-22T09:00:00Z"}"#.utf8)
        let error = try #require(Self.rejection(bytes: before + bad + after))
        #expect(error.message.contains("UTF-8"))
        #expect(error.column == before.count + 1)
    }

    @Test func validMultiByteUTF8IsAcceptedFromRawBytes() throws {
        let p = try #require(Self.parseBytes(Array(#"{"zone":"z","op":"rename","text":"é€😀","by":"a","at":"2026-11-22T09:00:00Z"}"#.utf8)))
        #expect(p.operation == .rename(name: "é€😀"))
    }

    @Test(arguments: [("1", "a number"), ("-2.5e3", "a number"), ("true", "a boolean"), ("false", "a boolean"), ("null", "null")])
    func nonStringValueIsRejectedWhereAStringIsRequired(value: String, typeName: String) throws {
        let error = try #require(Self.rejection(#"{"zone":"# + value + #","op":"delete","item":"milk","by":"a","at":"2026-11-22T09:00:00Z"}"#))
        #expect(error.message == "\"zone\" must be a string, not \(typeName)")
        #expect(error.column == 9)
    }

    @Test(arguments: ["01", "-", "1.", ".5", "1e", "+1", "1.2.3", "nul", "tru", "NaN", "'z'"])
    func malformedValuesAreRejectedAsSyntaxErrors(value: String) throws {
        let error = try #require(Self.rejection(#"{"zone":"# + value + #","op":"delete","item":"milk","by":"a","at":"2026-11-22T09:00:00Z"}"#))
        #expect(!error.message.contains("must be a string"), "\(error)")
    }

    @Test(arguments: ["remove", "Add", "op0x3f", "op0x05", "op0x01", "op0xAB", "op0x800", "op0x8", "op0xzz", ""])
    func unknownOrNonOpaqueOpIsRejected(op: String) throws {
        let error = try #require(Self.rejection(#"{"zone":"z","op":""# + op + #"","body":"","by":"a","at":"2026-11-22T09:00:00Z"}"#))
        #expect(error.message.contains("op"))
        #expect(error.column == 18)
    }

    @Test(arguments: ["0", "0G", "AB", "abc", " 00"])
    func opaqueBodyMustBeLowercaseHex(body: String) throws {
        let error = try #require(Self.rejection(#"{"zone":"z","op":"op0x80","body":""# + body + #"","by":"a","at":"2026-11-22T09:00:00Z"}"#))
        #expect(error.message.contains("\"body\" must be lowercase hex"))
    }

    @Test(arguments: ["", "1", ":1", "1:", "1:65536", "281474976710656:0", "-1:0", "1:2:3", "a:b"])
    func malformedHlcIsRejected(hlc: String) throws {
        let error = try #require(Self.rejection(Self.deleteLine(#","hlc":""# + hlc + #"""#)))
        #expect(error.message.hasPrefix(#""hlc" must be"#))
    }

    @Test(arguments: [EntryOperation.join(participant: "dörte"), .leave(participant: "bob")])
    func participantOperationsRoundTripThroughFormatAndParse(op: EntryOperation) throws {
        let e = Self.entry(op)
        let line = EntryJSON.format(e)
        #expect(line.contains(#""text":""#))
        #expect(try EntryJSON.parse(line: line) == Self.parsed(e))
        #expect(try EntryCodec.decode(EntryCodec.encode(e)) == e)
    }

    @Test(arguments: [
        #"{"zone":"z","op":"join","by":"a","at":"2026-11-22T09:00:00Z"}"#,
        #"{"zone":"z","op":"join","text":"","by":"a","at":"2026-11-22T09:00:00Z"}"#,
        #"{"zone":"z","op":"leave","item":"milk","text":"bob","by":"a","at":"2026-11-22T09:00:00Z"}"#,
        #"{"zone":"z","op":"leave","text":"\#(String(repeating: "x", count: 65))","by":"a","at":"2026-11-22T09:00:00Z"}"#,
    ])
    func participantOperationsNeedOneParticipantOfAtMost64Bytes(line: String) {
        #expect(Self.rejection(line) != nil)
    }

    @Test func hlcAcceptsTheFullRange() throws {
        let p = try EntryJSON.parse(line: Self.deleteLine(#","hlc":"281474976710655:65535""#))
        #expect(p.clock == HybridTime(physicalMillis: (1 << 48) - 1, counter: 65535))
    }

    @Test func malformedAtIsRejected() throws {
        let error = try #require(Self.rejection(#"{"zone":"z","op":"delete","item":"milk","by":"a","at":"2026-02-30T00:00:00Z"}"#))
        #expect(error.message.hasPrefix(#""at" must be an ISO-8601 time"#))
        #expect(error.column == 55)
    }

    @Test(arguments: [
        (#"{"zone" "z"}"#, 9, "expected ':'"),
        (#"{"zone":"z" "op":"x"}"#, 13, "expected ',' or '}'"),
        (#"{"zone":"z",}"#, 13, "expected a key"),
        (#"["zone"]"#, 1, "expected '{'"),
        (#"{zone:"z"}"#, 2, "expected a key"),
        (#"{"zone":"z"#, 9, "unterminated string"),
        (#"{"zone":"#, 9, "expected a value"),
        ("", 1, "expected '{'"),
    ] as [(String, Int, String)])
    func syntaxErrorsReportTheirColumn(line: String, column: Int, message: String) throws {
        let error = try #require(Self.rejection(line))
        #expect(error.column == column, "\(error)")
        #expect(error.message.hasPrefix(message), "\(error)")
    }

    @Test func entryLimitsAreEnforcedThroughValidate() throws {
        let longZone = String(repeating: "z", count: Limits.maxZoneBytes + 1)
        let zoneError = try #require(Self.rejection(#"{"zone":""# + longZone + #"","op":"delete","item":"milk","by":"a","at":"2026-11-22T09:00:00Z"}"#))
        #expect(zoneError.message.hasPrefix("zone must be"))
        #expect(zoneError.column == 9)
        #expect(Self.rejection(Self.deleteLine().replacingAuthor(with: ""))?.message.hasPrefix("author must be") == true)
        let longText = String(repeating: "t", count: Limits.maxTextBytes + 1)
        #expect(Self.rejection(#"{"zone":"z","op":"rename","text":""# + longText + #"","by":"a","at":"2026-11-22T09:00:00Z"}"#)?
            .message.hasPrefix("text must be") == true)
    }

    // MARK: Properties

    static let alphabet: [String] = ["a", "b", "Z", "0", " ", "-", ":", "\"", "\\", "/", "\n", "\t", "\r", "\u{0}", "\u{1}",
                                     "\u{1F}", "\u{7F}", "é", "e\u{301}", "€", "😀", "\u{2028}", "中", "{", "}", ",", "[", "u"]

    static func randomString<G: RandomNumberGenerator>(_ rng: inout G, maxBytes: Int, minBytes: Int = 0) -> String {
        let target = Int.random(in: minBytes...maxBytes, using: &rng)
        var s = ""
        while s.utf8.count < target {
            let piece = alphabet.randomElement(using: &rng)!
            if s.utf8.count + piece.utf8.count > maxBytes { break }
            s += piece
        }
        while s.utf8.count < minBytes { s += "x" }
        return s
    }

    static func randomID<G: RandomNumberGenerator>(_ rng: inout G) -> CompactID {
        if Bool.random(using: &rng) { return CompactID.random(using: &rng) }
        return CompactID(randomString(&rng, maxBytes: Limits.maxIDBytes, minBytes: 1))!
    }

    static func randomOperation<G: RandomNumberGenerator>(_ rng: inout G) -> EntryOperation {
        switch Int.random(in: 0..<7, using: &rng) {
        case 0: .add(item: randomID(&rng), text: randomString(&rng, maxBytes: 200), after: Bool.random(using: &rng) ? nil : randomID(&rng))
        case 1: .markOff(item: randomID(&rng))
        case 2: .unmark(item: randomID(&rng))
        case 3: .delete(item: randomID(&rng))
        case 4: .rename(name: randomString(&rng, maxBytes: 100))
        case 5: .recolour(colour: randomString(&rng, maxBytes: 20))
        default:
            .opaque(kind: UInt8.random(in: 0x80...0xFF, using: &rng),
                    body: (0..<Int.random(in: 0..<40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
    }

    @Test func randomEntriesRoundTripThroughFormatAndParse() throws {
        var rng = SplitMix64(seed: 0x5EED_0001)
        for _ in 0..<3_000 {
            let e = JournalEntry(
                id: Self.randomID(&rng),
                zone: Self.randomString(&rng, maxBytes: Limits.maxZoneBytes, minBytes: 1),
                author: Self.randomString(&rng, maxBytes: Limits.maxAuthorBytes, minBytes: 1),
                wallTime: Int64.random(in: ISO8601Time.minMillis...ISO8601Time.maxMillis, using: &rng),
                clock: HybridTime(physicalMillis: UInt64.random(in: 0..<(1 << 48), using: &rng), counter: UInt16.random(in: 0...UInt16.max, using: &rng)),
                operation: Self.randomOperation(&rng))
            let line = EntryJSON.format(e)
            let back = try EntryJSON.parse(line: line)
            #expect(back == Self.parsed(e), "\(line)")
            // String equality is canonical equivalence; the bytes must survive too.
            #expect(Array(back.zone.utf8) == Array(e.zone.utf8) && Array(back.author.utf8) == Array(e.author.utf8))
            if case .add(_, let t, _) = e.operation, case .add(_, let u, _) = back.operation { #expect(Array(t.utf8) == Array(u.utf8)) }
            #expect(!line.contains("\n"))
        }
    }

    @Test func mutatedLinesAreRejectedOrRoundTrip() {
        var rng = SplitMix64(seed: 0xF022)
        let seeds = Self.specLines.map { Array($0.utf8) }
        for _ in 0..<5_000 {
            var bytes = seeds.randomElement(using: &rng)!
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes[at] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.remove(at: at)
                default: bytes.insert(Array(#"{}[]":,\u0"#.utf8).randomElement(using: &rng)!, at: at)
                }
                if bytes.isEmpty { bytes = [0x7B] }
            }
            guard let p = Self.parseBytes(bytes) else { continue }
            let e = JournalEntry(id: p.id ?? Self.milk, zone: p.zone, author: p.author, wallTime: p.wallTime,
                                 clock: p.clock ?? HybridTime(rawValue: 0), operation: p.operation)
            #expect(Self.parseBytes(Array(EntryJSON.format(e).utf8)) == Self.parsed(e))
        }
    }
}

private extension String {
    /// The delete line with `"by":"alice"` replaced.
    func replacingAuthor(with author: String) -> String {
        var parts = split(separator: "\"", omittingEmptySubsequences: false).map(String.init)
        if let i = parts.firstIndex(of: "alice") { parts[i] = author }
        return parts.joined(separator: "\"")
    }
}

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

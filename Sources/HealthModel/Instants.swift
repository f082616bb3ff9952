// Instants in healthd are Int64 milliseconds since 1970-01-01T00:00:00Z.
// Parsing and formatting are hand-written over UTF-8 bytes: they run twice per
// sample on the ingest path, where DateFormatter would dominate the cost.

import Primitives

/// Milliseconds since 1970-01-01T00:00:00Z.
public typealias HealthInstant = Int64

/// Range limits shared by every validator.
public enum HealthInstantLimits {
    /// 1900-01-01T00:00:00Z: the earliest instant a sample may carry.
    public static let earliestSampleInstant: HealthInstant = -2_208_988_800_000
    /// 2200-01-01T00:00:00Z: the latest instant a sample may carry (inclusive).
    public static let latestSampleInstant: HealthInstant = 7_258_118_400_000
    /// The valid sample range as a closed range.
    public static let sampleRange: ClosedRange<HealthInstant> = earliestSampleInstant...latestSampleInstant
}

/// Proleptic Gregorian calendar arithmetic on civil dates (no time zones).
public enum GregorianCalendarMath {
    public static let millisecondsPerDay: Int64 = 86_400_000

    public static func isLeapYear(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 1, 3, 5, 7, 8, 10, 12: return 31
        case 4, 6, 9, 11: return 30
        case 2: return isLeapYear(year) ? 29 : 28
        default: return 0
        }
    }

    /// Days since 1970-01-01 for a civil date (`CivilDate`, shared with HTTP's Date header).
    @inlinable
    public static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int64 {
        CivilDate.daysSinceEpoch(year: year, month: month, day: day)
    }

    /// The civil date of a day count since 1970-01-01 (inverse of `daysSinceEpoch`).
    @inlinable
    public static func civilDate(daysSinceEpoch: Int64) -> (year: Int, month: Int, day: Int) {
        CivilDate.of(daysSinceEpoch: daysSinceEpoch)
    }

    /// Floor division, so instants before 1970 land on the right day.
    @inlinable
    public static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

/// Why an instant string was rejected.
public enum InstantParseError: Error, Sendable, Hashable, CustomStringConvertible {
    case malformed(String)
    case outOfRange(String)

    public var description: String {
        switch self {
        case .malformed(let reason): return "malformed date-time: \(reason)"
        case .outOfRange(let reason): return "date-time out of range: \(reason)"
        }
    }
}

/// A cursor over ASCII bytes, shared by the date parsers.
struct ASCIIScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    var isAtEnd: Bool { position >= bytes.count }
    var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    /// Reads exactly `count` decimal digits.
    mutating func digits(_ count: Int, field: String) throws(InstantParseError) -> Int {
        guard position + count <= bytes.count else { throw .malformed("\(field) is truncated") }
        var value = 0
        for offset in 0..<count {
            let digit = bytes[position + offset] &- UInt8(ascii: "0")
            guard digit < 10 else { throw .malformed("\(field) must be \(count) digits") }
            value = value * 10 + Int(digit)
        }
        position += count
        return value
    }

    mutating func expect(_ byte: UInt8, _ what: String) throws(InstantParseError) {
        guard current == byte else { throw .malformed("expected \(what)") }
        position += 1
    }
}

/// Runs `body` over the UTF-8 bytes of a string without copying when it is native.
@inline(__always)
func withUTF8Bytes<S: StringProtocol, R>(
    _ string: S, _ body: (UnsafeBufferPointer<UInt8>) throws(InstantParseError) -> R
) throws(InstantParseError) -> R {
    let result: Result<R, InstantParseError>? = string.utf8.withContiguousStorageIfAvailable { buffer in
        do throws(InstantParseError) { return .success(try body(buffer)) } catch { return .failure(error) }
    }
    if let result { return try result.get() }
    let copy = Array(string.utf8)
    let copied: Result<R, InstantParseError> = copy.withUnsafeBufferPointer { buffer in
        do throws(InstantParseError) { return .success(try body(buffer)) } catch { return .failure(error) }
    }
    return try copied.get()
}

/// RFC 3339 date-times.
///
/// Accepted: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, with `t` for `T`, `z` for
/// `Z`, and a single space for `T` (RFC 3339 §5.6 allows it for readability).
/// - Fractions may have any number of digits; they are rounded to milliseconds,
///   half away from zero (`.0005` becomes `.001`).
/// - Second 60 (a leap second) is accepted and read as `:59.999`, the last
///   millisecond before the next minute, since instants here have no leap seconds.
/// - Ranges are validated: month 1-12, day within its month (leap years included),
///   hour 0-23, minute 0-59, offset hours 0-23 and minutes 0-59. Years 0000-9999
///   parse, and the instant must stay within them in UTC (so it formats back); the
///   1900-2200 sample window is a validator concern.
public enum RFC3339 {
    public static func parse<S: StringProtocol>(_ string: S) -> HealthInstant? {
        try? parseOrThrow(string)
    }

    public static func parseOrThrow<S: StringProtocol>(_ string: S) throws(InstantParseError) -> HealthInstant {
        try withUTF8Bytes(string) { (bytes) throws(InstantParseError) -> HealthInstant in
            try parseOrThrow(utf8: bytes)
        }
    }

    /// For decoders holding raw UTF-8 (a JSON string's bytes, unescaped).
    public static func parse(utf8 bytes: UnsafeBufferPointer<UInt8>) -> HealthInstant? {
        try? parseOrThrow(utf8: bytes)
    }

    public static func parseOrThrow(utf8 bytes: UnsafeBufferPointer<UInt8>) throws(InstantParseError) -> HealthInstant {
        var scanner = ASCIIScanner(bytes)
        let days = try scanDate(&scanner)
        guard let separator = scanner.current,
              separator == UInt8(ascii: "T") || separator == UInt8(ascii: "t") || separator == UInt8(ascii: " ")
        else { throw .malformed("expected 'T' between date and time") }
        scanner.position += 1
        let timeOfDay = try scanTime(&scanner)
        let offsetSeconds = try scanOffset(&scanner)
        guard scanner.isAtEnd else { throw .malformed("unexpected characters after the offset") }
        let instant = days * GregorianCalendarMath.millisecondsPerDay + timeOfDay - Int64(offsetSeconds) * 1000
        // An offset can carry a year-0000 or year-9999 local time outside those years in UTC,
        // where the instant would have no four-digit RFC 3339 spelling to be written back as.
        guard instant >= earliestInstant, instant <= latestInstant else {
            throw .outOfRange("the instant falls outside years 0000-9999 once converted to UTC")
        }
        return instant
    }

    /// 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: what four-digit years can spell.
    public static let earliestInstant: HealthInstant =
        GregorianCalendarMath.daysSinceEpoch(year: 0, month: 1, day: 1) * GregorianCalendarMath.millisecondsPerDay
    public static let latestInstant: HealthInstant =
        (GregorianCalendarMath.daysSinceEpoch(year: 9999, month: 12, day: 31) + 1) * GregorianCalendarMath.millisecondsPerDay - 1

    /// `YYYY-MM-DD` -> days since epoch.
    static func scanDate(_ scanner: inout ASCIIScanner) throws(InstantParseError) -> Int64 {
        let year = try scanner.digits(4, field: "year")
        if let next = scanner.current, next >= UInt8(ascii: "0"), next <= UInt8(ascii: "9") {
            throw .malformed("the year has more than four digits; RFC 3339 dates run from year 0000 to 9999")
        }
        try scanner.expect(UInt8(ascii: "-"), "'-' after the year")
        let month = try scanner.digits(2, field: "month")
        try scanner.expect(UInt8(ascii: "-"), "'-' after the month")
        let day = try scanner.digits(2, field: "day")
        guard (1...12).contains(month) else { throw .outOfRange("month \(month) is not 1-12") }
        guard day >= 1, day <= GregorianCalendarMath.daysInMonth(year: year, month: month) else {
            throw .outOfRange("day \(day) does not exist in \(year)-\(month)")
        }
        return GregorianCalendarMath.daysSinceEpoch(year: year, month: month, day: day)
    }

    /// `HH:MM:SS[.fraction]` -> milliseconds into the day (may reach 86,400,000 by rounding).
    static func scanTime(_ scanner: inout ASCIIScanner) throws(InstantParseError) -> Int64 {
        let hour = try scanner.digits(2, field: "hour")
        try scanner.expect(UInt8(ascii: ":"), "':' after the hour")
        let minute = try scanner.digits(2, field: "minute")
        try scanner.expect(UInt8(ascii: ":"), "':' after the minute")
        let second = try scanner.digits(2, field: "second")
        guard hour <= 23 else { throw .outOfRange("hour \(hour) is not 0-23") }
        guard minute <= 59 else { throw .outOfRange("minute \(minute) is not 0-59") }
        guard second <= 60 else { throw .outOfRange("second \(second) is not 0-60") }
        var milliseconds = 0
        if scanner.current == UInt8(ascii: ".") {
            scanner.position += 1
            var digitCount = 0
            while let byte = scanner.current, byte &- UInt8(ascii: "0") < 10 {
                let digit = Int(byte &- UInt8(ascii: "0"))
                if digitCount < 3 {
                    milliseconds = milliseconds * 10 + digit
                } else if digitCount == 3, digit >= 5 {
                    // The remainder after three digits is at least half a millisecond.
                    milliseconds += 1
                }
                digitCount += 1
                scanner.position += 1
            }
            guard digitCount > 0 else { throw .malformed("'.' must be followed by digits") }
            if digitCount == 1 { milliseconds *= 100 } else if digitCount == 2 { milliseconds *= 10 }
        }
        if second == 60 {
            return Int64(hour * 3600 + minute * 60 + 59) * 1000 + 999
        }
        return Int64(hour * 3600 + minute * 60 + second) * 1000 + Int64(milliseconds)
    }

    /// `Z` or `±HH:MM` -> seconds east of UTC.
    static func scanOffset(_ scanner: inout ASCIIScanner) throws(InstantParseError) -> Int {
        guard let byte = scanner.current else { throw .malformed("missing offset ('Z' or ±HH:MM)") }
        if byte == UInt8(ascii: "Z") || byte == UInt8(ascii: "z") {
            scanner.position += 1
            return 0
        }
        guard byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") else {
            throw .malformed("offset must be 'Z' or ±HH:MM")
        }
        scanner.position += 1
        let hours = try scanner.digits(2, field: "offset hours")
        try scanner.expect(UInt8(ascii: ":"), "':' in the offset")
        let minutes = try scanner.digits(2, field: "offset minutes")
        guard hours <= 23, minutes <= 59 else { throw .outOfRange("offset \(hours):\(minutes) is invalid") }
        let seconds = hours * 3600 + minutes * 60
        return byte == UInt8(ascii: "-") ? -seconds : seconds
    }

    /// UTC with millisecond precision: `2026-03-08T14:30:00.000Z`.
    public static func format(_ instant: HealthInstant) -> String {
        formatLocal(instant, suffix: utcSuffix)
    }

    private static let utcSuffix: [UInt8] = [UInt8(ascii: "Z")]

    /// Local time at a fixed offset: `2026-03-08T09:30:00.000-05:00`.
    /// RFC 3339 offsets have no seconds, so an offset with seconds (historic local
    /// mean time) is rounded to the minute and the local time shifted to match:
    /// the string always denotes exactly `instant`. A zero offset prints `+00:00`.
    public static func format(_ instant: HealthInstant, offsetSeconds: Int) -> String {
        String(unsafeUninitializedCapacity: maximumOffsetByteCount) { write(instant, offsetSeconds: offsetSeconds, into: $0) }
    }

    /// Bytes `write(_:offsetSeconds:into:)` needs at most: `maximumUTCByteCount` with `±HH:MM` for `Z`.
    public static let maximumOffsetByteCount = maximumUTCByteCount + 5

    /// Writes `format(instant, offsetSeconds:)` into `buffer` (at least `maximumOffsetByteCount`
    /// bytes) and returns its length: statistics answers put every bucket's edges straight into
    /// their JSON buffer.
    public static func write(_ instant: HealthInstant, offsetSeconds: Int, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        // Integer rounding, half away from zero (no libm needed).
        let roundedMinutes = offsetSeconds >= 0 ? (offsetSeconds + 30) / 60 : -((30 - offsetSeconds) / 60)
        let magnitude = abs(roundedMinutes)
        var output = DigitWriter(buffer: buffer)
        writeLocal(instant + Int64(roundedMinutes) * 60_000, into: &output)
        output.append(roundedMinutes < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
        output.twoDigits((magnitude / 60) % 100)
        output.append(UInt8(ascii: ":"))
        output.twoDigits(magnitude % 60)
        return output.position
    }

    private static func formatLocal(_ localInstant: HealthInstant, suffix: [UInt8]) -> String {
        // Written straight into the string's storage: one allocation per instant.
        String(unsafeUninitializedCapacity: maximumUTCByteCount - 1 + suffix.count) { buffer in
            var output = DigitWriter(buffer: buffer)
            writeLocal(localInstant, into: &output)
            for byte in suffix { output.append(byte) }
            return output.position
        }
    }

    /// Bytes `write(_:into:)` needs at most: a sign and 9 year digits, 19 more bytes, and `Z`.
    public static let maximumUTCByteCount = 49

    /// Writes `format(instant)` into `buffer` (at least `maximumUTCByteCount` bytes) and returns
    /// its length: JSON writers put a page's instants (three per sample) straight into their buffer.
    public static func write(_ instant: HealthInstant, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var output = DigitWriter(buffer: buffer)
        writeLocal(instant, into: &output)
        output.append(UInt8(ascii: "Z"))
        return output.position
    }

    /// Formats UTC instants as `write(_:into:)` does, keeping the date text of the last two days
    /// it wrote: a page of samples falls on a day or two, and each sample's `created` (the day it
    /// was saved) alternates with its start and end, so most instants cost only their time of day.
    public struct UTCWriter {
        /// "YYYY-MM-DD" of a day (four-digit years only; others are formatted in full each time).
        private struct DateText {
            var day: Int64 = .min
            var text: (UInt64, UInt16) = (0, 0)
        }

        private var recent = DateText()
        private var older = DateText()

        public init() {}

        /// Writes `format(instant)` into `buffer` (at least `maximumUTCByteCount` bytes); returns its length.
        public mutating func write(_ instant: HealthInstant, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
            let days = GregorianCalendarMath.floorDivide(instant, GregorianCalendarMath.millisecondsPerDay)
            let known: DateText
            if days == recent.day {
                known = recent
            } else if days == older.day {
                known = older
                swap(&recent, &older)
            } else {
                let count = RFC3339.write(instant, into: buffer)
                // A four-digit year is the only form whose date is the first ten bytes, then "T".
                if count > 10, buffer[4] == UInt8(ascii: "-"), buffer[10] == UInt8(ascii: "T") {
                    var fresh = DateText(day: days)
                    withUnsafeMutableBytes(of: &fresh.text) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<10])) }
                    older = recent
                    recent = fresh
                }
                return count
            }
            withUnsafeBytes(of: known.text) { UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<10])) }
            var output = DigitWriter(buffer: buffer, position: 10)
            RFC3339.writeTime(Int(instant - days * GregorianCalendarMath.millisecondsPerDay), into: &output)
            output.append(UInt8(ascii: "Z"))
            return output.position
        }
    }

    private static func writeLocal(_ localInstant: HealthInstant, into output: inout DigitWriter) {
        let days = GregorianCalendarMath.floorDivide(localInstant, GregorianCalendarMath.millisecondsPerDay)
        let millisecondOfDay = Int(localInstant - days * GregorianCalendarMath.millisecondsPerDay)
        let date = GregorianCalendarMath.civilDate(daysSinceEpoch: days)
        if (0...9999).contains(date.year) {
            output.twoDigits(date.year / 100)
            output.twoDigits(date.year % 100)
        } else {
            output.append(date.year < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            output.digits(abs(date.year), width: 5)
        }
        // Month, day and the time of day are always in range: two digits each, no loop.
        output.append(UInt8(ascii: "-"))
        output.twoDigits(date.month)
        output.append(UInt8(ascii: "-"))
        output.twoDigits(date.day)
        writeTime(millisecondOfDay, into: &output)
    }

    /// "THH:MM:SS.mmm" of a millisecond of the day.
    private static func writeTime(_ millisecondOfDay: Int, into output: inout DigitWriter) {
        output.append(UInt8(ascii: "T"))
        output.twoDigits(millisecondOfDay / 3_600_000)
        output.append(UInt8(ascii: ":"))
        output.twoDigits(millisecondOfDay / 60_000 % 60)
        output.append(UInt8(ascii: ":"))
        output.twoDigits(millisecondOfDay / 1000 % 60)
        output.append(UInt8(ascii: "."))
        let milliseconds = millisecondOfDay % 1000
        output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: milliseconds / 100))
        output.twoDigits(milliseconds % 100)
    }

    /// Appends ASCII into a fixed buffer the caller sized.
    private struct DigitWriter {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var position = 0

        mutating func append(_ byte: UInt8) {
            buffer[position] = byte
            position += 1
        }

        /// 00-99 (the caller checks the range).
        @inline(__always)
        mutating func twoDigits(_ value: Int) {
            append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10))
            append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10))
        }

        mutating func digits(_ value: Int, width: Int) {
            // Month, day, hour, minute and second: five of an instant's seven fields, three
            // instants per row of a sample page.
            if width == 2 && (0 ..< 100).contains(value) {
                append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value / 10))
                append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value % 10))
                return
            }
            // Milliseconds and four-digit years: the other two fields of every instant.
            if width == 3 && (0 ..< 1000).contains(value) {
                append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value / 100))
                digits(value % 100, width: 2)
                return
            }
            if width == 4 && (0 ..< 10000).contains(value) {
                digits(value / 100, width: 2)
                digits(value % 100, width: 2)
                return
            }
            var divisor = 1
            var digitCount = 1
            while value / divisor >= 10 {
                divisor *= 10
                digitCount += 1
            }
            if digitCount < width {
                for _ in digitCount..<width { append(UInt8(ascii: "0")) }
            }
            var remaining = value
            while divisor > 0 {
                append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remaining / divisor))
                remaining %= divisor
                divisor /= 10
            }
        }
    }

    /// Four-digit years; outside 0000-9999 ISO 8601's expanded form (sign, more digits).
    static func appendYear(_ bytes: inout [UInt8], _ year: Int) {
        if (0...9999).contains(year) {
            appendDigits(&bytes, year, width: 4)
        } else {
            bytes.append(year < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            appendDigits(&bytes, abs(year), width: 5)
        }
    }

    /// Decimal digits of a non-negative `value`, zero-padded to `width`; no scratch buffer, as
    /// this runs several times per formatted instant.
    static func appendDigits(_ bytes: inout [UInt8], _ value: Int, width: Int) {
        var divisor = 1
        var digitCount = 1
        while value / divisor >= 10 {
            divisor *= 10
            digitCount += 1
        }
        if digitCount < width {
            for _ in digitCount..<width { bytes.append(UInt8(ascii: "0")) }
        }
        var remaining = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: remaining / divisor))
            remaining %= divisor
            divisor /= 10
        }
    }
}

/// A calendar day without a time zone, as in `dateOfBirth` or `?date=2026-03-08`.
public struct HealthDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// Nil unless the fields name a real Gregorian date in years 0000-9999.
    public init?(year: Int, month: Int, day: Int) {
        guard (0...9999).contains(year), (1...12).contains(month),
              day >= 1, day <= GregorianCalendarMath.daysInMonth(year: year, month: month) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    public init(daysSinceEpoch: Int64) {
        let date = GregorianCalendarMath.civilDate(daysSinceEpoch: daysSinceEpoch)
        self.year = date.year
        self.month = date.month
        self.day = date.day
    }

    public var daysSinceEpoch: Int64 {
        GregorianCalendarMath.daysSinceEpoch(year: year, month: month, day: day)
    }

    /// Midnight UTC at the start of this day.
    public var startInstantUTC: HealthInstant { daysSinceEpoch * GregorianCalendarMath.millisecondsPerDay }

    /// `YYYY-MM-DD`.
    public var description: String {
        var bytes: [UInt8] = []
        RFC3339.appendYear(&bytes, year)
        bytes.append(UInt8(ascii: "-"))
        RFC3339.appendDigits(&bytes, month, width: 2)
        bytes.append(UInt8(ascii: "-"))
        RFC3339.appendDigits(&bytes, day, width: 2)
        return String(decoding: bytes, as: UTF8.self)
    }

    public static func < (lhs: HealthDay, rhs: HealthDay) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }
}

public enum HealthDate {
    /// Strict `YYYY-MM-DD` (full-date of RFC 3339).
    public static func parseDay<S: StringProtocol>(_ string: S) -> HealthDay? {
        try? withUTF8Bytes(string) { (bytes) throws(InstantParseError) -> HealthDay in
            var scanner = ASCIIScanner(bytes)
            let days = try RFC3339.scanDate(&scanner)
            guard scanner.isAtEnd else { throw .malformed("unexpected characters after the date") }
            return HealthDay(daysSinceEpoch: days)
        }
    }

    /// Apple Health `export.xml` dates: `2019-05-14 19:05:29 -0400` (offset ±HHMM, no fraction).
    public static func parseAppleExportDate<S: StringProtocol>(_ string: S) -> HealthInstant? {
        try? withUTF8Bytes(string) { (bytes) throws(InstantParseError) -> HealthInstant in
            try scanAppleExportDate(bytes)
        }
    }

    /// `parseAppleExportDate` over UTF-8 bytes (an importer's attribute value, with no `String` made).
    public static func parseAppleExportDate(utf8 bytes: UnsafeBufferPointer<UInt8>) -> HealthInstant? {
        try? scanAppleExportDate(bytes)
    }

    /// Health Auto Export dates, written in the phone's regional format: `2024-09-21 07:57:00 +1000`,
    /// or on a 12-hour phone `2024-09-21 7:57:00 pm +1000` (one or two hour digits; am/pm in any
    /// case, also `a.m.`/`p.m.` or `p. m.`, after a space, U+202F NARROW NO-BREAK SPACE or U+00A0
    /// NO-BREAK SPACE). 12 am is midnight, 12 pm noon. The instant and the date's UTC offset in seconds.
    public static func parseHealthAutoExportDate<S: StringProtocol>(_ string: S) -> (instant: HealthInstant, offsetSeconds: Int)? {
        try? withUTF8Bytes(string) { (bytes) throws(InstantParseError) -> (instant: HealthInstant, offsetSeconds: Int) in
            try scanHealthAutoExportDate(bytes)
        }
    }

    private static func scanHealthAutoExportDate(_ bytes: UnsafeBufferPointer<UInt8>)
        throws(InstantParseError) -> (instant: HealthInstant, offsetSeconds: Int) {
        var scanner = ASCIIScanner(bytes)
        let days = try RFC3339.scanDate(&scanner)
        try scanner.expect(UInt8(ascii: " "), "' ' between date and time")
        var hour = try scanner.digits(1, field: "hour")
        if let next = scanner.current, next &- UInt8(ascii: "0") < 10 { hour = hour * 10 + (try scanner.digits(1, field: "hour")) }
        try scanner.expect(UInt8(ascii: ":"), "':' after the hour")
        let minute = try scanner.digits(2, field: "minute")
        try scanner.expect(UInt8(ascii: ":"), "':' after the minute")
        let second = try scanner.digits(2, field: "second")
        guard minute <= 59, second <= 59 else { throw .outOfRange("time of day") }
        let spaceLength = Self.spaceLength(scanner)
        guard spaceLength > 0 else { throw .malformed("expected ' ' after the time") }
        scanner.position += spaceLength
        if let first = scanner.current, first | 0x20 == UInt8(ascii: "a") || first | 0x20 == UInt8(ascii: "p") {
            // 12-hour clock: 12 am is midnight, 12 pm noon. Canadian English writes "a.m."/"p.m.",
            // Spanish "p. m." (the space any of the three kinds).
            scanner.position += 1
            if scanner.current == UInt8(ascii: ".") {
                scanner.position += 1
                scanner.position += Self.spaceLength(scanner)
            }
            guard let letter = scanner.current, letter | 0x20 == UInt8(ascii: "m") else { throw .malformed("expected am or pm") }
            scanner.position += 1
            if scanner.current == UInt8(ascii: ".") { scanner.position += 1 }
            guard (1...12).contains(hour) else { throw .outOfRange("hour on a 12-hour clock") }
            hour = hour % 12 + (first | 0x20 == UInt8(ascii: "p") ? 12 : 0)
            try scanner.expect(UInt8(ascii: " "), "' ' before the offset")
        } else {
            guard spaceLength == 1, hour <= 23 else { throw .outOfRange("time of day") }
        }
        let offsetSeconds = try scanOffsetToEnd(&scanner)
        let secondOfDay = hour * 3600 + minute * 60 + second - offsetSeconds
        return (days * GregorianCalendarMath.millisecondsPerDay + Int64(secondOfDay) * 1000, offsetSeconds)
    }

    /// The `±HHMM` offset that ends an Apple-style date, in seconds east of UTC.
    private static func scanOffsetToEnd(_ scanner: inout ASCIIScanner) throws(InstantParseError) -> Int {
        guard let sign = scanner.current, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") else {
            throw .malformed("offset must be ±HHMM")
        }
        scanner.position += 1
        let offsetHours = try scanner.digits(2, field: "offset hours")
        let offsetMinutes = try scanner.digits(2, field: "offset minutes")
        guard offsetHours <= 23, offsetMinutes <= 59, scanner.isAtEnd else { throw .malformed("offset") }
        return (offsetHours * 3600 + offsetMinutes * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
    }

    /// The length in bytes of the space at the scanner: U+0020 (1), U+00A0 (2) or U+202F (3); 0 if none.
    private static func spaceLength(_ scanner: ASCIIScanner) -> Int {
        let bytes = scanner.bytes
        let at = scanner.position
        guard at < bytes.count else { return 0 }
        if bytes[at] == 0x20 { return 1 }
        if bytes[at] == 0xC2, at + 1 < bytes.count, bytes[at + 1] == 0xA0 { return 2 }
        if bytes[at] == 0xE2, at + 2 < bytes.count, bytes[at + 1] == 0x80, bytes[at + 2] == 0xAF { return 3 }
        return 0
    }

    private static func scanAppleExportDate(_ bytes: UnsafeBufferPointer<UInt8>) throws(InstantParseError) -> HealthInstant {
        var scanner = ASCIIScanner(bytes)
        let days = try RFC3339.scanDate(&scanner)
        try scanner.expect(UInt8(ascii: " "), "' ' between date and time")
        let hour = try scanner.digits(2, field: "hour")
        try scanner.expect(UInt8(ascii: ":"), "':' after the hour")
        let minute = try scanner.digits(2, field: "minute")
        try scanner.expect(UInt8(ascii: ":"), "':' after the minute")
        let second = try scanner.digits(2, field: "second")
        guard hour <= 23, minute <= 59, second <= 59 else { throw .outOfRange("time of day") }
        try scanner.expect(UInt8(ascii: " "), "' ' before the offset")
        let offsetSeconds = try scanOffsetToEnd(&scanner)
        let secondOfDay = hour * 3600 + minute * 60 + second - offsetSeconds
        return days * GregorianCalendarMath.millisecondsPerDay + Int64(secondOfDay) * 1000
    }
}

import Testing
@testable import HealthModel
import Primitives

@Suite("RFC 3339 instants")
struct InstantTests {
    @Test("valid date-times parse to the expected millisecond", arguments: [
        ("1970-01-01T00:00:00Z", Int64(0)),
        ("1970-01-01T00:00:00.001Z", 1),
        ("2026-03-08T14:30:00Z", 1_772_980_200_000),
        ("2026-03-08T09:30:00-05:00", 1_772_980_200_000),
        ("2026-03-08T20:00:00+05:30", 1_772_980_200_000),
        ("2026-03-08t14:30:00z", 1_772_980_200_000),
        ("2026-03-08 14:30:00Z", 1_772_980_200_000),
        ("2026-03-08T14:30:00.5Z", 1_772_980_200_500),
        ("2026-03-08T14:30:00.12Z", 1_772_980_200_120),
        ("2026-03-08T14:30:00.123456789Z", 1_772_980_200_123),
        ("2026-03-08T14:30:00.1235Z", 1_772_980_200_124),
        ("2026-03-08T14:30:00.1234999Z", 1_772_980_200_123),
        ("2026-03-08T14:30:00.9995Z", 1_772_980_201_000),
        ("1969-12-31T23:59:59.999Z", -1),
        ("1900-01-01T00:00:00Z", -2_208_988_800_000),
        ("2200-01-01T00:00:00Z", 7_258_118_400_000),
        ("2024-02-29T00:00:00Z", 1_709_164_800_000),
        ("2000-02-29T12:00:00Z", 951_825_600_000),
        ("2016-12-31T23:59:60Z", 1_483_228_799_999),
        ("2026-03-08T14:30:00-00:00", 1_772_980_200_000),
        ("2026-01-01T00:00:00+23:59", 1_767_139_260_000),
    ])
    func parsesValid(input: String, expected: Int64) {
        #expect(RFC3339.parse(input) == expected)
    }

    @Test("invalid date-times are rejected", arguments: [
        "", "2026-03-08", "2026-03-08T14:30Z", "2026-03-08T14:30:00", "2026-3-08T14:30:00Z",
        "2026-03-08T14:30:00+0500", "2026-03-08T14:30:00+05", "2026-03-08X14:30:00Z",
        "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-02-29T00:00:00Z", "1900-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z",
        "2026-01-01T00:00:61Z", "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00+24:00", "2026-01-01T00:00:00+05:60",
        "2026-01-01T00:00:00Zjunk", "2026-01-01T00:00:00 Z", " 2026-01-01T00:00:00Z", "２026-01-01T00:00:00Z",
        "2026-01-01T00:00:00,5Z",
    ])
    func rejectsInvalid(input: String) {
        #expect(RFC3339.parse(input) == nil)
    }

    @Test func parsesSubstringsAndReportsReasons() throws {
        let line = "start=2026-03-08T09:30:00-05:00;"
        let slice = line.dropFirst(6).dropLast()
        #expect(RFC3339.parse(slice) == 1_772_980_200_000)
        #expect(throws: InstantParseError.self) { try RFC3339.parseOrThrow("2026-02-30T00:00:00Z") }
        #expect(throws: InstantParseError.malformed("the year has more than four digits; RFC 3339 dates run from year 0000 to 9999")) {
            try RFC3339.parseOrThrow("10000-01-01T00:00:00Z")
        }
        // Local times at the edge of year 0000 or 9999 that leave those years in UTC have no
        // four-digit spelling to format back to; the extreme instants still round-trip.
        #expect(throws: InstantParseError.outOfRange("the instant falls outside years 0000-9999 once converted to UTC")) {
            try RFC3339.parseOrThrow("0000-01-01T00:59:59.9+14:00")
        }
        #expect(RFC3339.parse("9999-12-31T23:30:00-01:00") == nil)
        #expect(RFC3339.parse("0000-01-01T00:00:00Z") == RFC3339.earliestInstant)
        #expect(RFC3339.parse("9999-12-31T23:59:59.999Z") == RFC3339.latestInstant)
        #expect(RFC3339.format(RFC3339.latestInstant) == "9999-12-31T23:59:59.999Z")
        let bytes = Array("2026-03-08T09:30:00-05:00".utf8)
        #expect(bytes.withUnsafeBufferPointer { RFC3339.parse(utf8: $0) } == 1_772_980_200_000)
    }

    @Test("formatting in UTC", arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (1_772_980_200_000, "2026-03-08T14:30:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (-2_208_988_800_000, "1900-01-01T00:00:00.000Z"),
        (7_258_118_400_000, "2200-01-01T00:00:00.000Z"),
        (951_825_600_123, "2000-02-29T12:00:00.123Z"),
    ])
    func formatsUTC(instant: Int64, expected: String) {
        #expect(RFC3339.format(instant) == expected)
    }

    @Test func formatsWithOffset() {
        #expect(RFC3339.format(1_772_980_200_000, offsetSeconds: -5 * 3600) == "2026-03-08T09:30:00.000-05:00")
        #expect(RFC3339.format(1_772_980_200_000, offsetSeconds: 19_800) == "2026-03-08T20:00:00.000+05:30")
        #expect(RFC3339.format(1_772_980_200_000, offsetSeconds: 0) == "2026-03-08T14:30:00.000+00:00")
        // An offset with seconds is rounded to the minute; the instant is preserved.
        let lmt = RFC3339.format(0, offsetSeconds: -17_762)
        #expect(lmt == "1969-12-31T19:04:00.000-04:56")
        #expect(RFC3339.parse(lmt) == 0)
    }

    /// The page writer keeps the last date's text: what it writes must equal `write` for any
    /// order of instants (same day, next day, back again, before 1970, five-digit years).
    @Test func utcWriterKeepingTheLastDateWritesWhatWriteDoes() {
        var instants: [Int64] = [0, 1, 86_399_999, 86_400_000, 0, -1, -86_400_000, -86_400_001,
                                 1_772_980_200_000, 1_772_980_200_001, 1_773_000_000_000, 1_772_980_200_000,
                                 RFC3339.latestInstant, RFC3339.latestInstant + 1, RFC3339.latestInstant + 86_400_000,
                                 RFC3339.latestInstant, RFC3339.earliestInstant, RFC3339.earliestInstant - 1,
                                 RFC3339.earliestInstant - 86_400_000, RFC3339.earliestInstant]
        var generator = SplitMix64(seed: 0xDA7E)
        var instant: Int64 = 1_767_225_600_000
        for _ in 0..<5_000 {
            // Mostly small steps (a page), sometimes a jump of days either way.
            instant += generator.next() % 8 == 0 ? Int64(generator.next() % 400_000_000) - 200_000_000 : Int64(generator.next() % 90_000)
            instants.append(instant)
        }
        var writer = RFC3339.UTCWriter()
        for instant in instants {
            let expected = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: RFC3339.maximumUTCByteCount) { buffer in
                Array(buffer[0..<RFC3339.write(instant, into: buffer)])
            }
            let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: RFC3339.maximumUTCByteCount) { buffer in
                Array(buffer[0..<writer.write(instant, into: buffer)])
            }
            #expect(written == expected, "instant \(instant)")
            #expect(String(decoding: written, as: UTF8.self) == RFC3339.format(instant))
        }
    }

    @Test func formatParseRoundTripOverManyInstants() {
        var generator = SplitMix64(seed: 0x5EED)
        let span = UInt64(HealthInstantLimits.latestSampleInstant - HealthInstantLimits.earliestSampleInstant)
        for _ in 0..<20_000 {
            let instant = HealthInstantLimits.earliestSampleInstant + Int64(generator.next() % span)
            #expect(RFC3339.parse(RFC3339.format(instant)) == instant)
            let offset = Int(generator.next() % 1_681) * 60 - 50_400
            #expect(RFC3339.parse(RFC3339.format(instant, offsetSeconds: offset)) == instant)
        }
    }

    @Test func calendarMathAgreesWithDayByDayCounting() {
        var days: Int64 = GregorianCalendarMath.daysSinceEpoch(year: 1896, month: 1, day: 1)
        for year in 1896...2204 {
            #expect(GregorianCalendarMath.isLeapYear(year) == (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)))
            for month in 1...12 {
                for day in 1...GregorianCalendarMath.daysInMonth(year: year, month: month) {
                    let date = GregorianCalendarMath.civilDate(daysSinceEpoch: days)
                    guard date == (year, month, day) else {
                        Issue.record("day \(days) is \(date), expected \(year)-\(month)-\(day)")
                        return
                    }
                    days += 1
                }
            }
        }
        #expect(GregorianCalendarMath.daysSinceEpoch(year: 2205, month: 1, day: 1) == days)
    }

    @Test func parsesDays() {
        #expect(HealthDate.parseDay("2026-03-08")?.description == "2026-03-08")
        #expect(HealthDate.parseDay("2024-02-29")?.daysSinceEpoch == 19_782)
        #expect(HealthDate.parseDay("1970-01-01")?.startInstantUTC == 0)
        #expect(HealthDate.parseDay("2023-02-29") == nil)
        #expect(HealthDate.parseDay("2026-03-08T00:00:00Z") == nil)
        #expect(HealthDate.parseDay("26-03-08") == nil)
        #expect(HealthDay(year: 2026, month: 2, day: 29) == nil)
        if let earlier = HealthDay(year: 1999, month: 12, day: 31), let later = HealthDay(year: 2000, month: 1, day: 1) {
            #expect(earlier < later)
        }
    }

    @Test func parsesAppleExportDates() {
        #expect(HealthDate.parseAppleExportDate("2019-05-14 19:05:29 -0400") == RFC3339.parse("2019-05-14T23:05:29Z"))
        #expect(HealthDate.parseAppleExportDate("2019-05-14 19:05:29 +0000") == RFC3339.parse("2019-05-14T19:05:29Z"))
        #expect(HealthDate.parseAppleExportDate("2019-05-14 19:05:29 +0530") == RFC3339.parse("2019-05-14T13:35:29Z"))
        #expect(HealthDate.parseAppleExportDate("2019-05-14 19:05:29") == nil)
        #expect(HealthDate.parseAppleExportDate("2019-05-14T19:05:29 -0400") == nil)
        #expect(HealthDate.parseAppleExportDate("2019-02-29 19:05:29 -0400") == nil)
        #expect(HealthDate.parseAppleExportDate("2019-05-14 19:05:29 -04:00") == nil)
    }

    @Test("Health Auto Export dates: the 24-hour form and every 12-hour form are the same instant; anything else is refused")
    func parsesHealthAutoExportDates() throws {
        func parse(_ text: String) -> (HealthInstant, Int)? {
            HealthDate.parseHealthAutoExportDate(text).map { ($0.instant, $0.offsetSeconds) }
        }
        let evening = try #require(RFC3339.parse("2023-01-20T19:57:00+11:00"))
        for space in [" ", "\u{202F}", "\u{00A0}"] {
            for meridiem in ["pm", "PM", "Pm", "pM", "p.m.", "P.M.", "p. m.", "p.\u{202F}m.", "pm."] {
                for hour in ["7", "07"] {
                    let text = "2023-01-20 \(hour):57:00\(space)\(meridiem) +1100"
                    #expect(parse(text)?.0 == evening, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
                    #expect(parse(text)?.1 == 39_600)
                }
            }
        }
        #expect(parse("2023-01-20 19:57:00 +1100")?.0 == evening)
        #expect(parse("2023-01-20 7:57:00 am +1100")?.0 == RFC3339.parse("2023-01-20T07:57:00+11:00"))
        #expect(parse("2023-01-20 7:57:00\u{202F}a.m. +1100")?.0 == RFC3339.parse("2023-01-20T07:57:00+11:00"))
        // 12 am is midnight, 12 pm noon.
        #expect(parse("2023-01-20 12:00:00 am -0500")?.0 == RFC3339.parse("2023-01-20T00:00:00-05:00"))
        #expect(parse("2023-01-20 12:30:15\u{202F}AM -0500")?.0 == RFC3339.parse("2023-01-20T00:30:15-05:00"))
        #expect(parse("2023-01-20 12:00:00 pm -0500")?.0 == RFC3339.parse("2023-01-20T12:00:00-05:00"))
        #expect(parse("2023-01-20 11:59:59 pm -0500")?.0 == RFC3339.parse("2023-01-20T23:59:59-05:00"))
        #expect(parse("2023-01-20 00:00:00 +0000")?.0 == RFC3339.parse("2023-01-20T00:00:00Z"))
        for bad in ["2023-01-20 13:00:00 pm +1100", "2023-01-20 0:30:00 am +1100", "2023-01-20 7:57:00 p.m.+1100",
                    "2023-01-20 7:57:00 pm", "2023-01-20 7:57:00pm +1100", "2023-01-20 7:57:00  pm +1100",
                    "2023-01-20 7:57:00 pm\u{202F}+1100", "2023-01-20 19:57:00\u{202F}+1100", "2023-01-20 24:00:00 +1100",
                    "2023-01-20 7:5:00 pm +1100", "2023-01-20 123:57:00 +1100", "2023-01-20 7:57:00 pmx +1100",
                    "2023-01-20 7:57:00 xm +1100", "2023-01-20 7:57:60 am +1100", "2023-01-20 7:57:00 am +11:00",
                    "2023-01-20 7:57:00 \u{202F}pm +1100", "2023-01-20 :57:00 pm +1100", "2023-01-20 7:57:00 a +1100",
                    "2023-01-20 7:57:00 p..m. +1100", "2023-01-20 7:57:00 p.  m. +1100", "2023-01-20 7:57:00 p.m.. +1100",
                    "2023-01-20 7:57:00 a.x. +1100"] {
            #expect(parse(bad) == nil, "\(bad)")
        }
    }

    @Test func sampleWindowConstants() {
        #expect(RFC3339.format(HealthInstantLimits.earliestSampleInstant) == "1900-01-01T00:00:00.000Z")
        #expect(RFC3339.format(HealthInstantLimits.latestSampleInstant) == "2200-01-01T00:00:00.000Z")
    }
}


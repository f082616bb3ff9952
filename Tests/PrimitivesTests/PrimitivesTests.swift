import Testing
import Primitives

@Suite struct HexDigitTests {
    @Test func decodesExactlyTheSixteenDigitsInBothCases() {
        for byte in UInt8.min...UInt8.max {
            let expected = Int(String(UnicodeScalar(byte)), radix: 16).flatMap { UInt8(exactly: $0) }
            // Int(radix:) also takes "+"/"-" alone as nil, and every single hex character exactly.
            #expect(HexDigit.value(byte) == expected, "byte \(byte)")
        }
    }
}

@Suite struct CivilDateTests {
    @Test func knownDays() {
        #expect(CivilDate.daysSinceEpoch(year: 1970, month: 1, day: 1) == 0)
        #expect(CivilDate.daysSinceEpoch(year: 2000, month: 3, day: 1) == 11_017)
        #expect(CivilDate.daysSinceEpoch(year: 1969, month: 12, day: 31) == -1)
        #expect(CivilDate.of(daysSinceEpoch: 11_016) == (2000, 2, 29))
        #expect(CivilDate.of(daysSinceEpoch: -719_468) == (0, 3, 1))
    }

    @Test func roundTripsEveryDayOverEightCenturies() {
        var previous = CivilDate.of(daysSinceEpoch: -150_000)
        for days in Int64(-149_999)...150_000 {
            let date = CivilDate.of(daysSinceEpoch: days)
            #expect(CivilDate.daysSinceEpoch(year: date.year, month: date.month, day: date.day) == days)
            // Consecutive days: the next day of the month, or the first of the next month or year.
            let next = date.day == previous.day + 1 && date.month == previous.month && date.year == previous.year
                || date.day == 1 && (date.month == previous.month + 1 && date.year == previous.year
                                     || date.month == 1 && previous.month == 12 && date.year == previous.year + 1)
            if !next { Issue.record("\(previous) -> \(date)"); return }
            previous = date
        }
    }
}

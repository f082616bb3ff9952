import Foundation
import Testing
import HTTP

/// The Date header's formatter keeps its own small civil-date conversion (HTTP depends on no
/// model module). HealthModel's copy is checked day by day in InstantTests; this checks HTTP's
/// copy against Foundation's Gregorian calendar, so neither can go wrong unnoticed.
@Suite struct HTTPDateCrossCheckTests {
    static let foundation: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }()

    @Test func agreesWithFoundationAcrossLeapYearsAndCenturies() {
        // Every 7th day plus an odd second offset from 1901 to 2199 (covers 1904, 2000, 2100, month ends).
        var seconds = -2_177_452_800 + 3_723
        var mismatches = 0
        while seconds < 7_258_118_400 {
            let ours = HTTPDate.imfFixdate(unixSeconds: seconds)
            let theirs = Self.foundation.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
            if ours != theirs {
                mismatches += 1
                if mismatches <= 3 { Issue.record("\(seconds): \(ours) vs \(theirs)") }
            }
            seconds += 7 * 86_400 + 61
        }
        #expect(mismatches == 0)
    }

    @Test func leapDaysAndTheDayBeforeTheEpoch() {
        #expect(HTTPDate.imfFixdate(unixSeconds: 951_825_600) == "Tue, 29 Feb 2000 12:00:00 GMT")
        #expect(HTTPDate.imfFixdate(unixSeconds: 4_107_542_400) == "Mon, 01 Mar 2100 00:00:00 GMT")
        #expect(HTTPDate.imfFixdate(unixSeconds: -1) == "Wed, 31 Dec 1969 23:59:59 GMT")
    }
}

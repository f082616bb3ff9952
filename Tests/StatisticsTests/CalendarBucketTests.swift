import Foundation
import Testing
@testable import Statistics
import TimeZoneDatabase

@Suite struct CalendarBucketTests {
    @Test func realZonesResolveOnThisSystem() throws {
        #expect(zone("Asia/Seoul").offsetSeconds(at: utc(2024, 6, 1)) == 9 * 3600)
        #expect(zone("Asia/Kathmandu").offsetSeconds(at: utc(2024, 6, 1)) == 5 * 3600 + 45 * 60)
        #expect(zone("America/New_York").offsetSeconds(at: utc(2024, 1, 15)) == -5 * 3600)
        #expect(zone("America/New_York").offsetSeconds(at: utc(2024, 7, 15)) == -4 * 3600)
        #expect(zone("Europe/London").offsetSeconds(at: utc(2024, 7, 15)) == 3600)
        #expect(zone("Australia/Lord_Howe").offsetSeconds(at: utc(2024, 1, 15)) == 11 * 3600)
        #expect(zone("Australia/Lord_Howe").offsetSeconds(at: utc(2024, 7, 15)) == 10 * 3600 + 1800)
        #expect(throws: StatisticsError.unknownTimeZone("Mars/Olympus")) {
            try BucketCalendar(timeZoneIdentifier: "Mars/Olympus")
        }
        #expect(try BucketCalendar(timeZoneIdentifier: nil).offsetSeconds(at: utc(2024, 7, 15)) == 0)
    }

    @Test func defaultAnchorIsLocalMidnight() throws {
        // 2024-03-09 23:30 UTC is already 2024-03-10 08:30 in Seoul.
        #expect(try zone("Asia/Seoul").startOfDay(containing: utc(2024, 3, 9, 23, 30)) == utc(2024, 3, 9, 15))
        #expect(try zone("Asia/Kathmandu").startOfDay(containing: utc(2024, 3, 9, 12)) == utc(2024, 3, 8, 18, 15))
    }

    @Test func newYorkSpringForwardDayHas23Hours() throws {
        let calendar = zone("America/New_York")
        let start = utc(2024, 3, 9, 5)  // local midnight, EST
        let buckets = try calendar.buckets(start: start, end: start + 3 * day - hour, anchor: start,
                                           interval: CalendarInterval.parse("P1D"))
        #expect(buckets.map { ($0.end - $0.start) / hour } == [24, 23, 24])
        #expect(buckets[1].startOffsetSeconds == -5 * 3600 && buckets[1].endOffsetSeconds == -4 * 3600)
        #expect(buckets[1].start == utc(2024, 3, 10, 5) && buckets[1].end == utc(2024, 3, 11, 4))
    }

    @Test func newYorkFallBackDayHas25Hours() throws {
        let calendar = zone("America/New_York")
        let start = utc(2024, 11, 3, 4)  // local midnight, EDT
        let buckets = try calendar.buckets(start: start, end: start + 1, anchor: start, interval: CalendarInterval.parse("P1D"))
        #expect(buckets.count == 1 && buckets[0].end - buckets[0].start == 25 * hour)
    }

    @Test func londonAndLordHoweTransitionDays() throws {
        let london = zone("Europe/London")
        let londonDay = try london.buckets(start: utc(2024, 3, 31), end: utc(2024, 3, 31, 1), anchor: utc(2024, 3, 31),
                                           interval: CalendarInterval.parse("P1D"))
        #expect(londonDay.map { $0.end - $0.start } == [23 * hour])
        // Lord Howe shifts by 30 minutes: 2024-04-07 lasts 24.5 h, 2024-10-06 lasts 23.5 h.
        let lordHowe = zone("Australia/Lord_Howe")
        let april = try lordHowe.startOfDay(containing: utc(2024, 4, 7, 2))
        let aprilDay = try lordHowe.buckets(start: april, end: april + 1, anchor: april, interval: CalendarInterval.parse("P1D"))
        #expect(aprilDay.map { $0.end - $0.start } == [24 * hour + 30 * minute])
        let october = try lordHowe.startOfDay(containing: utc(2024, 10, 6, 2))
        let octoberDay = try lordHowe.buckets(start: october, end: october + 1, anchor: october,
                                              interval: CalendarInterval.parse("P1D"))
        #expect(octoberDay.map { $0.end - $0.start } == [23 * hour + 30 * minute])
    }

    @Test func monthlyBucketsFromJanuary31DoNotDrift() throws {
        let calendar = zone("UTC")
        let anchor = utc(2024, 1, 31)
        let buckets = try calendar.buckets(start: utc(2023, 11, 15), end: utc(2024, 6, 1), anchor: anchor,
                                           interval: CalendarInterval.parse("P1M"))
        #expect(buckets.map(\.start) == [utc(2023, 10, 31), utc(2023, 11, 30), utc(2023, 12, 31), utc(2024, 1, 31),
                                         utc(2024, 2, 29), utc(2024, 3, 31), utc(2024, 4, 30), utc(2024, 5, 31)])
        #expect(buckets.last?.end == utc(2024, 6, 30))
    }

    @Test func bucketsBeforeTheAnchorUseNegativeMultiples() throws {
        let calendar = zone("Asia/Kathmandu")
        let anchor = try calendar.startOfDay(containing: utc(2024, 5, 10, 12))
        let buckets = try calendar.buckets(start: anchor - 2 * hour - 1, end: anchor + 1, anchor: anchor,
                                           interval: CalendarInterval.parse("PT1H"))
        #expect(buckets.map(\.start) == [anchor - 3 * hour, anchor - 2 * hour, anchor - hour, anchor])
        #expect(buckets.allSatisfy { $0.startOffsetSeconds == 20_700 })
    }

    @Test func weeksAndYearsFollowTheCalendar() throws {
        let calendar = zone("Europe/London")
        let anchor = utc(2024, 3, 25)  // Monday local midnight, GMT
        let weeks = try calendar.buckets(start: anchor, end: anchor + 14 * day - hour, anchor: anchor,
                                         interval: CalendarInterval.parse("P1W"))
        #expect(weeks.map { $0.end - $0.start } == [7 * day - hour, 7 * day])
        let years = try calendar.buckets(start: utc(2023, 6, 1), end: utc(2025, 1, 1), anchor: utc(2024, 1, 1),
                                         interval: CalendarInterval.parse("P1Y"))
        #expect(years.map(\.start) == [utc(2023, 1, 1), utc(2024, 1, 1)])
    }

    @Test func guardsAgainstAbsurdRequests() throws {
        let calendar = zone("UTC")
        #expect(throws: StatisticsError.tooManyBuckets(limit: 100_000)) {
            try calendar.buckets(start: 0, end: 200 * 365 * day, anchor: 0, interval: CalendarInterval.parse("PT1M"))
        }
        #expect(throws: StatisticsError.tooManyBuckets(limit: 10)) {
            try calendar.buckets(start: 0, end: 11 * day, anchor: 0, interval: CalendarInterval.parse("P1D"), limit: 10)
        }
        #expect(try calendar.buckets(start: 0, end: 10 * day, anchor: 0, interval: CalendarInterval.parse("P1D"),
                                     limit: 10).count == 10)
        #expect(throws: StatisticsError.invalidRange(start: 5, end: 5)) {
            try calendar.buckets(start: 5, end: 5, anchor: 0, interval: CalendarInterval.parse("P1D"))
        }
        #expect(throws: StatisticsError.instantOutOfRange(Int64.max)) {
            try calendar.buckets(start: 0, end: Int64.max, anchor: 0, interval: CalendarInterval.parse("P1Y"))
        }
    }

    /// Every interval kind in zones with transitions: buckets tile the range, the first holds `start`,
    /// each boundary is `anchor + k × interval` as the calendar computes it, offsets match the zone.
    @Test(arguments: ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "Asia/Seoul"])
    func bucketsTileTheRange(zoneName: String) throws {
        let calendar = zone(zoneName)
        var foundation = Calendar(identifier: .gregorian)
        foundation.timeZone = try #require(TimeZone(identifier: zoneName))
        var generator = SeededGenerator(seed: 7)
        for text in ["PT1M", "PT15M", "PT1H", "PT5H", "P1D", "P3D", "P1W", "P2W", "P1M", "P2M", "P1Y"] {
            let interval = try CalendarInterval.parse(text)
            for _ in 0..<4 {
                let start = utc(2024, 1, 1) + Int64.random(in: 0..<(365 * day), using: &generator)
                let span = Int64(interval.approximateMilliseconds * Double.random(in: 0.1...40, using: &generator))
                let anchor = start + Int64.random(in: -400 * day...400 * day, using: &generator)
                let buckets = try calendar.buckets(start: start, end: start + span, anchor: anchor, interval: interval)
                #expect(buckets.first.map { $0.start <= start && start < $0.end } == true)
                #expect(buckets.last.map { $0.start < start + span && start + span <= $0.end } == true)
                for (earlier, later) in zip(buckets, buckets.dropFirst()) {
                    #expect(earlier.end == later.start && earlier.endOffsetSeconds == later.startOffsetSeconds)
                }
                for bucket in buckets {
                    #expect(bucket.startOffsetSeconds == Int32(foundation.timeZone.secondsFromGMT(
                        for: Date(timeIntervalSince1970: Double(bucket.start) / 1000))))
                }
                // The first boundary must be reachable from the anchor in whole intervals.
                guard let first = buckets.first else { continue }
                let anchorDate = Date(timeIntervalSince1970: Double(anchor) / 1000)
                let firstDate = Date(timeIntervalSince1970: Double(first.start) / 1000)
                switch interval.unit {
                case .minute, .hour:
                    #expect((first.start - anchor) % (interval.fixedMilliseconds ?? 1) == 0)
                case .day, .week:
                    let days = foundation.dateComponents([.day], from: anchorDate, to: firstDate).day ?? 0
                    let unitDays = interval.unit == .week ? 7 * interval.count : interval.count
                    #expect(days % unitDays == 0)
                    let anchorTime = foundation.dateComponents([.hour, .minute], from: anchorDate)
                    let firstTime = foundation.dateComponents([.hour, .minute], from: firstDate)
                    // Local time of day is kept unless the anchor's time does not exist that day.
                    #expect(anchorTime == firstTime || first.startOffsetSeconds != calendar.offsetSeconds(at: anchor))
                case .month, .year:
                    let anchorDay = foundation.component(.day, from: anchorDate)
                    let firstDay = foundation.component(.day, from: firstDate)
                    #expect(firstDay <= anchorDay)
                }
            }
        }
    }

    /// The pure arithmetic gives what Foundation's `Calendar` gives, boundary for boundary, over the
    /// system's zone rules: days, weeks, months and years from anchors at any time of day, DST days
    /// included (366 anchors over 2010-2023, at times of day that vary). Pacific/Apia is left out:
    /// across its skipped day (2011-12-30) Foundation counts elapsed days, the arithmetic here
    /// counts calendar days (`skippedDayIsAnEmptyBucket`).
    @Test(arguments: ["America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "America/Sao_Paulo",
                      "America/Havana", "Asia/Gaza"])
    func matchesFoundationCalendar(zoneName: String) throws {
        let calendar = zone(zoneName)
        var foundation = Calendar(identifier: .gregorian)
        foundation.timeZone = try #require(TimeZone(identifier: zoneName))
        var generator = SeededGenerator(seed: 11)
        let cases: [(CalendarInterval.Unit, Calendar.Component, Int)] = [(.day, .day, 1), (.week, .day, 7), (.month, .month, 1),
                                                                          (.year, .year, 1)]
        for dayIndex in 0..<366 {
            let anchor = utc(2010, 1, 1) + Int64(dayIndex) * day * 41 / 3 + Int64.random(in: 0..<day, using: &generator)
            let anchorDate = Date(timeIntervalSince1970: Double(anchor) / 1000)
            #expect(try calendar.startOfDay(containing: anchor) == Int64(foundation.startOfDay(for: anchorDate).timeIntervalSince1970 * 1000))
            for (unit, component, factor) in cases {
                let interval = try CalendarInterval(unit: unit, count: 1)
                for index in [-13, -1, 1, 2, 25] {
                    let expected = try #require(foundation.date(byAdding: component, value: index * factor, to: anchorDate))
                    let ours = try calendar.bucketStart(index: index, anchor: anchor, interval: interval)
                    #expect(ours == Int64((expected.timeIntervalSince1970 * 1000).rounded()),
                            "\(zoneName) \(anchorDate) + \(index) \(unit)")
                }
            }
        }
    }

    /// Rules given as a value: the arithmetic needs no tz database, and a DST change behaves as in
    /// the calendar (a skipped hour moves forward, a repeated hour is its first occurrence).
    @Test func fixedRulesWithOneChange() throws {
        struct OneChange: TimeZoneRules {
            let identifier = "Test/OneChange"
            let change: Int64
            let before: Int32
            let after: Int32
            func offsetSeconds(at instant: Int64) -> Int32 { instant < change ? before : after }
        }
        let p1d = try CalendarInterval.parse("P1D")
        // Spring forward at 02:00 local (-05:00 → -04:00) on 2024-03-10: 02:30 that day does not exist.
        let spring = BucketCalendar(timeZone: OneChange(change: utc(2024, 3, 10, 7), before: -5 * 3600, after: -4 * 3600))
        #expect(try spring.bucketStart(index: 1, anchor: utc(2024, 3, 9, 7, 30), interval: p1d) == utc(2024, 3, 10, 7, 30))
        #expect(try spring.bucketStart(index: 2, anchor: utc(2024, 3, 9, 7, 30), interval: p1d) == utc(2024, 3, 11, 6, 30))
        #expect(try spring.startOfDay(containing: utc(2024, 3, 10, 12)) == utc(2024, 3, 10, 5))
        #expect(try spring.buckets(start: utc(2024, 3, 10, 5), end: utc(2024, 3, 11, 4), anchor: utc(2024, 3, 10, 5),
                                   interval: p1d).map { $0.end - $0.start } == [23 * 3_600_000])
        // Fall back at 02:00 local (-04:00 → -05:00) on 2024-11-03: 01:30 happens twice; the first counts.
        let fall = BucketCalendar(timeZone: OneChange(change: utc(2024, 11, 3, 6), before: -4 * 3600, after: -5 * 3600))
        #expect(try fall.bucketStart(index: 1, anchor: utc(2024, 11, 2, 5, 30), interval: p1d) == utc(2024, 11, 3, 5, 30))
        #expect(try fall.buckets(start: utc(2024, 11, 3, 4), end: utc(2024, 11, 4, 4), anchor: utc(2024, 11, 3, 4),
                                 interval: p1d).first.map { $0.end - $0.start } == 25 * 3_600_000)
        // From the second 01:30 (EST) a day back is the second 01:30 again: the anchor's offset wins.
        #expect(try fall.bucketStart(index: -1, anchor: utc(2024, 11, 4, 6, 30), interval: p1d) == utc(2024, 11, 3, 6, 30))
        // Months clamp to the month's last day and keep the time of day.
        let utcCalendar = BucketCalendar(timeZone: FixedOffsetTimeZone.utc)
        let p1m = try CalendarInterval.parse("P1M")
        #expect(try utcCalendar.bucketStart(index: 1, anchor: utc(2024, 1, 31, 9), interval: p1m) == utc(2024, 2, 29, 9))
        #expect(try utcCalendar.bucketStart(index: -11, anchor: utc(2024, 1, 31, 9), interval: p1m) == utc(2023, 2, 28, 9))
        #expect(try utcCalendar.bucketStart(index: 12, anchor: utc(2024, 2, 29), interval: p1m) == utc(2025, 2, 28))
    }

    @Test func skippedDayIsAnEmptyBucket() throws {
        let apia = zone("Pacific/Apia")
        // 2011-12-28T00:00-10:00 to 2012-01-02T00:00+14:00: the 30th never happened there.
        let start = utc(2011, 12, 28, 10)
        let buckets = try apia.buckets(start: start, end: utc(2012, 1, 1, 10), anchor: start, interval: CalendarInterval.parse("P1D"))
        let expectedStarts: [Int64] = [utc(2011, 12, 28, 10), utc(2011, 12, 29, 10), utc(2011, 12, 30, 10), utc(2011, 12, 31, 10)]
        #expect(buckets.map(\.start) == expectedStarts)
        let expectedOffsets: [Int32] = [-36_000, -36_000, 50_400, 50_400]
        #expect(buckets.map(\.startOffsetSeconds) == expectedOffsets)
        #expect(buckets.allSatisfy { $0.end - $0.start == day })
    }
}

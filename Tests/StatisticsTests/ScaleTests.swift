import Testing
@testable import Statistics

/// Days of dense data from two overlapping devices, as the server sees it: the indexes must match
/// the direct sweep (itself checked against brute force on small sets) bucket for bucket.
@Suite struct ScaleTests {
    static func stepsFromTwoDevices(days: Int, seed: UInt64) -> [StatisticsSample] {
        var generator = SeededGenerator(seed: seed)
        let origin = utc(2024, 3, 8)
        var samples: [StatisticsSample] = []
        var id: Int64 = 0
        for slot in 0..<(days * 1440) {
            let start = origin + Int64(slot) * minute
            id += 1
            samples.append(StatisticsSample(id: id, start: start, end: start + minute,
                                            value: Double(Int.random(in: 0...120, using: &generator)), source: 1))
            // The watch is off at night (no data) and lags the phone by 30 s.
            if slot % 1440 >= 420 {
                id += 1
                samples.append(StatisticsSample(id: id, start: start + 30_000, end: start + 30_000 + minute,
                                                value: Double(Int.random(in: 0...120, using: &generator)), source: 2))
            }
        }
        return samples
    }

    @Test(arguments: [("Asia/Seoul", "P1D"), ("America/New_York", "P1D"), ("America/New_York", "PT1H"),
                      ("Australia/Lord_Howe", "PT15M"), ("Europe/London", "P1W")])
    func indexMatchesDirectSweepOnDenseData(zoneName: String, intervalText: String) throws {
        let samples = Self.stepsFromTwoDevices(days: 5, seed: 42)
        let calendar = zone(zoneName)
        let start = utc(2024, 3, 8, 3)
        let buckets = try calendar.buckets(start: start, end: start + 5 * day, anchor: calendar.startOfDay(containing: start),
                                           interval: CalendarInterval.parse(intervalText))
        for priority in [SourcePriority([2, 1]), SourcePriority([1, 2])] {
            let options: StatisticsOptions = [.cumulativeSum, .separateBySource]
            let direct = try statisticsCollection(of: samples, buckets: buckets, style: .cumulative, options: options,
                                                  priority: priority)
            var index = SeriesIndex(style: .cumulative, priority: priority)
            try index.insert(contentsOf: samples)
            let indexed = try index.statisticsCollection(start: start, end: start + 5 * day, interval: CalendarInterval.parse(intervalText),
                                                         calendar: calendar, options: options)
            #expect(indexed.count == direct.count)
            for (fromIndex, fromDirect) in zip(indexed, direct) {
                #expect(close(fromIndex.figures, fromDirect.figures) && close(fromIndex.sources, fromDirect.sources))
            }
            let heart = samples.map { StatisticsSample(id: $0.id, start: $0.start, end: $0.start, value: $0.value, source: $0.source) }
            let discreteOptions: StatisticsOptions = [.discreteAverage, .discreteMin, .discreteMax, .mostRecent, .separateBySource]
            var discrete = SeriesIndex(style: .discrete, priority: priority)
            try discrete.insert(contentsOf: heart)
            let expected = try statisticsCollection(of: heart, buckets: buckets, style: .discrete, options: discreteOptions,
                                                    priority: priority)
            #expect(try discrete.statisticsCollection(buckets: buckets, options: discreteOptions) == expected)
        }
    }

    @Test func watchOnlyHoursCountTheWatchPhoneOnlyHoursCountThePhone() throws {
        let samples = Self.stepsFromTwoDevices(days: 1, seed: 3)
        var index = SeriesIndex(style: .cumulative, priority: SourcePriority([2, 1]))
        try index.insert(contentsOf: samples)
        let origin = utc(2024, 3, 8)
        // 03:00-04:00: the watch is off, so the phone's minutes count as they are.
        let night = try index.statistics(start: origin + 3 * hour, end: origin + 4 * hour, options: [.cumulativeSum])
        let phoneNight = samples.filter { $0.source == 1 && $0.start >= origin + 3 * hour && $0.start < origin + 4 * hour }
        #expect(close(night.figures.sum, phoneNight.map(\.value).reduce(0, +)))
        // 07:00-08:00: the watch starts at 07:00:30; the phone fills the first 30 s (half its minute).
        let from = origin + 7 * hour
        let to = from + hour
        let morning = try index.statistics(start: from, end: to, options: [.cumulativeSum])
        let watchPart = samples.filter { $0.source == 2 && $0.start < to && $0.end > from }
            .map { $0.value * Double(min($0.end, to) - max($0.start, from)) / Double(minute) }
            .reduce(0, +)
        let phoneHead = samples.first { $0.source == 1 && $0.start == from }.map { $0.value / 2 } ?? 0
        #expect(close(morning.figures.sum, watchPart + phoneHead))
    }
}

import Testing
@testable import Statistics

/// Hand-written cases of the exact semantics, each run through the direct path and the indexes.
@Suite struct SemanticsTests {
    let phone: Int32 = 1
    let watch: Int32 = 2
    let sum: StatisticsOptions = [.cumulativeSum]

    func sample(_ id: Int64, _ start: Int64, _ end: Int64, _ value: Double, _ source: Int32 = 1) -> StatisticsSample {
        StatisticsSample(id: id, start: start, end: end, value: value, source: source)
    }

    @Test func sampleSpanningThreeBucketsIsProRated() throws {
        // 300 steps over 14:30..16:30 with hourly buckets: 75, 150, 75.
        let base = utc(2024, 5, 1)
        let samples = [sample(1, base + 14 * hour + 30 * minute, base + 16 * hour + 30 * minute, 300)]
        let buckets = try zone("UTC").buckets(start: base + 14 * hour, end: base + 17 * hour, anchor: base,
                                              interval: CalendarInterval.parse("PT1H"))
        for answer in try allPaths(samples, buckets: buckets, style: .cumulative, options: sum) {
            #expect(answer.map(\.figures.sum) == [75, 150, 75])
        }
    }

    @Test func phoneAndWatchOverlapCountsOnce() throws {
        // Both devices record the same walk; the watch ranks first so its 100 steps win the overlap,
        // the phone's steps before the watch started still count (pro-rated: 10 of 40 minutes -> 30).
        let base = utc(2024, 5, 1, 8)
        let samples = [sample(1, base, base + 40 * minute, 120, phone),
                       sample(2, base + 10 * minute, base + 40 * minute, 100, watch)]
        let priority = SourcePriority([watch, phone])
        let result = try statistics(of: samples, start: base, end: base + hour, style: .cumulative,
                                    options: [.cumulativeSum, .separateBySource], priority: priority)
        #expect(close(result.figures.sum, 130))
        #expect(result.sources.map(\.source) == [watch, phone])
        #expect(result.sources.map(\.figures.sum) == [100, 120])
        for answer in try allPaths(samples, buckets: [bucket(base, base + hour)], style: .cumulative,
                                   options: [.cumulativeSum, .separateBySource], priority: priority) {
            #expect(close(answer[0].figures.sum, 130))
            #expect(answer[0].sources.map(\.figures.sum) == [100, 120])
        }
    }

    @Test func priorityFlipChangesTheSum() throws {
        let base = utc(2024, 5, 1, 8)
        let samples = [sample(1, base, base + 40 * minute, 120, phone),
                       sample(2, base + 10 * minute, base + 40 * minute, 100, watch)]
        // Phone first: the phone's whole 120 counts, the watch adds nothing (fully shadowed).
        for answer in try allPaths(samples, buckets: [bucket(base, base + hour)], style: .cumulative, options: sum,
                                   priority: SourcePriority([phone, watch])) {
            #expect(close(answer[0].figures.sum, 120))
        }
        var index = CumulativeSeriesIndex(priority: SourcePriority([phone, watch]))
        try index.insert(contentsOf: samples)
        #expect(close(index.statistics(start: base, end: base + hour, options: sum).figures.sum, 120))
        index.setPriority(SourcePriority([watch, phone]))
        #expect(close(index.statistics(start: base, end: base + hour, options: sum).figures.sum, 130))
    }

    @Test func unlistedSourcesRankAfterListedOnesById() {
        let priority = SourcePriority([9])
        #expect(priority.prefers(9, over: 1))
        #expect(priority.prefers(1, over: 2))
        #expect(priority.prefers(-5, over: 3))
        #expect(!priority.prefers(4, over: 4))
    }

    @Test func sameSourceOverlapsAllCount() throws {
        let base = utc(2024, 5, 1, 8)
        let samples = [sample(1, base, base + hour, 60), sample(2, base, base + 30 * minute, 10)]
        for answer in try allPaths(samples, buckets: [bucket(base, base + hour)], style: .cumulative, options: sum) {
            #expect(close(answer[0].figures.sum, 70))
        }
    }

    @Test func zeroLengthSampleCountsInTheBucketHoldingItsInstant() throws {
        let base = utc(2024, 5, 1)
        // An instant on a boundary belongs to the later bucket; under a better source's span it is dropped.
        let samples = [sample(1, base + hour, base + hour, 5, phone),
                       sample(2, base + 90 * minute, base + 90 * minute, 7, phone),
                       sample(3, base + 80 * minute, base + 100 * minute, 1, watch)]
        let buckets = [bucket(base, base + hour), bucket(base + hour, base + 2 * hour)]
        for answer in try allPaths(samples, buckets: buckets, style: .cumulative, options: sum,
                                   priority: SourcePriority([watch, phone])) {
            #expect(answer[0].figures.sum == nil)
            #expect(close(answer[1].figures.sum, 6))
        }
        // With the phone first the instant at 01:30 is not shadowed.
        for answer in try allPaths(samples, buckets: buckets, style: .cumulative, options: sum,
                                   priority: SourcePriority([phone, watch])) {
            #expect(close(answer[1].figures.sum, 13))
        }
    }

    @Test func emptyBucketIsAbsentButShadowedOrZeroDataIsPresent() throws {
        let base = utc(2024, 5, 1)
        let samples = [sample(1, base, base + hour, 0, phone)]
        let buckets = [bucket(base, base + hour), bucket(base + hour, base + 2 * hour)]
        for answer in try allPaths(samples, buckets: buckets, style: .cumulative,
                                   options: [.cumulativeSum, .separateBySource]) {
            #expect(answer[0].figures.sum == 0)
            #expect(answer[0].sources.count == 1)
            #expect(answer[1].figures.sum == nil && answer[1].sources.isEmpty)
        }
    }

    @Test func dstDayBucketsSumWholeLocalDays() throws {
        // Steps of 60 per hour through New York's spring-forward day: 23 hours -> 1380.
        let calendar = zone("America/New_York")
        let midnight = utc(2024, 3, 10, 5)
        let samples = (0..<48).map { sample(Int64($0), midnight + Int64($0) * hour, midnight + Int64($0 + 1) * hour, 60) }
        let buckets = try calendar.buckets(start: midnight, end: midnight + 47 * hour, anchor: midnight,
                                           interval: CalendarInterval.parse("P1D"))
        for answer in try allPaths(samples, buckets: buckets, style: .cumulative, options: sum) {
            #expect(answer.map(\.figures.sum) == [1380, 1440])
        }
    }

    @Test func discreteFiguresUseTheStartInstant() throws {
        let base = utc(2024, 5, 1)
        let samples = [sample(1, base + 50 * minute, base + 70 * minute, 60),  // starts in the first hour
                       sample(2, base + 10 * minute, base + 10 * minute, 80),
                       sample(3, base + 61 * minute, base + 61 * minute, 100, watch),
                       sample(5, base + 62 * minute, base + 62 * minute, 90),
                       sample(4, base + 62 * minute, base + 62 * minute, 95)]  // tie on start and end: id 5 wins
        let buckets = [bucket(base, base + hour), bucket(base + hour, base + 2 * hour), bucket(base + 2 * hour, base + 3 * hour)]
        let options: StatisticsOptions = [.discreteAverage, .discreteMin, .discreteMax, .mostRecent, .separateBySource]
        for answer in try allPaths(samples, buckets: buckets, style: .discrete, options: options) {
            #expect(answer[0].figures == StatisticsFigures(average: 70, minimum: 60, maximum: 80,
                                                           mostRecent: MostRecentValue(value: 60, start: base + 50 * minute,
                                                                                       end: base + 70 * minute)))
            #expect(answer[1].figures.average == 95)
            #expect(answer[1].figures.mostRecent?.value == 90)
            #expect(answer[1].sources.map(\.source) == [phone, watch])
            #expect(answer[1].sources.map(\.figures.maximum) == [95, 100])
            #expect(answer[2].figures.isEmpty && answer[2].sources.isEmpty)
        }
    }

    @Test func indexesRefuseSamplesTheyCannotHold() throws {
        var index = SeriesIndex(style: .cumulative)
        let good = sample(1, 0, hour, 5)
        let backwards = sample(2, hour, 0, 5)
        let endless = sample(3, 0, StatisticsSample.maximumDuration + 1, 5)
        let outOfRange = sample(4, Int64.min, 0, 5)
        let notANumber = sample(5, 0, 1, .nan)
        for bad in [backwards, endless, outOfRange, notANumber] {
            #expect(throws: StatisticsError.self) { try index.insert(contentsOf: [good, bad]) }
            #expect(index.count == 0)
        }
        var discrete = SeriesIndex(style: .discrete)
        #expect(throws: StatisticsError.invalidSample(id: 4, reason: "instants must lie within years 0001...9999")) {
            try discrete.insert(outOfRange)
        }
        try index.insert(good)
        #expect(index.count == 1)
    }

    @Test func singleQueryRejectsBadInput() {
        #expect(throws: StatisticsError.invalidRange(start: 10, end: 10)) {
            try statistics(of: [], start: 10, end: 10, style: .cumulative, options: sum, priority: SourcePriority([]))
        }
        #expect(throws: StatisticsError.optionNotAllowed(option: "cumulativeSum", style: .discrete)) {
            try statistics(of: [], start: 0, end: 10, style: .discrete, options: sum, priority: SourcePriority([]))
        }
    }
}

func bucket(_ start: Int64, _ end: Int64) -> CalendarBucket {
    CalendarBucket(start: start, end: end, startOffsetSeconds: 0, endOffsetSeconds: 0)
}

/// The same collection answered by the direct path, a freshly built index and an index that got its
/// samples one by one with a decoy inserted and deleted in between.
func allPaths(_ samples: [StatisticsSample], buckets: [CalendarBucket], style: AggregationStyle,
              options: StatisticsOptions, priority: SourcePriority = SourcePriority([])) throws -> [[BucketStatistics]] {
    var answers = [try statisticsCollection(of: samples, buckets: buckets, style: style, options: options, priority: priority)]
    var bulk = SeriesIndex(style: style, priority: priority)
    try bulk.insert(contentsOf: samples)
    answers.append(try bulk.statisticsCollection(buckets: buckets, options: options))
    var incremental = SeriesIndex(style: style, priority: priority)
    for sample in samples {
        let decoy = StatisticsSample(id: -1, start: sample.start - 1, end: sample.end + 1, value: 1000, source: 77)
        try incremental.insert(decoy)
        try incremental.insert(sample)
        let deleted = incremental.delete(decoy)
        #expect(deleted)
    }
    answers.append(try incremental.statisticsCollection(buckets: buckets, options: options))
    return answers
}

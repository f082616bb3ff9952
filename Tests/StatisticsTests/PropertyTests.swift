import Testing
@testable import Statistics

/// Random scenarios compared against the brute-force reference. Seeds are fixed, so runs replay exactly.
struct Scenario {
    static let zones = ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "Asia/Seoul"]
    // Instants next to DST transitions of the zones above, so days of 23, 23.5, 24.5 and 25 hours occur.
    static let transitions = [utc(2024, 3, 10, 7), utc(2024, 11, 3, 6), utc(2024, 3, 31, 1), utc(2024, 10, 27, 1),
                              utc(2024, 4, 6, 15), utc(2024, 10, 5, 15), utc(2024, 6, 1)]
    static let intervals = ["PT1M", "PT15M", "PT1H", "PT5H", "P1D", "P2D", "P1W", "P1M", "P1Y"]

    var generator: SeededGenerator
    var nextID: Int64 = 1
    let base: Int64

    init(seed: UInt64) {
        generator = SeededGenerator(seed: seed)
        // Every eighth scenario lives around 1970 so days before the epoch (negative instants) are covered.
        base = seed % 8 == 0 ? -36 * hour : Scenario.transitions[Int(seed % UInt64(Scenario.transitions.count))] - 36 * hour
    }

    mutating func integer(_ range: ClosedRange<Int64>) -> Int64 { Int64.random(in: range, using: &generator) }
    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &generator) < probability }

    mutating func sample() -> StatisticsSample {
        // Round starts to the second now and then so boundaries coincide, as real devices produce.
        var start = base + integer(0...(72 * hour))
        if chance(0.5) { start -= start % (chance(0.5) ? 60_000 : 1_000) }
        let duration: Int64
        switch integer(0...9) {
        case 0, 1: duration = 0
        case 2...5: duration = integer(1...(10 * minute))
        case 6...8: duration = integer(1...(3 * hour))
        default: duration = chance(0.1) ? integer(1...(40 * day)) : integer(1...(50 * hour))
        }
        // Mostly values a Float holds exactly, sometimes not, so packed columns widen.
        let value = chance(0.1) ? 0 : chance(0.1) ? Double.random(in: 0..<100, using: &generator)
                                                  : Double(integer(0...10_000)) / 8
        // Now and then an id far from the others, so packed id columns widen to 64 bits.
        nextID += chance(0.05) ? 5_000_000_000 : 1
        return StatisticsSample(id: nextID, start: start, end: start + duration, value: value,
                                source: Int32(integer(1...4)))
    }

    mutating func samples(_ count: Int) -> [StatisticsSample] {
        var result: [StatisticsSample] = []
        for _ in 0..<count {
            var next = sample()
            // Duplicate starts and ends now and then: ties in mostRecent and coinciding boundaries.
            if let earlier = result.randomElement(using: &generator), chance(0.15) {
                next.start = earlier.start
                next.end = chance(0.5) ? earlier.end : max(earlier.start, next.end)
            }
            result.append(next)
        }
        return result
    }

    mutating func priority() -> SourcePriority {
        var sources: [Int32] = [1, 2, 3, 4].shuffled(using: &generator)
        sources.removeLast(Int(integer(0...3)))
        return SourcePriority(sources)
    }

    mutating func buckets() throws -> [CalendarBucket] {
        let calendar = zone(Scenario.zones[Int(integer(0...Int64(Scenario.zones.count - 1)))])
        let interval = try CalendarInterval.parse(Scenario.intervals[Int(integer(0...Int64(Scenario.intervals.count - 1)))])
        let start = base + integer(-(6 * hour)...(60 * hour))
        let length = min(Int64(interval.approximateMilliseconds * Double(integer(1...30))), 120 * hour)
        let anchor = chance(0.5) ? try calendar.startOfDay(containing: start) : start + integer(-(40 * day)...(40 * day))
        return try calendar.buckets(start: start, end: start + max(length, 1), anchor: anchor, interval: interval)
    }
}

func expectMatchesReference(_ answers: [BucketStatistics], _ samples: [StatisticsSample], style: AggregationStyle,
                            options: StatisticsOptions, priority: SourcePriority, context: String) {
    for answer in answers {
        let (figures, sources) = Reference.answer(samples, from: answer.bucket.start, to: answer.bucket.end,
                                                  style: style, options: options, priority: priority)
        #expect(close(answer.figures, figures), "\(context) bucket \(answer.bucket.start): \(answer.figures) vs \(figures)")
        #expect(close(answer.sources, sources), "\(context) bucket \(answer.bucket.start) sources")
    }
}

@Suite struct PropertyTests {
    static let cumulativeOptions: StatisticsOptions = [.cumulativeSum, .separateBySource]
    static let discreteOptions: StatisticsOptions = [.discreteAverage, .discreteMin, .discreteMax, .mostRecent,
                                                     .separateBySource]

    @Test(arguments: 1...60)
    func directPathMatchesReference(seed: Int) throws {
        var scenario = Scenario(seed: UInt64(seed))
        let samples = scenario.samples(Int(scenario.integer(0...30)))
        let priority = scenario.priority()
        for _ in 0..<3 {
            let buckets = try scenario.buckets()
            let cumulative = try statisticsCollection(of: samples, buckets: buckets, style: .cumulative,
                                                      options: Self.cumulativeOptions, priority: priority)
            expectMatchesReference(cumulative, samples, style: .cumulative, options: Self.cumulativeOptions,
                                   priority: priority, context: "seed \(seed) cumulative")
            let discrete = try statisticsCollection(of: samples, buckets: buckets, style: .discrete,
                                                    options: Self.discreteOptions, priority: priority)
            expectMatchesReference(discrete, samples, style: .discrete, options: Self.discreteOptions,
                                   priority: priority, context: "seed \(seed) discrete")
        }
        let start = scenario.base + scenario.integer(-(hour)...(70 * hour))
        let end = start + scenario.integer(1...(30 * hour))
        let single = try statistics(of: samples, start: start, end: end, style: .cumulative, options: [.cumulativeSum],
                                    priority: priority)
        #expect(close(single.figures.sum, Reference.mergedSum(samples, from: start, to: end, priority: priority)))
    }
}

@Suite struct IndexPropertyTests {
    /// Random inserts and deletes (single and batched) interleaved with collection and single queries;
    /// after every step both indexes must agree with the reference over the samples currently present.
    @Test(arguments: 1...40)
    func indexesMatchReferenceThroughUpdates(seed: Int) throws {
        var scenario = Scenario(seed: UInt64(seed) &* 7919)
        var priority = scenario.priority()
        var present: [StatisticsSample] = []
        var cumulative = SeriesIndex(style: .cumulative, priority: priority)
        var discrete = SeriesIndex(style: .discrete, priority: priority)
        for step in 0..<14 {
            switch scenario.integer(0...9) {
            case 0...3:
                let added = scenario.samples(Int(scenario.integer(1...8)))
                present += added
                if added.count == 1 || scenario.chance(0.5) {
                    for sample in added { try cumulative.insert(sample); try discrete.insert(sample) }
                } else {
                    try cumulative.insert(contentsOf: added)
                    try discrete.insert(contentsOf: added)
                }
            case 4...6:
                guard !present.isEmpty else { continue }
                let removals = Int(scenario.integer(1...Int64(min(4, present.count))))
                var removed: [StatisticsSample] = []
                for _ in 0..<removals {
                    removed.append(present.remove(at: Int(scenario.integer(0...Int64(present.count - 1)))))
                }
                let removedCumulative = cumulative.delete(contentsOf: removed)
                let removedDiscrete = discrete.delete(contentsOf: removed)
                #expect(removedCumulative == removed.count && removedDiscrete == removed.count)
            case 7:
                priority = scenario.priority()
                cumulative.setPriority(priority)
                discrete.setPriority(priority)
            default:
                let ghost = StatisticsSample(id: -9, start: scenario.base, end: scenario.base + 1, value: 3.5, source: 4)
                let deletedGhost = cumulative.delete(ghost) || discrete.delete(ghost)
                #expect(!deletedGhost)
            }
            #expect(cumulative.count == present.count && discrete.count == present.count)
            let buckets = try scenario.buckets()
            let context = "seed \(seed) step \(step)"
            expectMatchesReference(try cumulative.statisticsCollection(buckets: buckets, options: PropertyTests.cumulativeOptions),
                                   present, style: .cumulative, options: PropertyTests.cumulativeOptions,
                                   priority: priority, context: context + " cumulative")
            expectMatchesReference(try discrete.statisticsCollection(buckets: buckets, options: PropertyTests.discreteOptions),
                                   present, style: .discrete, options: PropertyTests.discreteOptions,
                                   priority: priority, context: context + " discrete")
            // A single query over a random stretch, sometimes many days long (Fenwick and tree paths).
            let start = scenario.base + scenario.integer(-(30 * day)...(70 * hour))
            let end = start + scenario.integer(1...(60 * day))
            let single = try cumulative.statistics(start: start, end: end, options: PropertyTests.cumulativeOptions)
            let expected = Reference.answer(present, from: start, to: end, style: .cumulative,
                                            options: PropertyTests.cumulativeOptions, priority: priority)
            #expect(close(single.figures, expected.0) && close(single.sources, expected.1), "\(context) single")
            let singleDiscrete = try discrete.statistics(start: start, end: end, options: PropertyTests.discreteOptions)
            let expectedDiscrete = Reference.answer(present, from: start, to: end, style: .discrete,
                                                    options: PropertyTests.discreteOptions, priority: priority)
            #expect(close(singleDiscrete.figures, expectedDiscrete.0) && close(singleDiscrete.sources, expectedDiscrete.1),
                    "\(context) single discrete")
        }
    }

    /// Many days of data so whole-day runs go through the Fenwick tree and the segment tree, with
    /// samples spread over months and a few spanning several days.
    @Test(arguments: 1...6)
    func longRangesUseTheTreesExactly(seed: Int) throws {
        var generator = SeededGenerator(seed: UInt64(seed) + 1000)
        let origin = utc(2024, 1, 1)
        var samples: [StatisticsSample] = []
        for id in 0..<400 {
            let start = origin + Int64.random(in: 0...(120 * day), using: &generator)
            let duration: Int64 = id % 10 == 0 ? Int64.random(in: 0...(5 * day), using: &generator)
                                               : Int64.random(in: 0...(2 * hour), using: &generator)
            samples.append(StatisticsSample(id: Int64(id), start: start, end: start + duration,
                                            value: Double(Int.random(in: 0...500, using: &generator)),
                                            source: Int32.random(in: 1...3, using: &generator)))
        }
        let priority = SourcePriority([3, 1])
        var cumulative = SeriesIndex(style: .cumulative, priority: priority)
        var discrete = SeriesIndex(style: .discrete, priority: priority)
        try cumulative.insert(contentsOf: samples)
        try discrete.insert(contentsOf: samples)
        // Deleting and re-inserting some leaves the answers unchanged.
        let churn = Array(samples.prefix(50))
        let churned = (cumulative.delete(contentsOf: churn), discrete.delete(contentsOf: churn))
        #expect(churned == (50, 50))
        for sample in churn { try cumulative.insert(sample); try discrete.insert(sample) }
        for _ in 0..<25 {
            let start = origin + Int64.random(in: -(5 * day)...(100 * day), using: &generator)
            let end = start + Int64.random(in: 1...(90 * day), using: &generator)
            let summed = try cumulative.statistics(start: start, end: end, options: [.cumulativeSum])
            #expect(close(summed.figures.sum, Reference.mergedSum(samples, from: start, to: end, priority: priority)))
            let described = try discrete.statistics(start: start, end: end, options: PropertyTests.discreteOptions)
            let expected = Reference.answer(samples, from: start, to: end, style: .discrete,
                                            options: PropertyTests.discreteOptions, priority: priority)
            #expect(close(described.figures, expected.0) && close(described.sources, expected.1))
            let merged = try discrete.statistics(start: start, end: end, options: PropertyTests.discreteOptions
                                                     .subtracting(.separateBySource))
            #expect(close(merged.figures, expected.0) && merged.sources.isEmpty)
        }
        let calendar = zone("Europe/London")
        let weeks = try calendar.buckets(start: origin, end: origin + 130 * day, anchor: origin,
                                         interval: CalendarInterval.parse("P1W"))
        expectMatchesReference(try cumulative.statisticsCollection(buckets: weeks, options: PropertyTests.cumulativeOptions),
                               samples, style: .cumulative, options: PropertyTests.cumulativeOptions, priority: priority,
                               context: "weeks")
    }
}

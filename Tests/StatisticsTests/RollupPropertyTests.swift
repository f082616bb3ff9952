import Testing
@testable import Statistics

/// A store's rollup rows kept the way a store keeps them: after every write only the days the
/// written samples shape are re-encoded (from every sample present), after a priority change
/// every day is; queries read the rows of the days their buckets touch, and for a discrete type
/// the samples of the slots a bucket edge cuts.
private struct RollupRows {
    let style: AggregationStyle
    var rows: [Int64: (body: [UInt8], detail: [UInt8]?)] = [:]

    mutating func refresh(days: some Sequence<Int64>, present: [StatisticsSample], priority: SourcePriority) {
        for day in Set(days) {
            rows[day] = DayRollup.encode(day: day, samples: present, style: style, priority: priority).map { ($0.body, $0.detail) }
        }
    }

    func touched(by samples: [StatisticsSample]) -> [Int64] {
        samples.flatMap { Array(DayRollup.days(of: $0, style: style)) }
    }

    func series(for buckets: [CalendarBucket], priority: SourcePriority, present: [StatisticsSample],
                perSource: Bool = true) throws -> RollupSeries {
        let start = buckets.map(\.start).min() ?? 0
        let end = buckets.map(\.end).max() ?? 1
        let days = DayRollup.days(from: start, to: end)
        let detailDays = DayRollup.detailDays(of: buckets, style: style)
        let read = rows.filter { days.contains($0.key) }.sorted { $0.key < $1.key }.map {
            (day: $0.key, body: $0.value.body, detail: detailDays.contains($0.key) ? $0.value.detail : nil)
        }
        let slots = DayRollup.edgeSlots(of: buckets, style: style)
        let ranges = DayRollup.instants(ofSlots: slots)
        let edgeSamples = present.filter { sample in ranges.contains { $0.contains(sample.start) } }
        return try RollupSeries(style: style, priority: priority, days: days, rows: read, detailDays: detailDays,
                                edgeSlots: slots, edgeSamples: edgeSamples, perSource: perSource)
    }

    func series(from start: Int64, to end: Int64, priority: SourcePriority, present: [StatisticsSample]) throws -> RollupSeries {
        try series(for: [CalendarBucket(start: start, end: end, startOffsetSeconds: 0, endOffsetSeconds: 0)],
                   priority: priority, present: present)
    }
}

@Suite struct RollupPropertyTests {
    /// Random saves, deletes and priority changes interleaved with collection queries (every zone,
    /// interval and anchor of `Scenario`, so DST days and local midnights off UTC days) and single
    /// queries: the answers read from rollup rows equal the reference over the samples present.
    @Test(arguments: 1...40)
    func rollupsMatchReferenceThroughUpdates(seed: Int) throws {
        var scenario = Scenario(seed: UInt64(seed) &* 104_729)
        var priority = scenario.priority()
        var present: [StatisticsSample] = []
        var cumulative = RollupRows(style: .cumulative)
        var discrete = RollupRows(style: .discrete)
        for step in 0..<14 {
            switch scenario.integer(0...9) {
            case 0...4:
                let added = scenario.samples(Int(scenario.integer(1...8)))
                present += added
                cumulative.refresh(days: cumulative.touched(by: added), present: present, priority: priority)
                discrete.refresh(days: discrete.touched(by: added), present: present, priority: priority)
            case 5...7:
                guard !present.isEmpty else { continue }
                var removed: [StatisticsSample] = []
                for _ in 0..<Int(scenario.integer(1...Int64(min(4, present.count)))) {
                    removed.append(present.remove(at: Int(scenario.integer(0...Int64(present.count - 1)))))
                }
                cumulative.refresh(days: cumulative.touched(by: removed), present: present, priority: priority)
                discrete.refresh(days: discrete.touched(by: removed), present: present, priority: priority)
            default:
                priority = scenario.priority()
                cumulative.refresh(days: Array(cumulative.rows.keys), present: present, priority: priority)
            }
            #expect(cumulative.rows.values.allSatisfy { $0.body.count > 1 }, "no empty rows are kept")
            let buckets = try scenario.buckets()
            let context = "seed \(seed) step \(step)"
            let cumulativeSeries = try cumulative.series(for: buckets, priority: priority, present: present)
            expectMatchesReference(try cumulativeSeries.statisticsCollection(buckets: buckets, options: PropertyTests.cumulativeOptions),
                                   present, style: .cumulative, options: PropertyTests.cumulativeOptions,
                                   priority: priority, context: context + " cumulative")
            // Decoded without the sources' own tables: the same merged figures, and no per-source ones.
            let mergedOnly = try cumulative.series(for: buckets, priority: priority, present: present, perSource: false)
            let mergedOptions = PropertyTests.cumulativeOptions.subtracting(.separateBySource)
            #expect(try mergedOnly.statisticsCollection(buckets: buckets, options: mergedOptions).map(\.figures)
                    == (try cumulativeSeries.statisticsCollection(buckets: buckets, options: mergedOptions).map(\.figures)), "\(context) merged only")
            #expect(throws: RollupError.self) {
                try mergedOnly.statisticsCollection(buckets: buckets, options: [.cumulativeSum, .separateBySource])
            }
            let discreteSeries = try discrete.series(for: buckets, priority: priority, present: present)
            expectMatchesReference(try discreteSeries.statisticsCollection(buckets: buckets, options: PropertyTests.discreteOptions),
                                   present, style: .discrete, options: PropertyTests.discreteOptions,
                                   priority: priority, context: context + " discrete")
            let start = scenario.base + scenario.integer(-(30 * day)...(70 * hour))
            let end = start + scenario.integer(1...(60 * day))
            let single = try cumulative.series(from: start, to: end, priority: priority, present: present)
                .statistics(start: start, end: end, options: PropertyTests.cumulativeOptions)
            let expected = Reference.answer(present, from: start, to: end, style: .cumulative,
                                            options: PropertyTests.cumulativeOptions, priority: priority)
            #expect(close(single.figures, expected.0) && close(single.sources, expected.1), "\(context) single")
            let singleDiscrete = try discrete.series(from: start, to: end, priority: priority, present: present)
                .statistics(start: start, end: end, options: PropertyTests.discreteOptions)
            let expectedDiscrete = Reference.answer(present, from: start, to: end, style: .discrete,
                                                    options: PropertyTests.discreteOptions, priority: priority)
            #expect(close(singleDiscrete.figures, expectedDiscrete.0) && close(singleDiscrete.sources, expectedDiscrete.1),
                    "\(context) single discrete")
        }
    }

    /// 5,000 samples over the same minute make a body far shorter than their count.
    @Test func manySamplesWithTheSameTimesDecode() throws {
        let samples = (0 ..< 5_000).map { StatisticsSample(id: Int64($0), start: 5 * day + hour, end: 5 * day + hour + 60_000, value: 2, source: 1) }
        let row = try #require(DayRollup.encode(day: 5, samples: samples, style: .cumulative, priority: SourcePriority([1])))
        #expect(row.body.count < 5_000)
        let series = try RollupSeries(style: .cumulative, priority: SourcePriority([1]), days: 5...5, rows: [(5, row.body, nil)])
        #expect(series.sampleCount == 5_000)
        let sum = try series.statistics(start: 5 * day, end: 6 * day, options: .cumulativeSum).figures.sum
        #expect(abs((sum ?? 0) - 10_000) < 1e-6, "\(String(describing: sum))")
    }

    @Test func queriesOutsideTheDaysReadAndDamagedRowsAreErrors() throws {
        let sample = StatisticsSample(id: 1, start: 5 * day + hour, end: 5 * day + 2 * hour, value: 10, source: 1)
        let row = try #require(DayRollup.encode(day: 5, samples: [sample], style: .cumulative, priority: SourcePriority([1])))
        let body = row.body
        let series = try RollupSeries(style: .cumulative, priority: SourcePriority([1]), days: 5...5, rows: [(5, body, nil)])
        #expect(try series.statistics(start: 5 * day, end: 6 * day, options: .cumulativeSum).figures.sum == 10)
        #expect(throws: RollupError.self) { try series.statistics(start: 5 * day, end: 6 * day + 1, options: .cumulativeSum) }
        // An edge inside a slot needs the day's detail.
        #expect(throws: RollupError.self) { try series.statistics(start: 5 * day + 1, end: 6 * day, options: .cumulativeSum) }
        let detailed = try RollupSeries(style: .cumulative, priority: SourcePriority([1]), days: 5...5, rows: [(5, body, row.detail)],
                                        detailDays: [5])
        #expect(try detailed.statistics(start: 5 * day + hour + 30 * minute, end: 6 * day, options: .cumulativeSum).figures.sum == 5)
        #expect(throws: RollupError.self) {
            try RollupSeries(style: .cumulative, priority: SourcePriority([]), days: 5...5, rows: [(5, Array(body.dropLast()), nil)])
        }
        #expect(throws: RollupError.self) {
            try RollupSeries(style: .cumulative, priority: SourcePriority([]), days: 5...5, rows: [(5, body + [0], nil)])
        }
        #expect(throws: RollupError.self) {
            try RollupSeries(style: .cumulative, priority: SourcePriority([]), days: 5...5, rows: [(6, body, nil)])
        }
        #expect(DayRollup.encode(day: 4, samples: [sample], style: .cumulative, priority: SourcePriority([])) == nil)
        // A discrete query cutting a slot needs that slot's samples.
        let reading = StatisticsSample(id: 2, start: 5 * day + 60_000, end: 5 * day + 60_000, value: 70, source: 1)
        let discreteBody = try #require(DayRollup.encode(day: 5, samples: [reading], style: .discrete, priority: SourcePriority([]))).body
        let withoutEdges = try RollupSeries(style: .discrete, priority: SourcePriority([]), days: 5...5, rows: [(5, discreteBody, nil)])
        #expect(try withoutEdges.statistics(start: 5 * day, end: 6 * day, options: .discreteMax).figures.maximum == 70)
        #expect(throws: RollupError.self) { try withoutEdges.statistics(start: 5 * day + 1, end: 6 * day, options: .discreteMax) }
        let slot = DiscreteRollupDays.slot(of: 5 * day)
        let withEdges = try RollupSeries(style: .discrete, priority: SourcePriority([]), days: 5...5, rows: [(5, discreteBody, nil)],
                                         edgeSlots: [slot], edgeSamples: [reading])
        #expect(try withEdges.statistics(start: 5 * day + 1, end: 6 * day, options: .discreteMax).figures.maximum == 70)
        #expect(try withEdges.statistics(start: 5 * day + 60_001, end: 6 * day, options: .discreteMax).figures.maximum == nil)
    }
}

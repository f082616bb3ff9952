// Statistics computed straight from a list of samples: the exact semantics, used for small queries
// (samples fetched for one range) and as the yardstick the indexes are tested against.
//
// The semantics, shared by every path (and by HealthKit where it documents them):
// - Cumulative sums pro-rate a sample [s, e) by its overlap with the interval; a zero-length sample
//   counts whole in the interval [a, b) with a <= instant < b.
// - Merging: on every stretch of time only the best-ranked source with a sample there counts; that
//   source's own overlapping samples all count. A zero-length sample is dropped only when a better
//   source's sample [s, e) holds its instant. `separateBySource` gives each source unmerged.
// - A sum is present when any sample (of any source, any value) touches the interval, even if merging
//   left it nothing: 0 then means "data, but shadowed or zero", absent means "no data".
// - Discrete figures take every sample whose start lies in the interval, all sources (no merging);
//   average is the plain mean; mostRecent is the latest start, then latest end, then highest id.
// - Per-source answers come in priority order and list only sources with data in the interval.

/// `HKStatisticsQuery` over [start, end) from the samples given (any order; samples outside are ignored).
public func statistics(of samples: [StatisticsSample], start: Int64, end: Int64, style: AggregationStyle,
                       options: StatisticsOptions, priority: SourcePriority) throws(StatisticsError) -> StatisticsResult {
    guard start < end else { throw .invalidRange(start: start, end: end) }
    try options.validate(for: style)
    let interval = CalendarBucket(start: start, end: end, startOffsetSeconds: 0, endOffsetSeconds: 0)
    let answers = directFigures(samples, intervals: [interval], style: style, options: options, priority: priority)
    return StatisticsResult(start: start, end: end, figures: answers[0].figures, sources: answers[0].sources)
}

/// `HKStatisticsCollectionQuery` from the samples given, one answer per bucket in the order given.
public func statisticsCollection(of samples: [StatisticsSample], buckets: [CalendarBucket], style: AggregationStyle,
                                 options: StatisticsOptions,
                                 priority: SourcePriority) throws(StatisticsError) -> [BucketStatistics] {
    try options.validate(for: style)
    return directFigures(samples, intervals: buckets, style: style, options: options, priority: priority)
}

func directFigures(_ samples: [StatisticsSample], intervals: [CalendarBucket], style: AggregationStyle,
                   options: StatisticsOptions, priority: SourcePriority) -> [BucketStatistics] {
    switch style {
    case .cumulative:
        return directCumulative(samples, intervals: intervals, options: options, priority: priority)
    case .discrete:
        return directDiscrete(samples, intervals: intervals, options: options, priority: priority)
    }
}

/// Distinct sources of `samples` in priority order.
func sourcesInPriorityOrder(_ samples: [StatisticsSample], priority: SourcePriority) -> [Int32] {
    Set(samples.map(\.source)).sorted { priority.rank(of: $0) < priority.rank(of: $1) }
}

private func directCumulative(_ samples: [StatisticsSample], intervals: [CalendarBucket], options: StatisticsOptions,
                              priority: SourcePriority) -> [BucketStatistics] {
    var answers = intervals.map { BucketStatistics(bucket: $0, figures: StatisticsFigures()) }
    guard options.contains(.cumulativeSum) else { return answers }
    let ranked = RankedSamples(samples, priority: priority)
    let merged = MergedRate.merge(spans: ranked.spans, points: ranked.points, rankCount: ranked.rankCount)
    for index in answers.indices {
        let (sum, hasData) = merged.sum(from: intervals[index].start, to: intervals[index].end)
        if hasData { answers[index].figures.sum = sum }
    }
    guard options.contains(.separateBySource) else { return answers }
    let bySource = Dictionary(grouping: samples, by: \.source)
    for source in sourcesInPriorityOrder(samples, priority: priority) {
        let own = RankedSamples(bySource[source] ?? [], priority: nil)
        let unmerged = MergedRate.merge(spans: own.spans, points: own.points, rankCount: 1)
        for index in answers.indices {
            let (sum, hasData) = unmerged.sum(from: intervals[index].start, to: intervals[index].end)
            if hasData {
                answers[index].sources.append(SourceFigures(source: source, figures: StatisticsFigures(sum: sum)))
            }
        }
    }
    return answers
}

private func directDiscrete(_ samples: [StatisticsSample], intervals: [CalendarBucket], options: StatisticsOptions,
                            priority: SourcePriority) -> [BucketStatistics] {
    let sorted = samples.sorted { $0.start < $1.start }
    let separate = options.contains(.separateBySource)
    return intervals.map { interval in
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle].start >= interval.start { high = middle } else { low = middle + 1 }
        }
        var total = DiscreteAccumulator()
        var perSource: [Int32: DiscreteAccumulator] = [:]
        var index = low
        while index < sorted.count, sorted[index].start < interval.end {
            let sample = sorted[index]
            total.add(start: sample.start, end: sample.end, id: sample.id, value: sample.value)
            if separate {
                perSource[sample.source, default: DiscreteAccumulator()]
                    .add(start: sample.start, end: sample.end, id: sample.id, value: sample.value)
            }
            index += 1
        }
        let sources = perSource.keys.sorted { priority.rank(of: $0) < priority.rank(of: $1) }.compactMap { source in
            perSource[source].map { SourceFigures(source: source, figures: $0.figures(options)) }
        }
        return BucketStatistics(bucket: interval, figures: total.figures(options), sources: sources)
    }
}

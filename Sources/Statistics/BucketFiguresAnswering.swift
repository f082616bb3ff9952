/// An index that answers one bucket at a time; the single and collection queries are the same
/// for every kind of index, so they live here once.
public protocol BucketFiguresAnswering {
    func figures(for bucket: CalendarBucket, options: StatisticsOptions) -> BucketStatistics
}

extension BucketFiguresAnswering {
    /// `HKStatisticsQuery` over [start, end).
    public func statistics(start: Int64, end: Int64, options: StatisticsOptions) -> StatisticsResult {
        let bucket = CalendarBucket(start: start, end: end, startOffsetSeconds: 0, endOffsetSeconds: 0)
        let answer = figures(for: bucket, options: options)
        return StatisticsResult(start: start, end: end, figures: answer.figures, sources: answer.sources)
    }

    /// `HKStatisticsCollectionQuery`: one answer per bucket; the cost grows with buckets, not samples.
    public func statisticsCollection(buckets: [CalendarBucket], options: StatisticsOptions) -> [BucketStatistics] {
        buckets.map { figures(for: $0, options: options) }
    }
}

/// The index a store keeps per (user, type): cumulative or discrete by the type's aggregation style,
/// with one interface for updates and queries. Options are validated against the style here.
public struct SeriesIndex: Sendable {
    public let style: AggregationStyle
    // Optionals rather than an enum payload so mutation happens in place, without copying the arrays.
    private var cumulative: CumulativeSeriesIndex?
    private var discrete: DiscreteSeriesIndex?

    public init(style: AggregationStyle, priority: SourcePriority = SourcePriority([])) {
        self.style = style
        switch style {
        case .cumulative: cumulative = CumulativeSeriesIndex(priority: priority)
        case .discrete: discrete = DiscreteSeriesIndex(priority: priority)
        }
    }

    public var count: Int { cumulative?.count ?? discrete?.count ?? 0 }
    public var priority: SourcePriority { cumulative?.priority ?? discrete?.priority ?? SourcePriority([]) }
    public var memoryBytes: Int { cumulative?.memoryBytes ?? discrete?.memoryBytes ?? 0 }

    public mutating func insert(_ sample: StatisticsSample) throws(StatisticsError) {
        try cumulative?.insert(sample)
        try discrete?.insert(sample)
    }

    /// All or nothing: a sample failing `StatisticsSample.validate()` leaves the index unchanged.
    public mutating func insert<Samples: Sequence<StatisticsSample>>(contentsOf samples: Samples) throws(StatisticsError) {
        try cumulative?.insert(contentsOf: samples)
        try discrete?.insert(contentsOf: samples)
    }

    @discardableResult
    public mutating func delete(_ sample: StatisticsSample) -> Bool {
        cumulative?.delete(sample) ?? discrete?.delete(sample) ?? false
    }

    @discardableResult
    public mutating func delete<Samples: Sequence<StatisticsSample>>(contentsOf samples: Samples) -> Int {
        cumulative?.delete(contentsOf: samples) ?? discrete?.delete(contentsOf: samples) ?? 0
    }

    public mutating func setPriority(_ priority: SourcePriority) {
        cumulative?.setPriority(priority)
        discrete?.setPriority(priority)
    }

    /// `HKStatisticsQuery` over [start, end).
    public func statistics(start: Int64, end: Int64, options: StatisticsOptions) throws(StatisticsError) -> StatisticsResult {
        guard start < end else { throw .invalidRange(start: start, end: end) }
        try options.validate(for: style)
        if let cumulative { return cumulative.statistics(start: start, end: end, options: options) }
        if let discrete { return discrete.statistics(start: start, end: end, options: options) }
        return StatisticsResult(start: start, end: end, figures: StatisticsFigures())
    }

    /// `HKStatisticsCollectionQuery` over buckets from `BucketCalendar.buckets(...)`.
    public func statisticsCollection(buckets: [CalendarBucket],
                                     options: StatisticsOptions) throws(StatisticsError) -> [BucketStatistics] {
        try options.validate(for: style)
        if let cumulative { return cumulative.statisticsCollection(buckets: buckets, options: options) }
        if let discrete { return discrete.statisticsCollection(buckets: buckets, options: options) }
        return []
    }

    /// The whole collection query in one call: buckets of `interval` aligned to `anchor` (default: the
    /// start of `start`'s day) in `calendar`'s zone, every bucket intersecting [start, end).
    public func statisticsCollection(start: Int64, end: Int64, anchor: Int64? = nil, interval: CalendarInterval,
                                     calendar: BucketCalendar, options: StatisticsOptions,
                                     bucketLimit: Int = BucketCalendar.defaultBucketLimit) throws(StatisticsError) -> [BucketStatistics] {
        try options.validate(for: style)
        let alignment: Int64
        if let anchor { alignment = anchor } else { alignment = try calendar.startOfDay(containing: start) }
        let buckets = try calendar.buckets(start: start, end: end, anchor: alignment, interval: interval, limit: bucketLimit)
        return try statisticsCollection(buckets: buckets, options: options)
    }
}

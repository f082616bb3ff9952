/// A quantity sample as statistics see it: [start, end) in UTC milliseconds, a value in the type's
/// canonical unit and the id of the source (app) that saved it.
public struct StatisticsSample: Sendable, Hashable {
    public var id: Int64
    public var start: Int64
    public var end: Int64
    public var value: Double
    public var source: Int32

    public init(id: Int64, start: Int64, end: Int64, value: Double, source: Int32) {
        self.id = id
        self.start = start
        self.end = end
        self.value = value
        self.source = source
    }

    var isInstant: Bool { end <= start }

    /// The longest sample the indexes take (ten years): a cumulative sample is spread over every UTC
    /// day it covers, so an unbounded one would cost unbounded memory.
    public static let maximumDuration: Int64 = 3_660 * 86_400_000

    /// What the indexes rely on: instants within years 0001...9999, end not before start, a duration
    /// of at most `maximumDuration`, a finite value. The store should check before saving.
    public func validate() throws(StatisticsError) {
        guard start >= BucketCalendar.earliestInstant, end <= BucketCalendar.latestInstant else {
            throw .invalidSample(id: id, reason: "instants must lie within years 0001...9999")
        }
        guard end >= start else { throw .invalidSample(id: id, reason: "end is before start") }
        guard end - start <= Self.maximumDuration else {
            throw .invalidSample(id: id, reason: "longer than \(Self.maximumDuration / 86_400_000) days")
        }
        guard value.isFinite else { throw .invalidSample(id: id, reason: "value is not a finite number") }
    }
}

/// The user's source order for a type: `order.first` wins. Sources not listed rank after every listed
/// one, by ascending id (the store passes "first saved ranks first" as the default order).
public struct SourcePriority: Sendable, Hashable {
    public let order: [Int32]
    private let positions: [Int32: Int]

    public init(_ order: [Int32]) {
        var positions: [Int32: Int] = [:]
        var unique: [Int32] = []
        for source in order where positions[source] == nil {
            positions[source] = unique.count
            unique.append(source)
        }
        self.order = unique
        self.positions = positions
    }

    /// A totally ordered rank; smaller ranks win.
    public func rank(of source: Int32) -> Int64 {
        if let position = positions[source] { return Int64(position) }
        return Int64(order.count) + (Int64(source) - Int64(Int32.min))
    }

    /// Whether `source` outranks `other`.
    public func prefers(_ source: Int32, over other: Int32) -> Bool {
        rank(of: source) < rank(of: other)
    }

    public static func == (lhs: SourcePriority, rhs: SourcePriority) -> Bool { lhs.order == rhs.order }
    public func hash(into hasher: inout Hasher) { hasher.combine(order) }
}

/// `HKStatistics.mostRecentQuantity()` with its date interval.
public struct MostRecentValue: Sendable, Hashable {
    public var value: Double
    public var start: Int64
    public var end: Int64

    public init(value: Double, start: Int64, end: Int64) {
        self.value = value
        self.start = start
        self.end = end
    }
}

/// The figures of one interval; a figure not requested, or with no data behind it, is `nil` (absent, not 0).
public struct StatisticsFigures: Sendable, Hashable {
    public var sum: Double?
    public var average: Double?
    public var minimum: Double?
    public var maximum: Double?
    public var mostRecent: MostRecentValue?

    public init(sum: Double? = nil, average: Double? = nil, minimum: Double? = nil, maximum: Double? = nil,
                mostRecent: MostRecentValue? = nil) {
        self.sum = sum
        self.average = average
        self.minimum = minimum
        self.maximum = maximum
        self.mostRecent = mostRecent
    }

    public var isEmpty: Bool {
        sum == nil && average == nil && minimum == nil && maximum == nil && mostRecent == nil
    }
}

/// One source's figures under `separateBySource`.
public struct SourceFigures: Sendable, Hashable {
    public var source: Int32
    public var figures: StatisticsFigures

    public init(source: Int32, figures: StatisticsFigures) {
        self.source = source
        self.figures = figures
    }
}

/// The answer for one interval (`HKStatistics`): merged figures, and per source (in priority order,
/// only sources with data in the interval) when `separateBySource` was asked.
public struct StatisticsResult: Sendable, Hashable {
    public var start: Int64
    public var end: Int64
    public var figures: StatisticsFigures
    public var sources: [SourceFigures]

    public init(start: Int64, end: Int64, figures: StatisticsFigures, sources: [SourceFigures] = []) {
        self.start = start
        self.end = end
        self.figures = figures
        self.sources = sources
    }
}

/// One bucket of a collection query with its figures.
public struct BucketStatistics: Sendable, Hashable {
    public var bucket: CalendarBucket
    public var figures: StatisticsFigures
    public var sources: [SourceFigures]

    public init(bucket: CalendarBucket, figures: StatisticsFigures, sources: [SourceFigures] = []) {
        self.bucket = bucket
        self.figures = figures
        self.sources = sources
    }
}

/// Running discrete aggregate: count, sum, min, max and the most recent sample (latest start, then
/// latest end, then highest id).
struct DiscreteAccumulator: Sendable {
    var count = 0
    var sum = 0.0
    var minimum = Double.infinity
    var maximum = -Double.infinity
    var recentStart = Int64.min
    var recentEnd = Int64.min
    var recentID = Int64.min
    var recentValue = 0.0

    mutating func add(start: Int64, end: Int64, id: Int64, value: Double) {
        count += 1
        sum += value
        if value < minimum { minimum = value }
        if value > maximum { maximum = value }
        if count == 1 || Self.isLater(start, end, id, than: recentStart, recentEnd, recentID) {
            recentStart = start
            recentEnd = end
            recentID = id
            recentValue = value
        }
    }

    mutating func merge(_ other: DiscreteAccumulator) {
        guard other.count > 0 else { return }
        let takeRecent = count == 0
            || Self.isLater(other.recentStart, other.recentEnd, other.recentID, than: recentStart, recentEnd, recentID)
        count += other.count
        sum += other.sum
        minimum = Swift.min(minimum, other.minimum)
        maximum = Swift.max(maximum, other.maximum)
        if takeRecent {
            recentStart = other.recentStart
            recentEnd = other.recentEnd
            recentID = other.recentID
            recentValue = other.recentValue
        }
    }

    static func isLater(_ start: Int64, _ end: Int64, _ id: Int64, than otherStart: Int64, _ otherEnd: Int64,
                        _ otherID: Int64) -> Bool {
        if start != otherStart { return start > otherStart }
        if end != otherEnd { return end > otherEnd }
        return id > otherID
    }

    /// Merges a source's aggregate into a per-source list (sources in first-seen order; empty ones left out).
    static func merge(_ accumulator: DiscreteAccumulator, of source: Int32, into sources: inout [(Int32, DiscreteAccumulator)]) {
        guard accumulator.count > 0 else { return }
        if let slot = sources.firstIndex(where: { $0.0 == source }) {
            sources[slot].1.merge(accumulator)
        } else {
            sources.append((source, accumulator))
        }
    }

    /// A bucket's answer from its merged aggregate and per-source ones (priority order, sources
    /// with figures only).
    static func bucketStatistics(_ bucket: CalendarBucket, _ total: DiscreteAccumulator,
                                 _ sources: [(Int32, DiscreteAccumulator)], options: StatisticsOptions,
                                 priority: SourcePriority) -> BucketStatistics {
        let perSource = sources
            .sorted { priority.rank(of: $0.0) < priority.rank(of: $1.0) }
            .map { SourceFigures(source: $0.0, figures: $0.1.figures(options)) }
            .filter { !$0.figures.isEmpty }
        return BucketStatistics(bucket: bucket, figures: total.figures(options), sources: perSource)
    }

    func figures(_ options: StatisticsOptions) -> StatisticsFigures {
        guard count > 0 else { return StatisticsFigures() }
        var figures = StatisticsFigures()
        if options.contains(.discreteAverage) { figures.average = sum / Double(count) }
        if options.contains(.discreteMin) { figures.minimum = minimum }
        if options.contains(.discreteMax) { figures.maximum = maximum }
        if options.contains(.mostRecent) {
            figures.mostRecent = MostRecentValue(value: recentValue, start: recentStart, end: recentEnd)
        }
        return figures
    }
}

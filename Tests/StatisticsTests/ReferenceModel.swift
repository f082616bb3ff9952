import Foundation
@testable import Statistics
import TimeZoneDatabase
import Primitives

/// SplitMix64: a tiny seeded generator so every property test replays identically.
typealias SeededGenerator = SplitMix64

/// Brute force, written independently of the engine: split time at every sample boundary, decide the
/// winning source for each elementary piece, integrate. Quadratic, so only for small sample sets.
enum Reference {
    static func mergedSum(_ samples: [StatisticsSample], from start: Int64, to end: Int64,
                          priority: SourcePriority) -> Double? {
        let present = samples.contains { sample in
            sample.end > sample.start ? (sample.start < end && sample.end > start)
                                      : (sample.start >= start && sample.start < end)
        }
        guard present else { return nil }
        var cuts = Set([start, end])
        for sample in samples where sample.end > sample.start {
            if sample.start > start && sample.start < end { cuts.insert(sample.start) }
            if sample.end > start && sample.end < end { cuts.insert(sample.end) }
        }
        let ordered = cuts.sorted()
        var total = 0.0
        for (pieceStart, pieceEnd) in zip(ordered, ordered.dropFirst()) {
            let covering = samples.filter { $0.end > $0.start && $0.start <= pieceStart && $0.end >= pieceEnd }
            guard let best = covering.map(\.source).min(by: { priority.rank(of: $0) < priority.rank(of: $1) }) else {
                continue
            }
            for sample in covering where sample.source == best {
                total += sample.value * Double(pieceEnd - pieceStart) / Double(sample.end - sample.start)
            }
        }
        for point in samples where point.end <= point.start && point.start >= start && point.start < end {
            let shadowed = samples.contains { other in
                other.end > other.start && other.start <= point.start && point.start < other.end
                    && priority.rank(of: other.source) < priority.rank(of: point.source)
            }
            if !shadowed { total += point.value }
        }
        return total
    }

    static func discrete(_ samples: [StatisticsSample], from start: Int64,
                         to end: Int64) -> (average: Double, minimum: Double, maximum: Double, recent: MostRecentValue)? {
        let inside = samples.filter { $0.start >= start && $0.start < end }
        guard !inside.isEmpty else { return nil }
        let values = inside.map(\.value)
        let recent = inside.max { lhs, rhs in
            (lhs.start, lhs.end, lhs.id) < (rhs.start, rhs.end, rhs.id)
        }
        guard let recent else { return nil }
        return (values.reduce(0, +) / Double(values.count), values.min() ?? 0, values.max() ?? 0,
                MostRecentValue(value: recent.value, start: recent.start, end: recent.end))
    }

    /// The expected answer for one interval, in the engine's shape, sources in priority order.
    static func answer(_ samples: [StatisticsSample], from start: Int64, to end: Int64, style: AggregationStyle,
                       options: StatisticsOptions, priority: SourcePriority) -> (StatisticsFigures, [SourceFigures]) {
        func figures(_ subset: [StatisticsSample], merged: Bool) -> StatisticsFigures {
            var result = StatisticsFigures()
            switch style {
            case .cumulative:
                if options.contains(.cumulativeSum) {
                    result.sum = merged ? mergedSum(subset, from: start, to: end, priority: priority)
                                        : mergedSum(subset, from: start, to: end, priority: SourcePriority([]))
                }
            case .discrete:
                if let found = discrete(subset, from: start, to: end) {
                    if options.contains(.discreteAverage) { result.average = found.average }
                    if options.contains(.discreteMin) { result.minimum = found.minimum }
                    if options.contains(.discreteMax) { result.maximum = found.maximum }
                    if options.contains(.mostRecent) { result.mostRecent = found.recent }
                }
            }
            return result
        }
        let merged = figures(samples, merged: true)
        var sources: [SourceFigures] = []
        if options.contains(.separateBySource) {
            let ordered = Set(samples.map(\.source)).sorted { priority.rank(of: $0) < priority.rank(of: $1) }
            for source in ordered {
                let own = figures(samples.filter { $0.source == source }, merged: false)
                if !own.isEmpty { sources.append(SourceFigures(source: source, figures: own)) }
            }
        }
        return (merged, sources)
    }
}

func close(_ lhs: Double?, _ rhs: Double?) -> Bool {
    switch (lhs, rhs) {
    case (nil, nil): return true
    case let (left?, right?): return abs(left - right) <= 1e-6 + 1e-9 * max(abs(left), abs(right))
    default: return false
    }
}

func close(_ lhs: StatisticsFigures, _ rhs: StatisticsFigures) -> Bool {
    close(lhs.sum, rhs.sum) && close(lhs.average, rhs.average) && close(lhs.minimum, rhs.minimum)
        && close(lhs.maximum, rhs.maximum) && lhs.mostRecent == rhs.mostRecent
}

func close(_ lhs: [SourceFigures], _ rhs: [SourceFigures]) -> Bool {
    lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0.source == $1.source && close($0.figures, $1.figures) }
}

func zone(_ identifier: String) -> BucketCalendar {
    guard let timeZone = SystemTimeZone(identifier: identifier) else {
        fatalError("time zone \(identifier) missing on this system")
    }
    return BucketCalendar(timeZone: timeZone)
}

/// Milliseconds of a UTC date-time, for readable fixtures.
func utc(_ year: Int, _ month: Int, _ day: Int, _ hour: Int = 0, _ minute: Int = 0) -> Int64 {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? TimeZone.current
    let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute)
    guard let date = calendar.date(from: components) else { fatalError("bad fixture date") }
    return Int64(date.timeIntervalSince1970 * 1000)
}

let hour: Int64 = 3_600_000
let minute: Int64 = 60_000
let day: Int64 = 86_400_000

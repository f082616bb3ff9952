// Keeping rollup rows current, as rules every store follows whatever SQL it speaks: which days a
// transaction's saves and deletes shaped, which samples a rewrite of those days must read, and
// what each day's row becomes. The stores only read samples and write rows (SQLite's
// `statistics_days`, PostgreSQL's), inside the transaction that changed the samples.

/// The days of each series (a store's type code) a transaction's saves and deletes shaped, and the
/// longest cumulative sample it saved per series (how far before a day a sample shaping it can start).
public struct RollupDayChanges: Sendable {
    private var days: [Int64: Set<Int64>] = [:]
    private var longest: [Int64: Int64] = [:]
    /// The last day noted, so a batch of samples in one day costs one set insert.
    private var last: (typeCode: Int64, day: Int64)?

    public init() {}

    public var isEmpty: Bool { days.isEmpty }

    /// Notes a saved or deleted sample. Samples the statistics never count (no style: not a
    /// quantity type; no value; or not valid for them, see `StatisticsSample.validate`) change no rollup.
    public mutating func note(typeCode: Int64, style: AggregationStyle?, start: Int64, end: Int64, value: Double?) {
        guard let style, let value else { return }
        let sample = StatisticsSample(id: 0, start: start, end: end, value: value, source: 0)
        do { try sample.validate() } catch { return }
        if style == .cumulative, end - start > longest[typeCode, default: 0] { longest[typeCode] = end - start }
        let touched = DayRollup.days(of: sample, style: style)
        if touched.count == 1, let last, last.typeCode == typeCode, last.day == touched.lowerBound { return }
        days[typeCode, default: []].formUnion(touched)
        last = (typeCode, touched.upperBound)
    }

    /// The touched series in ascending type order: writers that lock series rows while rewriting
    /// them take the locks in one order, so two of them never wait on each other in a cycle.
    public var series: [(typeCode: Int64, days: Set<Int64>, longestDuration: Int64)] {
        days.keys.sorted().map { ($0, days[$0] ?? [], longest[$0] ?? 0) }
    }
}

extension DayRollup {
    /// A day's new row, or nil when no sample shapes it any more (the store then deletes its row).
    public typealias Row = (body: [UInt8], detail: [UInt8]?)

    /// Rewrites the rows of `days` of one series: `samples(from, to)` must return the series'
    /// samples starting in [from, to) (as the statistics take them); each run of consecutive days
    /// is read in one call, reaching back `reach` ms (the series' longest cumulative sample) so a
    /// sample that started before a day and runs into it shapes it. `write` gets every day of
    /// `touched`, ascending, with its row.
    public static func refresh(days touched: Set<Int64>, style: AggregationStyle, priority: SourcePriority, reach: Int64,
                               samples: (_ from: Int64, _ to: Int64) throws -> [StatisticsSample],
                               write: (_ day: Int64, _ row: Row?) throws -> Void) throws {
        let sorted = touched.sorted()
        var runStart = 0
        while runStart < sorted.count {
            var runEnd = runStart
            while runEnd + 1 < sorted.count, sorted[runEnd + 1] == sorted[runEnd] + 1 { runEnd += 1 }
            let run = sorted[runStart]...sorted[runEnd]
            let reachBack = style == .cumulative ? max(0, reach) : 0
            let read = try samples(run.lowerBound * dayLength - reachBack, (run.upperBound + 1) * dayLength)
            var byDay: [Int64: [StatisticsSample]] = [:]
            for sample in read {
                let shaped = days(of: sample, style: style)
                guard shaped.overlaps(run) else { continue }
                for day in shaped.clamped(to: run) { byDay[day, default: []].append(sample) }
            }
            for day in run {
                try write(day, byDay[day].flatMap { encode(day: day, samples: $0, style: style, priority: priority) })
            }
            runStart = runEnd + 1
        }
    }

    /// Every row of a series from all its samples, ascending by day: after a source-priority change
    /// (which changes who wins every overlap) and when rollups are first built.
    public static func rows(of samples: [StatisticsSample], style: AggregationStyle,
                            priority: SourcePriority) -> [(day: Int64, row: Row)] {
        var byDay: [Int64: [StatisticsSample]] = [:]
        for sample in samples {
            for day in days(of: sample, style: style) { byDay[day, default: []].append(sample) }
        }
        return byDay.keys.sorted().compactMap { day in
            byDay[day].flatMap { encode(day: day, samples: $0, style: style, priority: priority) }.map { (day, $0) }
        }
    }
}

// Keeping rollup rows current, as rules every store follows whatever SQL it speaks: which days a
// transaction's saves and deletes shaped, what each day's row becomes, and which samples must be
// read back for it. The stores only read rows and samples and write rows (SQLite's
// `statistics_days`, PostgreSQL's), inside the transaction that changed the samples.
//
// A save is folded into the rows of the days it shapes without reading their other samples:
// - discrete: each new sample is added to its (15-minute slot, source) entry (count, sum, min,
//   max, most recent), exactly what a rewrite from every sample would hold;
// - cumulative: the new samples' integral is added to their source's own integral and to the
//   merged one. That is exact when nothing of another source lies where a new sample does: there
//   the merge (the best-ranked source with data wins) can only take the new samples' source, so
//   the merged rate grows by exactly their rate. Where another source has data, who wins depends
//   on the source order and on samples the row does not list, so that day is rebuilt from its samples.
// A delete is not folded: a removed sample may have been a slot's minimum, maximum or most recent,
// or (cumulative) have covered time no other sample of its source covers. A discrete delete re-reads
// the samples of the 15-minute slots it emptied from; a cumulative delete rebuilds its days. A
// source-priority change rebuilds the whole series (`DayRollup.rows`).

/// The days of each series (a store's type code) a transaction's saves and deletes shaped, with the
/// saved and deleted samples per day, and the longest cumulative sample it saved per series (how
/// far before a day a sample shaping it can start).
public struct RollupDayChanges: Sendable {
    private var bySeries: [Int64: RollupSeriesChanges] = [:]

    public init() {}

    public var isEmpty: Bool { bySeries.isEmpty }

    /// Notes a saved sample (`id` is what orders equal-time samples for `mostRecent`: the store's
    /// insertion sequence). Samples the statistics never count (no style: not a quantity type; or
    /// not valid for them, see `StatisticsSample.validate`) change no rollup.
    public mutating func noteSaved(typeCode: Int64, style: AggregationStyle?, sample: StatisticsSample) {
        record(typeCode: typeCode, style: style, sample: sample) { $0.saved[$1, default: []].append($2) }
    }

    /// Notes a deleted sample.
    public mutating func noteDeleted(typeCode: Int64, style: AggregationStyle?, sample: StatisticsSample) {
        record(typeCode: typeCode, style: style, sample: sample) { $0.deleted[$1, default: []].append($2) }
    }

    /// Notes a change whose sample is not at hand (no source or id): the days it shapes are
    /// rebuilt from their samples.
    public mutating func note(typeCode: Int64, style: AggregationStyle?, start: Int64, end: Int64, value: Double?) {
        guard let value else { return }
        let sample = StatisticsSample(id: 0, start: start, end: end, value: value, source: 0)
        record(typeCode: typeCode, style: style, sample: sample) { series, day, _ in series.rebuilt.insert(day) }
    }

    private mutating func record(typeCode: Int64, style: AggregationStyle?, sample: StatisticsSample,
                                 _ note: (inout RollupSeriesChanges, Int64, StatisticsSample) -> Void) {
        guard let style else { return }
        do { try sample.validate() } catch { return }
        var series = bySeries.removeValue(forKey: typeCode) ?? RollupSeriesChanges(typeCode: typeCode, style: style)
        if style == .cumulative, sample.end - sample.start > series.longestDuration {
            series.longestDuration = sample.end - sample.start
        }
        for day in DayRollup.days(of: sample, style: style) {
            series.days.insert(day)
            note(&series, day, sample)
        }
        bySeries[typeCode] = series
    }

    /// The same changes with every noted sample's id moved by `offset`: a writer notes a batch's
    /// samples by their position in it before the store numbers them, and moves them once it has.
    public func offsettingIDs(by offset: Int64) -> RollupDayChanges {
        guard offset != 0 else { return self }
        func moved(_ samples: [StatisticsSample]) -> [StatisticsSample] {
            samples.map { sample in
                var sample = sample
                sample.id += offset
                return sample
            }
        }
        var changes = self
        for (typeCode, series) in bySeries {
            var series = series
            series.saved = series.saved.mapValues(moved)
            series.deleted = series.deleted.mapValues(moved)
            changes.bySeries[typeCode] = series
        }
        return changes
    }

    /// The touched series in ascending type order: writers that lock series rows while rewriting
    /// them take the locks in one order, so two of them never wait on each other in a cycle.
    public var series: [RollupSeriesChanges] {
        bySeries.keys.sorted().compactMap { bySeries[$0] }
    }
}

/// One series' share of `RollupDayChanges`: what `DayRollup.maintain` takes.
public struct RollupSeriesChanges: Sendable {
    public let typeCode: Int64
    public let style: AggregationStyle
    /// Every day a change shaped.
    public fileprivate(set) var days: Set<Int64> = []
    /// The longest cumulative sample saved (0 for discrete series).
    public fileprivate(set) var longestDuration: Int64 = 0
    /// Per day, the samples saved and deleted that shape it.
    fileprivate(set) var saved: [Int64: [StatisticsSample]] = [:]
    fileprivate(set) var deleted: [Int64: [StatisticsSample]] = [:]
    /// Days noted without their samples.
    fileprivate(set) var rebuilt: Set<Int64> = []

    fileprivate init(typeCode: Int64, style: AggregationStyle) {
        self.typeCode = typeCode
        self.style = style
    }
}

/// What a day's row becomes after some saves, or that it must be rebuilt from the day's samples.
public enum DayRollupUpdate: Sendable {
    /// The new row; nil when no sample shapes the day any more (the store deletes its row).
    case row(DayRollup.Row?)
    case needsRebuild
}

extension DayRollup {
    /// A day's new row, or nil when no sample shapes the day any more (the store then deletes its row).
    public typealias Row = (body: [UInt8], detail: [UInt8]?)

    /// Folds saved samples into a day's row (nil: the day had no row, so no sample shaped it)
    /// without the day's other samples, or says the day must be rebuilt from them (see the
    /// comment at the top of this file for when). Samples not shaping `day` are ignored. A
    /// cumulative row must come with its detail.
    public static func applying(saved: [StatisticsSample], to row: Row?, day: Int64,
                                style: AggregationStyle) throws(RollupError) -> DayRollupUpdate {
        let shaping = saved.filter { days(of: $0, style: style).contains(day) }
        guard !shaping.isEmpty else { return .row(row) }
        switch style {
        case .discrete:
            return .row(try discreteRow(day: day, row: row, replacing: [], with: [], saved: shaping))
        case .cumulative:
            return try cumulativeRow(day: day, row: row, saved: shaping).map(DayRollupUpdate.row) ?? .needsRebuild
        }
    }

    /// A discrete day's row with the entries of `slots` (of the day: 0..<96) rebuilt from `samples`
    /// (every sample starting in those slots; others are ignored) and `saved` added to the other slots.
    static func discreteRow(day: Int64, row: Row?, replacing slots: Set<Int64>, with samples: [StatisticsSample],
                            saved: [StatisticsSample]) throws(RollupError) -> Row? {
        var entries: DiscreteRollupDay.Entries = [:]
        if let row { entries = try DiscreteRollupDay.decode(body: row.body, day: day).day.entries }
        let origin = day * dayLength
        func slot(of sample: StatisticsSample) -> Int64 { (sample.start - origin) / DiscreteRollupDay.slotLength }
        if !slots.isEmpty {
            entries = entries.filter { !slots.contains(DiscreteRollupDay.slot(ofKey: $0.key)) }
            DiscreteRollupDay.add(samples.lazy.filter { DayRollup.day(of: $0.start) == day && slots.contains(slot(of: $0)) },
                                  day: day, to: &entries)
        }
        DiscreteRollupDay.add(saved.lazy.filter { !slots.contains(slot(of: $0)) }, day: day, to: &entries)
        guard !entries.isEmpty else { return nil }
        return (DiscreteRollupDay.body(entries, day: day), nil)
    }

    /// A discrete day's body in the layout written now, from a body of any layout that still
    /// decodes (see `discreteFormatVersion`): the same entries, bit for bit. A store rewriting its
    /// rows moves them to the compact layout without reading samples.
    public static func currentDiscreteBody(_ body: [UInt8], day: Int64) throws(RollupError) -> [UInt8] {
        DiscreteRollupDay.body(try DiscreteRollupDay.decode(body: body, day: day).day.entries, day: day)
    }

    /// A cumulative day's row with `saved` (all shaping the day) folded in, or nil when some saved
    /// sample lies where another source has data, so the merge needs the day's samples.
    static func cumulativeRow(day: Int64, row: Row?, saved: [StatisticsSample]) throws(RollupError) -> Row? {
        var chunk = CumulativeChunk()
        var count = 0
        if let row {
            guard let detail = row.detail else { throw RollupError("day \(day): a cumulative row without its detail") }
            let decoded = try CumulativeRollupDay.decode(body: row.body, detail: detail)
            guard let stored = decoded.day.detail else { throw RollupError("day \(day): detail not decoded") }
            chunk = stored
            count = decoded.samples
        }
        let origin = day * dayLength
        let window = origin..<(origin + dayLength)
        // Source by source, so a batch's own sources are checked against each other too.
        for (source, samples) in Dictionary(grouping: saved, by: \.source).sorted(by: { $0.key < $1.key }) {
            let others: [PrefixIntegral]
            if let sole = chunk.soleSource {
                others = sole == source ? [] : [chunk.merged]
            } else {
                others = zip(chunk.sourceIDs, chunk.sourceIntegrals).filter { $0.0 != source }.map(\.1)
            }
            for sample in samples {
                let from = Int32(truncatingIfNeeded: max(sample.start, origin) - origin)
                let to = sample.isInstant ? from + 1 : Int32(truncatingIfNeeded: min(sample.end, window.upperBound) - origin)
                if others.contains(where: { $0.hasData(from: from, to: to) }) { return nil }
            }
            let ranked = RankedSamples(samples, priority: nil, clip: window)
            let own = PrefixIntegral(MergedRate.merge(spans: ranked.spans, points: ranked.points, rankCount: 1), origin: origin)
            // The source's own integral (the merged one while it is the day's only source) and the merged one grow by `own`.
            if let sole = chunk.soleSource {
                if sole != source {
                    chunk.soleSource = nil
                    chunk.sourceIDs = [sole, source]
                    chunk.sourceIntegrals = [chunk.merged, own]
                }
            } else if chunk.sourceIDs.isEmpty {
                chunk.soleSource = source
            } else if let index = chunk.sourceIDs.firstIndex(of: source) {
                chunk.sourceIntegrals[index] = chunk.sourceIntegrals[index].adding(own)
            } else {
                chunk.sourceIDs.append(source)
                chunk.sourceIntegrals.append(own)
            }
            chunk.merged = chunk.merged.adding(own)
            count += samples.count
        }
        let encoded = CumulativeRollupDay.encode(chunk, sampleCount: count)
        return (encoded.body, encoded.detail)
    }

    /// Brings the rows of one series' changed days up to date, inside the store's write transaction
    /// (after the samples were saved or deleted), reading as little as the rules above allow:
    /// - `rows(days)`: the current rows of `days` (ascending), with their detail;
    /// - `context()`: the series' source order and longest cumulative sample, asked for only when
    ///   some day must be rebuilt (see `refresh`);
    /// - `samples(from, to)`: the series' samples starting in [from, to), as the statistics take them;
    /// - `write(rows)`: every changed day's new row (nil: delete it), ascending, in one call.
    public static func maintain(_ changes: RollupSeriesChanges,
                                rows: (_ days: [Int64]) throws -> [Int64: Row],
                                context: () throws -> (priority: SourcePriority, reach: Int64),
                                samples: (_ from: Int64, _ to: Int64) throws -> [StatisticsSample],
                                write: (_ rows: [(day: Int64, row: Row?)]) throws -> Void) throws {
        let style = changes.style
        var rebuild = changes.rebuilt
        if style == .cumulative { rebuild.formUnion(changes.deleted.keys) }
        let folded = changes.days.subtracting(rebuild).sorted()
        var written: [(day: Int64, row: Row?)] = []
        if !folded.isEmpty {
            let current = try rows(folded)
            for day in folded {
                let saved = changes.saved[day] ?? []
                switch style {
                case .discrete:
                    // A delete re-reads the slots it emptied from; saves elsewhere are folded in.
                    let slots = Set((changes.deleted[day] ?? []).map { ($0.start - day * dayLength) / DiscreteRollupDay.slotLength })
                    var reread: [StatisticsSample] = []
                    for range in instants(ofSlots: Set(slots.map { $0 + day * Int64(DiscreteRollupDay.slotsPerDay) })) {
                        reread += try samples(range.lowerBound, range.upperBound)
                    }
                    written.append((day, try discreteRow(day: day, row: current[day], replacing: slots, with: reread, saved: saved)))
                case .cumulative:
                    switch try applying(saved: saved, to: current[day], day: day, style: style) {
                    case .row(let row): written.append((day, row))
                    case .needsRebuild: rebuild.insert(day)
                    }
                }
            }
        }
        if !rebuild.isEmpty {
            let (priority, reach) = try context()
            try refresh(days: rebuild, style: style, priority: priority, reach: reach, samples: samples) { day, row in
                written.append((day, row))
            }
        }
        guard !written.isEmpty else { return }
        try write(written.sorted { $0.day < $1.day })
    }

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

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

/// Rollup rows kept as a store keeps them with `DayRollup.maintain`: saves folded into the rows,
/// deletes and overlaps with other sources answered from the samples present, a priority change
/// rebuilding every row. Counts how often maintenance had to read samples.
private struct MaintainedRows {
    let style: AggregationStyle
    var rows: [Int64: DayRollup.Row] = [:]
    var sampleReads = 0

    mutating func apply(_ changes: RollupDayChanges, present: [StatisticsSample], priority: SourcePriority) throws {
        for series in changes.series where series.style == style {
            var rows = self.rows
            var reads = 0
            try DayRollup.maintain(series, rows: { days in
                var found: [Int64: DayRollup.Row] = [:]
                for day in days { found[day] = rows[day] }
                return found
            }, context: {
                (priority, present.map { $0.end - $0.start }.max() ?? 0)
            }, samples: { from, to in
                reads += 1
                return present.filter { $0.start >= from && $0.start < to }
            }, write: { written in
                #expect(written.map(\.day) == written.map(\.day).sorted(), "rows are written in day order")
                for (day, row) in written { rows[day] = row }
            })
            self.rows = rows
            sampleReads += reads
        }
    }

    mutating func rebuild(present: [StatisticsSample], priority: SourcePriority) {
        rows = [:]
        for (day, row) in DayRollup.rows(of: present, style: style, priority: priority) { rows[day] = row }
    }

    func series(for buckets: [CalendarBucket], priority: SourcePriority, present: [StatisticsSample]) throws -> RollupSeries {
        var table = RollupRows(style: style)
        table.rows = rows
        return try table.series(for: buckets, priority: priority, present: present)
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

    /// Incremental maintenance (`DayRollup.maintain`) through random saves (often one source per
    /// batch, overlapping sources, samples sharing a slot or a start), deletes and priority changes:
    /// after every step its rows answer every query (all zones of `Scenario`, DST days included)
    /// like rows rebuilt from scratch and like the reference, and keep a row for exactly the days
    /// a rebuild has one for.
    @Test(arguments: 1...40)
    func incrementalMaintenanceMatchesRebuildAndReference(seed: Int) throws {
        var scenario = Scenario(seed: UInt64(seed) &* 7_919 &+ 13)
        var priority = scenario.priority()
        var present: [StatisticsSample] = []
        var maintained = [MaintainedRows(style: .cumulative), MaintainedRows(style: .discrete)]
        for step in 0..<16 {
            var changes = RollupDayChanges()
            switch scenario.integer(0...9) {
            case 0...5:
                var added = scenario.samples(Int(scenario.integer(1...10)))
                if scenario.chance(0.6) {
                    // One app's batch: a single source, as a phone syncing sends.
                    let source = Int32(scenario.integer(1...4))
                    for index in added.indices { added[index].source = source }
                }
                if scenario.chance(0.3), let earlier = present.randomElement(using: &scenario.generator) {
                    // The same 15-minute slot (or the same instant) as a stored sample.
                    added[0].start = earlier.start + scenario.integer(0...(10 * minute))
                    added[0].end = added[0].start + (scenario.chance(0.5) ? 0 : scenario.integer(1...(20 * minute)))
                }
                present += added
                for sample in added {
                    changes.noteSaved(typeCode: 1, style: .cumulative, sample: sample)
                    changes.noteSaved(typeCode: 2, style: .discrete, sample: sample)
                }
            case 6...8:
                guard !present.isEmpty else { continue }
                for _ in 0..<Int(scenario.integer(1...Int64(min(4, present.count)))) {
                    let removed = present.remove(at: Int(scenario.integer(0...Int64(present.count - 1))))
                    changes.noteDeleted(typeCode: 1, style: .cumulative, sample: removed)
                    changes.noteDeleted(typeCode: 2, style: .discrete, sample: removed)
                }
            default:
                priority = scenario.priority()
                maintained[0].rebuild(present: present, priority: priority)
            }
            for index in maintained.indices { try maintained[index].apply(changes, present: present, priority: priority) }
            if scenario.chance(0.3) {
                // Discrete rows as the earlier fixed-width layout wrote them: they answer, and the
                // next steps fold into and rewrite them, like rows of a store written before.
                for (day, row) in maintained[1].rows {
                    maintained[1].rows[day] = (try LegacyDiscreteBody.rewrite(row.body, day: day), nil)
                }
            }
            let buckets = try scenario.buckets()
            let context = "seed \(seed) step \(step)"
            for rows in maintained {
                var scratch = MaintainedRows(style: rows.style)
                scratch.rebuild(present: present, priority: priority)
                #expect(Set(rows.rows.keys) == Set(scratch.rows.keys), "\(context) \(rows.style): days with rows")
                let options = rows.style == .cumulative ? PropertyTests.cumulativeOptions : PropertyTests.discreteOptions
                let answers = try rows.series(for: buckets, priority: priority, present: present)
                    .statisticsCollection(buckets: buckets, options: options)
                let rebuilt = try scratch.series(for: buckets, priority: priority, present: present)
                    .statisticsCollection(buckets: buckets, options: options)
                #expect(answers.count == rebuilt.count)
                for (answer, expected) in zip(answers, rebuilt) {
                    #expect(close(answer.figures, expected.figures) && close(answer.sources, expected.sources),
                            "\(context) \(rows.style) bucket \(answer.bucket.start): \(answer.figures) vs rebuilt \(expected.figures)")
                }
                expectMatchesReference(answers, present, style: rows.style, options: options, priority: priority,
                                       context: context + " \(rows.style)")
            }
        }
    }

    /// Which saves are folded without reading samples, and which make maintenance read them.
    @Test func savesFoldWithoutReadingSamplesUnlessSourcesOverlap() throws {
        let priority = SourcePriority([2, 1])
        var cumulative = MaintainedRows(style: .cumulative)
        var discrete = MaintainedRows(style: .discrete)
        var present: [StatisticsSample] = []
        func save(_ samples: [StatisticsSample]) throws {
            present += samples
            var changes = RollupDayChanges()
            for sample in samples {
                changes.noteSaved(typeCode: 1, style: .cumulative, sample: sample)
                changes.noteSaved(typeCode: 2, style: .discrete, sample: sample)
            }
            try cumulative.apply(changes, present: present, priority: priority)
            try discrete.apply(changes, present: present, priority: priority)
        }
        // Source 1 over two days, overlapping itself, an instant among them, the same slot twice.
        try save([StatisticsSample(id: 1, start: 5 * day + hour, end: 5 * day + 2 * hour, value: 60, source: 1),
                  StatisticsSample(id: 2, start: 5 * day + hour + minute, end: 5 * day + hour + 2 * minute, value: 5, source: 1),
                  StatisticsSample(id: 3, start: 5 * day + 3 * hour, end: 5 * day + 3 * hour, value: 7, source: 1),
                  StatisticsSample(id: 4, start: 5 * day + 23 * hour, end: 6 * day + hour, value: 120, source: 1)])
        try save([StatisticsSample(id: 5, start: 5 * day + hour + 30 * minute, end: 5 * day + hour + 40 * minute, value: 4, source: 1)])
        // Source 2 where source 1 has nothing: still folded.
        try save([StatisticsSample(id: 6, start: 5 * day + 10 * hour, end: 5 * day + 11 * hour, value: 30, source: 2)])
        #expect(cumulative.sampleReads == 0 && discrete.sampleReads == 0)
        // Source 2 over source 1's hour: who wins needs the samples (and source 2 does win).
        try save([StatisticsSample(id: 7, start: 5 * day + hour, end: 5 * day + hour + 30 * minute, value: 100, source: 2)])
        #expect(cumulative.sampleReads == 1 && discrete.sampleReads == 0)
        let whole = [CalendarBucket(start: 5 * day, end: 7 * day, startOffsetSeconds: 0, endOffsetSeconds: 0)]
        let sum = try cumulative.series(for: whole, priority: priority, present: present)
            .statisticsCollection(buckets: whole, options: .cumulativeSum)[0].figures.sum
        // 291: source 2's 100 wins the first half hour (source 1's 30 and id 2's 5 there drop out),
        // then source 1's 30 and id 5's 4, the instant's 7, the 120 across midnight, source 2's own 30.
        #expect(close(sum, 291), "\(String(describing: sum))")
        // A delete: discrete re-reads the emptied slot only, cumulative rebuilds the day.
        var changes = RollupDayChanges()
        let removed = present.removeFirst()
        changes.noteDeleted(typeCode: 1, style: .cumulative, sample: removed)
        changes.noteDeleted(typeCode: 2, style: .discrete, sample: removed)
        try cumulative.apply(changes, present: present, priority: priority)
        try discrete.apply(changes, present: present, priority: priority)
        #expect(cumulative.sampleReads == 2 && discrete.sampleReads == 1)
    }
}

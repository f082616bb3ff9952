/// One UTC day of a cumulative series: the short samples that start in it, and the merged (and
/// per-source) running integrals over the day, built from every sample that touches it.
struct CumulativeChunk: Sendable {
    // Samples starting in this chunk and lasting at most one chunk; offsets from the chunk start.
    var starts: [Int32] = []
    var durations = PackedInt64Column()
    var values = PackedDoubleColumn()
    var sources = PackedInt64Column()

    var merged = PrefixIntegral()
    /// When one source alone touches the chunk its own integral is `merged`, so none is stored apart.
    var soleSource: Int32?
    var sourceIDs: [Int32] = []
    var sourceIntegrals: [PrefixIntegral] = []

    /// Computes the day's merged integral (and, unless `mergedOnly`, each source's own) from every
    /// sample touching the day starting at `origin`: the one place a day's figures are made, for
    /// the in-memory index and for the persisted rollups alike.
    mutating func summarize(_ touching: [StatisticsSample], priority: SourcePriority, origin: Int64, mergedOnly: Bool) {
        let window = origin..<(origin + CumulativeSeriesIndex.chunkLength)
        let ranked = RankedSamples(touching, priority: priority, clip: window)
        merged = PrefixIntegral(MergedRate.merge(spans: ranked.spans, points: ranked.points, rankCount: ranked.rankCount),
                                origin: origin)
        if mergedOnly { return }
        sourceIDs = []
        sourceIntegrals = []
        soleSource = nil
        if ranked.sourcesByRank.count == 1 {
            soleSource = ranked.sourcesByRank[0]
        } else if ranked.sourcesByRank.count > 1 {
            let bySource = Dictionary(grouping: touching, by: \.source)
            for source in ranked.sourcesByRank {
                let own = RankedSamples(bySource[source] ?? [], priority: nil, clip: window)
                sourceIDs.append(source)
                sourceIntegrals.append(PrefixIntegral(
                    MergedRate.merge(spans: own.spans, points: own.points, rankCount: 1), origin: origin))
            }
        }
    }

    var bytes: Int {
        starts.capacity * 4 + durations.bytes + values.bytes + sources.bytes + merged.bytes
            + sourceIDs.capacity * 4 + sourceIntegrals.reduce(0) { $0 + $1.bytes } + 256
    }
}

/// Merged and per-source sums of a cumulative type over any interval in O(log n): the timeline is cut
/// into UTC days, each holding the running integral of the merged rate function, and a Fenwick tree over
/// day totals adds whole days. Inserting or deleting a sample rebuilds only the days it touches.
/// Exactly the semantics of `statisticsCollection(of:...)`: pro-rating, source merging by priority,
/// zero-length samples, and "no sample in the interval" as absent.
public struct CumulativeSeriesIndex: Sendable, BucketFiguresAnswering {
    static let chunkLength: Int64 = 86_400_000
    /// Beyond this many whole days in one interval, their totals come from the Fenwick trees.
    static let linearChunkLimit = 16

    public private(set) var priority: SourcePriority
    public private(set) var count = 0

    private var chunkDays: [Int64] = []
    private var chunks: [CumulativeChunk] = []
    /// Samples longer than a day, kept whole: rare, and scanned when a day they cover is rebuilt.
    private var longSamples: [StatisticsSample] = []
    private var totals = FenwickTree([])
    private var nonEmpty = FenwickTree([])

    public init(priority: SourcePriority = SourcePriority([])) {
        self.priority = priority
    }

    public init<Samples: Sequence<StatisticsSample>>(_ samples: Samples,
                                                     priority: SourcePriority) throws(StatisticsError) {
        self.priority = priority
        try insert(contentsOf: samples)
    }

    /// An index of day summaries only (from persisted rollups, days ascending): it answers queries
    /// over those days but holds no samples, so it must not be updated.
    init(days: [Int64], summaries: [CumulativeChunk], priority: SourcePriority, count: Int) {
        self.priority = priority
        self.count = count
        chunkDays = days
        chunks = summaries
        totals = FenwickTree(summaries.map(\.merged.total))
        nonEmpty = FenwickTree(summaries.map { $0.merged.isEmpty ? 0 : 1 })
    }

    // MARK: Updates

    public mutating func insert(_ sample: StatisticsSample) throws(StatisticsError) {
        try insert(contentsOf: CollectionOfOne(sample))
    }

    /// Adds many samples, rebuilding each touched day once. All or nothing: if one sample fails
    /// `StatisticsSample.validate()`, none is added.
    public mutating func insert<Samples: Sequence<StatisticsSample>>(contentsOf incoming: Samples) throws(StatisticsError) {
        let samples = Array(incoming)
        for sample in samples { try sample.validate() }
        var touched = Set<Int64>()
        var added = 0
        for sample in samples {
            added += 1
            let days = Self.days(of: sample)
            if Self.isShort(sample) {
                let day = days.lowerBound
                let index = ensureChunk(day)
                let offset = Int32(truncatingIfNeeded: sample.start - day * Self.chunkLength)
                chunks[index].starts.append(offset)
                chunks[index].durations.append(max(0, sample.end - sample.start))
                chunks[index].values.append(sample.value)
                chunks[index].sources.append(Int64(sample.source))
            } else {
                longSamples.append(sample)
            }
            for day in days {
                _ = ensureChunk(day)
                touched.insert(day)
            }
        }
        guard added > 0 else { return }
        count += added
        rebuild(days: touched)
    }

    /// Removes one sample equal in start, end, value and source (the id is not kept: equal samples are
    /// interchangeable for sums). Returns false when no such sample is indexed.
    @discardableResult
    public mutating func delete(_ sample: StatisticsSample) -> Bool {
        delete(contentsOf: CollectionOfOne(sample)) == 1
    }

    /// Removes samples, rebuilding each touched day once; returns how many were found.
    @discardableResult
    public mutating func delete<Samples: Sequence<StatisticsSample>>(contentsOf samples: Samples) -> Int {
        var touched = Set<Int64>()
        var removed = 0
        for sample in samples where remove(sample) {
            removed += 1
            for day in Self.days(of: sample) { touched.insert(day) }
        }
        count -= removed
        rebuild(days: touched)
        return removed
    }

    /// A new source order changes which source wins every overlap, so every day's merged integral is
    /// rebuilt; per-source integrals do not depend on the order and stay.
    public mutating func setPriority(_ newPriority: SourcePriority) {
        guard newPriority != priority else { return }
        priority = newPriority
        rebuild(days: Set(chunkDays), mergedOnly: true)
    }

    private mutating func remove(_ sample: StatisticsSample) -> Bool {
        if !Self.isShort(sample) {
            guard let index = longSamples.firstIndex(where: {
                $0.start == sample.start && $0.end == sample.end && $0.value == sample.value && $0.source == sample.source
            }) else { return false }
            longSamples.remove(at: index)
            return true
        }
        let day = Self.days(of: sample).lowerBound
        let index = lowerBound(chunkDays, day)
        guard index < chunkDays.count, chunkDays[index] == day else { return false }
        let offset = Int32(truncatingIfNeeded: sample.start - day * Self.chunkLength)
        let duration = max(0, sample.end - sample.start)
        for position in chunks[index].starts.indices where chunks[index].starts[position] == offset
            && chunks[index].durations[position] == duration && chunks[index].sources[position] == Int64(sample.source)
            && chunks[index].values[position] == sample.value {
            chunks[index].starts.remove(at: position)
            chunks[index].durations.remove(at: position)
            chunks[index].values.remove(at: position)
            chunks[index].sources.remove(at: position)
            return true
        }
        return false
    }

    static func isShort(_ sample: StatisticsSample) -> Bool {
        sample.end - sample.start <= chunkLength
    }

    /// The UTC days a sample touches: those its [start, end) overlaps, or the day of its instant.
    static func days(of sample: StatisticsSample) -> ClosedRange<Int64> {
        let first = floorDivide(sample.start, chunkLength)
        guard sample.end > sample.start else { return first...first }
        return first...floorDivide(sample.end - 1, chunkLength)
    }

    /// The index of the chunk for `day`, created empty when missing.
    private mutating func ensureChunk(_ day: Int64) -> Int {
        let index = lowerBound(chunkDays, day)
        if index < chunkDays.count, chunkDays[index] == day { return index }
        chunkDays.insert(day, at: index)
        chunks.insert(CumulativeChunk(), at: index)
        return index
    }

    private mutating func rebuild(days: Set<Int64>, mergedOnly: Bool = false) {
        guard !days.isEmpty else { return }
        let structureChanged = totals.count != chunks.count
        var changed: [(index: Int, totalDelta: Double, presenceDelta: Double)] = []
        for day in days.sorted() {
            let index = lowerBound(chunkDays, day)
            guard index < chunkDays.count, chunkDays[index] == day else { continue }
            let oldTotal = chunks[index].merged.total
            let wasEmpty = chunks[index].merged.isEmpty
            rebuildChunk(at: index, mergedOnly: mergedOnly)
            let isEmpty = chunks[index].merged.isEmpty
            changed.append((index, chunks[index].merged.total - oldTotal, wasEmpty == isEmpty ? 0 : (isEmpty ? -1 : 1)))
        }
        if structureChanged || totals.updatesSinceRebuild > max(1024, chunks.count) {
            totals = FenwickTree(chunks.map(\.merged.total))
            nonEmpty = FenwickTree(chunks.map { $0.merged.isEmpty ? 0 : 1 })
        } else {
            for change in changed {
                if change.totalDelta != 0 { totals.add(change.totalDelta, at: change.index) }
                if change.presenceDelta != 0 { nonEmpty.add(change.presenceDelta, at: change.index) }
            }
        }
    }

    /// Rebuilds one day from the samples touching it: its own, the previous day's that run past
    /// midnight, and long samples covering it.
    private mutating func rebuildChunk(at index: Int, mergedOnly: Bool) {
        let day = chunkDays[index]
        let origin = day * Self.chunkLength
        let window = origin..<(origin + Self.chunkLength)
        var touching: [StatisticsSample] = []
        touching.reserveCapacity(chunks[index].starts.count + 16)
        appendSamples(of: index, into: &touching, window: window)
        if index > 0, chunkDays[index - 1] == day - 1 {
            appendSamples(of: index - 1, into: &touching, window: window)
        }
        for sample in longSamples where sample.start < window.upperBound && sample.end > window.lowerBound {
            touching.append(sample)
        }
        chunks[index].summarize(touching, priority: priority, origin: origin, mergedOnly: mergedOnly)
    }

    private func appendSamples(of index: Int, into samples: inout [StatisticsSample], window: Range<Int64>) {
        let origin = chunkDays[index] * Self.chunkLength
        let chunk = chunks[index]
        for position in chunk.starts.indices {
            let start = origin + Int64(chunk.starts[position])
            let end = start + chunk.durations[position]
            let touches = end > start ? (start < window.upperBound && end > window.lowerBound) : window.contains(start)
            if touches {
                samples.append(StatisticsSample(id: 0, start: start, end: end, value: chunk.values[position],
                                                source: Int32(truncatingIfNeeded: chunk.sources[position])))
            }
        }
    }

    // MARK: Queries

    /// The merged sum over [start, end) and whether any sample lies there.
    public func mergedSum(from start: Int64, to end: Int64) -> (sum: Double, hasData: Bool) {
        guard start < end else { return (0, false) }
        let last = upperBound(chunkDays, floorDivide(end - 1, Self.chunkLength))
        // Chunks before this index end at or before `end`: they are whole unless they hold `start`.
        let wholeLimit = upperBound(chunkDays, floorDivide(end, Self.chunkLength) - 1)
        var index = lowerBound(chunkDays, floorDivide(start, Self.chunkLength))
        var sum = 0.0
        var hasData = false
        while index < last {
            let origin = chunkDays[index] * Self.chunkLength
            if origin >= start, index < wholeLimit {
                if wholeLimit - index > Self.linearChunkLimit {
                    sum += totals.sum(index, wholeLimit)
                    hasData = hasData || nonEmpty.sum(index, wholeLimit) > 0.5
                } else {
                    for whole in index..<wholeLimit {
                        sum += chunks[whole].merged.total
                        hasData = hasData || !chunks[whole].merged.isEmpty
                    }
                }
                index = wholeLimit
                continue
            }
            let low = Int32(max(start, origin) - origin)
            let high = Int32(min(end, origin + Self.chunkLength) - origin)
            sum += chunks[index].merged.sum(from: low, to: high)
            hasData = hasData || chunks[index].merged.hasData(from: low, to: high)
            index += 1
        }
        return (sum, hasData)
    }

    /// Each source's own (unmerged) sum over [start, end), in priority order, sources with data only.
    public func sourceSums(from start: Int64, to end: Int64) -> [(source: Int32, sum: Double)] {
        guard start < end else { return [] }
        var found: [(source: Int32, sum: Double)] = []
        func add(_ source: Int32, _ integral: PrefixIntegral, _ low: Int32, _ high: Int32, whole: Bool) {
            guard whole ? !integral.isEmpty : integral.hasData(from: low, to: high) else { return }
            let amount = whole ? integral.total : integral.sum(from: low, to: high)
            if let slot = found.firstIndex(where: { $0.source == source }) {
                found[slot].sum += amount
            } else {
                found.append((source, amount))
            }
        }
        let last = upperBound(chunkDays, floorDivide(end - 1, Self.chunkLength))
        var index = lowerBound(chunkDays, floorDivide(start, Self.chunkLength))
        while index < last {
            let origin = chunkDays[index] * Self.chunkLength
            let low = Int32(max(start, origin) - origin)
            let high = Int32(min(end, origin + Self.chunkLength) - origin)
            let whole = low == 0 && Int64(high) == Self.chunkLength
            let chunk = chunks[index]
            if let sole = chunk.soleSource {
                add(sole, chunk.merged, low, high, whole: whole)
            } else {
                for (source, integral) in zip(chunk.sourceIDs, chunk.sourceIntegrals) {
                    add(source, integral, low, high, whole: whole)
                }
            }
            index += 1
        }
        return found.sorted { priority.rank(of: $0.source) < priority.rank(of: $1.source) }
    }

    /// One bucket's figures; options other than `cumulativeSum` and `separateBySource` have nothing
    /// to report for a cumulative type.
    public func figures(for bucket: CalendarBucket, options: StatisticsOptions) -> BucketStatistics {
        var answer = BucketStatistics(bucket: bucket, figures: StatisticsFigures())
        guard options.contains(.cumulativeSum) else { return answer }
        let merged = mergedSum(from: bucket.start, to: bucket.end)
        if merged.hasData { answer.figures.sum = merged.sum }
        if options.contains(.separateBySource) {
            answer.sources = sourceSums(from: bucket.start, to: bucket.end).map {
                SourceFigures(source: $0.source, figures: StatisticsFigures(sum: $0.sum))
            }
        }
        return answer
    }

    /// Bytes held by the index's arrays (capacities), for memory budgeting.
    public var memoryBytes: Int {
        chunks.reduce(0) { $0 + $1.bytes } + chunkDays.capacity * 8 + longSamples.capacity * 40
            + chunks.count * 16 + 64
    }
}

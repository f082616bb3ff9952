/// One UTC day of a discrete series: samples starting in it, ordered by (start, end, id), with a
/// summary per block of `blockSize` samples, a day total and per-source day totals.
struct DiscreteChunk: Sendable {
    static let blockSize = 64

    var starts: [Int32] = []
    var durations = PackedInt64Column()
    var values = PackedDoubleColumn()
    var ids = PackedInt64Column()
    var sources = PackedInt64Column()

    var blocks: [DiscreteAccumulator] = []
    var total = DiscreteAccumulator()
    var sourceIDs: [Int32] = []
    var sourceTotals: [DiscreteAccumulator] = []

    var count: Int { starts.count }

    init() {}

    /// The day starting at `origin` from its samples, already sorted by (start, end, id).
    init(sorted: [StatisticsSample], origin: Int64) {
        starts.reserveCapacity(sorted.count)
        values.reserveCapacity(sorted.count)
        durations.reserveCapacity(sorted.count)
        ids.reserveCapacity(sorted.count)
        sources.reserveCapacity(sorted.count)
        for sample in sorted {
            starts.append(Int32(truncatingIfNeeded: sample.start - origin))
            durations.append(sample.end - sample.start)
            values.append(sample.value)
            ids.append(sample.id)
            sources.append(Int64(sample.source))
        }
        refreshBlocks(from: 0, origin: origin)
        refreshSourceTotals(origin: origin)
    }

    func key(_ position: Int) -> (start: Int32, end: Int64, id: Int64) {
        (starts[position], Int64(starts[position]) + durations[position], ids[position])
    }

    func add(_ position: Int, origin: Int64, to accumulator: inout DiscreteAccumulator) {
        let start = origin + Int64(starts[position])
        accumulator.add(start: start, end: start + durations[position], id: ids[position], value: values[position])
    }

    /// Recomputes block summaries from the block holding `position` onward (later samples shifted).
    mutating func refreshBlocks(from position: Int, origin: Int64) {
        let firstBlock = position / Self.blockSize
        let blockCount = (count + Self.blockSize - 1) / Self.blockSize
        blocks.removeSubrange(min(firstBlock, blocks.count)...)
        for block in firstBlock..<blockCount {
            var summary = DiscreteAccumulator()
            for sample in (block * Self.blockSize)..<min(count, (block + 1) * Self.blockSize) {
                add(sample, origin: origin, to: &summary)
            }
            blocks.append(summary)
        }
        total = DiscreteAccumulator()
        for summary in blocks { total.merge(summary) }
    }

    mutating func refreshSourceTotals(origin: Int64) {
        sourceIDs = []
        sourceTotals = []
        for position in 0..<count {
            let slot: Int
            let source = Int32(truncatingIfNeeded: sources[position])
            if let found = sourceIDs.firstIndex(of: source) {
                slot = found
            } else {
                slot = sourceIDs.count
                sourceIDs.append(source)
                sourceTotals.append(DiscreteAccumulator())
            }
            add(position, origin: origin, to: &sourceTotals[slot])
        }
    }

    /// Aggregate of positions [low, high): whole blocks from their summaries, the ends sample by sample.
    func aggregate(_ low: Int, _ high: Int, origin: Int64) -> DiscreteAccumulator {
        var result = DiscreteAccumulator()
        var position = low
        while position < high {
            if position % Self.blockSize == 0, position + Self.blockSize <= high {
                result.merge(blocks[position / Self.blockSize])
                position += Self.blockSize
            } else {
                add(position, origin: origin, to: &result)
                position += 1
            }
        }
        return result
    }

    var bytes: Int {
        starts.capacity * 4 + durations.bytes + values.bytes + ids.bytes + sources.bytes
            + blocks.capacity * MemoryLayout<DiscreteAccumulator>.stride
            + sourceTotals.capacity * MemoryLayout<DiscreteAccumulator>.stride + 256
    }
}

/// Bottom-up segment tree of day totals, so an interval of many whole days merges O(log days) nodes.
struct AccumulatorTree: Sendable {
    private var leafCount = 0
    private var nodes: [DiscreteAccumulator] = []

    init(_ leaves: [DiscreteAccumulator]) {
        leafCount = leaves.count
        nodes = [DiscreteAccumulator](repeating: DiscreteAccumulator(), count: 2 * leaves.count)
        for (index, leaf) in leaves.enumerated() { nodes[leafCount + index] = leaf }
        var node = leafCount - 1
        while node > 0 {
            nodes[node] = nodes[2 * node]
            nodes[node].merge(nodes[2 * node + 1])
            node -= 1
        }
    }

    var count: Int { leafCount }

    mutating func update(_ index: Int, _ leaf: DiscreteAccumulator) {
        var node = index + leafCount
        nodes[node] = leaf
        node /= 2
        while node > 0 {
            nodes[node] = nodes[2 * node]
            nodes[node].merge(nodes[2 * node + 1])
            node /= 2
        }
    }

    /// Merge of leaves [start, end); the merge is order-independent.
    func aggregate(_ start: Int, _ end: Int) -> DiscreteAccumulator {
        var result = DiscreteAccumulator()
        var low = start + leafCount
        var high = end + leafCount
        while low < high {
            if low & 1 == 1 { result.merge(nodes[low]); low += 1 }
            if high & 1 == 1 { high -= 1; result.merge(nodes[high]) }
            low /= 2
            high /= 2
        }
        return result
    }
}

/// Average, minimum, maximum and most recent of a discrete type over any interval (samples belong to
/// the interval holding their start) in O(log n + block size), kept current by inserts and deletes.
/// No source merging: as in HealthKit, discrete figures take every source's samples.
public struct DiscreteSeriesIndex: Sendable, BucketFiguresAnswering {
    static let chunkLength: Int64 = 86_400_000
    static let linearChunkLimit = 16

    /// Only orders the per-source answers; discrete figures are never merged by priority.
    public private(set) var priority: SourcePriority
    public private(set) var count = 0

    private var chunkDays: [Int64] = []
    private var chunks: [DiscreteChunk] = []
    private var dayTotals = AccumulatorTree([])

    public init(priority: SourcePriority = SourcePriority([])) {
        self.priority = priority
    }

    public init<Samples: Sequence<StatisticsSample>>(_ samples: Samples,
                                                     priority: SourcePriority) throws(StatisticsError) {
        self.priority = priority
        try insert(contentsOf: samples)
    }

    public mutating func setPriority(_ newPriority: SourcePriority) {
        priority = newPriority
    }

    // MARK: Updates

    public mutating func insert(_ sample: StatisticsSample) throws(StatisticsError) {
        try sample.validate()
        let day = floorDivide(sample.start, Self.chunkLength)
        let (index, created) = ensureChunk(day)
        let origin = day * Self.chunkLength
        let offset = Int32(truncatingIfNeeded: sample.start - origin)
        let key = (offset, sample.end, sample.id)
        // After every sample with a key not above the new one: appends stay appends.
        var low = 0
        var high = chunks[index].count
        while low < high {
            let middle = (low + high) / 2
            let existing = chunks[index].key(middle)
            if (existing.start, existing.end + origin, existing.id) <= key { low = middle + 1 } else { high = middle }
        }
        chunks[index].starts.insert(offset, at: low)
        chunks[index].durations.insert(sample.end - sample.start, at: low)
        chunks[index].values.insert(sample.value, at: low)
        chunks[index].ids.insert(sample.id, at: low)
        chunks[index].sources.insert(Int64(sample.source), at: low)
        chunks[index].refreshBlocks(from: low, origin: origin)
        if let slot = chunks[index].sourceIDs.firstIndex(of: sample.source) {
            chunks[index].sourceTotals[slot].add(start: sample.start, end: sample.end, id: sample.id, value: sample.value)
        } else {
            var fresh = DiscreteAccumulator()
            fresh.add(start: sample.start, end: sample.end, id: sample.id, value: sample.value)
            chunks[index].sourceIDs.append(sample.source)
            chunks[index].sourceTotals.append(fresh)
        }
        count += 1
        refreshDayTotals(changed: [index], structureChanged: created)
    }

    /// Adds many samples, re-sorting each touched day once. All or nothing, as for cumulative.
    public mutating func insert<Samples: Sequence<StatisticsSample>>(contentsOf incoming: Samples) throws(StatisticsError) {
        let samples = Array(incoming)
        for sample in samples { try sample.validate() }
        var byDay: [Int64: [StatisticsSample]] = [:]
        for sample in samples {
            byDay[floorDivide(sample.start, Self.chunkLength), default: []].append(sample)
        }
        guard !byDay.isEmpty else { return }
        var created = false
        for (day, added) in byDay {
            let (index, isNew) = ensureChunk(day)
            created = created || isNew
            var all = decodedSamples(of: index)
            all.append(contentsOf: added)
            all.sort { ($0.start, $0.end, $0.id) < ($1.start, $1.end, $1.id) }
            replaceChunk(at: index, with: all)
            count += added.count
        }
        refreshDayTotals(changed: byDay.keys.map { lowerBound(chunkDays, $0) }, structureChanged: created)
    }

    /// Removes the sample with this start, end and id (value and source must match too).
    @discardableResult
    public mutating func delete(_ sample: StatisticsSample) -> Bool {
        let day = floorDivide(sample.start, Self.chunkLength)
        let index = lowerBound(chunkDays, day)
        guard index < chunkDays.count, chunkDays[index] == day else { return false }
        let origin = day * Self.chunkLength
        let offset = Int32(truncatingIfNeeded: sample.start - origin)
        var position = lowerBound(chunks[index].starts, offset)
        while position < chunks[index].count, chunks[index].starts[position] == offset {
            let key = chunks[index].key(position)
            if key.end + origin == sample.end, key.id == sample.id, chunks[index].sources[position] == Int64(sample.source),
               chunks[index].values[position] == sample.value {
                chunks[index].starts.remove(at: position)
                chunks[index].durations.remove(at: position)
                chunks[index].values.remove(at: position)
                chunks[index].ids.remove(at: position)
                chunks[index].sources.remove(at: position)
                chunks[index].refreshBlocks(from: position, origin: origin)
                chunks[index].refreshSourceTotals(origin: origin)
                count -= 1
                refreshDayTotals(changed: [index], structureChanged: false)
                return true
            }
            position += 1
        }
        return false
    }

    /// Removes many samples, rebuilding each touched day once; returns how many were found.
    @discardableResult
    public mutating func delete<Samples: Sequence<StatisticsSample>>(contentsOf samples: Samples) -> Int {
        var byDay: [Int64: [StatisticsSample: Int]] = [:]
        for sample in samples {
            byDay[floorDivide(sample.start, Self.chunkLength), default: [:]][sample, default: 0] += 1
        }
        var removed = 0
        var changed: [Int] = []
        for (day, wanted) in byDay {
            let index = lowerBound(chunkDays, day)
            guard index < chunkDays.count, chunkDays[index] == day else { continue }
            var remaining = wanted
            let kept = decodedSamples(of: index).filter { sample in
                guard let left = remaining[sample], left > 0 else { return true }
                remaining[sample] = left - 1
                return false
            }
            let found = chunks[index].count - kept.count
            guard found > 0 else { continue }
            removed += found
            replaceChunk(at: index, with: kept)
            changed.append(index)
        }
        count -= removed
        refreshDayTotals(changed: changed, structureChanged: false)
        return removed
    }

    /// Re-encodes a day from samples already sorted by (start, end, id).
    private mutating func replaceChunk(at index: Int, with sorted: [StatisticsSample]) {
        chunks[index] = DiscreteChunk(sorted: sorted, origin: chunkDays[index] * Self.chunkLength)
    }

    private mutating func ensureChunk(_ day: Int64) -> (index: Int, created: Bool) {
        let index = lowerBound(chunkDays, day)
        if index < chunkDays.count, chunkDays[index] == day { return (index, false) }
        chunkDays.insert(day, at: index)
        chunks.insert(DiscreteChunk(), at: index)
        return (index, true)
    }

    private mutating func refreshDayTotals(changed: [Int], structureChanged: Bool) {
        if structureChanged || dayTotals.count != chunks.count {
            dayTotals = AccumulatorTree(chunks.map(\.total))
        } else {
            for index in changed { dayTotals.update(index, chunks[index].total) }
        }
    }

    private func decodedSamples(of index: Int) -> [StatisticsSample] {
        let origin = chunkDays[index] * Self.chunkLength
        let chunk = chunks[index]
        return (0..<chunk.count).map { position in
            let start = origin + Int64(chunk.starts[position])
            return StatisticsSample(id: chunk.ids[position], start: start, end: start + chunk.durations[position],
                                    value: chunk.values[position], source: Int32(truncatingIfNeeded: chunk.sources[position]))
        }
    }

    // MARK: Queries

    /// Aggregate of every sample starting in [start, end), and per source when `bySource` is set.
    func aggregate(from start: Int64, to end: Int64,
                   bySource: Bool) -> (total: DiscreteAccumulator, sources: [(Int32, DiscreteAccumulator)]) {
        var total = DiscreteAccumulator()
        var sources: [(Int32, DiscreteAccumulator)] = []
        guard start < end else { return (total, sources) }
        func addSource(_ source: Int32, _ accumulator: DiscreteAccumulator) {
            DiscreteAccumulator.merge(accumulator, of: source, into: &sources)
        }
        let last = upperBound(chunkDays, floorDivide(end - 1, Self.chunkLength))
        let wholeLimit = upperBound(chunkDays, floorDivide(end, Self.chunkLength) - 1)
        var index = lowerBound(chunkDays, floorDivide(start, Self.chunkLength))
        while index < last {
            let origin = chunkDays[index] * Self.chunkLength
            if origin >= start, index < wholeLimit {
                if wholeLimit - index > Self.linearChunkLimit && !bySource {
                    total.merge(dayTotals.aggregate(index, wholeLimit))
                    index = wholeLimit
                } else {
                    total.merge(chunks[index].total)
                    if bySource {
                        for (source, summary) in zip(chunks[index].sourceIDs, chunks[index].sourceTotals) {
                            addSource(source, summary)
                        }
                    }
                    index += 1
                }
                continue
            }
            let chunk = chunks[index]
            let low = lowerBound(chunk.starts, Int32(max(start, origin) - origin))
            let high = end >= origin + Self.chunkLength ? chunk.count : lowerBound(chunk.starts, Int32(end - origin))
            total.merge(chunk.aggregate(low, high, origin: origin))
            if bySource {
                for position in low..<high {
                    var single = DiscreteAccumulator()
                    chunk.add(position, origin: origin, to: &single)
                    addSource(Int32(truncatingIfNeeded: chunk.sources[position]), single)
                }
            }
            index += 1
        }
        return (total, sources)
    }

    /// One bucket's figures.
    public func figures(for bucket: CalendarBucket, options: StatisticsOptions) -> BucketStatistics {
        let found = aggregate(from: bucket.start, to: bucket.end, bySource: options.contains(.separateBySource))
        return DiscreteAccumulator.bucketStatistics(bucket, found.total, found.sources, options: options, priority: priority)
    }

    public var memoryBytes: Int {
        chunks.reduce(0) { $0 + $1.bytes } + chunkDays.capacity * 8
            + 2 * chunks.count * MemoryLayout<DiscreteAccumulator>.stride + 64
    }
}

/// One UTC day of a discrete series as its rollup row holds it: per 15-minute slot and source, the
/// count, sum, min, max and most recent sample of the samples starting there. 15 minutes divides
/// every UTC offset in use (+5:45, +12:45...), so local midnights and hours fall on slot edges and
/// a dashboard's buckets are answered from slots alone; a bucket edge inside a slot is answered
/// from that slot's samples, which the store reads for those slots only (`DiscreteRollupDays.edgeSlots`).
struct DiscreteRollupDay: Sendable {
    /// Per (slot, source) entry, sorted by slot then source.
    var slots: [Int32] = []
    var sources: [Int32] = []
    var accumulators: [DiscreteAccumulator] = []
    var total = DiscreteAccumulator()
    var sourceTotals: [(source: Int32, accumulator: DiscreteAccumulator)] = []

    static let slotLength: Int64 = 900_000
    static let slotsPerDay = Int32(DayRollup.dayLength / slotLength)

    /// A day's (slot, source) entries keyed `slot << 32 | source` (so sorting the keys sorts by slot, then source).
    typealias Entries = [Int64: DiscreteAccumulator]

    static func key(slot: Int64, source: Int32) -> Int64 { slot << 32 | Int64(UInt32(bitPattern: source)) }

    static func slot(ofKey key: Int64) -> Int64 { key >> 32 }

    /// Adds samples starting in the day to its entries.
    static func add(_ samples: some Sequence<StatisticsSample>, day: Int64, to entries: inout Entries) {
        let origin = day * DayRollup.dayLength
        for sample in samples {
            entries[key(slot: (sample.start - origin) / slotLength, source: sample.source), default: DiscreteAccumulator()]
                .add(start: sample.start, end: sample.end, id: sample.id, value: sample.value)
        }
    }

    static func encode(day: Int64, samples: [StatisticsSample], into writer: inout RollupWriter) {
        var entries: Entries = [:]
        add(samples, day: day, to: &entries)
        encode(entries, into: &writer)
    }

    static func encode(_ entries: Entries, into writer: inout RollupWriter) {
        writer.int64(Int64(entries.count))
        for (key, accumulator) in entries.sorted(by: { $0.key < $1.key }) {
            writer.int32(Int32(truncatingIfNeeded: key >> 32))
            writer.int32(Int32(bitPattern: UInt32(truncatingIfNeeded: key)))
            writer.int64(Int64(accumulator.count))
            writer.double(accumulator.sum)
            writer.double(accumulator.minimum)
            writer.double(accumulator.maximum)
            writer.int64(accumulator.recentStart)
            writer.int64(accumulator.recentEnd)
            writer.int64(accumulator.recentID)
            writer.double(accumulator.recentValue)
        }
    }

    init(from reader: inout RollupReader) throws(RollupError) {
        let count = try reader.count()
        slots.reserveCapacity(count)
        sources.reserveCapacity(count)
        accumulators.reserveCapacity(count)
        for _ in 0..<count {
            let slot = try reader.int32()
            guard slot >= 0, slot < Self.slotsPerDay, slots.last.map({ $0 <= slot }) ?? true else {
                throw RollupError("slot \(slot) out of order in a rollup body")
            }
            slots.append(slot)
            let source = try reader.int32()
            sources.append(source)
            var accumulator = DiscreteAccumulator()
            accumulator.count = Int(try reader.int64())
            accumulator.sum = try reader.double()
            accumulator.minimum = try reader.double()
            accumulator.maximum = try reader.double()
            accumulator.recentStart = try reader.int64()
            accumulator.recentEnd = try reader.int64()
            accumulator.recentID = try reader.int64()
            accumulator.recentValue = try reader.double()
            guard accumulator.count > 0 else { throw RollupError("empty slot in a rollup body") }
            accumulators.append(accumulator)
            total.merge(accumulator)
            if let found = sourceTotals.firstIndex(where: { $0.source == source }) {
                sourceTotals[found].accumulator.merge(accumulator)
            } else {
                sourceTotals.append((source, accumulator))
            }
        }
    }

    /// The entries as `encode` takes them.
    var entries: Entries {
        var entries: Entries = [:]
        entries.reserveCapacity(slots.count)
        for index in slots.indices {
            entries[Self.key(slot: Int64(slots[index]), source: sources[index])] = accumulators[index]
        }
        return entries
    }

    var bytes: Int {
        slots.capacity * 8 + accumulators.capacity * MemoryLayout<DiscreteAccumulator>.stride
            + sourceTotals.capacity * (8 + MemoryLayout<DiscreteAccumulator>.stride) + 128
    }
}

/// A discrete series over a span of days from rollup rows, plus the samples of the slots where
/// some asked-about bucket edge falls inside a slot. Same semantics as `DiscreteSeriesIndex`.
struct DiscreteRollupDays: Sendable, BucketFiguresAnswering {
    let priority: SourcePriority
    private let days: [Int64]
    private let rollups: [DiscreteRollupDay]
    private let dayTotals: AccumulatorTree
    /// Absolute slot numbers (instant / slot length) whose samples are in `edgeSamples`.
    let edgeSlots: Set<Int64>
    /// Sorted by start.
    private let edgeSamples: [StatisticsSample]
    private let edgeStarts: [Int64]

    init(priority: SourcePriority, days: [Int64], rollups: [DiscreteRollupDay], edgeSlots: Set<Int64>,
         edgeSamples: [StatisticsSample]) {
        self.priority = priority
        self.days = days
        self.rollups = rollups
        dayTotals = AccumulatorTree(rollups.map(\.total))
        self.edgeSlots = edgeSlots
        let sorted = edgeSamples.sorted { $0.start < $1.start }
        self.edgeSamples = sorted
        edgeStarts = sorted.map(\.start)
    }

    static func slot(of instant: Int64) -> Int64 { floorDivide(instant, DiscreteRollupDay.slotLength) }

    /// The slots whose samples a query with these bucket edges needs: those an edge falls inside.
    static func edgeSlots(for edges: [Int64]) -> Set<Int64> {
        Set(edges.filter { $0 % DiscreteRollupDay.slotLength != 0 }.map(slot(of:)))
    }

    var count: Int { rollups.reduce(0) { $0 + $1.total.count } }

    var memoryBytes: Int {
        rollups.reduce(0) { $0 + $1.bytes } + days.capacity * 8 + 2 * rollups.count * MemoryLayout<DiscreteAccumulator>.stride
            + edgeSamples.capacity * MemoryLayout<StatisticsSample>.stride + edgeStarts.capacity * 8 + edgeSlots.count * 16 + 64
    }

    /// Whether every slot a bucket edge cuts is loaded.
    func hasEdges(from start: Int64, to end: Int64) -> Bool {
        (start % DiscreteRollupDay.slotLength == 0 || edgeSlots.contains(Self.slot(of: start)))
            && (end % DiscreteRollupDay.slotLength == 0 || edgeSlots.contains(Self.slot(of: end)))
    }

    func aggregate(from start: Int64, to end: Int64,
                   bySource: Bool) -> (total: DiscreteAccumulator, sources: [(Int32, DiscreteAccumulator)]) {
        var total = DiscreteAccumulator()
        var sources: [(Int32, DiscreteAccumulator)] = []
        guard start < end else { return (total, sources) }
        func addSource(_ source: Int32, _ accumulator: DiscreteAccumulator) {
            DiscreteAccumulator.merge(accumulator, of: source, into: &sources)
        }
        let length = DayRollup.dayLength
        let last = upperBound(days, floorDivide(end - 1, length))
        let wholeLimit = upperBound(days, floorDivide(end, length) - 1)
        var index = lowerBound(days, floorDivide(start, length))
        while index < last {
            let origin = days[index] * length
            if origin >= start, index < wholeLimit {
                if wholeLimit - index > 16 && !bySource {
                    total.merge(dayTotals.aggregate(index, wholeLimit))
                    index = wholeLimit
                } else {
                    total.merge(rollups[index].total)
                    if bySource { for (source, summary) in rollups[index].sourceTotals { addSource(source, summary) } }
                    index += 1
                }
                continue
            }
            let low = max(start, origin)
            let high = min(end, origin + length)
            let rollup = rollups[index]
            var cutSlots: [Int32] = []
            for entry in rollup.slots.indices {
                let slotStart = origin + Int64(rollup.slots[entry]) * DiscreteRollupDay.slotLength
                let slotEnd = slotStart + DiscreteRollupDay.slotLength
                if slotEnd <= low || slotStart >= high { continue }
                if slotStart >= low && slotEnd <= high {
                    total.merge(rollup.accumulators[entry])
                    if bySource { addSource(rollup.sources[entry], rollup.accumulators[entry]) }
                } else if cutSlots.last != rollup.slots[entry] {
                    cutSlots.append(rollup.slots[entry])
                }
            }
            // A slot the range cuts: its samples one by one (loaded for exactly these slots).
            for slot in cutSlots {
                let slotStart = origin + Int64(slot) * DiscreteRollupDay.slotLength
                let from = max(low, slotStart)
                let to = min(high, slotStart + DiscreteRollupDay.slotLength)
                var position = lowerBound(edgeStarts, from)
                while position < edgeStarts.count, edgeStarts[position] < to {
                    let sample = edgeSamples[position]
                    total.add(start: sample.start, end: sample.end, id: sample.id, value: sample.value)
                    if bySource {
                        var single = DiscreteAccumulator()
                        single.add(start: sample.start, end: sample.end, id: sample.id, value: sample.value)
                        addSource(sample.source, single)
                    }
                    position += 1
                }
            }
            index += 1
        }
        return (total, sources)
    }

    func figures(for bucket: CalendarBucket, options: StatisticsOptions) -> BucketStatistics {
        let found = aggregate(from: bucket.start, to: bucket.end, bySource: options.contains(.separateBySource))
        return DiscreteAccumulator.bucketStatistics(bucket, found.total, found.sources, options: options, priority: priority)
    }
}

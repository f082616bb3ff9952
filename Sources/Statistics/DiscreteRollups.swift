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

    /// A day's row body in the compact layout (`DayRollup.discreteFormatVersion`): the sample
    /// count, then per entry (slot, then source order) the slot as a byte, the source, the count,
    /// a byte saying which of sum, minimum, maximum and most recent value are whole numbers
    /// (stored as varints; the others as their 8 bytes), the most recent sample's start as an
    /// offset into its slot, its end after its start, and its id after the previous entry's. A
    /// day of readings every few minutes takes about 20 bytes per slot instead of 72, so a day's
    /// row fits in its table page without overflow pages and a year of days is a quarter of the
    /// pages to read. Exact: every field decodes to the same bits.
    static func body(_ entries: Entries, day: Int64) -> [UInt8] {
        var writer = RollupWriter()
        writer.byte(DayRollup.discreteFormatVersion)
        writer.varint(UInt64(entries.values.reduce(0) { $0 + $1.count }))
        writer.varint(UInt64(entries.count))
        let origin = day * DayRollup.dayLength
        var previousID: Int64 = 0
        for (key, accumulator) in entries.sorted(by: { $0.key < $1.key }) {
            let slot = Self.slot(ofKey: key)
            writer.byte(UInt8(truncatingIfNeeded: slot))
            writer.zigzag(Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: key))))
            writer.varint(UInt64(accumulator.count))
            let sum = Self.wholeNumber(accumulator.sum)
            let minimum = Self.wholeNumber(accumulator.minimum)
            let maximum = Self.wholeNumber(accumulator.maximum)
            let recent = Self.wholeNumber(accumulator.recentValue)
            writer.byte((sum == nil ? 0 : 1) | (minimum == nil ? 0 : 2) | (maximum == nil ? 0 : 4) | (recent == nil ? 0 : 8))
            Self.write(accumulator.sum, sum, into: &writer)
            Self.write(accumulator.minimum, minimum, into: &writer)
            Self.write(accumulator.maximum, maximum, into: &writer)
            writer.varint(UInt64(bitPattern: accumulator.recentStart &- (origin + slot * slotLength)))
            writer.zigzag(accumulator.recentEnd &- accumulator.recentStart)
            writer.zigzag(accumulator.recentID &- previousID)
            previousID = accumulator.recentID
            Self.write(accumulator.recentValue, recent, into: &writer)
        }
        return writer.bytes
    }

    /// `value` as an Int64 when that converts back to the same bits (not -0.0, not a fraction).
    private static func wholeNumber(_ value: Double) -> Int64? {
        guard let number = Int64(exactly: value), Double(number).bitPattern == value.bitPattern else { return nil }
        return number
    }

    private static func write(_ value: Double, _ whole: Int64?, into writer: inout RollupWriter) {
        if let whole { writer.zigzag(whole) } else { writer.double(value) }
    }

    private static func read(whole: Bool, from reader: inout RollupReader) throws(RollupError) -> Double {
        if whole { return Double(try reader.zigzag()) }
        return try reader.double()
    }

    /// Decodes a day's body, compact or of the earlier fixed-width layout; returns the day and how
    /// many samples shaped it.
    static func decode(body: [UInt8], day: Int64) throws(RollupError) -> (day: DiscreteRollupDay, samples: Int) {
        var reader = try RollupReader(body, versions: DayRollup.formatVersion...DayRollup.discreteFormatVersion)
        var decoded = DiscreteRollupDay()
        let samples: UInt64
        if reader.version == DayRollup.discreteFormatVersion {
            samples = try reader.varint()
            let count = try reader.varint()
            // Every entry takes at least 11 bytes: a count no body could hold is damage, not a size to reserve.
            guard count <= UInt64(body.count / 11) else { throw RollupError("bad entry count \(count) in a rollup body") }
            decoded.reserve(Int(count))
            let origin = day &* DayRollup.dayLength
            var previousID: Int64 = 0
            for _ in 0..<count {
                let slot = Int32(try reader.byte())
                let source = try reader.zigzag()
                guard let source32 = Int32(exactly: source) else { throw RollupError("bad source \(source) in a rollup body") }
                var accumulator = DiscreteAccumulator()
                let entryCount = try reader.varint()
                guard entryCount <= UInt64(Int.max) else { throw RollupError("bad count in a rollup body") }
                accumulator.count = Int(entryCount)
                let flags = try reader.byte()
                guard flags < 16 else { throw RollupError("bad flags \(flags) in a rollup body") }
                accumulator.sum = try read(whole: flags & 1 != 0, from: &reader)
                accumulator.minimum = try read(whole: flags & 2 != 0, from: &reader)
                accumulator.maximum = try read(whole: flags & 4 != 0, from: &reader)
                let offset = try reader.varint()
                guard offset < UInt64(slotLength) else { throw RollupError("most recent sample outside its slot in a rollup body") }
                let length = try reader.zigzag()
                let idStep = try reader.zigzag()
                accumulator.recentStart = origin &+ Int64(slot) &* slotLength &+ Int64(offset)
                accumulator.recentEnd = accumulator.recentStart &+ length
                accumulator.recentID = previousID &+ idStep
                previousID = accumulator.recentID
                accumulator.recentValue = try read(whole: flags & 8 != 0, from: &reader)
                try decoded.append(slot: slot, source: source32, accumulator)
            }
        } else {
            samples = UInt64(bitPattern: try reader.int64())
            let count = try reader.count()
            decoded.reserve(count)
            for _ in 0..<count {
                let slot = try reader.int32()
                let source = try reader.int32()
                var accumulator = DiscreteAccumulator()
                accumulator.count = Int(try reader.int64())
                accumulator.sum = try reader.double()
                accumulator.minimum = try reader.double()
                accumulator.maximum = try reader.double()
                accumulator.recentStart = try reader.int64()
                accumulator.recentEnd = try reader.int64()
                accumulator.recentID = try reader.int64()
                accumulator.recentValue = try reader.double()
                try decoded.append(slot: slot, source: source, accumulator)
            }
        }
        try reader.finish()
        guard samples > 0, samples <= UInt64(Int.max) else { throw RollupError("bad sample count \(samples) in a rollup body") }
        return (decoded, Int(samples))
    }

    private mutating func reserve(_ count: Int) {
        slots.reserveCapacity(count)
        sources.reserveCapacity(count)
        accumulators.reserveCapacity(count)
    }

    /// Adds a decoded entry (they come in slot order) to the day and its totals.
    private mutating func append(slot: Int32, source: Int32, _ accumulator: DiscreteAccumulator) throws(RollupError) {
        guard slot >= 0, slot < Self.slotsPerDay, slots.last.map({ $0 <= slot }) ?? true else {
            throw RollupError("slot \(slot) out of order in a rollup body")
        }
        guard accumulator.count > 0 else { throw RollupError("empty slot in a rollup body") }
        slots.append(slot)
        sources.append(source)
        accumulators.append(accumulator)
        total.merge(accumulator)
        if let found = sourceTotals.firstIndex(where: { $0.source == source }) {
            sourceTotals[found].accumulator.merge(accumulator)
        } else {
            sourceTotals.append((source, accumulator))
        }
    }

    /// The entries as `body` takes them.
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

import Testing
@testable import Statistics

/// The fixed-width layout discrete bodies had before the compact one (first byte 2): the sample
/// count, the entry count, then per entry slot and source (4 bytes each) and count, sum, minimum,
/// maximum, most recent start, end, id and value (8 bytes each), little-endian. Written here byte
/// by byte, as that code wrote it, so reading old rows is tested against their real bytes.
enum LegacyDiscreteBody {
    static func encode(_ entries: DiscreteRollupDay.Entries) -> [UInt8] {
        var bytes: [UInt8] = [2]
        func put(_ bits: UInt64, _ width: Int) {
            for shift in stride(from: 0, to: width * 8, by: 8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
        put(UInt64(entries.values.reduce(0) { $0 + $1.count }), 8)
        put(UInt64(entries.count), 8)
        for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
            put(UInt64(truncatingIfNeeded: key >> 32), 4)
            put(UInt64(truncatingIfNeeded: key), 4)
            put(UInt64(entry.count), 8)
            for value in [entry.sum, entry.minimum, entry.maximum] { put(value.bitPattern, 8) }
            for value in [entry.recentStart, entry.recentEnd, entry.recentID] { put(UInt64(bitPattern: value), 8) }
            put(entry.recentValue.bitPattern, 8)
        }
        return bytes
    }

    /// A day's body (either layout) in the legacy layout.
    static func rewrite(_ body: [UInt8], day: Int64) throws -> [UInt8] {
        encode(try DiscreteRollupDay.decode(body: body, day: day).day.entries)
    }
}

@Suite struct DiscreteRollupFormatTests {
    static func accumulator(count: Int, sum: Double, minimum: Double, maximum: Double, recent: (start: Int64, end: Int64, id: Int64),
                            value: Double) -> DiscreteAccumulator {
        var entry = DiscreteAccumulator()
        entry.count = count
        entry.sum = sum
        entry.minimum = minimum
        entry.maximum = maximum
        entry.recentStart = recent.start
        entry.recentEnd = recent.end
        entry.recentID = recent.id
        entry.recentValue = value
        return entry
    }

    /// Every field of every entry, as bits.
    static func bits(_ entries: DiscreteRollupDay.Entries) -> [[UInt64]] {
        entries.sorted { $0.key < $1.key }.map { key, entry in
            [UInt64(bitPattern: key), UInt64(entry.count), entry.sum.bitPattern, entry.minimum.bitPattern, entry.maximum.bitPattern,
             UInt64(bitPattern: entry.recentStart), UInt64(bitPattern: entry.recentEnd), UInt64(bitPattern: entry.recentID),
             entry.recentValue.bitPattern]
        }
    }

    /// Values that are and are not whole numbers (negative zero, fractions, beyond Int64, the
    /// largest whole doubles), extreme ids and sources, the first and last instant of a slot, a
    /// day before 1970: the compact body and the legacy one both decode to the same bits.
    @Test(arguments: [Int64(20_454), -3, 0])
    func awkwardEntriesDecodeBitForBit(day: Int64) throws {
        let origin = day * DayRollup.dayLength
        let slot = DiscreteRollupDay.slotLength
        var entries: DiscreteRollupDay.Entries = [:]
        entries[DiscreteRollupDay.key(slot: 0, source: 1)] = Self.accumulator(
            count: 1, sum: -0.0, minimum: -0.0, maximum: -0.0, recent: (origin, origin + StatisticsSample.maximumDuration, Int64.max), value: -0.0)
        entries[DiscreteRollupDay.key(slot: 95, source: -3)] = Self.accumulator(
            count: 3, sum: 0.1 + 0.2, minimum: -1e300, maximum: 0x1p63, recent: (origin + 95 * slot + slot - 1, origin + 95 * slot + slot - 1, Int64.min),
            value: 0x1p53 + 2)
        entries[DiscreteRollupDay.key(slot: 40, source: Int32.max)] = Self.accumulator(
            count: 1 << 40, sum: 72, minimum: -0x1p62, maximum: 9.5, recent: (origin + 40 * slot + 1, origin + 40 * slot + 1, 0), value: 72)
        entries[DiscreteRollupDay.key(slot: 40, source: Int32.min)] = Self.accumulator(
            count: 2, sum: Double.greatestFiniteMagnitude, minimum: -Double.greatestFiniteMagnitude, maximum: .leastNonzeroMagnitude,
            recent: (origin + 40 * slot + 7, origin + 40 * slot + 7, 5_000_000_000), value: -0x1p63)
        let compact = DiscreteRollupDay.body(entries, day: day)
        #expect(compact.first == DayRollup.discreteFormatVersion)
        let decoded = try DiscreteRollupDay.decode(body: compact, day: day)
        #expect(Self.bits(decoded.day.entries) == Self.bits(entries))
        #expect(decoded.samples == (1 << 40) + 6)
        let legacy = try DiscreteRollupDay.decode(body: LegacyDiscreteBody.encode(entries), day: day)
        #expect(Self.bits(legacy.day.entries) == Self.bits(entries) && legacy.samples == decoded.samples)
        #expect(try DayRollup.currentDiscreteBody(LegacyDiscreteBody.encode(entries), day: day) == compact)
        // The day's totals, merged as the decoded entries are.
        #expect(decoded.day.total.count == (1 << 40) + 6 && decoded.day.sourceTotals.count == 4)
    }

    /// A day of heart rate every 2 minutes (and every 10 seconds): one source, whole beats per
    /// minute. The compact body stays under 2.5 KiB, well inside one 4 KiB table page (SQLite keeps
    /// up to 4,061 bytes of a row in the page), where the fixed-width one needed about 7 KiB.
    @Test(arguments: [Int64(120_000), 10_000])
    func aDayOfReadingsFitsInATablePage(every interval: Int64) throws {
        let day: Int64 = 20_454
        var generator = SeededGenerator(seed: 7)
        var id: Int64 = 1_000_000
        var samples: [StatisticsSample] = []
        var start = day * DayRollup.dayLength + 7_000
        while start < (day + 1) * DayRollup.dayLength {
            defer { start += interval }
            id += Int64.random(in: 1...3, using: &generator)
            let value = Double(Int.random(in: 50...149, using: &generator))
            samples.append(StatisticsSample(id: id, start: start, end: start, value: value, source: 3))
        }
        let values = samples.map { $0.value }
        let body = try #require(DayRollup.encode(day: day, samples: samples, style: .discrete, priority: SourcePriority([]))).body
        var entries: DiscreteRollupDay.Entries = [:]
        DiscreteRollupDay.add(samples, day: day, to: &entries)
        #expect(body.count < 2_500, "\(body.count) bytes")
        #expect(LegacyDiscreteBody.encode(entries).count > 6_900)
        let series = try RollupSeries(style: .discrete, priority: SourcePriority([]), days: day...day, rows: [(day, body, nil)])
        let options: StatisticsOptions = [.discreteAverage, .discreteMin, .discreteMax, .mostRecent]
        let figures = try series.statistics(start: day * DayRollup.dayLength, end: (day + 1) * DayRollup.dayLength, options: options).figures
        #expect(figures.minimum == values.min() && figures.maximum == values.max())
        let total = values.reduce(0, +)
        #expect(figures.average == total / Double(values.count))
        #expect(figures.mostRecent?.value == values.last)
    }

    /// Damaged compact bodies are errors, never wrong figures or a crash: cut short anywhere,
    /// stray bytes, unknown flags, a slot out of range or order, an empty entry, a most recent
    /// start outside its slot, an entry count no body could hold, an unknown version.
    @Test func damagedCompactBodiesAreErrors() throws {
        let day: Int64 = 20_454
        let reading = StatisticsSample(id: 9, start: day * DayRollup.dayLength + 5 * DiscreteRollupDay.slotLength + 1_000,
                                       end: day * DayRollup.dayLength + 5 * DiscreteRollupDay.slotLength + 1_000, value: 1, source: 1)
        let body = try #require(DayRollup.encode(day: day, samples: [reading], style: .discrete, priority: SourcePriority([]))).body
        // 3, samples 1, entries 1, slot 5, source 1 (zigzag 2), count 1, flags (all whole numbers), ...
        #expect(Array(body.prefix(7)) == [3, 1, 1, 5, 2, 1, 15])
        _ = try DiscreteRollupDay.decode(body: body, day: day)
        func damaged(_ change: (inout [UInt8]) -> Void) -> [UInt8] {
            var copy = body
            change(&copy)
            return copy
        }
        var bad: [[UInt8]] = (0..<body.count).map { Array(body.prefix($0)) }
        bad += [body + [0], damaged { $0[6] = 16 }, damaged { $0[3] = 96 }, damaged { $0[5] = 0 }, damaged { $0[0] = 4 },
                damaged { $0[2] = 0x7F }, damaged { $0[1] = 0 }]
        // Two entries whose slots go backwards.
        var twoSlots = RollupWriter()
        twoSlots.byte(DayRollup.discreteFormatVersion)
        twoSlots.varint(2)
        twoSlots.varint(2)
        for slot: UInt8 in [7, 6] {
            twoSlots.byte(slot)
            twoSlots.zigzag(1)
            twoSlots.varint(1)
            twoSlots.byte(15)
            for _ in 0..<3 { twoSlots.zigzag(1) }
            twoSlots.varint(0)
            twoSlots.zigzag(0)
            twoSlots.zigzag(1)
            twoSlots.zigzag(1)
        }
        bad.append(twoSlots.bytes)
        // A most recent start one past its slot's end.
        var outside = RollupWriter()
        outside.byte(DayRollup.discreteFormatVersion)
        for part: UInt64 in [1, 1, 0] { outside.varint(part) }
        outside.zigzag(1)
        outside.varint(1)
        outside.byte(15)
        for _ in 0..<3 { outside.zigzag(1) }
        var good = outside
        outside.varint(UInt64(DiscreteRollupDay.slotLength))
        good.varint(UInt64(DiscreteRollupDay.slotLength - 1))
        for part: Int64 in [0, 1, 1] {
            outside.zigzag(part)
            good.zigzag(part)
        }
        bad.append(outside.bytes)
        let decoded = try DiscreteRollupDay.decode(body: good.bytes, day: day)
        #expect(decoded.day.accumulators.first?.recentStart == day * DayRollup.dayLength + DiscreteRollupDay.slotLength - 1)
        for bytes in bad {
            #expect(throws: RollupError.self, "\(bytes)") { try DiscreteRollupDay.decode(body: bytes, day: day) }
            #expect(throws: RollupError.self) {
                try RollupSeries(style: .discrete, priority: SourcePriority([]), days: day...day, rows: [(day, bytes, nil)])
            }
        }
    }
}

/// A cumulative day's running integral F sampled at the 97 boundaries of its 15-minute slots, and
/// which slots hold data. Local midnights and hours in every zone fall on slot boundaries, so a
/// dashboard's buckets are sums F(b) − F(a) read off this table; only a bucket edge inside a slot
/// needs the day's full integral (the row's detail, read for those days only).
struct CumulativeSlotTable: Sendable {
    static let slotLength = DiscreteRollupDay.slotLength
    static let slots = Int(DayRollup.dayLength / slotLength)

    /// F at slot boundaries 0...96.
    var values: [Double]
    /// Bit k of word k / 64: slot k holds data.
    var data: [UInt64]

    init(_ integral: PrefixIntegral) {
        values = (0...Self.slots).map { integral.integral(upTo: Int32($0) * Int32(Self.slotLength)) }
        data = [0, 0]
        for slot in 0..<Self.slots
        where integral.hasData(from: Int32(slot) * Int32(Self.slotLength), to: Int32(slot + 1) * Int32(Self.slotLength)) {
            data[slot / 64] |= 1 << UInt64(slot % 64)
        }
    }

    /// The length of `encode`'s bytes: the values at 97 boundaries and two bitmap words.
    static let encodedBytes = (slots + 1) * 8 + 16

    func encode(into writer: inout RollupWriter) {
        for value in values { writer.double(value) }
        for word in data { writer.int64(Int64(bitPattern: word)) }
    }

    init(from reader: inout RollupReader) throws(RollupError) {
        values = []
        values.reserveCapacity(Self.slots + 1)
        for _ in 0...Self.slots { values.append(try reader.double()) }
        data = [UInt64(bitPattern: try reader.int64()), UInt64(bitPattern: try reader.int64())]
    }

    /// Sum over slots [first, last) and whether any of them holds data.
    func sum(_ first: Int, _ last: Int) -> (sum: Double, hasData: Bool) {
        guard first < last else { return (0, false) }
        var hasData = false
        for slot in first..<last where data[slot / 64] & (1 << UInt64(slot % 64)) != 0 {
            hasData = true
            break
        }
        return (values[last] - values[first], hasData)
    }

    var bytes: Int { values.capacity * 8 + 16 + 32 }
}

/// One cumulative day as a query holds it: slot tables always, the full integrals when read.
struct CumulativeRollupDay: Sendable {
    var merged: CumulativeSlotTable
    /// Each source's own table, in no particular order (the merged one when one source wrote the day).
    var sources: [(source: Int32, table: CumulativeSlotTable)]
    var detail: CumulativeChunk?

    var bytes: Int {
        merged.bytes + sources.reduce(0) { $0 + 4 + $1.table.bytes } + (detail?.bytes ?? 0) + 64
    }

    /// The row's body (slot tables) and detail (full integrals) for a summarized day.
    static func encode(_ chunk: CumulativeChunk, sampleCount: Int) -> (body: [UInt8], detail: [UInt8]) {
        var body = RollupWriter()
        body.byte(DayRollup.formatVersion)
        body.int64(Int64(sampleCount))
        CumulativeSlotTable(chunk.merged).encode(into: &body)
        if let sole = chunk.soleSource {
            body.int64(-1)
            body.int32(sole)
        } else {
            body.int64(Int64(chunk.sourceIDs.count))
            for (source, integral) in zip(chunk.sourceIDs, chunk.sourceIntegrals) {
                body.int32(source)
                CumulativeSlotTable(integral).encode(into: &body)
            }
        }
        var detail = RollupWriter()
        detail.byte(DayRollup.formatVersion)
        chunk.merged.encode(into: &detail)
        detail.int64(chunk.soleSource.map(Int64.init) ?? -1)
        detail.int64(Int64(chunk.sourceIDs.count))
        for (source, integral) in zip(chunk.sourceIDs, chunk.sourceIntegrals) {
            detail.int32(source)
            integral.encode(into: &detail)
        }
        return (body.bytes, detail.bytes)
    }

    /// Decodes a body (and its detail when given); returns the day and how many samples shaped it.
    /// Without `perSource` the sources' own tables are checked for length but not decoded: a query
    /// that does not separate by source needs the merged table only (a third of a two-source day).
    static func decode(body: [UInt8], detail: [UInt8]?,
                       perSource: Bool = true) throws(RollupError) -> (day: CumulativeRollupDay, samples: Int) {
        var reader = try RollupReader(body)
        let samples = try reader.int64()
        guard samples > 0 else { throw RollupError("bad sample count \(samples) in a rollup body") }
        let merged = try CumulativeSlotTable(from: &reader)
        var sources: [(source: Int32, table: CumulativeSlotTable)] = []
        let count = try reader.int64()
        if count == -1 {
            sources.append((try reader.int32(), merged))
        } else {
            guard count >= 0, count <= 1 << 20 else { throw RollupError("bad source count \(count) in a rollup body") }
            if perSource {
                for _ in 0..<count { sources.append((try reader.int32(), try CumulativeSlotTable(from: &reader))) }
            } else {
                try reader.skip(Int(count) * (4 + CumulativeSlotTable.encodedBytes))
            }
        }
        try reader.finish()
        var day = CumulativeRollupDay(merged: merged, sources: sources, detail: nil)
        if let detail {
            var reader = try RollupReader(detail)
            var chunk = CumulativeChunk()
            chunk.merged = try PrefixIntegral(from: &reader)
            let sole = try reader.int64()
            chunk.soleSource = sole < 0 ? nil : Int32(truncatingIfNeeded: sole)
            for _ in 0..<(try reader.count()) {
                chunk.sourceIDs.append(try reader.int32())
                chunk.sourceIntegrals.append(try PrefixIntegral(from: &reader))
            }
            try reader.finish()
            day.detail = chunk
        }
        return (day, Int(samples))
    }
}

/// A cumulative series over a span of days from rollup rows: merged and per-source sums over any
/// bucket whose edges fall on slot boundaries, or inside days whose detail was read.
struct CumulativeRollupDays: Sendable, BucketFiguresAnswering {
    let priority: SourcePriority
    private let days: [Int64]
    private let rollups: [CumulativeRollupDay]
    /// Days whose detail (full integrals) was read; all of them, even those without a row.
    let detailDays: Set<Int64>

    init(priority: SourcePriority, days: [Int64], rollups: [CumulativeRollupDay], detailDays: Set<Int64>) {
        self.priority = priority
        self.days = days
        self.rollups = rollups
        self.detailDays = detailDays
    }

    /// The days whose detail a query with these bucket edges needs: those an edge cuts inside a slot.
    static func detailDays(for edges: [Int64]) -> Set<Int64> {
        Set(edges.filter { $0 % CumulativeSlotTable.slotLength != 0 }.map(DayRollup.day(of:)))
    }

    func hasDetail(from start: Int64, to end: Int64) -> Bool {
        (start % CumulativeSlotTable.slotLength == 0 || detailDays.contains(DayRollup.day(of: start)))
            && (end % CumulativeSlotTable.slotLength == 0 || detailDays.contains(DayRollup.day(of: end)))
    }

    var memoryBytes: Int { rollups.reduce(0) { $0 + $1.bytes } + days.capacity * 8 + detailDays.count * 16 + 64 }

    /// Calls `body` with each day's part of [start, end): the day, and the part as offsets from its start.
    private func forEachDay(from start: Int64, to end: Int64, _ body: (CumulativeRollupDay, Int64, Int64) -> Void) {
        guard start < end else { return }
        let length = DayRollup.dayLength
        var index = lowerBound(days, floorDivide(start, length))
        while index < days.count, days[index] * length < end {
            let origin = days[index] * length
            body(rollups[index], max(start, origin) - origin, min(end, origin + length) - origin)
            index += 1
        }
    }

    func figures(for bucket: CalendarBucket, options: StatisticsOptions) -> BucketStatistics {
        var answer = BucketStatistics(bucket: bucket, figures: StatisticsFigures())
        guard options.contains(.cumulativeSum) else { return answer }
        let slot = CumulativeSlotTable.slotLength
        var sum = 0.0
        var hasData = false
        var perSource: [(source: Int32, sum: Double)] = []
        let separate = options.contains(.separateBySource)
        forEachDay(from: bucket.start, to: bucket.end) { day, low, high in
            func add(_ source: Int32, _ part: (sum: Double, hasData: Bool)) {
                guard part.hasData else { return }
                if let found = perSource.firstIndex(where: { $0.source == source }) {
                    perSource[found].sum += part.sum
                } else {
                    perSource.append((source, part.sum))
                }
            }
            if let detail = day.detail {
                let from = Int32(low)
                let to = Int32(high)
                sum += detail.merged.sum(from: from, to: to)
                hasData = hasData || detail.merged.hasData(from: from, to: to)
                guard separate else { return }
                if let sole = detail.soleSource {
                    add(sole, (detail.merged.sum(from: from, to: to), detail.merged.hasData(from: from, to: to)))
                }
                for (source, integral) in zip(detail.sourceIDs, detail.sourceIntegrals) {
                    add(source, (integral.sum(from: from, to: to), integral.hasData(from: from, to: to)))
                }
            } else {
                // Slot boundaries (`hasDetail` made sure of it before the query ran).
                let first = Int(low / slot)
                let last = Int(high / slot)
                let part = day.merged.sum(first, last)
                sum += part.sum
                hasData = hasData || part.hasData
                guard separate else { return }
                for (source, table) in day.sources { add(source, table.sum(first, last)) }
            }
        }
        if hasData { answer.figures.sum = sum }
        if separate {
            answer.sources = perSource.sorted { priority.rank(of: $0.source) < priority.rank(of: $1.source) }
                .map { SourceFigures(source: $0.source, figures: StatisticsFigures(sum: $0.sum)) }
        }
        return answer
    }
}

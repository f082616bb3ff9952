// Persisted rollups: what the in-memory indexes hold for one UTC day, as bytes a store keeps in
// one row per (user, type, day). A store rewrites a day's row whenever a sample touching that day
// is saved or deleted (and every row of a series when its source order changes); a query then
// reads one row per UTC day its buckets touch, never the samples.
//
// Exactness does not depend on buckets lining up with UTC days: a cumulative day holds the whole
// running integral of the merged rate (and of each source's own), so a sum over any sub-range of
// the day — a local midnight, a DST edge, a 15-minute anchor — is F(b) − F(a), exactly what the
// in-memory index computes. The row's body holds F at the day's 15-minute slot boundaries (where
// local midnights and hours fall in every zone) and its detail the whole function, read only for
// days a bucket edge cuts inside a slot. A discrete day holds count, sum, min, max and most recent per
// 15-minute slot and source (`DiscreteRollupDay`); a bucket edge inside a slot is answered from
// that slot's samples, which the store reads for the cut slots only.

/// A rollup row that cannot be decoded, or a query outside the days a `RollupSeries` was given:
/// a fault of the store, never of the client.
public struct RollupError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The per-day rollup format and the rules for which samples shape which day.
public enum DayRollup {
    /// Rollups are per UTC day, like the in-memory index chunks.
    public static let dayLength: Int64 = 86_400_000
    /// The first byte of every cumulative body and detail: bumped when the layout changes (a
    /// migration then rebuilds).
    static let formatVersion: UInt8 = 2
    /// The first byte of a discrete body written now: the compact layout (`DiscreteRollupDay.body`).
    /// Discrete bodies of the earlier fixed-width layout (first byte `formatVersion`, 2) still
    /// decode, so rows written before it answer and are rewritten compactly by their next change.
    static let discreteFormatVersion: UInt8 = 3

    /// The UTC day number of an instant.
    public static func day(of instant: Int64) -> Int64 { floorDivide(instant, dayLength) }

    /// The days whose rollup a sample shapes: every day a cumulative sample covers (the day of its
    /// instant when it has no length), the day a discrete sample starts in.
    public static func days(of sample: StatisticsSample, style: AggregationStyle) -> ClosedRange<Int64> {
        switch style {
        case .cumulative: return CumulativeSeriesIndex.days(of: sample)
        case .discrete:
            let day = day(of: sample.start)
            return day...day
        }
    }

    /// The days a query over [start, end) reads.
    public static func days(from start: Int64, to end: Int64) -> ClosedRange<Int64> {
        let first = day(of: start)
        return first...max(first, day(of: end - 1))
    }

    /// The slots (see `DiscreteRollupDay`) whose samples a discrete query over these buckets needs
    /// besides the rows: those a bucket edge falls inside. None for cumulative types.
    public static func edgeSlots(of buckets: [CalendarBucket], style: AggregationStyle) -> Set<Int64> {
        guard style == .discrete else { return [] }
        return DiscreteRollupDays.edgeSlots(for: buckets.flatMap { [$0.start, $0.end] })
    }

    /// The instants of `slots`, consecutive slots joined, ascending: the ranges of sample starts to read.
    public static func instants(ofSlots slots: Set<Int64>) -> [Range<Int64>] {
        var ranges: [Range<Int64>] = []
        let length = DiscreteRollupDay.slotLength
        for slot in slots.sorted() {
            if let last = ranges.last, last.upperBound == slot * length {
                ranges[ranges.count - 1] = last.lowerBound..<(slot + 1) * length
            } else {
                ranges.append(slot * length..<(slot + 1) * length)
            }
        }
        return ranges
    }

    /// The days whose detail (full integrals) a cumulative query over these buckets needs besides
    /// the rows' slot tables: those a bucket edge cuts inside a 15-minute slot. None for discrete types.
    public static func detailDays(of buckets: [CalendarBucket], style: AggregationStyle) -> Set<Int64> {
        guard style == .cumulative else { return [] }
        return CumulativeRollupDays.detailDays(for: buckets.flatMap { [$0.start, $0.end] })
    }

    /// The rollup row of `day` from every sample that shapes it (others are ignored), or nil when
    /// none does (the store then keeps no row). `priority` matters for cumulative days only. The
    /// body is what every query of the day reads; the detail (cumulative only) is read only by a
    /// query with a bucket edge inside one of the day's 15-minute slots.
    public static func encode(day: Int64, samples: [StatisticsSample], style: AggregationStyle,
                              priority: SourcePriority) -> (body: [UInt8], detail: [UInt8]?)? {
        let shaping = samples.filter { days(of: $0, style: style).contains(day) }
        guard !shaping.isEmpty else { return nil }
        switch style {
        case .cumulative:
            var chunk = CumulativeChunk()
            chunk.summarize(shaping, priority: priority, origin: day * dayLength, mergedOnly: false)
            let row = CumulativeRollupDay.encode(chunk, sampleCount: shaping.count)
            return (row.body, row.detail)
        case .discrete:
            var entries: DiscreteRollupDay.Entries = [:]
            DiscreteRollupDay.add(shaping, day: day, to: &entries)
            return (DiscreteRollupDay.body(entries, day: day), nil)
        }
    }
}

/// The statistics of one series over a span of days, decoded from rollup rows: the same answers
/// as the in-memory `SeriesIndex` for any bucket inside `days`.
public struct RollupSeries: Sendable {
    public let style: AggregationStyle
    public let priority: SourcePriority
    /// The days the rows were read for (days without a row have no data).
    public let days: ClosedRange<Int64>
    /// How many samples shaped the rows (a cumulative sample spanning days counts once per day).
    public let sampleCount: Int
    /// Whether `separateBySource` can be answered: a cumulative series decoded without it holds
    /// the merged slot tables only (discrete rows keep their sources apart anyway).
    public let perSource: Bool
    private let cumulative: CumulativeRollupDays?
    private let discrete: DiscreteRollupDays?

    /// `rows`: (day, body, detail) for days inside `days`, ascending, each day at most once; a
    /// cumulative row's detail is given for the days in `detailDays` (see `DayRollup.detailDays`).
    /// Discrete series also take the samples starting in `edgeSlots` (see `DayRollup.edgeSlots`).
    /// Without `perSource`, cumulative days keep only their merged figures.
    public init(style: AggregationStyle, priority: SourcePriority, days: ClosedRange<Int64>,
                rows: [(day: Int64, body: [UInt8], detail: [UInt8]?)], detailDays: Set<Int64> = [],
                edgeSlots: Set<Int64> = [], edgeSamples: [StatisticsSample] = [], perSource: Bool = true) throws(RollupError) {
        self.style = style
        self.priority = priority
        self.days = days
        self.perSource = perSource || style == .discrete
        var dayNumbers: [Int64] = []
        dayNumbers.reserveCapacity(rows.count)
        var count = 0
        switch style {
        case .cumulative:
            var rollups: [CumulativeRollupDay] = []
            rollups.reserveCapacity(rows.count)
            for row in rows {
                try Self.check(row.day, after: dayNumbers.last, in: days)
                guard (row.detail != nil) == detailDays.contains(row.day) else {
                    throw RollupError("day \(row.day): detail \(row.detail == nil ? "missing" : "not asked for")")
                }
                let decoded = try CumulativeRollupDay.decode(body: row.body, detail: row.detail, perSource: perSource)
                count += decoded.samples
                rollups.append(decoded.day)
                dayNumbers.append(row.day)
            }
            cumulative = CumulativeRollupDays(priority: priority, days: dayNumbers, rollups: rollups, detailDays: detailDays)
            discrete = nil
        case .discrete:
            var rollups: [DiscreteRollupDay] = []
            rollups.reserveCapacity(rows.count)
            for row in rows {
                try Self.check(row.day, after: dayNumbers.last, in: days)
                let decoded = try DiscreteRollupDay.decode(body: row.body, day: row.day)
                count += decoded.samples
                rollups.append(decoded.day)
                dayNumbers.append(row.day)
            }
            let kept = edgeSamples.filter { edgeSlots.contains(DiscreteRollupDays.slot(of: $0.start)) }
            discrete = DiscreteRollupDays(priority: priority, days: dayNumbers, rollups: rollups, edgeSlots: edgeSlots,
                                          edgeSamples: kept)
            cumulative = nil
        }
        sampleCount = count
    }

    private static func check(_ day: Int64, after previous: Int64?, in days: ClosedRange<Int64>) throws(RollupError) {
        guard days.contains(day), previous.map({ $0 < day }) ?? true else {
            throw RollupError("rollup rows out of order or outside days \(days.lowerBound)...\(days.upperBound)")
        }
    }

    /// The cut slots whose samples this (discrete) series holds.
    public var edgeSlots: Set<Int64> { discrete?.edgeSlots ?? [] }

    /// The days whose detail this (cumulative) series holds.
    public var detailDays: Set<Int64> { cumulative?.detailDays ?? [] }

    /// Whether a query over [start, end) reads only days this series holds (and, for a discrete
    /// series, only cut slots whose samples it holds).
    public func covers(from start: Int64, to end: Int64) -> Bool {
        guard start < end else { return true }
        guard days.contains(DayRollup.day(of: start)), days.contains(DayRollup.day(of: end - 1)) else { return false }
        return discrete?.hasEdges(from: start, to: end) ?? cumulative?.hasDetail(from: start, to: end) ?? true
    }

    /// `HKStatisticsQuery` over [start, end).
    public func statistics(start: Int64, end: Int64, options: StatisticsOptions) throws -> StatisticsResult {
        guard start < end else { throw StatisticsError.invalidRange(start: start, end: end) }
        try options.validate(for: style)
        try checkSources(options)
        guard covers(from: start, to: end) else { throw RollupError("query outside the days read") }
        if let cumulative { return cumulative.statistics(start: start, end: end, options: options) }
        if let discrete { return discrete.statistics(start: start, end: end, options: options) }
        return StatisticsResult(start: start, end: end, figures: StatisticsFigures())
    }

    /// `HKStatisticsCollectionQuery` over buckets inside `days`.
    public func statisticsCollection(buckets: [CalendarBucket], options: StatisticsOptions) throws -> [BucketStatistics] {
        try options.validate(for: style)
        try checkSources(options)
        for bucket in buckets where !covers(from: bucket.start, to: bucket.end) {
            throw RollupError("bucket \(bucket.start)..<\(bucket.end) outside the days read")
        }
        if let cumulative { return cumulative.statisticsCollection(buckets: buckets, options: options) }
        if let discrete { return discrete.statisticsCollection(buckets: buckets, options: options) }
        return []
    }

    private func checkSources(_ options: StatisticsOptions) throws(RollupError) {
        guard perSource || !options.contains(.separateBySource) else { throw RollupError("per-source figures were not read") }
    }

    /// Bytes held by the decoded days, for memory budgeting.
    public var memoryBytes: Int { cumulative?.memoryBytes ?? discrete?.memoryBytes ?? 0 }
}

// MARK: Encoding

/// Little-endian fixed-width fields, so the bytes mean the same on every machine and to any
/// backend that stores them.
struct RollupWriter {
    private(set) var bytes: [UInt8] = []

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func int32(_ value: Int32) {
        let bits = UInt32(bitPattern: value)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt32(shift))) }
    }

    mutating func int64(_ value: Int64) { uint64(UInt64(bitPattern: value)) }

    mutating func double(_ value: Double) { uint64(value.bitPattern) }

    /// LEB128: seven bits a byte, low bits first; small numbers take one byte.
    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// A signed number as a varint, small magnitudes of either sign short (zigzag).
    mutating func zigzag(_ value: Int64) { varint(UInt64(bitPattern: (value << 1) ^ (value >> 63))) }

    private mutating func uint64(_ bits: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
    }
}

struct RollupReader {
    private let bytes: [UInt8]
    private var position = 1
    /// The body's first byte: which layout follows.
    let version: UInt8

    init(_ bytes: [UInt8], versions: ClosedRange<UInt8> = DayRollup.formatVersion...DayRollup.formatVersion) throws(RollupError) {
        guard let version = bytes.first else { throw RollupError("empty rollup body") }
        guard versions.contains(version) else {
            throw RollupError("rollup format \(version) is not one of \(versions.lowerBound)...\(versions.upperBound)")
        }
        self.bytes = bytes
        self.version = version
    }

    /// The next `T` (a fixed-width integer), little-endian: one unaligned load, not a loop over its bytes.
    private mutating func take<T: FixedWidthInteger>(_: T.Type) throws(RollupError) -> T {
        let width = MemoryLayout<T>.size
        guard position + width <= bytes.count else { throw RollupError("rollup body cut short") }
        let start = position
        position += width
        return T(littleEndian: bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: start, as: T.self) })
    }

    /// Steps over `width` bytes that must be there.
    mutating func skip(_ width: Int) throws(RollupError) {
        guard width >= 0, position + width <= bytes.count else { throw RollupError("rollup body cut short") }
        position += width
    }

    mutating func int32() throws(RollupError) -> Int32 { try take(Int32.self) }
    mutating func int64() throws(RollupError) -> Int64 { try take(Int64.self) }
    mutating func double() throws(RollupError) -> Double { Double(bitPattern: try take(UInt64.self)) }

    mutating func byte() throws(RollupError) -> UInt8 {
        guard position < bytes.count else { throw RollupError("rollup body cut short") }
        position += 1
        return bytes[position - 1]
    }

    /// `RollupWriter.varint`'s number; at most ten bytes, the tenth holding the top bit only.
    mutating func varint() throws(RollupError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = try self.byte()
            guard shift < 63 || next <= 1 else { throw RollupError("varint too long in a rollup body") }
            value |= UInt64(next & 0x7F) << shift
            if next < 0x80 { return value }
            shift += 7
        }
    }

    mutating func zigzag() throws(RollupError) -> Int64 {
        let bits = try varint()
        return Int64(bitPattern: bits >> 1) ^ -Int64(bitPattern: bits & 1)
    }

    /// A length: non-negative and no more than the bytes left could hold.
    mutating func count() throws(RollupError) -> Int {
        let value = try int64()
        guard value >= 0, value <= Int64(bytes.count - position) else { throw RollupError("bad length \(value) in rollup body") }
        return Int(value)
    }

    func finish() throws(RollupError) {
        guard position == bytes.count else { throw RollupError("\(bytes.count - position) stray bytes after a rollup body") }
    }
}

extension PrefixIntegral {
    func encode(into writer: inout RollupWriter) {
        writer.int64(Int64(times.count))
        for time in times { writer.int32(time) }
        for value in cumulative { writer.double(value) }
        writer.int64(Int64(pointTimes.count))
        for time in pointTimes { writer.int32(time) }
        for value in pointTotals { writer.double(value) }
        writer.int64(Int64(coveredStarts.count))
        for time in coveredStarts { writer.int32(time) }
        for time in coveredEnds { writer.int32(time) }
        writer.double(total)
    }

    init(from reader: inout RollupReader) throws(RollupError) {
        let breakpoints = try reader.count()
        var times: [Int32] = []
        var cumulative: [Double] = []
        times.reserveCapacity(breakpoints)
        cumulative.reserveCapacity(breakpoints)
        for _ in 0..<breakpoints { times.append(try reader.int32()) }
        for _ in 0..<breakpoints { cumulative.append(try reader.double()) }
        let points = try reader.count()
        var pointTimes: [Int32] = []
        var pointTotals: [Double] = []
        for _ in 0..<points { pointTimes.append(try reader.int32()) }
        for _ in 0..<points { pointTotals.append(try reader.double()) }
        let stretches = try reader.count()
        var coveredStarts: [Int32] = []
        var coveredEnds: [Int32] = []
        for _ in 0..<stretches { coveredStarts.append(try reader.int32()) }
        for _ in 0..<stretches { coveredEnds.append(try reader.int32()) }
        let total = try reader.double()
        self.init(times: times, cumulative: cumulative, pointTimes: pointTimes, pointTotals: pointTotals,
                  coveredStarts: coveredStarts, coveredEnds: coveredEnds, total: total)
    }
}

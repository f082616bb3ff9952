/// Unit of the accelerometer samples in a batch.
public enum AccelerationUnit: String, Sendable, Codable, CaseIterable {
    /// Standard gravity, 1 g = 9.80665 m/s².
    case standardGravity = "g"
    case metersPerSecondSquared = "m/s2"

    public static let metersPerSecondSquaredPerG = 9.80665

    /// Factor that converts a value in this unit to m/s².
    public var toMetersPerSecondSquared: Double {
        switch self {
        case .standardGravity: AccelerationUnit.metersPerSecondSquaredPerG
        case .metersPerSecondSquared: 1
        }
    }

    /// Parses the unit as clients spell it: "g", "m/s2", "m/s^2", "m/s²", "mps2".
    public init(parsing text: String) throws(PedometerInputError) {
        switch text.lowercased() {
        case "g": self = .standardGravity
        case "m/s2", "m/s^2", "m/s²", "mps2", "m s-2": self = .metersPerSecondSquared
        default: throw .unknownUnit(text)
        }
    }
}

/// Barometric pressure samples that accompany an accelerometer batch.
public struct PressureSamples: Sendable, Equatable, Codable {
    /// Seconds, absolute (e.g. since 1970); the same ordering rules as the accelerometer's apply.
    public var timestamps: [Double]
    public var hectopascals: [Double]

    public init(timestamps: [Double], hectopascals: [Double]) {
        self.timestamps = timestamps
        self.hectopascals = hectopascals
    }
}

/// One upload of raw accelerometer data (with gravity), optionally with pressure.
///
/// Timestamps are absolute seconds. Phones' sensor logs are messy, so the order rules are
/// lenient where a sensor stream can be repaired and strict where it cannot (see
/// `PedometerInputLimits.reorderToleranceSeconds` and `normalized`):
/// - a sample stamped at most the tolerance before the latest one so far is sorted into place;
/// - of samples sharing a timestamp the first received is kept and the others are dropped
///   (keeping the first, unlike averaging, gives the same result however the stream is split
///   into batches);
/// - a sample at or before the previous batch's last timestamp (by at most the tolerance) is
///   dropped: its neighbours have been processed already;
/// - gaps and rate changes are not errors: the detector restarts after a gap and resamples any rate;
/// - time running backwards by more than the tolerance, within a batch or across batches, is an error.
public struct AccelerometerBatch: Sendable, Equatable, Codable {
    public var timestamps: [Double]
    public var x: [Double]
    public var y: [Double]
    public var z: [Double]
    public var unit: AccelerationUnit
    public var pressure: PressureSamples?

    public init(timestamps: [Double], x: [Double], y: [Double], z: [Double],
                unit: AccelerationUnit, pressure: PressureSamples? = nil) {
        self.timestamps = timestamps
        self.x = x
        self.y = y
        self.z = z
        self.unit = unit
        self.pressure = pressure
    }
}

/// Limits applied by `validate`; the API layer may tighten them.
public struct PedometerInputLimits: Sendable, Equatable, Codable {
    public var maximumSamplesPerBatch: Int
    /// Below this median rate the step waveform (1-3.5 Hz) cannot be resolved.
    public var minimumSamplingRateHz: Double
    public var maximumPressureSamplesPerBatch: Int
    /// Physically plausible station pressure range (Dead Sea to well above Everest's summit).
    public var pressureRangeHectopascals: ClosedRange<Double>
    /// How far a timestamp may lag the latest one before it is an error rather than jitter to
    /// reorder: 0.1 s is many sensor periods (phones jitter by a few ms) but a fraction of the
    /// shortest step (0.28 s), so reordering within it cannot move a step.
    public var reorderToleranceSeconds: Double
    /// Intervals longer than this are gaps (the detector restarts), not samples of a rate, so
    /// the sampling-rate check leaves them out.
    public var gapSeconds: Double

    public init(maximumSamplesPerBatch: Int = 100_000, minimumSamplingRateHz: Double = 10,
                maximumPressureSamplesPerBatch: Int = 10_000,
                pressureRangeHectopascals: ClosedRange<Double> = 250...1_100,
                reorderToleranceSeconds: Double = 0.1, gapSeconds: Double = 1.0) {
        self.maximumSamplesPerBatch = maximumSamplesPerBatch
        self.reorderToleranceSeconds = reorderToleranceSeconds
        self.gapSeconds = gapSeconds
        self.minimumSamplingRateHz = minimumSamplingRateHz
        self.maximumPressureSamplesPerBatch = maximumPressureSamplesPerBatch
        self.pressureRangeHectopascals = pressureRangeHectopascals
    }
}

/// What is wrong with an input batch; `field` and `reason` make a 400 answer.
public enum PedometerInputError: Error, Sendable, Equatable, CustomStringConvertible {
    case emptyBatch
    case raggedArrays(timestamps: Int, x: Int, y: Int, z: Int)
    case batchTooLarge(count: Int, limit: Int)
    case nonFiniteValue(field: String, index: Int)
    /// The timestamp at `index` lags the latest one before it (`latest`) by more than `tolerance`.
    case timeRunsBackwards(field: String, index: Int, latest: Double, current: Double, tolerance: Double)
    /// The batch's sample at `index` lies more than `tolerance` before the end of the session's
    /// previous batch (`previousEnd`): a resent or misordered batch, not jitter.
    case startsBeforePreviousBatchEnd(field: String, index: Int, previousEnd: Double, current: Double, tolerance: Double)
    case samplingRateTooLow(medianHz: Double, minimumHz: Double)
    case unknownUnit(String)
    case raggedPressureArrays(timestamps: Int, hectopascals: Int)
    case pressureBatchTooLarge(count: Int, limit: Int)
    case pressureOutOfRange(index: Int, value: Double, range: ClosedRange<Double>)

    /// The offending request field.
    public var field: String {
        switch self {
        case .emptyBatch, .batchTooLarge: "timestamps"
        case .raggedArrays: "x/y/z/timestamps"
        case .nonFiniteValue(let field, _), .timeRunsBackwards(let field, _, _, _, _),
             .startsBeforePreviousBatchEnd(let field, _, _, _, _): field
        case .samplingRateTooLow: "timestamps"
        case .unknownUnit: "unit"
        case .raggedPressureArrays: "pressure"
        case .pressureBatchTooLarge: "pressure.timestamps"
        case .pressureOutOfRange: "pressure.hectopascals"
        }
    }

    /// The index of the offending sample, where one is to blame.
    public var index: Int? {
        switch self {
        case .nonFiniteValue(_, let index), .timeRunsBackwards(_, let index, _, _, _),
             .startsBeforePreviousBatchEnd(_, let index, _, _, _), .pressureOutOfRange(let index, _, _): index
        default: nil
        }
    }

    public var reason: String {
        switch self {
        case .emptyBatch:
            "the batch has no samples"
        case let .raggedArrays(t, x, y, z):
            "arrays differ in length: timestamps \(t), x \(x), y \(y), z \(z)"
        case let .batchTooLarge(count, limit):
            "\(count) samples exceed the limit of \(limit) per batch"
        case let .nonFiniteValue(_, index):
            "value at index \(index) is NaN or infinite"
        case let .timeRunsBackwards(_, index, latest, current, tolerance):
            "timestamp at index \(index) (\(current)) is \(Self.seconds(latest - current)) s before an earlier sample's (\(latest)); time may run backwards by at most \(tolerance) s (jitter, which is reordered)"
        case let .startsBeforePreviousBatchEnd(_, index, previousEnd, current, tolerance):
            "timestamp at index \(index) (\(current)) is \(Self.seconds(previousEnd - current)) s before the end of the session's previous batch (\(previousEnd)); a batch may overlap the previous one by at most \(tolerance) s"
        case let .samplingRateTooLow(median, minimum):
            "median sampling rate \(median) Hz is below the \(minimum) Hz needed to count steps"
        case let .unknownUnit(text):
            "unknown unit \"\(text)\"; use \"g\" or \"m/s2\""
        case let .raggedPressureArrays(t, p):
            "arrays differ in length: timestamps \(t), hectopascals \(p)"
        case let .pressureBatchTooLarge(count, limit):
            "\(count) pressure samples exceed the limit of \(limit) per batch"
        case let .pressureOutOfRange(index, value, range):
            "pressure \(value) hPa at index \(index) is outside \(range.lowerBound)...\(range.upperBound) hPa"
        }
    }

    public var description: String { "\(field): \(reason)" }

    /// Seconds to the millisecond, as a reader wants them in a message.
    private static func seconds(_ value: Double) -> String {
        String(Double((value * 1000).rounded()) / 1000)
    }
}

extension AccelerometerBatch {
    /// Checks the batch; pure. `previousTimestamp` is the last accelerometer timestamp already
    /// processed in this session (nil for the first batch), `previousPressureTimestamp` likewise
    /// for pressure. Only what cannot be a sensor stream is an error (see the type's rules).
    public func validate(limits: PedometerInputLimits = PedometerInputLimits(),
                         previousTimestamp: Double? = nil,
                         previousPressureTimestamp: Double? = nil) throws(PedometerInputError) {
        _ = try checkedOrder(limits: limits, previousTimestamp: previousTimestamp,
                             previousPressureTimestamp: previousPressureTimestamp)
    }

    /// The batch as a strictly increasing stream after `previousTimestamp`: jitter sorted into
    /// place, repeated timestamps reduced to the first sample received, samples at or before the
    /// previous batch's end dropped. Validates first (the same errors as `validate`); a batch that
    /// is already clean is returned as it is.
    public func normalized(limits: PedometerInputLimits = PedometerInputLimits(),
                           previousTimestamp: Double? = nil,
                           previousPressureTimestamp: Double? = nil) throws(PedometerInputError)
        -> (batch: AccelerometerBatch, repairs: StreamRepairs) {
        let (order, pressureOrder) = try checkedOrder(limits: limits, previousTimestamp: previousTimestamp,
                                                      previousPressureTimestamp: previousPressureTimestamp)
        var batch = self
        var repairs = StreamRepairs()
        if let kept = order.kept {
            batch.timestamps = kept.map { timestamps[$0] }
            batch.x = kept.map { x[$0] }
            batch.y = kept.map { y[$0] }
            batch.z = kept.map { z[$0] }
            repairs.add(order.repairs)
        }
        if let pressure, let pressureOrder, let kept = pressureOrder.kept {
            batch.pressure = PressureSamples(timestamps: kept.map { pressure.timestamps[$0] },
                                             hectopascals: kept.map { pressure.hectopascals[$0] })
            repairs.add(pressureOrder.repairs)
        }
        return (batch, repairs)
    }

    private func checkedOrder(limits: PedometerInputLimits, previousTimestamp: Double?,
                              previousPressureTimestamp: Double?) throws(PedometerInputError)
        -> (StreamOrder, StreamOrder?) {
        let count = timestamps.count
        guard x.count == count, y.count == count, z.count == count else {
            throw .raggedArrays(timestamps: count, x: x.count, y: y.count, z: z.count)
        }
        guard count > 0 else { throw .emptyBatch }
        guard count <= limits.maximumSamplesPerBatch else {
            throw .batchTooLarge(count: count, limit: limits.maximumSamplesPerBatch)
        }
        try Self.checkFinite(timestamps, field: "timestamps")
        try Self.checkFinite(x, field: "x")
        try Self.checkFinite(y, field: "y")
        try Self.checkFinite(z, field: "z")
        let order = try StreamOrder(timestamps, field: "timestamps", after: previousTimestamp,
                                    tolerance: limits.reorderToleranceSeconds)
        if let kept = order.kept {
            try checkSamplingRate(kept.map { timestamps[$0] }, previousTimestamp: previousTimestamp, limits: limits)
        } else {
            try checkSamplingRate(timestamps, previousTimestamp: previousTimestamp, limits: limits)
        }
        let pressureOrder = try pressure?.checkedOrder(limits: limits, previousTimestamp: previousPressureTimestamp)
        return (order, pressureOrder)
    }

    /// Median rate below the minimum ⟺ more than half the intervals are longer than
    /// 1/minimum; counting keeps this O(n) without sorting. Intervals longer than a gap are
    /// pauses in the stream, not its rate, and are left out; the interval from the previous
    /// batch counts, so that one-sample batches are judged too.
    private func checkSamplingRate(_ times: [Double], previousTimestamp: Double?,
                                   limits: PedometerInputLimits) throws(PedometerInputError) {
        let longestAcceptedInterval = 1 / limits.minimumSamplingRateHz
        var intervals = 0
        var tooLong = 0
        var last = previousTimestamp
        for time in times {
            defer { last = time }
            guard let last else { continue }
            let interval = time - last
            if interval > limits.gapSeconds || interval <= 0 { continue }
            intervals += 1
            if interval > longestAcceptedInterval { tooLong += 1 }
        }
        if intervals > 0 && 2 * tooLong > intervals {
            throw .samplingRateTooLow(medianHz: 1 / Self.medianInterval(times, previousTimestamp: previousTimestamp,
                                                                          gapSeconds: limits.gapSeconds),
                                      minimumHz: limits.minimumSamplingRateHz)
        }
    }

    /// Median sampling interval (gaps left out), only computed for the error message.
    private static func medianInterval(_ times: [Double], previousTimestamp: Double?, gapSeconds: Double) -> Double {
        var intervals: [Double] = []
        var last = previousTimestamp
        for time in times {
            if let last, time - last > 0, time - last <= gapSeconds { intervals.append(time - last) }
            last = time
        }
        intervals.sort()
        guard !intervals.isEmpty else { return 0 }
        let middle = intervals.count / 2
        return intervals.count % 2 == 1 ? intervals[middle] : (intervals[middle - 1] + intervals[middle]) / 2
    }

    static func checkFinite(_ values: [Double], field: String) throws(PedometerInputError) {
        for (index, value) in values.enumerated() where !value.isFinite {
            throw .nonFiniteValue(field: field, index: index)
        }
    }
}

/// What `AccelerometerBatch.normalized` repaired (accelerometer and pressure together).
public struct StreamRepairs: Sendable, Equatable, Codable {
    /// Samples dropped because an earlier-received sample had the same timestamp.
    public var duplicates = 0
    /// Samples stamped before the latest one so far (within the tolerance), sorted into place.
    public var reordered = 0
    /// Samples at or before the previous batch's last timestamp (within the tolerance), dropped.
    public var late = 0

    public init() {}

    public var isEmpty: Bool { duplicates == 0 && reordered == 0 && late == 0 }

    mutating func add(_ other: StreamRepairs) {
        duplicates += other.duplicates
        reordered += other.reordered
        late += other.late
    }
}

/// The order of a stream's timestamps: the errors (time running backwards by more than the
/// tolerance), and, when the stream is not already strictly increasing after `previous`, which
/// samples to keep in which order. Finite timestamps assumed.
struct StreamOrder {
    private(set) var repairs = StreamRepairs()
    /// Indices of the samples to keep, in time order; nil when the stream is clean (keep all as is).
    private(set) var kept: [Int]?

    init(_ times: [Double], field: String, after previous: Double?, tolerance: Double) throws(PedometerInputError) {
        var latest = previous ?? -.infinity
        var latestIsPrevious = previous != nil
        var clean = true
        for (index, time) in times.enumerated() {
            if time > latest {
                latest = time
                latestIsPrevious = false
                continue
            }
            clean = false
            if time < latest - tolerance {
                if latestIsPrevious, let previous {
                    throw .startsBeforePreviousBatchEnd(field: field, index: index, previousEnd: previous,
                                                        current: time, tolerance: tolerance)
                }
                throw .timeRunsBackwards(field: field, index: index, latest: latest, current: time, tolerance: tolerance)
            }
            if let previous, time <= previous {
                repairs.late += 1
            } else if time < latest {
                repairs.reordered += 1
            }
        }
        if !clean { kept = Self.repairedOrder(times, after: previous ?? -.infinity, repairs: &repairs) }
    }

    /// After `floor`, sorted (ties in the order received), the first sample of each timestamp.
    private static func repairedOrder(_ times: [Double], after floor: Double, repairs: inout StreamRepairs) -> [Int] {
        var order = times.indices.filter { times[$0] > floor }
        // Nearly sorted: an insertion sort moves each jittered sample a few places, and is stable.
        for position in order.indices.dropFirst() {
            let index = order[position]
            var target = position
            while target > 0 && times[order[target - 1]] > times[index] {
                order[target] = order[target - 1]
                target -= 1
            }
            order[target] = index
        }
        var kept: [Int] = []
        kept.reserveCapacity(order.count)
        for index in order {
            if let last = kept.last, times[last] == times[index] {
                repairs.duplicates += 1
            } else {
                kept.append(index)
            }
        }
        return kept
    }
}

extension PressureSamples {
    /// Checks the pressure samples; pure. An empty pressure list is allowed.
    public func validate(limits: PedometerInputLimits = PedometerInputLimits(),
                         previousTimestamp: Double? = nil) throws(PedometerInputError) {
        _ = try checkedOrder(limits: limits, previousTimestamp: previousTimestamp)
    }

    fileprivate func checkedOrder(limits: PedometerInputLimits, previousTimestamp: Double?) throws(PedometerInputError)
        -> StreamOrder {
        guard timestamps.count == hectopascals.count else {
            throw .raggedPressureArrays(timestamps: timestamps.count, hectopascals: hectopascals.count)
        }
        guard timestamps.count <= limits.maximumPressureSamplesPerBatch else {
            throw .pressureBatchTooLarge(count: timestamps.count, limit: limits.maximumPressureSamplesPerBatch)
        }
        try AccelerometerBatch.checkFinite(timestamps, field: "pressure.timestamps")
        try AccelerometerBatch.checkFinite(hectopascals, field: "pressure.hectopascals")
        for (index, value) in hectopascals.enumerated() where !limits.pressureRangeHectopascals.contains(value) {
            throw .pressureOutOfRange(index: index, value: value, range: limits.pressureRangeHectopascals)
        }
        return try StreamOrder(timestamps, field: "pressure.timestamps", after: previousTimestamp,
                               tolerance: limits.reorderToleranceSeconds)
    }
}

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
    /// Seconds, absolute (e.g. since 1970), strictly increasing.
    public var timestamps: [Double]
    public var hectopascals: [Double]

    public init(timestamps: [Double], hectopascals: [Double]) {
        self.timestamps = timestamps
        self.hectopascals = hectopascals
    }
}

/// One upload of raw accelerometer data (with gravity), optionally with pressure.
///
/// Timestamps are absolute seconds and must be strictly increasing, within the
/// batch and after the last sample of the previous batch: duplicates are refused
/// rather than silently merged, because a client that resends or reorders data
/// would otherwise double-count or corrupt the filters' history.
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

    public init(maximumSamplesPerBatch: Int = 100_000, minimumSamplingRateHz: Double = 10,
                maximumPressureSamplesPerBatch: Int = 10_000,
                pressureRangeHectopascals: ClosedRange<Double> = 250...1_100) {
        self.maximumSamplesPerBatch = maximumSamplesPerBatch
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
    /// `previous` is the timestamp before `index` (possibly the previous batch's last one).
    case timestampNotIncreasing(field: String, index: Int, previous: Double, current: Double)
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
        case .nonFiniteValue(let field, _), .timestampNotIncreasing(let field, _, _, _): field
        case .samplingRateTooLow: "timestamps"
        case .unknownUnit: "unit"
        case .raggedPressureArrays: "pressure"
        case .pressureBatchTooLarge: "pressure.timestamps"
        case .pressureOutOfRange: "pressure.hectopascals"
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
        case let .timestampNotIncreasing(_, index, previous, current):
            "timestamp at index \(index) (\(current)) is not after the previous one (\(previous)); timestamps must be strictly increasing"
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
}

extension AccelerometerBatch {
    /// Checks the batch; pure. `previousTimestamp` is the last accelerometer
    /// timestamp already processed in this session (nil for the first batch),
    /// `previousPressureTimestamp` likewise for pressure.
    public func validate(limits: PedometerInputLimits = PedometerInputLimits(),
                         previousTimestamp: Double? = nil,
                         previousPressureTimestamp: Double? = nil) throws(PedometerInputError) {
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
        try Self.checkIncreasing(timestamps, field: "timestamps", after: previousTimestamp)
        // Median rate below the minimum ⟺ more than half the intervals are longer than
        // 1/minimum; counting keeps validation O(n) without sorting. The gap from the
        // previous batch is included so that one-sample batches are judged too.
        let longestAcceptedInterval = 1 / limits.minimumSamplingRateHz
        let intervalCount = count - 1 + (previousTimestamp == nil ? 0 : 1)
        if intervalCount > 0 {
            var tooLong = 0
            if let previousTimestamp, timestamps[0] - previousTimestamp > longestAcceptedInterval { tooLong += 1 }
            for index in 1..<count where timestamps[index] - timestamps[index - 1] > longestAcceptedInterval {
                tooLong += 1
            }
            if 2 * tooLong > intervalCount {
                throw .samplingRateTooLow(medianHz: 1 / medianInterval(previousTimestamp: previousTimestamp),
                                          minimumHz: limits.minimumSamplingRateHz)
            }
        }
        if let pressure {
            try pressure.validate(limits: limits, previousTimestamp: previousPressureTimestamp)
        }
    }

    /// Median sampling interval, only computed for the error message.
    private func medianInterval(previousTimestamp: Double?) -> Double {
        var intervals: [Double] = []
        if let previousTimestamp { intervals.append(timestamps[0] - previousTimestamp) }
        for index in timestamps.indices.dropFirst() { intervals.append(timestamps[index] - timestamps[index - 1]) }
        intervals.sort()
        let middle = intervals.count / 2
        return intervals.count % 2 == 1 ? intervals[middle] : (intervals[middle - 1] + intervals[middle]) / 2
    }

    static func checkFinite(_ values: [Double], field: String) throws(PedometerInputError) {
        for (index, value) in values.enumerated() where !value.isFinite {
            throw .nonFiniteValue(field: field, index: index)
        }
    }

    static func checkIncreasing(_ values: [Double], field: String,
                                after previous: Double?) throws(PedometerInputError) {
        var last = previous
        for (index, value) in values.enumerated() {
            if let last, value <= last {
                throw .timestampNotIncreasing(field: field, index: index, previous: last, current: value)
            }
            last = value
        }
    }
}

extension PressureSamples {
    /// Checks the pressure samples; pure. An empty pressure list is allowed.
    public func validate(limits: PedometerInputLimits = PedometerInputLimits(),
                         previousTimestamp: Double? = nil) throws(PedometerInputError) {
        guard timestamps.count == hectopascals.count else {
            throw .raggedPressureArrays(timestamps: timestamps.count, hectopascals: hectopascals.count)
        }
        guard timestamps.count <= limits.maximumPressureSamplesPerBatch else {
            throw .pressureBatchTooLarge(count: timestamps.count, limit: limits.maximumPressureSamplesPerBatch)
        }
        try AccelerometerBatch.checkFinite(timestamps, field: "pressure.timestamps")
        try AccelerometerBatch.checkFinite(hectopascals, field: "pressure.hectopascals")
        try AccelerometerBatch.checkIncreasing(timestamps, field: "pressure.timestamps", after: previousTimestamp)
        for (index, value) in hectopascals.enumerated() where !limits.pressureRangeHectopascals.contains(value) {
            throw .pressureOutOfRange(index: index, value: value, range: limits.pressureRangeHectopascals)
        }
    }
}

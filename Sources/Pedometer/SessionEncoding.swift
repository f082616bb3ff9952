/// The stored form of a `PedometerSession`: compact, versioned, and owned here, so the server
/// never runs Foundation's coders on a session while it ingests.
///
/// Layout (little-endian): the magic bytes "PD", a format version (1 byte), then every field of the
/// session in a fixed order: Doubles as their 8-byte bit patterns (exact round trip), integers as
/// 8 bytes, flags as 1 byte, optionals as a flag then the value, arrays as a count then the values.
/// At most about 600 bytes. Version 1 (before the walk-start candidates were kept) still decodes,
/// with no such candidates; versions 1 and 2 (before the bump look-ahead) decode with it off, and
/// versions 1 to 3 (before the stride-lock check) with that off, and versions 1 to 4 (before the
/// stride look-ahead) with that off, as they ran. States saved before this format (Foundation JSON, starting with `{`) still decode,
/// through `Codable`, and are stored in this format from their next batch on.
extension PedometerSession {
    static let magic: [UInt8] = [0x50, 0x44]  // "PD"
    /// Bump when the field list changes, and keep decoding the older versions.
    static let formatVersion: UInt8 = 5
    /// Versions this build restores (the current one last).
    static let readableVersions: ClosedRange<UInt8> = 1...formatVersion

    /// The session's state in the stored form.
    public func encoded() -> [UInt8] {
        var writer = SessionStateWriter()
        writer.bytes.append(contentsOf: Self.magic)
        writer.bytes.append(Self.formatVersion)
        writer.double(strideModel.heightCm)
        detector.encode(into: &writer)
        floors.encode(into: &writer)
        writer.int(totalSteps)
        writer.double(totalDistanceMeters)
        writer.optional(lastAccelerometerTimestamp)
        writer.optional(lastPressureTimestamp)
        writer.doubles(recentSteps)
        return writer.bytes
    }

    /// Restores a session from `encoded()` output, or from the JSON of earlier versions.
    public init(stored bytes: [UInt8]) throws(SessionStateError) {
        if bytes.first == UInt8(ascii: "{") {
            self = try Self.decodeLegacyJSON(bytes)
            return
        }
        guard bytes.count >= 3, Array(bytes[0..<2]) == Self.magic else { throw .unrecognized }
        guard Self.readableVersions.contains(bytes[2]) else { throw .unsupportedVersion(bytes[2]) }
        var reader = SessionStateReader(bytes: bytes, position: 3)
        let heightCm = try reader.double()
        let detector = try StepDetector(from: &reader, version: bytes[2])
        self.init(heightCm: heightCm, parameters: detector.parameters)
        self.detector = detector
        floors = try FloorCounter(from: &reader)
        totalSteps = try reader.int()
        totalDistanceMeters = try reader.double()
        lastAccelerometerTimestamp = try reader.optionalDouble()
        lastPressureTimestamp = try reader.optionalDouble()
        recentSteps = try reader.doubles(limit: Self.recentStepCapacity)
        guard reader.isAtEnd else { throw .malformed("\(bytes.count - reader.position) bytes after the state") }
        // A height outside the stride model's range would have been replaced on the way in.
        guard strideModel.heightCm == heightCm else { throw .malformed("height \(heightCm) cm") }
    }
}

/// Why a stored session state cannot be restored.
public enum SessionStateError: Error, Sendable, Equatable, CustomStringConvertible {
    case unrecognized
    case unsupportedVersion(UInt8)
    case malformed(String)

    public var description: String {
        switch self {
        case .unrecognized: "not a pedometer session state"
        case .unsupportedVersion(let version): "session state format \(version) is newer than this server"
        case .malformed(let detail): "malformed session state: \(detail)"
        }
    }
}

struct SessionStateWriter {
    var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(512) }

    mutating func double(_ value: Double) { uint64(value.bitPattern) }
    mutating func int(_ value: Int) { uint64(UInt64(bitPattern: Int64(value))) }
    mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }

    mutating func optional(_ value: Double?) {
        bool(value != nil)
        if let value { double(value) }
    }

    mutating func doubles(_ values: [Double]) {
        int(values.count)
        for value in values { double(value) }
    }

    private mutating func uint64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}

struct SessionStateReader {
    let bytes: [UInt8]
    var position: Int

    var isAtEnd: Bool { position == bytes.count }

    mutating func double() throws(SessionStateError) -> Double {
        let value = Double(bitPattern: try uint64())
        // Every stored figure is finite: anything else is damage, and would poison the filters.
        guard value.isFinite else { throw .malformed("a non-finite number at byte \(position - 8)") }
        return value
    }

    mutating func int() throws(SessionStateError) -> Int {
        Int(truncatingIfNeeded: Int64(bitPattern: try uint64()))
    }

    mutating func bool() throws(SessionStateError) -> Bool {
        guard position < bytes.count else { throw .malformed("truncated at byte \(position)") }
        defer { position += 1 }
        switch bytes[position] {
        case 0: return false
        case 1: return true
        default: throw .malformed("flag \(bytes[position]) at byte \(position)")
        }
    }

    mutating func optionalDouble() throws(SessionStateError) -> Double? {
        try bool() ? try double() : nil
    }

    /// `limit` bounds the count before anything is allocated, so damage cannot ask for gigabytes.
    mutating func doubles(limit: Int) throws(SessionStateError) -> [Double] {
        let count = try int()
        guard (0...limit).contains(count) else { throw .malformed("a list of \(count) entries (at most \(limit))") }
        var values: [Double] = []
        values.reserveCapacity(count)
        for _ in 0..<count { values.append(try double()) }
        return values
    }

    private mutating func uint64() throws(SessionStateError) -> UInt64 {
        guard bytes.count - position >= 8 else { throw .malformed("truncated at byte \(position)") }
        var value: UInt64 = 0
        for offset in (0..<8).reversed() { value = value << 8 | UInt64(bytes[position + offset]) }
        position += 8
        return value
    }
}

extension StepDetectionParameters {
    func encode(into writer: inout SessionStateWriter) {
        for value in [sampleRateHz, gravityTimeConstantSeconds, lowPassCutoffHz, amplitudeTimeConstantSeconds,
                      relativeProminence, minimumProminence, minimumStepIntervalSeconds,
                      minimumIntervalFractionOfPeriod, maximumStepIntervalSeconds] {
            writer.double(value)
        }
        writer.int(stepsToConfirmBout)
        writer.double(maximumIntervalRatio)
        writer.double(maximumStrideRatio)
        writer.int(irregularIntervalsToEndBout)
        writer.double(maximumSampleGapSeconds)
        writer.double(bumpRhythmTolerance)
        writer.double(longestStepPeriodSeconds)
        writer.int(strideLockStrides)
        writer.double(strideRhythmTolerance)
    }

    /// Versions before 3 had no bump look-ahead, before 4 no stride-lock check, before 5 no stride
    /// look-ahead: such sessions go on without them, as they ran.
    init(from reader: inout SessionStateReader, version: UInt8) throws(SessionStateError) {
        self.init()
        sampleRateHz = try reader.double()
        gravityTimeConstantSeconds = try reader.double()
        lowPassCutoffHz = try reader.double()
        amplitudeTimeConstantSeconds = try reader.double()
        relativeProminence = try reader.double()
        minimumProminence = try reader.double()
        minimumStepIntervalSeconds = try reader.double()
        minimumIntervalFractionOfPeriod = try reader.double()
        maximumStepIntervalSeconds = try reader.double()
        stepsToConfirmBout = try reader.int()
        maximumIntervalRatio = try reader.double()
        maximumStrideRatio = try reader.double()
        irregularIntervalsToEndBout = try reader.int()
        maximumSampleGapSeconds = try reader.double()
        if version >= 3 {
            bumpRhythmTolerance = try reader.double()
            longestStepPeriodSeconds = try reader.double()
        } else {
            bumpRhythmTolerance = 0
        }
        strideLockStrides = version >= 4 ? try reader.int() : 0
        strideRhythmTolerance = version >= 5 ? try reader.double() : 0
        // The detector divides by the rate, sizes a buffer by the bout length, and resamples up to
        // a gap's worth of grid points per input sample.
        guard (1...10_000).contains(sampleRateHz), lowPassCutoffHz > 0, lowPassCutoffHz < sampleRateHz / 2,
              (1...64).contains(stepsToConfirmBout), maximumSampleGapSeconds > 0, maximumSampleGapSeconds <= 60 else {
            throw .malformed("detector parameters out of range")
        }
    }
}

extension Biquad {
    func encode(into writer: inout SessionStateWriter) {
        for value in [b0, b1, b2, a1, a2, state1, state2] { writer.double(value) }
    }

    init(from reader: inout SessionStateReader) throws(SessionStateError) {
        self.init(b0: try reader.double(), b1: try reader.double(), b2: try reader.double(),
                  a1: try reader.double(), a2: try reader.double(),
                  state1: try reader.double(), state2: try reader.double())
    }
}

extension FloorCounter {
    func encode(into writer: inout SessionStateWriter) {
        writer.bool(hasAltitude)
        writer.double(lastTime)
        writer.double(fastAltitude)
        writer.double(slowAltitude)
        writer.double(anchorAltitude)
        writer.bool(inLift)
        writer.int(floorsAscended)
        writer.int(floorsDescended)
    }

    init(from reader: inout SessionStateReader) throws(SessionStateError) {
        self.init()
        hasAltitude = try reader.bool()
        lastTime = try reader.double()
        fastAltitude = try reader.double()
        slowAltitude = try reader.double()
        anchorAltitude = try reader.double()
        inLift = try reader.bool()
        floorsAscended = try reader.int()
        floorsDescended = try reader.int()
    }
}

extension StepDetector {
    func encode(into writer: inout SessionStateWriter) {
        parameters.encode(into: &writer)
        writer.double(gridOrigin)
        writer.int(gridIndex)
        writer.bool(hasPrevious)
        writer.double(previousTime)
        writer.double(previousX)
        writer.double(previousY)
        writer.double(previousZ)
        writer.bool(filtersStarted)
        writer.double(gravity)
        lowPass.encode(into: &writer)
        writer.double(meanSquare)
        writer.bool(searchingPeak)
        writer.double(extremeValue)
        writer.double(extremeTime)
        writer.bool(hasLastCandidate)
        writer.double(lastCandidateTime)
        writer.double(lastCandidateValue)
        writer.doubles(pendingTimes)
        writer.bool(boutActive)
        writer.bool(hasAcceptedStep)
        writer.double(lastAcceptedTime)
        writer.double(stepPeriod)
        writer.int(irregularIntervals)
        writer.doubles(preludeTimes)
        writer.bool(midStrideCandidateMerged)
        writer.int(midStrideMerges)
        writer.bool(hasPreviousAccepted)
        writer.double(previousAcceptedTime)
        writer.double(lastAcceptedValue)
        writer.double(stridePeriod)
    }

    init(from reader: inout SessionStateReader, version: UInt8) throws(SessionStateError) {
        self.init(parameters: try StepDetectionParameters(from: &reader, version: version))
        gridOrigin = try reader.double()
        gridIndex = try reader.int()
        hasPrevious = try reader.bool()
        previousTime = try reader.double()
        previousX = try reader.double()
        previousY = try reader.double()
        previousZ = try reader.double()
        filtersStarted = try reader.bool()
        gravity = try reader.double()
        lowPass = try Biquad(from: &reader)
        meanSquare = try reader.double()
        searchingPeak = try reader.bool()
        extremeValue = try reader.double()
        extremeTime = try reader.double()
        hasLastCandidate = try reader.bool()
        lastCandidateTime = try reader.double()
        lastCandidateValue = try reader.double()
        pendingTimes = try reader.doubles(limit: parameters.stepsToConfirmBout)
        boutActive = try reader.bool()
        hasAcceptedStep = try reader.bool()
        lastAcceptedTime = try reader.double()
        stepPeriod = try reader.double()
        irregularIntervals = try reader.int()
        if version >= 2 { preludeTimes = try reader.doubles(limit: Self.preludeCapacity) }
        if version >= 4 {
            midStrideCandidateMerged = try reader.bool()
            midStrideMerges = try reader.int()
        }
        if version >= 5 {
            hasPreviousAccepted = try reader.bool()
            previousAcceptedTime = try reader.double()
            lastAcceptedValue = try reader.double()
            stridePeriod = try reader.double()
        }
        // The next grid point follows the last sample within one grid step; anything else (damage)
        // would make the resampler walk an unbounded number of points.
        let nextGridTime = gridOrigin + Double(gridIndex) * (1 / parameters.sampleRateHz)
        guard gridIndex >= 0, !hasPrevious
            || (nextGridTime >= previousTime - 1e-3 && nextGridTime <= previousTime + 1 / parameters.sampleRateHz + 1e-3) else {
            throw .malformed("resampler grid out of step with the last sample")
        }
    }
}

import Foundation

extension PedometerSession {
    /// States stored before the compact format: Foundation JSON of the `Codable` session. Only a
    /// session's first batch after an upgrade comes this way.
    static func decodeLegacyJSON(_ bytes: [UInt8]) throws(SessionStateError) -> PedometerSession {
        do {
            return try JSONDecoder().decode(PedometerSession.self, from: Data(bytes))
        } catch {
            throw .malformed("legacy JSON state: \(error)")
        }
    }
}

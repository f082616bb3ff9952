/// CMMotionActivity-like classification of the most recent seconds.
public enum MotionActivity: String, Sendable, Codable, CaseIterable {
    case unknown, stationary, walking, running
}

/// What one batch (or `finish()`) produced.
public struct PedometerUpdate: Sendable, Equatable, Codable {
    /// Times (absolute seconds) of the steps counted by this call. A step can be
    /// counted a few seconds after it happened (bout confirmation), so its time may
    /// precede the batch's first sample.
    public var stepTimestamps: [Double]
    /// Distance (m) of this call's steps.
    public var distanceMeters: Double
    public var floorsAscended: Int
    public var floorsDescended: Int
    public var totalSteps: Int
    public var totalDistanceMeters: Double
    public var totalFloorsAscended: Int
    public var totalFloorsDescended: Int
    /// Current cadence (steps/s) over the last few steps; nil when not walking.
    public var cadenceStepsPerSecond: Double?
    /// Current pace (s/m); nil when not walking.
    public var paceSecondsPerMeter: Double?
    public var activity: MotionActivity
    /// First and last timestamp of the accelerometer samples this call processed (after the
    /// stream's repairs); nil for `finish()` or a batch whose samples were all dropped as late.
    public var processedSpan: ClosedRange<Double>?
    /// What was repaired in this call's input (duplicates, jitter, late samples).
    public var repairs = StreamRepairs()

    public var steps: Int { stepTimestamps.count }
}

/// A pedometer session: all detector, metric and floor state, `Codable` so the
/// server can persist it after every batch and resume after a restart. Its size
/// is bounded (no buffers that grow with the session).
///
/// Splitting a recording into batches of any size yields the same step times and
/// totals, because samples are processed one by one through the same state.
public struct PedometerSession: Sendable, Codable, Equatable {
    public let strideModel: StrideModel
    var detector: StepDetector
    var floors: FloorCounter
    public internal(set) var totalSteps = 0
    public internal(set) var totalDistanceMeters = 0.0
    /// Last accelerometer timestamp processed; the next batch must start after it.
    public internal(set) var lastAccelerometerTimestamp: Double?
    /// Last pressure timestamp processed; the next pressure sample must come after it.
    public internal(set) var lastPressureTimestamp: Double?
    /// The most recent step times (oldest first), at most `recentStepCapacity`, for cadence.
    var recentSteps: [Double] = []

    static let recentStepCapacity = 8
    /// Cadence is reported over steps in this window, and only while the last step is this recent.
    static let cadenceWindowSeconds = 8.0
    static let walkingRecencySeconds = 3.0
    /// RMS (m/s²) of the band-limited magnitude below which the phone is at rest.
    static let stationaryRMS = 0.15
    /// Cadence (steps/s) from which steps are running rather than walking.
    static let runningCadence = 2.5

    public init(heightCm: Double? = nil, parameters: StepDetectionParameters = .standard) {
        strideModel = StrideModel(heightCm: heightCm)
        detector = StepDetector(parameters: parameters)
        floors = FloorCounter()
    }

    public var parameters: StepDetectionParameters { detector.parameters }

    /// Validates, repairs (`AccelerometerBatch.normalized`) and processes one batch. On a
    /// validation error the session is unchanged.
    public mutating func process(_ input: AccelerometerBatch,
                                 limits: PedometerInputLimits = PedometerInputLimits())
        throws(PedometerInputError) -> PedometerUpdate {
        let (batch, repairs) = try input.normalized(limits: limits, previousTimestamp: lastAccelerometerTimestamp,
                                                    previousPressureTimestamp: lastPressureTimestamp)
        let totalsBefore = (steps: totalSteps, distance: totalDistanceMeters,
                            up: floors.floorsAscended, down: floors.floorsDescended)
        var stepTimes: [Double] = []
        batch.timestamps.withUnsafeBufferPointer { t in
            batch.x.withUnsafeBufferPointer { x in
                batch.y.withUnsafeBufferPointer { y in
                    batch.z.withUnsafeBufferPointer { z in
                        detector.ingest(timestamps: t, x: x, y: y, z: z,
                                        scale: batch.unit.toMetersPerSecondSquared, steps: &stepTimes)
                    }
                }
            }
        }
        if let last = batch.timestamps.last { lastAccelerometerTimestamp = last }
        if let pressure = batch.pressure {
            for index in pressure.timestamps.indices {
                floors.add(time: pressure.timestamps[index], hectopascals: pressure.hectopascals[index])
            }
            if let last = pressure.timestamps.last { lastPressureTimestamp = last }
        }
        var update = makeUpdate(stepTimes: stepTimes, totalsBefore: totalsBefore)
        if let first = batch.timestamps.first, let last = batch.timestamps.last { update.processedSpan = first...last }
        update.repairs = repairs
        return update
    }

    /// Ends the session: settles the step held back for comparison with a possible
    /// next peak. Candidates of an unconfirmed bout (fewer than
    /// `stepsToConfirmBout` regular peaks) are not steps. The session can go on
    /// afterwards, as if after a pause.
    public mutating func finish() -> PedometerUpdate {
        let totalsBefore = (steps: totalSteps, distance: totalDistanceMeters,
                            up: floors.floorsAscended, down: floors.floorsDescended)
        var stepTimes: [Double] = []
        detector.finish(steps: &stepTimes)
        return makeUpdate(stepTimes: stepTimes, totalsBefore: totalsBefore)
    }

    private mutating func makeUpdate(stepTimes: [Double],
                                     totalsBefore: (steps: Int, distance: Double, up: Int, down: Int))
        -> PedometerUpdate {
        for time in stepTimes { record(stepAt: time) }
        let now = lastAccelerometerTimestamp ?? 0
        let cadence = currentCadence(now: now)
        let pace = cadence.map { 1 / ($0 * strideModel.stepLengthMeters(cadence: $0)) }
        return PedometerUpdate(
            stepTimestamps: stepTimes,
            distanceMeters: totalDistanceMeters - totalsBefore.distance,
            floorsAscended: floors.floorsAscended - totalsBefore.up,
            floorsDescended: floors.floorsDescended - totalsBefore.down,
            totalSteps: totalSteps,
            totalDistanceMeters: totalDistanceMeters,
            totalFloorsAscended: floors.floorsAscended,
            totalFloorsDescended: floors.floorsDescended,
            cadenceStepsPerSecond: cadence,
            paceSecondsPerMeter: pace,
            activity: activity(cadence: cadence))
    }

    private mutating func record(stepAt time: Double) {
        if recentSteps.count == Self.recentStepCapacity { recentSteps.removeFirst() }
        recentSteps.append(time)
        totalSteps += 1
        totalDistanceMeters += strideModel.stepLengthMeters(cadence: cadenceEnding(at: time))
    }

    /// Steps per second over the recent steps up to `time`; nil with fewer than 3 steps in the window.
    private func cadenceEnding(at time: Double) -> Double? {
        guard let newest = recentSteps.last, time - newest <= Self.walkingRecencySeconds else { return nil }
        var oldest = newest
        var count = 0
        for step in recentSteps.reversed() where newest - step <= Self.cadenceWindowSeconds {
            oldest = step
            count += 1
        }
        guard count >= 3, newest > oldest else { return nil }
        return Double(count - 1) / (newest - oldest)
    }

    private func currentCadence(now: Double) -> Double? { cadenceEnding(at: now) }

    private func activity(cadence: Double?) -> MotionActivity {
        guard lastAccelerometerTimestamp != nil else { return .unknown }
        if let cadence { return cadence >= Self.runningCadence ? .running : .walking }
        // No regular steps: at rest if the signal is quiet, otherwise moving in some other way.
        return detector.signalRMS < Self.stationaryRMS ? .stationary : .unknown
    }
}

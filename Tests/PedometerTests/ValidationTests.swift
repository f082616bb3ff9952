import Foundation
import Testing
import Pedometer

@Suite struct ValidationTests {
    static let t0 = TestSignals.startTime

    static func batch(count: Int = 5, interval: Double = 0.01) -> AccelerometerBatch {
        let times = (0..<count).map { t0 + Double($0) * interval }
        return AccelerometerBatch(timestamps: times, x: Array(repeating: 0.1, count: count),
                                  y: Array(repeating: 0.2, count: count), z: Array(repeating: 9.8, count: count),
                                  unit: .metersPerSecondSquared)
    }

    static func error(of batch: AccelerometerBatch, limits: PedometerInputLimits = PedometerInputLimits(),
                      previous: Double? = nil) -> PedometerInputError? {
        do {
            try batch.validate(limits: limits, previousTimestamp: previous)
            return nil
        } catch {
            return error
        }
    }

    @Test func validBatchPasses() {
        #expect(Self.error(of: Self.batch()) == nil)
        #expect(Self.error(of: Self.batch(count: 1)) == nil)
    }

    @Test func raggedArrays() {
        var batch = Self.batch()
        batch.y.removeLast()
        let error = Self.error(of: batch)
        #expect(error == .raggedArrays(timestamps: 5, x: 5, y: 4, z: 5))
        #expect(error?.reason.contains("y 4") == true)
    }

    @Test func emptyBatch() {
        #expect(Self.error(of: Self.batch(count: 0)) == .emptyBatch)
    }

    @Test func batchOverTheLimit() {
        let error = Self.error(of: Self.batch(count: 20), limits: PedometerInputLimits(maximumSamplesPerBatch: 10))
        #expect(error == .batchTooLarge(count: 20, limit: 10))
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteValues(value: Double) {
        var batch = Self.batch()
        batch.z[3] = value
        #expect(Self.error(of: batch) == .nonFiniteValue(field: "z", index: 3))
        var timed = Self.batch()
        timed.timestamps[2] = value
        #expect(Self.error(of: timed)?.field == "timestamps")
    }

    @Test func repeatedAndSlightlyEarlierTimestampsAreAccepted() {
        var duplicate = Self.batch()
        duplicate.timestamps[4] = duplicate.timestamps[3]
        #expect(Self.error(of: duplicate) == nil)
        var jitter = Self.batch()
        jitter.timestamps[2] = jitter.timestamps[0] - 0.05
        #expect(Self.error(of: jitter) == nil)
        // Overlapping the previous batch's end by less than the tolerance.
        #expect(Self.error(of: Self.batch(), previous: Self.t0 + 0.02) == nil)
    }

    @Test func timeRunningBackwardsBeyondTheToleranceNamesTheIndexAndTheRule() {
        var backwards = Self.batch()
        backwards.timestamps[3] = backwards.timestamps[2] - 0.5
        let error = Self.error(of: backwards)
        #expect(error == .timeRunsBackwards(field: "timestamps", index: 3, latest: backwards.timestamps[2],
                                            current: backwards.timestamps[3], tolerance: 0.1))
        #expect(error?.index == 3)
        #expect(error?.reason.contains("at most 0.1 s") == true)
        // A batch starting before the session's last batch ended, by more than the tolerance.
        let batch = Self.batch()
        let overlap = Self.error(of: batch, previous: batch.timestamps[4] + 0.2)
        #expect(overlap == .startsBeforePreviousBatchEnd(field: "timestamps", index: 0, previousEnd: batch.timestamps[4] + 0.2,
                                                         current: batch.timestamps[0], tolerance: 0.1))
        #expect(overlap?.reason.contains("previous batch") == true)
        // A tighter tolerance is the caller's choice.
        var jitter = Self.batch()
        jitter.timestamps[2] = jitter.timestamps[1] - 0.005
        #expect(Self.error(of: jitter, limits: PedometerInputLimits(reorderToleranceSeconds: 0.001))?.index == 2)
    }

    @Test func sessionRefusesABatchThatOverlapsTheLastOne() throws {
        var session = PedometerSession()
        _ = try session.process(Self.batch(count: 50))
        #expect(throws: PedometerInputError.self) { _ = try session.process(Self.batch()) }
    }

    @Test func aGapIsNotARateProblem() {
        // One sample after a long pause, and a batch with a pause inside it.
        #expect(Self.error(of: Self.batch(count: 1), previous: Self.t0 - 30) == nil)
        var paused = Self.batch(count: 20)
        for index in 10..<20 { paused.timestamps[index] += 60 }
        #expect(Self.error(of: paused) == nil)
    }

    @Test func samplingRateTooLow() {
        let error = Self.error(of: Self.batch(count: 20, interval: 0.2))
        if case .samplingRateTooLow(let median, let minimum)? = error {
            #expect(abs(median - 5) < 1e-3)
            #expect(minimum == 10)
        } else {
            Issue.record("5 Hz input accepted")
        }
        // A one-sample batch is judged by the gap from the previous batch.
        #expect(Self.error(of: Self.batch(count: 1), previous: Self.t0 - 0.5)?.field == "timestamps")
        #expect(Self.error(of: Self.batch(count: 20, interval: 0.5)) != nil)
        #expect(Self.error(of: Self.batch(count: 20, interval: 0.05)) == nil)
    }

    @Test func unitParsing() throws {
        #expect(try AccelerationUnit(parsing: "g") == .standardGravity)
        #expect(try AccelerationUnit(parsing: "m/s^2") == .metersPerSecondSquared)
        #expect(try AccelerationUnit(parsing: "m/s²") == .metersPerSecondSquared)
        #expect(throws: PedometerInputError.unknownUnit("furlongs")) { try AccelerationUnit(parsing: "furlongs") }
        #expect(PedometerInputError.unknownUnit("x").field == "unit")
    }

    @Test func pressureErrors() {
        var batch = Self.batch()
        batch.pressure = PressureSamples(timestamps: [Self.t0, Self.t0 + 1], hectopascals: [1_000])
        #expect(Self.error(of: batch) == .raggedPressureArrays(timestamps: 2, hectopascals: 1))
        batch.pressure = PressureSamples(timestamps: [Self.t0], hectopascals: [.nan])
        #expect(Self.error(of: batch) == .nonFiniteValue(field: "pressure.hectopascals", index: 0))
        batch.pressure = PressureSamples(timestamps: [Self.t0, Self.t0 - 1], hectopascals: [1_000, 1_000])
        #expect(Self.error(of: batch)?.field == "pressure.timestamps")
        batch.pressure = PressureSamples(timestamps: [Self.t0], hectopascals: [2_000])
        #expect(Self.error(of: batch)?.field == "pressure.hectopascals")
        batch.pressure = PressureSamples(timestamps: [], hectopascals: [])
        #expect(Self.error(of: batch) == nil)
    }

    @Test func everyErrorNamesAFieldAndAReason() {
        let errors: [PedometerInputError] = [
            .emptyBatch, .raggedArrays(timestamps: 1, x: 2, y: 1, z: 1), .batchTooLarge(count: 2, limit: 1),
            .nonFiniteValue(field: "x", index: 0),
            .timeRunsBackwards(field: "timestamps", index: 1, latest: 2, current: 1, tolerance: 0.1),
            .startsBeforePreviousBatchEnd(field: "timestamps", index: 0, previousEnd: 2, current: 1, tolerance: 0.1),
            .samplingRateTooLow(medianHz: 1, minimumHz: 10), .unknownUnit("q"),
            .raggedPressureArrays(timestamps: 1, hectopascals: 0), .pressureBatchTooLarge(count: 2, limit: 1),
            .pressureOutOfRange(index: 0, value: 5, range: 250...1_100),
        ]
        for error in errors {
            #expect(!error.field.isEmpty)
            #expect(!error.reason.isEmpty)
            #expect(error.description.hasPrefix(error.field + ": "))
        }
    }
}

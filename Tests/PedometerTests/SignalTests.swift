import Foundation
import Testing
import Pedometer

@Suite struct SignalTests {
    @Test(arguments: [(0.31, -0.55, 0.77), (0.0, 0.0, 1.0), (1.0, 0.2, -0.1), (-0.6, -0.6, 0.5)])
    func walkingSinusoidInAnyOrientationCountsAboutRight(direction: (Double, Double, Double)) throws {
        let recording = TestSignals.walking(stepHz: 1.8, seconds: 60, direction: direction)
        let run = try TestSignals.run(recording, batchSize: 500)
        // 1.8 Hz × 60 s = 108 steps; allow a step or two at the edges.
        #expect(abs(run.stepTimes.count - 108) <= 2)
        #expect(run.lastUpdate.activity == .walking)
        let cadence = try #require(run.lastUpdate.cadenceStepsPerSecond)
        #expect(abs(cadence - 1.8) < 0.05)
    }

    @Test func runningCadenceIsClassifiedAsRunning() throws {
        let recording = TestSignals.walking(stepHz: 2.8, seconds: 30, amplitude: 8)
        let run = try TestSignals.run(recording, batchSize: 500)
        #expect(abs(run.stepTimes.count - 84) <= 2)
        #expect(run.lastUpdate.activity == .running)
    }

    @Test func stationaryNoiseCountsNothing() throws {
        let recording = TestSignals.resting(seconds: 120, direction: (0.3, 0.9, 0.3), noise: 0.08)
        let run = try TestSignals.run(recording, batchSize: 500)
        #expect(run.stepTimes.isEmpty)
        #expect(run.lastUpdate.activity == .stationary)
        #expect(run.lastUpdate.cadenceStepsPerSecond == nil)
        #expect(run.lastUpdate.paceSecondsPerMeter == nil)
    }

    @Test func phoneLyingFlatCountsNothing() throws {
        let recording = TestSignals.resting(seconds: 120, direction: (0, 0, 1), noise: 0.01)
        let run = try TestSignals.run(recording, batchSize: 1_000)
        #expect(run.stepTimes.isEmpty)
        #expect(run.lastUpdate.activity == .stationary)
    }

    /// Adds bumps at random, irregular moments (a phone handled or jostled) from `start` on.
    static func addIrregularBumps(to recording: inout Recording, from start: Double, seed: UInt64) {
        var generator = SeededGenerator(state: seed)
        var bumpTime = start + 0.5
        var bumps: [Double] = []
        let end = recording.timestamps[recording.count - 1] - TestSignals.startTime
        while bumpTime < end {
            bumps.append(bumpTime)
            bumpTime += Double.random(in: 0.3...1.7, using: &generator)
        }
        for index in recording.timestamps.indices {
            let time = recording.timestamps[index] - TestSignals.startTime
            for bump in bumps where abs(time - bump) < 0.08 { recording.y[index] += 6 }
        }
    }

    @Test func irregularShakingCountsNothing() throws {
        var recording = TestSignals.resting(seconds: 60, direction: (0, 1, 0), noise: 0.05)
        Self.addIrregularBumps(to: &recording, from: 0, seed: 5)
        let run = try TestSignals.run(recording, batchSize: 500)
        #expect(run.stepTimes.count <= 8)
    }

    @Test func shakingAfterWalkingAddsFewSteps() throws {
        // 30 s of walking at 1.8 Hz (54 steps), then the walker stops and jiggles the phone.
        var recording = TestSignals.walking(stepHz: 1.8, seconds: 60, noise: 0.05)
        for index in recording.timestamps.indices where recording.timestamps[index] - TestSignals.startTime >= 30 {
            let unit = 1 / (0.31 * 0.31 + 0.55 * 0.55 + 0.77 * 0.77).squareRoot()
            recording.x[index] = 9.80665 * 0.31 * unit
            recording.y[index] = -9.80665 * 0.55 * unit
            recording.z[index] = 9.80665 * 0.77 * unit
        }
        Self.addIrregularBumps(to: &recording, from: 30, seed: 11)
        let run = try TestSignals.run(recording, batchSize: 500)
        // A few jiggles right after walking fall near the old rhythm and count before the
        // bout ends (rhythm check, or the bumps no longer standing out); later ones do not.
        #expect(run.stepTimes.count >= 52)
        #expect(run.stepTimes.count <= 66)
        #expect(!run.stepTimes.contains { $0 > TestSignals.startTime + 45 })
    }

    @Test func gAndMetersPerSecondSquaredGiveTheSameSteps() throws {
        let recording = TestSignals.walking(stepHz: 2.0, seconds: 40)
        let inMetric = try TestSignals.run(recording, batchSize: 300, unit: .metersPerSecondSquared)
        let standardGravity = AccelerationUnit.metersPerSecondSquaredPerG
        let inG = Recording(timestamps: recording.timestamps, x: recording.x.map { $0 / standardGravity },
                            y: recording.y.map { $0 / standardGravity }, z: recording.z.map { $0 / standardGravity })
        let inGRun = try TestSignals.run(inG, batchSize: 300, unit: .standardGravity)
        #expect(inGRun.stepTimes.count == inMetric.stepTimes.count)
        for (a, b) in zip(inGRun.stepTimes, inMetric.stepTimes) { #expect(abs(a - b) < 1e-6) }
    }

    @Test func unevenSamplingIsResampled() throws {
        let even = TestSignals.walking(stepHz: 1.7, seconds: 60, noise: 0.05, rateHz: 100, jitter: 0)
        // ±40 % jitter around 100 Hz, as cheap phones deliver.
        let uneven = TestSignals.walking(stepHz: 1.7, seconds: 60, noise: 0.05, rateHz: 100, jitter: 0.4)
        let evenRun = try TestSignals.run(even, batchSize: 250)
        let unevenRun = try TestSignals.run(uneven, batchSize: 250)
        #expect(abs(evenRun.stepTimes.count - 102) <= 2)
        #expect(abs(unevenRun.stepTimes.count - evenRun.stepTimes.count) <= 1)
        // Step times follow the signal, not the sample clock.
        let offsets = zip(evenRun.stepTimes, unevenRun.stepTimes).map { abs($0 - $1) }
        #expect((offsets.max() ?? 1) < 0.05)
    }

    @Test func lowRateInputStillCountsAbove10Hz() throws {
        let recording = TestSignals.walking(stepHz: 1.8, seconds: 60, rateHz: 20)
        let run = try TestSignals.run(recording, batchSize: 100)
        #expect(abs(run.stepTimes.count - 108) <= 2)
    }

    @Test(arguments: Fixtures.names)
    func fixtureTracesMatchGroundTruth(name: String) throws {
        let trace = try Fixtures.load(name)
        let fiveSeconds = 500
        let run = try TestSignals.run(trace.recording, batchSize: fiveSeconds)
        let error = Double(run.stepTimes.count - trace.truthSteps) / Double(trace.truthSteps)
        #expect(abs(error) < 0.05, "\(name): \(run.stepTimes.count) steps, truth \(trace.truthSteps)")
    }
}
